#include "lower/lowering.hpp"

#include <algorithm>

namespace zyntax::lowering {

// A CIR name for a local: never one a host number or dimension of the
// kernel goes by (`for i in 0..i` over a dimension i gives the loop `i_1`).
std::string Lowering::fresh_name(const std::string& base) {
  std::string n = base;
  for (int k = 1; used_names_.count(n) || host_.lookup(n) || unresolved_.count(n); ++k) n = base + "_" + std::to_string(k);
  used_names_.insert(n);
  return n;
}

Symbol* Lowering::declare(const std::string& name, SymKind kind, Span decl, const void* key) {
  auto sym = std::make_unique<Symbol>();
  sym->name = name;
  sym->cir_name = fresh_name(name);
  local_names_.insert(sym->cir_name);
  sym->kind = kind;
  sym->decl = decl;
  sym->key = key;
  sym->shadows = lookup_local(name);
  Symbol* p = sym.get();
  symbols_.push_back(std::move(sym));
  scopes_.back()[name] = p;
  return p;
}

Symbol* Lowering::lookup_local(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  return nullptr;
}

int Lowering::input_index(const std::string& path) const {
  for (size_t i = 0; i < sigs_.size(); ++i)
    if (sigs_[i].path == path) return static_cast<int>(i);
  return -1;
}

// The CIR type of input i: its dims are named by how the kernel binds them.
cir::Type Lowering::input_type(size_t i) const {
  cir::Type t;
  t.dtype = sigs_[i].dtype.value_or(DType::F32);
  for (size_t a = 0; a < axis_names_[i].size(); ++a)
    t.shape.push_back(cir::Var::make(axis_name(i, a), cir::Type::scalar(DType::I64)));
  return t;
}

cir::Type Lowering::out_type() const {
  const Inferred* inf = previous(&node_);
  cir::Type t;
  t.dtype = inf ? resolved(*inf) : DType::F32;
  if (inf) t.shape = inf->shape;
  return t;
}

// A read of `out` (`out[k] += x[i]`): before any store has typed it, a
// weak integer, which takes the type of what it meets, so that the read
// does not decide the type the stores give; a weak type stays weak.
Value Lowering::out_read(std::vector<cir::AxisSel> axes, Span span) const {
  const Inferred* inf = previous(&node_);
  cir::Type t = out_type();
  if (!inf) t.dtype = DType::I64;
  return {cir::make_access("out", t, std::move(axes), span), !inf || inf->weak};
}

bool Lowering::same_inferred() const {
  if (previous_.size() != inferred_.size()) return false;
  for (const auto& [k, v] : inferred_) {
    auto it = previous_.find(k);
    if (it == previous_.end() || !it->second.same(v)) return false;
  }
  return true;
}

// What the previous iteration inferred for a variable, `out` or a shared array.
const Inferred* Lowering::previous(const void* key) const {
  auto it = previous_.find(key);
  return it == previous_.end() ? nullptr : &it->second;
}

// Records a value assigned to a variable (or to `out`, or a shared array):
// its type joins what this iteration saw before.
void Lowering::record(const void* key, const Value& v) {
  bool first = !inferred_.count(key);
  Inferred& inf = inferred_[key];
  if (first) {
    inf.dtype = v.dtype();
    inf.weak = v.weak;
    inf.tile = v.is_tile();
    inf.shape = v.is_tile() ? v.e->type.shape : std::vector<Expr>{};
    return;
  }
  if (v.is_tile() && !inf.tile) {
    inf.tile = true;
    inf.shape = v.e->type.shape;
  }
  if (inf.weak && !v.weak) {
    inf.dtype = (is_float(inf.dtype) && !is_float(v.dtype())) ? DType::F32 : v.dtype();
    inf.weak = false;
  } else if (inf.weak == v.weak) {
    inf.dtype = promote(inf.dtype, v.dtype());
  }
}

Value Lowering::cast_to(const Value& v, DType t) {
  if (!v.ok() || v.dtype() == t) return {v.e, false};
  if (auto i = v.e.as<cir::IntImm>()) {
    Scalar s = cast(Scalar::of_int(i->value, i->type.dtype), t);
    return {literal(s, v.e->span), false};
  }
  if (auto f = v.e.as<cir::FloatImm>()) {
    Scalar s = cast(Scalar::of_float(f->value, f->type.dtype), t);
    return {literal(s, v.e->span), false};
  }
  if (auto fill = v.e.as<cir::Fill>())  // zeros(r, c) meeting f32: fill with an f32 zero
    return {cir::make_fill(cast_to(Value{fill->value, v.weak}, t).e, fill->type.shape, v.e->span), false};
  return {cir::Cast::make(t, v.e, v.e->span), false};
}

Expr Lowering::literal(const Scalar& s, Span span) {
  if (is_float(s.dtype)) return cir::FloatImm::make(s.f, s.dtype, span);
  if (is_bool(s.dtype)) return cir::BoolImm::make(s.truthy(), span);
  return cir::IntImm::make(s.as_int64(), s.dtype, span);
}

// Brings two operands to one dtype. Weak operands adopt the other's type;
// a weak float meeting an integer gives f32.
DType Lowering::unify(const Value& a, const Value& b, bool& weak) {
  weak = a.weak && b.weak;
  if (a.weak == b.weak) return promote(a.dtype(), b.dtype());
  const Value& w = a.weak ? a : b;
  const Value& c = a.weak ? b : a;
  if (is_float(w.dtype()) && !is_float(c.dtype())) return DType::F32;
  return c.dtype();
}

Value Lowering::to_bool(const Value& v, Span span) {
  if (!v.ok()) return v;
  if (v.dtype() == DType::Bool) return v;
  Value zero{cir::IntImm::make(0, DType::I64, span), true};
  return binary(BinaryOp::Ne, v, zero, span);
}

Value Lowering::binary(BinaryOp op, Value a, Value b, Span span) {
  if (!a.ok() || !b.ok()) return {};
  if (is_logical(op)) {
    a = to_bool(a, span);
    b = to_bool(b, span);
    return {cir::Binary::make(op, a.e, b.e, span), false};
  }
  bool weak;
  DType t = unify(a, b, weak);
  if (t == DType::Bool && !is_comparison(op)) t = DType::I64;  // arithmetic on bools counts in integers
  Value x = cast_to(a, t), y = cast_to(b, t);
  return {cir::Binary::make(op, x.e, y.e, span), weak && !is_comparison(op)};
}

}  // namespace zyntax::lowering
