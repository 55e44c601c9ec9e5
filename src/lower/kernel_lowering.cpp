#include "lower/kernel_lowering.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "cir/passes/simplify.hpp"
#include "cir/pass_manager.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "lower/output_shape.hpp"
#include "lower/parallel_loops.hpp"

namespace zyntax {

namespace {

using cir::Expr;

// A lowered expression. `weak` marks literals and host numbers: they take the
// type of whatever they are combined with (`x[i] * 0.5` stays f32).
struct Value {
  Expr e;
  bool weak = false;
  bool ok() const { return e.defined(); }
  DType dtype() const { return e->type.dtype; }
  bool is_tile() const { return !e->type.is_scalar(); }
  size_t rank() const { return e->type.rank(); }
};

enum class SymKind { Local, Loop, Shared };

struct Symbol {
  std::string name;      // as written
  std::string cir_name;  // unique in the kernel
  SymKind kind = SymKind::Local;
  bool is_mutable = false;
  Span decl;
  const Symbol* shadows = nullptr;  // the symbol of the same name it hides
  const void* key = nullptr;        // the declaring AST node: the key of its inferred type
  cir::Type type;
  bool weak = false;
  // Loop variables: the range, and the bare name of the upper bound if it has one.
  Expr lo, hi, step;
  std::string bound_name;
};

// What is inferred about a variable across iterations (see run()).
struct Inferred {
  DType dtype = DType::F64;
  bool weak = true;
  std::vector<Expr> shape;  // from the first tile assigned
  bool tile = false;

  bool same(const Inferred& o) const {
    return dtype == o.dtype && weak == o.weak && tile == o.tile && shape.size() == o.shape.size();
  }
};

struct IndexSite {
  size_t input;
  int axis;
  const Symbol* loop;
  Span span;
};

const char* kKernelFunctions =
    "math functions (exp, log, sqrt, rsqrt, tanh, relu, gelu, sigmoid, silu, min, max, pow, ...), dot, reduce, "
    "row_max, row_min, row_sum, transpose, zeros, ones, full, where, barrier, and casts such as f32(x)";

std::string axes_text(size_t n) { return std::to_string(n) + (n == 1 ? " axis" : " axes"); }

DType default_of(DType t) { return is_float(t) ? DType::F32 : DType::I64; }

class Lowering {
 public:
  Lowering(const ast::Compute& c, std::string name, const std::vector<InputSignature>& sigs, const HostEnv& host)
      : node_(c), name_(std::move(name)), sigs_(sigs), host_(host) {}

  std::optional<LoweredCompute> run(DiagnosticEngine& diags) {
    annotations_ = read_kernel_annotations(node_, diags);
    if (!check_inputs(diags)) return std::nullopt;
    // Types of `var`s and of `out` depend on later assignments, and input
    // dimension names on how the body indexes them: iterate quietly until
    // nothing changes, then lower once more, reporting.
    for (int iter = 0; iter < 6; ++iter) {
      DiagnosticEngine scratch(dummy_sources_);
      auto names_before = axis_names_;
      lower_body(scratch, /*final=*/false);
      rename_inferred_dims(names_before);
      if (iter > 0 && names_before == axis_names_ && same_inferred()) break;
    }
    size_t errors_before = diags.error_count();
    lower_body(diags, /*final=*/true);
    if (diags.error_count() > errors_before) return std::nullopt;
    LoweredCompute out;
    out.annotations = annotations_;
    out.kernel = assemble(diags);
    if (diags.error_count() > errors_before) return std::nullopt;
    return out;
  }

 private:
  // An input axis named during this iteration (`q.d1` became `seq`): shapes
  // inferred under the old name take the new one, or a `var` typed from the
  // previous iteration would keep naming a dimension the kernel no longer has.
  void rename_inferred_dims(const std::vector<std::vector<std::string>>& names_before) {
    cir::Substitution renamed;
    for (size_t i = 0; i < axis_names_.size(); ++i)
      for (size_t a = 0; a < axis_names_[i].size(); ++a) {
        std::string old_name = axis_name_in(names_before, i, a), new_name = axis_name(i, a);
        if (old_name != new_name) renamed[old_name] = cir::Var::make(new_name, cir::Type::scalar(DType::I64));
      }
    if (renamed.empty()) return;
    for (auto& [key, inf] : inferred_)
      for (Expr& d : inf.shape) d = cir::substitute(d, renamed);
  }

  // ------------------------------------------------------------ setup

  bool check_inputs(DiagnosticEngine& diags) {
    bool ok = true;
    std::map<std::string, Span> seen;
    for (size_t i = 0; i < node_.inputs.size(); ++i) {
      const ast::Expr& e = *node_.inputs[i];
      std::string path = ast::path_text(e);
      if (path.empty()) {
        diags.error(e.span, "a compute input must be a name or a field path such as weights.w")
            .with_hint("bind the value first: `let t = ...` and pass `t`");
        ok = false;
        continue;
      }
      if (auto it = seen.find(path); it != seen.end()) {
        diags.error(e.span, "'" + path + "' is passed to compute twice").note(it->second, "first passed here");
        ok = false;
      }
      seen[path] = e.span;
      if (path == "out") {
        diags.error(e.span, "'out' names the kernel's result and cannot be an input");
        ok = false;
      }
    }
    if (sigs_.size() != node_.inputs.size()) ok = false;
    // Inputs whose rank the host does not know (`load(...)` at check time)
    // get the rank their deepest indexing implies.
    ranks_.resize(sigs_.size());
    for (size_t i = 0; i < sigs_.size() && ok; ++i)
      ranks_[i] = sigs_[i].rank ? *sigs_[i].rank : implied_rank(sigs_[i].path) + sigs_[i].rank_guess_extra;
    axis_names_.resize(sigs_.size());
    for (size_t i = 0; i < sigs_.size() && ok; ++i) axis_names_[i].resize(static_cast<size_t>(ranks_[i]));
    return ok;
  }

  int implied_rank(const std::string& path) {
    int best = 1;
    visit_exprs(*node_.body, [&](const ast::Expr& e) {
      if (e.kind == ast::ExprKind::Index && ast::path_text(*ast::as<ast::Index>(e).base) == path)
        best = std::max(best, static_cast<int>(ast::as<ast::Index>(e).items.size()));
    });
    return best;
  }

  template <class F>
  static void visit_exprs(const ast::Block& b, F&& f);

  // ------------------------------------------------------------ per-iteration state

  void reset() {
    symbols_.clear();
    scopes_.clear();
    scopes_.emplace_back();
    unresolved_.clear();
    unresolved_order_.clear();
    range_bounds_.clear();
    sites_.clear();
    host_dims_.clear();
    host_dims_order_.clear();
    scalars_.clear();
    scalars_order_.clear();
    used_names_.clear();
    loops_.clear();
    yield_loops_.reset();
    yield_span_ = {};
    saw_yield_ = false;
    saw_out_store_ = false;
    saw_statement_ = false;
    poisoned_.clear();
    for (const InputSignature& s : sigs_) used_names_.insert(s.path);
    used_names_.insert("out");
  }

  void lower_body(DiagnosticEngine& diags, bool final) {
    diags_ = &diags;
    final_ = final;
    errors_at_start_ = diags.error_count();
    previous_ = std::move(inferred_);
    inferred_.clear();
    reset();
    body_ = lower_block(*node_.body);
    check_kernel_shape();
    bind_dimensions();
  }

  void error_if_final(Span s, const std::string& msg) {
    if (final_) diags_->error(s, msg);
  }

  // ------------------------------------------------------------ names

  std::string fresh_name(const std::string& base) {
    std::string n = base;
    for (int k = 1; used_names_.count(n); ++k) n = base + "_" + std::to_string(k);
    used_names_.insert(n);
    return n;
  }

  Symbol* declare(const std::string& name, SymKind kind, Span decl, const void* key) {
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

  Symbol* lookup_local(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return nullptr;
  }

  int input_index(const std::string& path) const {
    for (size_t i = 0; i < sigs_.size(); ++i)
      if (sigs_[i].path == path) return static_cast<int>(i);
    return -1;
  }

  // The CIR type of input i: its dims are named by how the kernel binds them.
  cir::Type input_type(size_t i) const {
    cir::Type t;
    t.dtype = sigs_[i].dtype.value_or(DType::F32);
    for (size_t a = 0; a < axis_names_[i].size(); ++a)
      t.shape.push_back(cir::Var::make(axis_name(i, a), cir::Type::scalar(DType::I64)));
    return t;
  }

  std::string axis_name(size_t i, size_t a) const { return axis_name_in(axis_names_, i, a); }

  // An axis the body has not named is `input.dN`.
  std::string axis_name_in(const std::vector<std::vector<std::string>>& names, size_t i, size_t a) const {
    return names[i][a].empty() ? sigs_[i].path + ".d" + std::to_string(a) : names[i][a];
  }

  cir::Type out_type() const {
    const Inferred* inf = previous(&node_);
    cir::Type t;
    t.dtype = inf ? resolved(*inf) : DType::F32;
    if (inf) t.shape = inf->shape;
    return t;
  }

  // A read of `out` (`out[k] += x[i]`): before any store has typed it, a
  // weak integer, which takes the type of what it meets, so that the read
  // does not decide the type the stores give; a weak type stays weak.
  Value out_read(std::vector<cir::AxisSel> axes, Span span) const {
    const Inferred* inf = previous(&node_);
    cir::Type t = out_type();
    if (!inf) t.dtype = DType::I64;
    return {cir::make_access("out", t, std::move(axes), span), !inf || inf->weak};
  }

  // ------------------------------------------------------------ types

  bool same_inferred() const {
    if (previous_.size() != inferred_.size()) return false;
    for (const auto& [k, v] : inferred_) {
      auto it = previous_.find(k);
      if (it == previous_.end() || !it->second.same(v)) return false;
    }
    return true;
  }

  // What the previous iteration inferred for a variable, `out` or a shared array.
  const Inferred* previous(const void* key) const {
    auto it = previous_.find(key);
    return it == previous_.end() ? nullptr : &it->second;
  }

  static DType resolved(const Inferred& inf) { return inf.weak ? default_of(inf.dtype) : inf.dtype; }

  // Records a value assigned to a variable (or to `out`, or a shared array):
  // its type joins what this iteration saw before.
  void record(const void* key, const Value& v) {
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

  static Value cast_to(const Value& v, DType t) {
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

  static Expr literal(const Scalar& s, Span span) {
    if (is_float(s.dtype)) return cir::FloatImm::make(s.f, s.dtype, span);
    if (is_bool(s.dtype)) return cir::BoolImm::make(s.truthy(), span);
    return cir::IntImm::make(s.as_int64(), s.dtype, span);
  }

  // Brings two operands to one dtype. Weak operands adopt the other's type;
  // a weak float meeting an integer gives f32.
  static DType unify(const Value& a, const Value& b, bool& weak) {
    weak = a.weak && b.weak;
    if (a.weak == b.weak) return promote(a.dtype(), b.dtype());
    const Value& w = a.weak ? a : b;
    const Value& c = a.weak ? b : a;
    if (is_float(w.dtype()) && !is_float(c.dtype())) return DType::F32;
    return c.dtype();
  }

  Value to_bool(const Value& v, Span span) {
    if (!v.ok()) return v;
    if (v.dtype() == DType::Bool) return v;
    Value zero{cir::IntImm::make(0, DType::I64, span), true};
    return binary(BinaryOp::Ne, v, zero, span);
  }

  Value binary(BinaryOp op, Value a, Value b, Span span) {
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

  // ------------------------------------------------------------ statements

  cir::Block lower_block(const ast::Block& b) {
    scopes_.emplace_back();
    cir::Block out;
    for (const ast::StmtPtr& s : b.stmts) lower_stmt(*s, out);
    scopes_.pop_back();
    return out;
  }

  void lower_stmt(const ast::Stmt& s, cir::Block& out) {
    using ast::StmtKind;
    switch (s.kind) {
      case StmtKind::Annotation: {
        // Annotations are read up front; they belong before the body.
        const auto& a = ast::as<ast::AnnotationStmt>(s);
        if (saw_statement_ && final_)
          diags_->error(a.span, "@" + a.annotation.name + " must come before the kernel's statements");
        return;
      }
      case StmtKind::Let: return lower_let(ast::as<ast::Let>(s), out);
      case StmtKind::Assign: saw_statement_ = true; return lower_assign(ast::as<ast::Assign>(s), out);
      case StmtKind::ExprStmt: saw_statement_ = true; return lower_expr_stmt(ast::as<ast::ExprStmt>(s), out);
      case StmtKind::If: {
        saw_statement_ = true;
        const auto& i = ast::as<ast::If>(s);
        Value c = lower(*i.cond);
        if (c.ok() && c.is_tile()) {
          error_if_final(i.cond->span, "an if condition must be a single value, not a tile");
          c = {};
        }
        c = to_bool(c, i.cond->span);
        cir::Block t = lower_block(i.then_body);
        cir::Block e = lower_block(i.else_body);
        if (c.ok()) out.push_back(cir::make_if(c.e, std::move(t), std::move(e), s.span));
        return;
      }
      case StmtKind::For: saw_statement_ = true; return lower_for(ast::as<ast::For>(s), 0, out);
      case StmtKind::Yield: saw_statement_ = true; return lower_yield(ast::as<ast::Yield>(s), out);
      case StmtKind::SharedVar: saw_statement_ = true; return lower_shared(ast::as<ast::SharedVar>(s), out);
      case StmtKind::BlockStmt: {
        cir::Block inner = lower_block(ast::as<ast::BlockStmt>(s).block);
        out.insert(out.end(), inner.begin(), inner.end());
        return;
      }
      case StmtKind::While:
        error_if_final(s.span, "while loops are not allowed in kernels: use for with a range");
        return;
      case StmtKind::Return:
      case StmtKind::Break:
      case StmtKind::Continue:
        error_if_final(s.span, "return, break and continue are not allowed in kernels");
        return;
      case StmtKind::FuncDef:
      case StmtKind::Import:
      case StmtKind::Config:
        error_if_final(s.span, "this statement belongs in host code, not inside compute { }");
        return;
    }
  }

  void lower_let(const ast::Let& l, cir::Block& out) {
    saw_statement_ = true;
    if (l.destructure) {
      error_if_final(l.span, "tuple destructuring is not available inside kernels");
      return;
    }
    if (l.names[0] == "out") {
      error_if_final(l.name_spans[0], "'out' names the kernel's result; choose another name");
      return;
    }
    Value v;
    if (l.init) v = lower(*l.init);
    std::optional<DType> declared;
    if (l.type) {
      declared = parse_dtype(l.type->name);
      if (!declared) {
        error_if_final(l.type->span, "kernel variables take an element type such as f32 or i64");
        return;
      }
    }
    if (!l.init && !declared) return;
    if (l.init && !v.ok()) {
      // Declare anyway so later uses do not pile up "unknown name" errors.
      Symbol* sym = declare(l.names[0], SymKind::Local, l.name_spans[0], &l);
      sym->is_mutable = l.is_mutable;
      sym->type = cir::Type::scalar(DType::F32);
      poisoned_.insert(sym);
      return;
    }
    if (!l.is_mutable) {
      if (declared) v = cast_to(v, *declared);
      Symbol* sym = declare(l.names[0], SymKind::Local, l.name_spans[0], &l);
      sym->type = v.e->type;
      sym->weak = v.weak;
      if (v.e->type.is_scalar()) let_values_[sym->cir_name] = v.e;
      out.push_back(cir::make_let(sym->cir_name, v.e, l.span));
      return;
    }
    // A mutable local: its type is what all its assignments agree on, as
    // the previous iteration saw them.
    if (l.init) record(&l, v);
    const Inferred* prev = previous(&l);
    Inferred inf = prev ? *prev : Inferred{l.init ? v.dtype() : DType::F32, l.init && v.weak, {}, false};
    if (!prev && l.init && v.is_tile()) {
      inf.tile = true;
      inf.shape = v.e->type.shape;
    }
    DType t = declared ? *declared : resolved(inf);
    std::vector<Expr> shape = inf.shape;
    if (inf.tile && l.init && !v.is_tile()) {  // a number now, a tile later
      std::optional<std::vector<Expr>> visible = visible_shape(inf.shape);
      if (!visible) {
        if (final_)
          diags_->error(l.name_spans[0], "'" + l.names[0] + "' starts as a number but is later given a tile whose size "
                                         "is not known here")
              .with_hint("declare it with a tile of the right size, e.g. `var " + l.names[0] + " = zeros(rows, cols)`");
        Symbol* sym = declare(l.names[0], SymKind::Local, l.name_spans[0], &l);
        sym->is_mutable = true;
        poisoned_.insert(sym);
        return;
      }
      shape = *visible;
    }
    cir::Type type = inf.tile ? cir::Type::tensor(t, shape) : cir::Type::scalar(t);
    Symbol* sym = declare(l.names[0], SymKind::Local, l.name_spans[0], &l);
    sym->is_mutable = true;
    sym->type = type;
    Expr init;
    if (l.init) {
      Value c = cast_to(v, t);
      init = (inf.tile && !v.is_tile()) ? cir::make_fill(c.e, shape, l.init->span) : c.e;
    } else {
      init = cir::make_fill(literal(Scalar::from_int(0, t), l.span), type.shape, l.span);
      if (!inf.tile) init = literal(Scalar::from_int(0, t), l.span);
    }
    out.push_back(cir::make_decl(sym->cir_name, type, init, l.span));
  }

  // The shape a tile variable is declared with, from a later assignment's
  // tile, with lets replaced by their values. Null if it needs a name not
  // visible at the declaration (declared later, or a variable of an inner loop).
  std::optional<std::vector<Expr>> visible_shape(const std::vector<Expr>& shape) {
    std::vector<Expr> out;
    bool ok = true;
    for (const Expr& d : shape) {
      Expr e = d;
      for (int i = 0; i < 8; ++i) {
        Expr next = cir::substitute(e, let_values_);
        if (next.same_as(e)) break;
        e = next;
      }
      e = cir::simplify(e);
      ok = ok && names_visible(e);
      out.push_back(e);
    }
    if (!ok) return std::nullopt;
    return out;
  }

  bool names_visible(const Expr& e) const {
    if (auto v = e.as<cir::Var>()) {
      if (!local_names_.count(v->name)) return true;  // a dimension or host value
      for (const auto& scope : scopes_)
        for (const auto& [name, sym] : scope)
          if (sym->cir_name == v->name) return true;
      return false;
    }
    if (auto b = e.as<cir::Binary>()) return names_visible(b->a) && names_visible(b->b);
    if (auto c = e.as<cir::Cast>()) return names_visible(c->value);
    if (auto u = e.as<cir::Unary>()) return names_visible(u->a);
    if (e.as<cir::IntImm>()) return true;
    return false;
  }

  void lower_assign(const ast::Assign& a, cir::Block& out) {
    std::string target_base = ast::path_text(a.target->kind == ast::ExprKind::Index ? *ast::as<ast::Index>(*a.target).base : *a.target);
    if (target_base == "out" && !lookup_local("out")) saw_out_store_ = true;  // even if the value has errors
    Value rhs = lower(*a.value);
    static const BinaryOp kOps[] = {BinaryOp::Add, BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div};
    auto combine = [&](Value current) {
      if (a.op == ast::AssignOp::Set) return rhs;
      return binary(kOps[static_cast<int>(a.op)], current, rhs, a.span);
    };
    const ast::Expr& target = *a.target;
    if (target.kind == ast::ExprKind::Name) {
      const std::string& name = ast::as<ast::Name>(target).name;
      if (name == "out") {
        Value v = combine(read_out_whole(target.span));
        store_out({}, v, a.span, out);
        return;
      }
      Symbol* sym = lookup_local(name);
      if (!sym) {
        if (!final_) return;
        if (input_index(name) >= 0)
          diags_->error(target.span, "input '" + name + "' is read-only in the kernel");
        else
          diags_->error(target.span, "assignment to undeclared name '" + name + "'")
              .with_hint("declare it first: `var " + name + " = ...`");
        return;
      }
      if (sym->kind == SymKind::Loop) {
        if (final_) diags_->error(target.span, "cannot assign to loop variable '" + name + "'").note(sym->decl, "declared here");
        return;
      }
      if (!sym->is_mutable) {
        if (final_)
          diags_->error(target.span, "cannot assign to '" + name + "': it was declared with let")
              .note(sym->decl, "declared here")
              .with_hint("declare it with `var " + name + " = ...` to make it mutable");
        return;
      }
      Value v = combine(Value{cir::Var::make(sym->cir_name, sym->type, target.span), false});
      if (!v.ok()) return;
      record(sym->key, v);
      if (poisoned_.count(sym)) return;
      if (sym->type.is_scalar() && v.is_tile()) {
        // Only when the types never settle: the tile's size is not known
        // where the variable is declared, so it stays a number.
        if (final_)
          diags_->error(a.value->span, "'" + name + "' holds a number, but a tile is assigned to it here")
              .note(sym->decl, "declared here")
              .with_hint("declare it with a tile of the right size, e.g. `var " + name + " = zeros(rows, cols)`, or "
                         "reduce the tile to a number (`row_max`, `sum`, ...)");
        return;
      }
      DType t = sym->type.dtype;
      Value c = cast_to(v, t);
      out.push_back(cir::make_assign(sym->cir_name, c.e, a.span));
      return;
    }
    if (target.kind == ast::ExprKind::Index) {
      const auto& idx = ast::as<ast::Index>(target);
      std::string base = ast::path_text(*idx.base);
      if (base == "out" && !lookup_local("out")) {
        std::vector<cir::AxisSel> axes = lower_items(idx, -1);
        if (axes.size() != idx.items.size()) return;
        Value current;
        if (a.op != ast::AssignOp::Set) current = out_read(axes, target.span);
        store_out(axes, combine(current), a.span, out);
        return;
      }
      Symbol* sym = base.empty() ? nullptr : lookup_local(base);
      if (sym && (sym->kind == SymKind::Shared || (sym->is_mutable && !sym->type.is_scalar()))) {
        std::vector<cir::AxisSel> axes = lower_items(idx, -1);
        if (axes.size() != idx.items.size()) return;
        if (axes.size() > sym->type.rank()) {
          error_if_final(target.span, "'" + base + "' has " + axes_text(sym->type.rank()) + " but is indexed with " +
                                          std::to_string(axes.size()));
          return;
        }
        Value current;
        if (a.op != ast::AssignOp::Set) current = read_buffer(sym->cir_name, sym->type, axes, target.span);
        Value v = combine(current);
        if (!v.ok()) return;
        if (sym->kind == SymKind::Shared) record(sym->key, v);
        out.push_back(cir::make_store(sym->cir_name, axes, cast_to(v, sym->type.dtype).e, a.span));
        return;
      }
      if (input_index(base) >= 0) {
        error_if_final(target.span, "input '" + base + "' is read-only in the kernel");
        return;
      }
      if (sym) {
        error_if_final(target.span, "'" + base + "' is not an array that can be written element by element");
        return;
      }
      error_if_final(target.span, "kernels can write to 'out', shared arrays and local tiles only");
      return;
    }
    error_if_final(target.span, "kernels can write to 'out', shared arrays and local variables only");
  }

  Value read_out_whole(Span span) { return out_read({}, span); }

  Value read_buffer(const std::string& name, const cir::Type& type, const std::vector<cir::AxisSel>& axes, Span span) {
    return {cir::make_access(name, type, axes, span), false};
  }

  void store_out(std::vector<cir::AxisSel> axes, const Value& v, Span span, cir::Block& out) {
    if (!v.ok()) return;
    if (annotations_.kind == cir::KernelKind::Reduce) {
      error_if_final(span, "a reduce kernel produces its result with yield, not by writing 'out'");
      return;
    }
    record(&node_, v);
    out.push_back(cir::make_store("out", std::move(axes), cast_to(v, out_type().dtype).e, span));
  }

  void lower_expr_stmt(const ast::ExprStmt& s, cir::Block& out) {
    const ast::Expr& e = *s.expr;
    if (e.kind == ast::ExprKind::Call) {
      const auto& call = ast::as<ast::Call>(e);
      if (call.callee->kind == ast::ExprKind::Name && ast::as<ast::Name>(*call.callee).name == "barrier") {
        if (!call.args.empty()) error_if_final(e.span, "barrier() takes no arguments");
        out.push_back(cir::make_barrier(cir::FenceScope::Block, e.span));
        return;
      }
    }
    Value v = lower(e);
    if (v.ok()) error_if_final(e.span, "this expression's value is not used");
  }

  void lower_for(const ast::For& f, size_t range_index, cir::Block& out) {
    if (range_index == f.ranges.size()) {
      cir::Block body;
      for (const ast::StmtPtr& s : f.body.stmts) lower_stmt(*s, body);
      out.insert(out.end(), body.begin(), body.end());
      return;
    }
    const ast::ForRange& r = f.ranges[range_index];
    if (!r.hi) {
      error_if_final(r.span, "kernel loops run over a range: `for i in 0..n`");
      return;
    }
    Value lo = int_operand(*r.lo, "loop start");
    Value hi = int_operand(*r.hi, "loop bound");
    Value step = r.step ? int_operand(*r.step, "loop step") : Value{cir::IntImm::make(1), false};
    if (step.ok())
      if (auto k = step.e.as<cir::IntImm>(); k && k->value <= 0)
        error_if_final(r.step->span, "the loop step must be positive");
    scopes_.emplace_back();
    Symbol* sym = declare(r.var, SymKind::Loop, r.var_span, &r);
    sym->type = cir::Type::scalar(DType::I64);
    sym->lo = lo.e;
    sym->hi = hi.e;
    sym->step = step.e;
    if (r.hi->kind == ast::ExprKind::Name) {
      sym->bound_name = ast::as<ast::Name>(*r.hi).name;
      range_bounds_.insert(sym->bound_name);
    }
    loops_.push_back(sym);
    cir::Block body;
    lower_for(f, range_index + 1, body);
    loops_.pop_back();
    scopes_.pop_back();
    if (lo.ok() && hi.ok() && step.ok())
      out.push_back(cir::make_for(sym->cir_name, lo.e, hi.e, step.e, std::move(body), cir::LoopKind::Serial, 0, r.span));
  }

  Value int_operand(const ast::Expr& e, const char* what) {
    Value v = lower(e);
    if (!v.ok()) return v;
    if (v.is_tile() || !is_int(v.dtype())) {
      if (final_)
        diags_->error(e.span, std::string("the ") + what + " must be an integer, but this is " + describe(v));
      return {};
    }
    return cast_to(v, DType::I64);
  }

  static std::string describe(const Value& v) {
    if (v.is_tile()) return "a tile of " + std::string(dtype_name(v.dtype()));
    return std::string(v.weak && is_float(v.dtype()) ? "a float" : dtype_name(v.dtype()));
  }

  void lower_yield(const ast::Yield& y, cir::Block& out) {
    saw_yield_ = true;
    if (annotations_.kind != cir::KernelKind::Reduce) {
      if (final_)
        diags_->error(y.span, "yield is only allowed in reduce kernels")
            .with_hint("declare the kernel with `@kernel reduce(+)` (or another operator), or write `out[...] = ...`");
      return;
    }
    bool arg = is_arg_reduce(annotations_.reduce_op);
    const ast::Expr* value_expr = y.value.get();
    const ast::Expr* index_expr = nullptr;
    if (y.value->kind == ast::ExprKind::Tuple) {
      const auto& t = ast::as<ast::Tuple>(*y.value);
      if (t.elems.size() != 2 || !arg) {
        error_if_final(y.value->span, arg ? "argmax/argmin yield a (value, index) pair"
                                          : "only argmax and argmin reductions yield a (value, index) pair");
        return;
      }
      value_expr = t.elems[0].get();
      index_expr = t.elems[1].get();
    } else if (arg) {
      if (final_)
        diags_->error(y.value->span, "an arg reduction yields a (value, index) pair")
            .with_hint("write `yield (data[i], i)`");
      return;
    }
    Value v = lower(*value_expr);
    Value index;
    if (index_expr) index = int_operand(*index_expr, "yielded index");
    if (!v.ok() || (index_expr && !index.ok())) return;
    if (v.is_tile()) {
      error_if_final(value_expr->span, "yield takes a single value, not a tile");
      return;
    }
    // The loops around the yield: the reduced one drops out of the result.
    if (!yield_loops_) {
      yield_loops_ = loops_;
      yield_span_ = y.span;
    } else if (*yield_loops_ != loops_) {
      if (final_)
        diags_->error(y.span, "every yield of a kernel must sit in the same loops")
            .note(yield_span_, "the first yield is here");
      return;
    }
    std::vector<Expr> out_index;
    if (annotations_.reduce_axis) {
      size_t axis = static_cast<size_t>(*annotations_.reduce_axis);
      if (axis >= loops_.size()) {
        if (final_)
          diags_->error(y.span, "reduce axis=" + std::to_string(axis) + " needs at least " + std::to_string(axis + 1) +
                                    " loops around the yield, but there are " + std::to_string(loops_.size()))
              .note(annotations_.kind_span, "the axis is given here");
        return;
      }
      // A kept loop is an axis of the output, whose extent cannot change
      // from one iteration of another loop to the next.
      for (size_t i = 0; i < loops_.size(); ++i) {
        if (i == axis) continue;
        for (const Symbol* other : loops_) {
          if (other == loops_[i] || !(cir::reads_any(loops_[i]->lo, {other->cir_name}) || cir::reads_any(loops_[i]->hi, {other->cir_name}) ||
                                      cir::reads_any(loops_[i]->step, {other->cir_name})))
            continue;
          if (final_)
            diags_->error(loops_[i]->decl, "the range of loop '" + loops_[i]->name + "' depends on loop '" + other->name +
                                               "', but it is an axis of the reduction's output, which has one size")
                .note(annotations_.kind_span, "the reduction keeps every loop but axis " + std::to_string(axis))
                .with_hint("reduce over '" + loops_[i]->name + "' instead, or give it a fixed range and skip elements with an if");
          return;
        }
      }
      for (size_t i = 0; i < loops_.size(); ++i)
        if (i != axis) out_index.push_back(normalized_index(*loops_[i]));
    }
    record(&node_, v);
    DType t = out_type().dtype;
    if (arg) t = v.weak ? default_of(v.dtype()) : v.dtype();
    out.push_back(cir::make_yield(cast_to(v, t).e, index.e, std::move(out_index), y.span));
  }

  // (v - lo) / step: the position of loop variable v's iteration.
  static Expr normalized_index(const Symbol& loop) {
    Expr v = cir::Var::make(loop.cir_name, cir::Type::scalar(DType::I64));
    auto is_const = [](const Expr& e, int64_t k) { return e.as<cir::IntImm>() && e.as<cir::IntImm>()->value == k; };
    Expr rel = is_const(loop.lo, 0) ? v : cir::simplify(v - loop.lo);
    return is_const(loop.step, 1) ? rel : cir::simplify(rel / loop.step);
  }

  static Expr trip_count(const Symbol& loop) {
    auto is_const = [](const Expr& e, int64_t k) { return e.as<cir::IntImm>() && e.as<cir::IntImm>()->value == k; };
    if (is_const(loop.lo, 0) && is_const(loop.step, 1)) return loop.hi;
    Expr n = cir::max(loop.hi - loop.lo, cir::i64(0));
    return cir::simplify((n + loop.step - cir::i64(1)) / loop.step);
  }

  void lower_shared(const ast::SharedVar& s, cir::Block& out) {
    std::vector<Expr> shape;
    for (const ast::ExprPtr& d : s.dims) {
      Value v = int_operand(*d, "shared array size");
      if (!v.ok()) return;
      shape.push_back(v.e);
    }
    std::optional<DType> declared;
    if (!s.dtype.empty()) {
      declared = parse_dtype(s.dtype);
      if (!declared) {
        error_if_final(s.span, "unknown element type '" + s.dtype + "'");
        return;
      }
    }
    const Inferred* prev = previous(&s);
    DType t = declared ? *declared : prev ? resolved(*prev) : DType::F32;
    Symbol* sym = declare(s.name, SymKind::Shared, s.name_span, &s);
    sym->type = cir::Type::tensor(t, shape);
    out.push_back(cir::make_allocate(sym->cir_name, sym->type, cir::MemorySpace::Shared, s.span));
  }

  // ------------------------------------------------------------ checks after the walk

  // Errors that follow from others (a kernel "never writes" when its store
  // failed, a bound left unbound by a broken index) are not reported again.
  bool other_errors() const { return diags_->error_count() > errors_at_start_; }

  void check_kernel_shape() {
    if (!final_ || other_errors()) return;
    bool reduce = annotations_.kind == cir::KernelKind::Reduce;
    if (reduce && !saw_yield_) {
      diags_->error(annotations_.kind_span.valid() ? annotations_.kind_span : node_.span,
                    "a reduce kernel must yield the values it reduces")
          .with_hint("write `yield x[i]` inside the loops");
    }
    if (!reduce && !saw_out_store_) {
      diags_->error(node_.span, "the kernel never writes its result")
          .with_hint("assign to `out[...]` (or to `out` as a whole tile)");
    }
  }

  // Names that nothing in scope binds are dimensions if a loop `v in 0..N`
  // indexes an input with `v` directly: then N is that input's extent.
  void bind_dimensions() {
    for (const std::string& name : unresolved_order_) {
      std::vector<const IndexSite*> found;
      for (const IndexSite& s : sites_)
        if (s.loop->bound_name == name) found.push_back(&s);
      if (found.empty()) {
        if (final_ && (!other_errors() || !range_bounds_.count(name))) report_unbound(name);
        continue;
      }
      for (const IndexSite* s : found) {
        std::string& n = axis_names_[s->input][static_cast<size_t>(s->axis)];
        if (n.empty()) n = name;
      }
      bound_dims_[name] = {found[0]->input, found[0]->axis};
      if (!final_) continue;
      // Static sizes that disagree are an error now, not at run time.
      for (const IndexSite* s : found) {
        auto a = static_extent(found[0]->input, found[0]->axis), b = static_extent(s->input, s->axis);
        if (a && b && *a != *b) {
          diags_->error(s->span, "dimension '" + name + "' is " + std::to_string(*b) + " here (" + sigs_[s->input].path +
                                     " axis " + std::to_string(s->axis) + ")")
              .note(found[0]->span, "but " + std::to_string(*a) + " here (" + sigs_[found[0]->input].path + " axis " +
                                        std::to_string(found[0]->axis) + ")");
          break;
        }
      }
    }
  }

  std::optional<int64_t> static_extent(size_t input, int axis) const {
    const auto& e = sigs_[input].extents;
    return static_cast<size_t>(axis) < e.size() ? e[static_cast<size_t>(axis)] : std::nullopt;
  }

  void report_unbound(const std::string& name) {
    const auto& uses = unresolved_.at(name);
    if (!range_bounds_.count(name)) {  // never a loop bound: just an unknown name
      diags_->error(uses.front(), "unknown name '" + name + "'")
          .with_hint("kernels see their inputs, their own variables, and numbers defined on the host");
      return;
    }
    Diagnostic& d = diags_->error(uses.front(), "unbound dimension '" + name + "'");
    d.with_hint("bind it with a host variable (`let " + name + " = 128`), a parameter type (`x: tensor[" + name +
                ", ...]`), or index an input with a loop over it (`for i in 0.." + name + ": ... x[i]`)");
    for (size_t i = 1; i < uses.size() && i < 3; ++i) d.note(uses[i], "also used here");
  }

  // ------------------------------------------------------------ expressions

  Value lower(const ast::Expr& e) {
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

  Value whole_input(size_t i, Span span) {
    return {cir::make_access(sigs_[i].path, input_type(i), {}, span), false};
  }

  Value lower_name(const ast::Name& n) {
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
    // Unbound for now: a dimension if the body's indexing binds it.
    auto& uses = unresolved_[name];
    if (uses.empty()) unresolved_order_.push_back(name);
    uses.push_back(n.span);
    return {cir::Var::make(name, cir::Type::scalar(DType::I64), n.span), true};
  }

  Value host_value(const std::string& name, const HostBinding& h, Span span) {
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

  Value lower_binary(const ast::Binary& b) {
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

  Value matmul(Value x, Value y, const ast::Binary& b) {
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

  static std::string rank_text(const Value& v) {
    return v.rank() == 0 ? "a scalar" : "a " + std::to_string(v.rank()) + "-D tile";
  }

  // ------------------------------------------------------------ indexing

  std::vector<cir::AxisSel> lower_items(const ast::Index& idx, int input) {
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

  void report_bad_index(const ast::Expr& index, const Value& v) {
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

  Value lower_index(const ast::Index& idx) {
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
    if (Symbol* sym = lookup_local(base)) {
      if (poisoned_.count(sym)) return {};
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
    return {cir::make_access(buffer, type, std::move(axes), idx.span), false};
  }

  // ------------------------------------------------------------ calls

  Value lower_call(const ast::Call& c) {
    if (c.callee->kind != ast::ExprKind::Name) {
      error_if_final(c.callee->span, "only built-in functions can be called inside kernels");
      return {};
    }
    const std::string& fn = ast::as<ast::Name>(*c.callee).name;
    for (const ast::Arg& a : c.args)
      if (!a.name.empty() && !(fn == "reduce" && a.name == "axis")) {
        error_if_final(a.name_span, "'" + fn + "' takes no keyword argument '" + a.name + "'");
        return {};
      }
    if (fn == "reduce") return lower_reduce(c);
    if (fn == "row_max" || fn == "row_min" || fn == "row_sum") {
      if (!arity(c, 1)) return {};
      Value t = lower(*c.args[0].value);
      if (!t.ok()) return t;
      if (!t.is_tile()) {
        error_if_final(c.args[0].value->span, fn + " takes a tile, but this is " + describe(t));
        return {};
      }
      ReduceOp op = fn == "row_max" ? ReduceOp::Max : fn == "row_min" ? ReduceOp::Min : ReduceOp::Sum;
      return {cir::make_reduce(op, t.e, static_cast<int>(t.rank()) - 1, /*keepdims=*/true, c.span), t.weak};
    }
    if (fn == "dot") {
      if (!arity(c, 2)) return {};
      Value a = lower(*c.args[0].value), b = lower(*c.args[1].value);
      if (!a.ok() || !b.ok()) return {};
      for (int k = 0; k < 2; ++k) {
        const Value& v = k == 0 ? a : b;
        if (v.rank() != 1) {
          if (final_)
            diags_->error(c.args[static_cast<size_t>(k)].value->span,
                          "dot takes two 1-D tiles, but this is " + rank_text(v))
                .with_hint("index all but the last axis, as in dot(Q[b, h, i], K[b, h, j])");
          return {};
        }
      }
      bool weak;
      DType t = unify(a, b, weak);
      return {cir::make_dot(cast_to(a, t).e, cast_to(b, t).e, c.span), false};
    }
    if (fn == "transpose") {
      if (!arity(c, 1)) return {};
      Value t = lower(*c.args[0].value);
      if (!t.ok()) return t;
      if (t.rank() < 2) {
        error_if_final(c.args[0].value->span, "transpose takes a tile of 2 or more axes, but this is " + rank_text(t));
        return {};
      }
      return {cir::make_transpose(t.e, c.span), t.weak};
    }
    if (fn == "zeros" || fn == "ones" || fn == "full") return lower_fill(c, fn);
    if (fn == "where" || fn == "select") {
      if (!arity(c, 3)) return {};
      Value cond = lower(*c.args[0].value), a = lower(*c.args[1].value), b = lower(*c.args[2].value);
      if (!cond.ok() || !a.ok() || !b.ok()) return {};
      cond = to_bool(cond, c.args[0].value->span);
      bool weak;
      DType t = unify(a, b, weak);
      return {cir::Select::make(cond.e, cast_to(a, t).e, cast_to(b, t).e, c.span), weak};
    }
    if (auto dtype = cast_target(fn)) {
      if (!arity(c, 1)) return {};
      Value v = lower(*c.args[0].value);
      if (!v.ok()) return v;
      return cast_to(v, *dtype);
    }
    if (auto m = parse_math_fn(fn)) return lower_math(c, *m);
    if (fn == "barrier") {
      error_if_final(c.span, "barrier() is a statement of its own");
      return {};
    }
    if (final_)
      diags_->error(c.callee->span, "unknown function '" + fn + "' in a kernel")
          .with_hint(std::string("kernels can call ") + kKernelFunctions);
    return {};
  }

  static std::optional<DType> cast_target(const std::string& fn) {
    if (fn == "float") return DType::F32;
    if (fn == "int") return DType::I64;
    return parse_dtype(fn);
  }

  bool arity(const ast::Call& c, size_t n) {
    if (c.args.size() == n) return true;
    // The arguments still count for binding dimensions (`relu(x[i], 2.0)`
    // must not also leave the bound of `i` unbound).
    for (const ast::Arg& a : c.args) lower(*a.value);
    error_if_final(c.span, "'" + ast::as<ast::Name>(*c.callee).name + "' takes " + std::to_string(n) + " argument" +
                               (n == 1 ? "" : "s") + ", but " + std::to_string(c.args.size()) + " were given");
    return false;
  }

  Value lower_math(const ast::Call& c, MathFn fn) {
    size_t n = static_cast<size_t>(math_fn_arity(fn));
    if ((fn == MathFn::Min || fn == MathFn::Max) && c.args.size() == 1) {
      if (final_)
        diags_->error(c.span, std::string(math_fn_name(fn)) + "(a, b) takes two values")
            .with_hint(std::string("to reduce a tile use reduce(") + math_fn_name(fn) + ", t) or row_" + math_fn_name(fn) + "(t)");
      return {};
    }
    if (!arity(c, n)) return {};
    std::vector<Value> args;
    for (const ast::Arg& a : c.args) {
      args.push_back(lower(*a.value));
      if (!args.back().ok()) return {};
    }
    // One dtype for all arguments; functions that need floats get floats.
    Value acc = args[0];
    bool weak = acc.weak;
    DType t = acc.dtype();
    for (size_t i = 1; i < args.size(); ++i) {
      t = unify(Value{acc.e, weak}, args[i], weak);
      acc = cast_to(Value{acc.e, weak}, t);
    }
    if (!math_fn_keeps_int(fn) && !is_float(t)) t = weak ? DType::F64 : DType::F32;
    if (t == DType::Bool) t = DType::I64;
    std::vector<Expr> es;
    for (const Value& v : args) es.push_back(cast_to(v, t).e);
    return {cir::Math::make(fn, std::move(es), c.span), weak};
  }

  Value lower_reduce(const ast::Call& c) {
    if (c.args.size() < 2 || c.args.size() > 3) {
      error_if_final(c.span, "reduce takes an operator and a tile: reduce(max, t) or reduce(+, t, axis=0)");
      return {};
    }
    const ast::Expr& opx = *c.args[0].value;
    std::optional<ReduceOp> op;
    if (opx.kind == ast::ExprKind::Name) op = parse_reduce_op(ast::as<ast::Name>(opx).name);
    if (!op) {
      error_if_final(opx.span, "reduce's first argument is an operator: +, *, min, max, and, or, argmin, argmax");
      return {};
    }
    Value t = lower(*c.args[1].value);
    if (!t.ok()) return t;
    if (!t.is_tile()) {
      error_if_final(c.args[1].value->span, "reduce takes a tile, but this is " + describe(t));
      return {};
    }
    std::optional<int> axis;
    if (c.args.size() == 3) {
      std::optional<int64_t> k = constant_int(*c.args[2].value);
      int64_t rank = static_cast<int64_t>(t.rank());
      if (c.args[2].name != "axis" || !k || *k < -rank || *k >= rank) {
        error_if_final(c.args[2].value->span, "axis must be a constant between " + std::to_string(-rank) + " and " +
                                                  std::to_string(rank - 1));
        return {};
      }
      axis = static_cast<int>(*k < 0 ? *k + rank : *k);
    }
    return {cir::make_reduce(*op, t.e, axis, false, c.span), t.weak && *op != ReduceOp::ArgMax && *op != ReduceOp::ArgMin};
  }

  Value lower_fill(const ast::Call& c, const std::string& fn) {
    size_t first_dim = fn == "full" ? 1 : 0;
    if (c.args.size() <= first_dim) {
      error_if_final(c.span, fn == "full" ? "full takes a value and the sizes: full(v, rows, cols)"
                                          : fn + " takes the sizes: " + fn + "(rows, cols)");
      return {};
    }
    std::vector<Expr> shape;
    auto add_dim = [&](const ast::Expr& d) {
      Value v = int_operand(d, "size");
      if (v.ok()) shape.push_back(v.e);
      return v.ok();
    };
    for (size_t i = first_dim; i < c.args.size(); ++i) {
      const ast::Expr& d = *c.args[i].value;
      if (d.kind == ast::ExprKind::List) {  // zeros([r, c])
        for (const ast::ExprPtr& x : ast::as<ast::List>(d).elems)
          if (!add_dim(*x)) return {};
      } else if (!add_dim(d)) {
        return {};
      }
    }
    Value value = fn == "full" ? lower(*c.args[0].value)
                               : Value{cir::FloatImm::make(fn == "zeros" ? 0.0 : 1.0, DType::F64, c.span), true};
    if (!value.ok()) return value;
    if (value.is_tile()) {
      error_if_final(c.args[0].value->span, "full takes a single fill value");
      return {};
    }
    return {cir::make_fill(value.e, std::move(shape), c.span), value.weak};
  }

  // ------------------------------------------------------------ assembly

  cir::Kernel assemble(DiagnosticEngine& diags) {
    cir::Kernel k;
    k.name = name_;
    k.kind = annotations_.kind;
    k.reduce_op = annotations_.reduce_op;
    k.reduce_axis = annotations_.reduce_axis;
    k.span = node_.span;
    // First, so that host sizes it names become dimensions of the kernel.
    if (annotations_.shared_bytes) k.hints.shared_bytes = shared_bytes(diags);
    std::set<std::string> dim_names;
    for (size_t i = 0; i < sigs_.size(); ++i) {
      cir::Param p;
      p.role = cir::ParamRole::Input;
      p.name = sigs_[i].path;
      p.type = input_type(i);
      k.params.push_back(p);
      for (size_t a = 0; a < axis_names_[i].size(); ++a) {
        std::string n = axis_name(i, a);
        if (dim_names.insert(n).second) k.dims.push_back({n, cir::DimSource::Input, sigs_[i].path, static_cast<int>(a)});
      }
    }
    // Names bound to an axis that already carries another name.
    for (const auto& [name, where] : bound_dims_)
      if (dim_names.insert(name).second)
        k.dims.push_back({name, cir::DimSource::Input, sigs_[where.first].path, where.second});
    for (const std::string& n : host_dims_order_)
      if (dim_names.insert(n).second) k.dims.push_back({n, cir::DimSource::Host, "", -1});
    for (const std::string& n : scalars_order_) {
      cir::Param p;
      p.role = cir::ParamRole::Scalar;
      p.name = n;
      p.type = cir::Type::scalar(scalars_.at(n));
      k.params.push_back(p);
    }
    k.body = body_;
    // The output's shape: the reduce loops that remain, or what the stores cover.
    cir::Param out;
    out.role = cir::ParamRole::Output;
    out.name = "out";
    out.type = out_type();
    if (annotations_.kind == cir::KernelKind::Reduce) {
      out.type.shape.clear();
      if (yield_loops_ && annotations_.reduce_axis)
        for (size_t i = 0; i < yield_loops_->size(); ++i)
          if (static_cast<int>(i) != *annotations_.reduce_axis) out.type.shape.push_back(trip_count(*(*yield_loops_)[i]));
      if (is_arg_reduce(annotations_.reduce_op))
        out.type.dtype = DType::I64;
    } else {
      std::optional<std::vector<Expr>> shape = infer_output_shape(k.body, diags);
      if (!shape) return k;
      out.type.shape = *shape;
      drop_shape_only_fill(k.body);
    }
    k.params.push_back(out);
    k.hints.workgroup = annotations_.workgroup;
    k.hints.tile = annotations_.tile;
    for (const auto& b : annotations_.broadcast) {
      int i = input_index(b.input);
      if (i < 0) {
        diags.error(b.span, "@broadcast names '" + b.input + "', which is not an input of this compute block");
        continue;
      }
      if (b.axis >= static_cast<int>(out.type.rank()))
        diags.error(b.span, "@broadcast axis " + std::to_string(b.axis) + " is past the output's " +
                                std::to_string(out.type.rank()) + " axes");
      k.hints.broadcast.push_back({b.input, b.axis});
    }
    if (!annotations_.devices.empty()) {
      k.hints.device = annotations_.devices[0];
      for (size_t i = 1; i < annotations_.devices.size(); ++i) k.hints.device += "," + annotations_.devices[i];
    }
    k.hints.parallel = annotations_.parallel;
    k.hints.tf32 = annotations_.tf32;
    return cir::run_passes(std::move(k), "lowering",
                           {{"mark_parallel_loops", [](const cir::Kernel& in) {
                               cir::Kernel out = in;
                               mark_parallel_loops(out);
                               return out;
                             }},
                            {"simplify", [](const cir::Kernel& in) { return cir::simplify(in); }}});
  }

  // `out = zeros(M, N)` before anything else touches out only gives its
  // shape (for updates at indices read from data, `out[ids[i], j] += ...`):
  // outputs start zeroed. Without it the body is one loop nest, which
  // devices share out.
  static void drop_shape_only_fill(cir::Block& body) {
    for (auto it = body.begin(); it != body.end(); ++it) {
      auto st = it->as<cir::Store>();
      if (st && st->buffer == "out" && st->axes.empty()) {
        auto fill = st->value.as<cir::Fill>();
        auto f = fill ? fill->value.as<cir::FloatImm>() : nullptr;
        auto i = fill ? fill->value.as<cir::IntImm>() : nullptr;
        if ((f && f->value == 0.0 && !std::signbit(f->value)) || (i && i->value == 0)) body.erase(it);
        return;
      }
      if (cir::reads(*it).count("out") || cir::writes(*it).count("out")) return;
    }
  }

  // The @shared(...) size: host sizes and the kernel's dimensions only.
  Expr shared_bytes(DiagnosticEngine& diags) {
    diags_ = &diags;
    final_ = true;
    scopes_.clear();
    scopes_.emplace_back();
    size_t known = unresolved_order_.size();
    Value v = int_operand(*annotations_.shared_bytes, "@shared size");
    bool ok = v.ok();
    for (size_t i = known; i < unresolved_order_.size(); ++i) {
      const std::string& name = unresolved_order_[i];
      if (bound_dims_.count(name)) continue;
      diags.error(unresolved_.at(name).front(), "unknown name '" + name + "' in the @shared size")
          .with_hint("it may use host integers and the kernel's dimensions");
      ok = false;
    }
    return ok ? cir::simplify(v.e) : Expr();
  }

  const ast::Compute& node_;
  std::string name_;
  const std::vector<InputSignature>& sigs_;
  const HostEnv& host_;
  SourceManager dummy_sources_;
  KernelAnnotations annotations_;
  std::vector<int> ranks_;
  // Persist across iterations.
  std::map<const void*, Inferred> inferred_, previous_;
  std::vector<std::vector<std::string>> axis_names_;
  std::map<std::string, std::pair<size_t, int>> bound_dims_;
  // Per iteration.
  DiagnosticEngine* diags_ = nullptr;
  size_t errors_at_start_ = 0;
  bool final_ = false;
  std::vector<std::unique_ptr<Symbol>> symbols_;
  std::vector<std::map<std::string, Symbol*>> scopes_;
  std::set<const Symbol*> poisoned_;
  // Scalar lets by CIR name, for tile shapes; kept across iterations, whose
  // names are the same, so a shape can use a let declared further down.
  cir::Substitution let_values_;
  std::set<std::string> local_names_;  // every local's CIR name, in any iteration
  std::map<std::string, std::vector<Span>> unresolved_;
  std::vector<std::string> unresolved_order_;
  std::set<std::string> range_bounds_;  // bare names used as loop bounds
  std::vector<IndexSite> sites_;
  std::set<std::string> host_dims_;
  std::vector<std::string> host_dims_order_;
  std::map<std::string, DType> scalars_;
  std::vector<std::string> scalars_order_;
  std::set<std::string> used_names_;
  std::vector<const Symbol*> loops_;
  std::optional<std::vector<const Symbol*>> yield_loops_;
  Span yield_span_;
  bool saw_yield_ = false;
  bool saw_out_store_ = false;
  bool saw_statement_ = false;
  cir::Block body_;
};

template <class F>
void Lowering::visit_exprs(const ast::Block& b, F&& f) {
  struct Walker {
    F& f;
    void expr(const ast::Expr* e) {
      if (!e) return;
      f(*e);
      using ast::ExprKind;
      switch (e->kind) {
        case ExprKind::Unary: expr(ast::as<ast::Unary>(*e).operand.get()); break;
        case ExprKind::Binary:
          expr(ast::as<ast::Binary>(*e).lhs.get());
          expr(ast::as<ast::Binary>(*e).rhs.get());
          break;
        case ExprKind::Call:
          for (const ast::Arg& a : ast::as<ast::Call>(*e).args) expr(a.value.get());
          break;
        case ExprKind::Index:
          expr(ast::as<ast::Index>(*e).base.get());
          for (const ast::IndexItem& it : ast::as<ast::Index>(*e).items) {
            expr(it.index.get());
            expr(it.lo.get());
            expr(it.hi.get());
          }
          break;
        case ExprKind::Tuple:
          for (const ast::ExprPtr& x : ast::as<ast::Tuple>(*e).elems) expr(x.get());
          break;
        default: break;
      }
    }
    void block(const ast::Block& blk) {
      for (const ast::StmtPtr& s : blk.stmts) stmt(*s);
    }
    void stmt(const ast::Stmt& s) {
      using ast::StmtKind;
      switch (s.kind) {
        case StmtKind::Let: expr(ast::as<ast::Let>(s).init.get()); break;
        case StmtKind::Assign:
          expr(ast::as<ast::Assign>(s).target.get());
          expr(ast::as<ast::Assign>(s).value.get());
          break;
        case StmtKind::ExprStmt: expr(ast::as<ast::ExprStmt>(s).expr.get()); break;
        case StmtKind::If:
          expr(ast::as<ast::If>(s).cond.get());
          block(ast::as<ast::If>(s).then_body);
          block(ast::as<ast::If>(s).else_body);
          break;
        case StmtKind::For:
          for (const ast::ForRange& r : ast::as<ast::For>(s).ranges) {
            expr(r.lo.get());
            expr(r.hi.get());
            expr(r.step.get());
          }
          block(ast::as<ast::For>(s).body);
          break;
        case StmtKind::Yield: expr(ast::as<ast::Yield>(s).value.get()); break;
        case StmtKind::BlockStmt: block(ast::as<ast::BlockStmt>(s).block); break;
        default: break;
      }
    }
  };
  Walker w{f};
  w.block(b);
}

}  // namespace

std::optional<LoweredCompute> lower_compute(const ast::Compute& c, const std::string& name,
                                            const std::vector<InputSignature>& inputs, const HostEnv& host,
                                            DiagnosticEngine& diags) {
  return Lowering(c, name, inputs, host).run(diags);
}

}  // namespace zyntax
