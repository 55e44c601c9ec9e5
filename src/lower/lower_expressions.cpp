#include "lower/lowering.hpp"

#include <algorithm>
#include <limits>

#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"

namespace zyntax::lowering {

std::optional<int64_t> Lowering::static_extent(size_t input, int axis) const {
  const auto& e = sigs_[input].extents;
  return static_cast<size_t>(axis) < e.size() ? e[static_cast<size_t>(axis)] : std::nullopt;
}

Value Lowering::lower(const ast::Expr& e) {
  using ast::ExprKind;
  switch (e.kind) {
    case ExprKind::IntLit: {
      const auto& i = ast::as<ast::IntLit>(e);
      if (!i.unit.empty()) {
        error_if_final(e.span, "size and time units are not available inside kernels");
        return {};
      }
      return {cir::IntImm::make(i.value, DType::I64, e.span), true};
    }
    case ExprKind::FloatLit: return {cir::FloatImm::make(ast::as<ast::FloatLit>(e).value, DType::F64, e.span), true};
    case ExprKind::BoolLit: return {cir::BoolImm::make(ast::as<ast::BoolLit>(e).value, e.span), false};
    case ExprKind::Name: return lower_name(ast::as<ast::Name>(e));
    case ExprKind::Unary: {
      const auto& u = ast::as<ast::Unary>(e);
      Value x = lower(*u.operand);
      if (!x.ok()) return x;
      if (u.op == ast::UnOp::Pos) return x;
      if (u.op == ast::UnOp::Not) return {cir::Unary::make(UnaryOp::Not, to_bool(x, e.span).e, e.span), false};
      if (x.dtype() == DType::Bool) x = cast_to(x, DType::I64);
      return {cir::Unary::make(UnaryOp::Neg, x.e, e.span), x.weak};
    }
    case ExprKind::Binary: return lower_binary(ast::as<ast::Binary>(e));
    case ExprKind::Call: return lower_call(ast::as<ast::Call>(e));
    case ExprKind::Index: return lower_index(ast::as<ast::Index>(e));
    case ExprKind::Field: {
      std::string path = ast::path_text(e);
      if (!path.empty() && input_index(path) >= 0) return whole_input(static_cast<size_t>(input_index(path)), e.span);
      const auto& f = ast::as<ast::Field>(e);
      if (f.field == "shape") {
        error_if_final(e.span, "write `" + ast::path_text(*f.base) + ".shape[k]` with a constant k");
        return {};
      }
      if (!final_) return {};
      std::string base = ast::path_text(*f.base);
      if (!base.empty() && host_.lookup(base.substr(0, base.find('.'))))
        diags_->error(e.span, "'" + path + "' is not an input of this compute block")
            .with_hint("pass it in: compute(..., " + path + ")");
      else
        diags_->error(e.span, "unknown name '" + (path.empty() ? f.field : path) + "'");
      return {};
    }
    case ExprKind::Tuple:
      error_if_final(e.span, "tuples are only allowed in `yield (value, index)`");
      return {};
    case ExprKind::StringLit:
      error_if_final(e.span, "strings are not available inside kernels");
      return {};
    case ExprKind::Compute:
      error_if_final(e.span, "compute blocks cannot be nested");
      return {};
    default:
      error_if_final(e.span, "this expression is not available inside kernels");
      return {};
  }
}

Value Lowering::whole_input(size_t i, Span span) {
  return {cir::make_access(sigs_[i].path, input_type(i), {}, span), false};
}

Value Lowering::lower_name(const ast::Name& n) {
  const std::string& name = n.name;
  if (Symbol* sym = lookup_local(name)) {
    if (poisoned_.count(sym)) return {};
    if (sym->kind == SymKind::Shared) return {cir::make_access(sym->cir_name, sym->type, {}, n.span), false};
    return {cir::Var::make(sym->cir_name, sym->type, n.span), sym->weak};
  }
  if (name == "out") return read_out_whole(n.span);
  if (int i = input_index(name); i >= 0) return whole_input(static_cast<size_t>(i), n.span);
  if (name == "inf") return {cir::FloatImm::make(std::numeric_limits<double>::infinity(), DType::F64, n.span), true};
  if (name == "nan") return {cir::FloatImm::make(std::numeric_limits<double>::quiet_NaN(), DType::F64, n.span), true};
  if (name == "pi") return {cir::FloatImm::make(3.14159265358979323846, DType::F64, n.span), true};
  if (auto h = host_.lookup(name)) return host_value(name, *h, n.span);
  if (header_vars_.count(name)) {  // `for i in 0..i`, `for i in 0..j, j in 0..n`
    error_if_final(n.span, "the range reads '" + name + "', a variable of this same loop header, which has no value yet");
    return {};
  }
  // Unbound for now: a dimension if the body's indexing binds it.
  auto& uses = unresolved_[name];
  if (uses.empty()) unresolved_order_.push_back(name);
  uses.push_back(n.span);
  return {cir::Var::make(name, cir::Type::scalar(DType::I64), n.span), true};
}

Value Lowering::host_value(const std::string& name, const HostBinding& h, Span span) {
  using K = HostBinding::Kind;
  switch (h.kind) {
    case K::Int:
    case K::Unknown: {
      // A dimension of an input's parameter type is that input's extent.
      bool from_input = false;
      for (const auto& [param, axis] : h.param_axes) {
        int i = input_index(param);
        if (i < 0 || axis < 0 || static_cast<size_t>(axis) >= axis_names_[static_cast<size_t>(i)].size()) continue;
        std::string& n = axis_names_[static_cast<size_t>(i)][static_cast<size_t>(axis)];
        if (n.empty()) n = name;
        if (!from_input) bound_dims_[name] = {static_cast<size_t>(i), axis};
        from_input = true;
      }
      if (from_input) return {cir::Var::make(name, cir::Type::scalar(DType::I64), span), true};
      if (!host_dims_.count(name)) host_dims_order_.push_back(name);
      host_dims_.insert(name);
      return {cir::Var::make(name, cir::Type::scalar(DType::I64), span), true};
    }
    case K::Float:
    case K::Bool: {
      DType t = h.kind == K::Float ? DType::F64 : DType::Bool;
      if (!scalars_.count(name)) scalars_order_.push_back(name);
      scalars_[name] = t;
      return {cir::Var::make(name, cir::Type::scalar(t), span), h.kind == K::Float};
    }
    case K::Tensor:
      if (final_)
        diags_->error(span, "tensor '" + name + "' is used in the kernel but is not an input of compute(...)")
            .note(h.decl, "'" + name + "' is declared here")
            .with_hint("pass it in: compute(..., " + name + ")");
      return {};
    case K::Other:
      if (final_)
        diags_->error(span, "'" + name + "' cannot be used inside a kernel")
            .note(h.decl, "'" + name + "' is declared here")
            .with_hint("kernels read numbers from the host and the tensors passed to compute(...)");
      return {};
  }
  return {};
}

Value Lowering::lower_binary(const ast::Binary& b) {
  Value x = lower(*b.lhs);
  Value y = lower(*b.rhs);
  if (!x.ok() || !y.ok()) return {};
  switch (b.op) {
    case ast::BinOp::Add: return binary(BinaryOp::Add, x, y, b.span);
    case ast::BinOp::Sub: return binary(BinaryOp::Sub, x, y, b.span);
    case ast::BinOp::Mul: return binary(BinaryOp::Mul, x, y, b.span);
    case ast::BinOp::Div: return binary(BinaryOp::Div, x, y, b.span);
    case ast::BinOp::Mod: return binary(BinaryOp::Mod, x, y, b.span);
    case ast::BinOp::Pow: return binary(BinaryOp::Pow, x, y, b.span);
    case ast::BinOp::Eq: return binary(BinaryOp::Eq, x, y, b.span);
    case ast::BinOp::Ne: return binary(BinaryOp::Ne, x, y, b.span);
    case ast::BinOp::Lt: return binary(BinaryOp::Lt, x, y, b.span);
    case ast::BinOp::Le: return binary(BinaryOp::Le, x, y, b.span);
    case ast::BinOp::Gt: return binary(BinaryOp::Gt, x, y, b.span);
    case ast::BinOp::Ge: return binary(BinaryOp::Ge, x, y, b.span);
    case ast::BinOp::And: return binary(BinaryOp::And, x, y, b.span);
    case ast::BinOp::Or: return binary(BinaryOp::Or, x, y, b.span);
    case ast::BinOp::MatMul: return matmul(x, y, b);
  }
  return {};
}

Value Lowering::matmul(Value x, Value y, const ast::Binary& b) {
  if (x.rank() < 1 || x.rank() > 2 || y.rank() < 1 || y.rank() > 2) {
    if (final_)
      diags_->error(b.op_span, "'@' multiplies 1-D or 2-D tiles, but here it gets " + rank_text(x) + " and " +
                                   rank_text(y))
          .note(b.lhs->span, "left operand")
          .note(b.rhs->span, "right operand");
    return {};
  }
  bool weak;
  DType t = unify(x, y, weak);
  x = cast_to(x, t);
  y = cast_to(y, t);
  if (x.rank() == 1 && y.rank() == 1) return {cir::make_dot(x.e, y.e, b.span), false};
  return {cir::make_matmul(x.e, y.e, b.span), false};
}

std::string Lowering::rank_text(const Value& v) {
  return v.rank() == 0 ? "a scalar" : "a " + std::to_string(v.rank()) + "-D tile";
}

std::vector<cir::AxisSel> Lowering::lower_items(const ast::Index& idx, int input) {
  std::vector<cir::AxisSel> axes;
  bool ok = true;
  for (size_t k = 0; k < idx.items.size(); ++k) {
    const ast::IndexItem& item = idx.items[k];
    if (!item.is_slice) {
      Value v = lower(*item.index);
      if (!v.ok()) {
        ok = false;
        continue;
      }
      if (v.is_tile() || !is_int(v.dtype())) {
        report_bad_index(*item.index, v);
        ok = false;
        continue;
      }
      // Constant indices past a known extent fail now.
      if (auto c = v.e.as<cir::IntImm>(); c && input >= 0) {
        auto ext = static_extent(static_cast<size_t>(input), static_cast<int>(k));
        if (c->value < 0 || (ext && c->value >= *ext)) {
          if (final_)
            diags_->error(item.span, "index " + std::to_string(c->value) + " is out of range for axis " +
                                         std::to_string(k) + " of '" + sigs_[static_cast<size_t>(input)].path + "'" +
                                         (ext ? " (size " + std::to_string(*ext) + ")" : ""))
                .note(sigs_[static_cast<size_t>(input)].span, "the input is passed here");
          ok = false;
          continue;
        }
      }
      if (input >= 0 && item.index->kind == ast::ExprKind::Name) {
        Symbol* sym = lookup_local(ast::as<ast::Name>(*item.index).name);
        if (sym && sym->kind == SymKind::Loop)
          sites_.push_back({static_cast<size_t>(input), static_cast<int>(k), sym, item.span});
      }
      axes.push_back(cir::AxisSel::at(cast_to(v, DType::I64).e));
    } else {
      Value lo = item.lo ? int_operand(*item.lo, "slice start") : Value{cir::IntImm::make(0), false};
      // `q in 0..seq step 64` slicing `x[.., q:q + 64]` also binds seq to that axis.
      if (input >= 0 && item.lo && item.lo->kind == ast::ExprKind::Name) {
        Symbol* sym = lookup_local(ast::as<ast::Name>(*item.lo).name);
        if (sym && sym->kind == SymKind::Loop)
          sites_.push_back({static_cast<size_t>(input), static_cast<int>(k), sym, item.span});
      }
      Value hi = item.hi ? int_operand(*item.hi, "slice end") : Value{};
      if (!lo.ok() || (item.hi && !hi.ok())) {
        ok = false;
        continue;
      }
      axes.push_back(cir::AxisSel::slice(lo.e, hi.e));
    }
  }
  if (!ok) axes.clear();
  return axes;
}

void Lowering::report_bad_index(const ast::Expr& index, const Value& v) {
  if (!final_) return;
  std::string what = index.kind == ast::ExprKind::Name ? "'" + ast::as<ast::Name>(index).name + "'" : "";
  Diagnostic& d = diags_->error(index.span, (what.empty() ? "this index" : "index " + what) + " has type " +
                                                describe(v) + ", but indices must be integers");
  if (index.kind == ast::ExprKind::Name) {
    const Symbol* sym = lookup_local(ast::as<ast::Name>(index).name);
    if (sym) {
      if (sym->shadows) {
        const char* kind = sym->shadows->kind == SymKind::Loop ? "loop variable" : "variable";
        d.note(sym->decl, what + " refers to this declaration, which shadows the " + kind + " " + what);
        d.note(sym->shadows->decl, "the shadowed " + std::string(kind) + " is declared here");
        d.with_hint("rename one of them, e.g. `let " + sym->name + "_val = ...`");
      } else {
        d.note(sym->decl, what + " is declared here");
      }
    }
  }
}

Value Lowering::lower_index(const ast::Index& idx) {
  std::string base = ast::path_text(*idx.base);
  // X.shape[k]: an extent.
  if (idx.base->kind == ast::ExprKind::Field && ast::as<ast::Field>(*idx.base).field == "shape") {
    std::string of = ast::path_text(*ast::as<ast::Field>(*idx.base).base);
    int i = input_index(of);
    std::optional<int64_t> k = idx.items.size() == 1 && !idx.items[0].is_slice ? constant_int(*idx.items[0].index) : std::nullopt;
    if (i < 0 || !k || *k < 0 || *k >= static_cast<int64_t>(ranks_[static_cast<size_t>(i)])) {
      error_if_final(idx.span, i < 0 ? "'" + of + "' is not an input of this compute block"
                                     : "write `" + of + ".shape[k]` with a constant k below the input's rank");
      return {};
    }
    return {cir::Var::make(axis_name(static_cast<size_t>(i), static_cast<size_t>(*k)), cir::Type::scalar(DType::I64), idx.span), true};
  }
  if (base.empty()) {
    error_if_final(idx.base->span, "only inputs, 'out', shared arrays and local tiles can be indexed in a kernel");
    return {};
  }
  cir::Type type;
  std::string buffer;
  int input = -1;
  bool weak = false;  // an element of a local tile of literals (`let t = ones(4)`) adopts the type it meets
  if (Symbol* sym = lookup_local(base)) {
    if (poisoned_.count(sym)) return {};
    weak = sym->weak;
    if (sym->type.is_scalar()) {
      if (final_)
        diags_->error(idx.span, "'" + base + "' is a scalar and cannot be indexed").note(sym->decl, "declared here");
      return {};
    }
    type = sym->type;
    buffer = sym->cir_name;
  } else if (base == "out") {
    type = out_type();
    buffer = "out";
  } else if ((input = input_index(base)) >= 0) {
    type = input_type(static_cast<size_t>(input));
    buffer = base;
  } else {
    Value v = lower(*idx.base);  // reports the unknown name
    if (v.ok()) error_if_final(idx.base->span, "'" + base + "' cannot be indexed");
    return {};
  }
  // out's type here is what is stored into it (its element, or a tile);
  // its axes come from the stores, checked when they are known.
  bool element_of_out = buffer == "out" && type.is_scalar();
  if (idx.items.size() > type.rank() && !element_of_out) {
    if (final_)
      diags_->error(idx.span, "'" + base + "' has " + axes_text(type.rank()) + " but is indexed with " +
                                  std::to_string(idx.items.size()));
    return {};
  }
  std::vector<cir::AxisSel> axes = lower_items(idx, input);
  if (axes.size() != idx.items.size()) return {};
  if (element_of_out) return out_read(std::move(axes), idx.span);
  return {cir::make_access(buffer, type, std::move(axes), idx.span), weak};
}

}  // namespace zyntax::lowering
