#include "lower/lowering.hpp"

#include <algorithm>

#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "runtime/tensor.hpp"

namespace zyntax::lowering {

cir::Block Lowering::lower_block(const ast::Block& b) {
  scopes_.emplace_back();
  cir::Block out;
  for (const ast::StmtPtr& s : b.stmts) lower_stmt(*s, out);
  scopes_.pop_back();
  return out;
}

void Lowering::lower_stmt(const ast::Stmt& s, cir::Block& out) {
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

void Lowering::lower_let(const ast::Let& l, cir::Block& out) {
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
std::optional<std::vector<Expr>> Lowering::visible_shape(const std::vector<Expr>& shape) {
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

bool Lowering::names_visible(const Expr& e) const {
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

void Lowering::lower_assign(const ast::Assign& a, cir::Block& out) {
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

Value Lowering::read_buffer(const std::string& name, const cir::Type& type, const std::vector<cir::AxisSel>& axes, Span span) {
  return {cir::make_access(name, type, axes, span), false};
}

void Lowering::store_out(std::vector<cir::AxisSel> axes, const Value& v, Span span, cir::Block& out) {
  if (!v.ok()) return;
  if (annotations_.kind == cir::KernelKind::Reduce) {
    error_if_final(span, "a reduce kernel produces its result with yield, not by writing 'out'");
    return;
  }
  record(&node_, v);
  out.push_back(cir::make_store("out", std::move(axes), cast_to(v, out_type().dtype).e, span));
}

void Lowering::lower_expr_stmt(const ast::ExprStmt& s, cir::Block& out) {
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

void Lowering::lower_for(const ast::For& f, size_t range_index, cir::Block& out) {
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
  // A range may read the variables of the loops around it, not its own
  // header's: those have no value yet.
  std::set<std::string> outer_header = std::move(header_vars_);
  header_vars_.clear();
  for (size_t i = range_index; i < f.ranges.size(); ++i) header_vars_.insert(f.ranges[i].var);
  Value lo = int_operand(*r.lo, "loop start");
  Value hi = int_operand(*r.hi, "loop bound");
  Value step = r.step ? int_operand(*r.step, "loop step") : Value{cir::IntImm::make(1), false};
  header_vars_ = std::move(outer_header);
  // A bound that did not lower has been reported (or will be, in the final
  // pass); stand-ins keep the body lowering so its own errors are seen too.
  if (!lo.ok()) lo = Value{cir::IntImm::make(0), false};
  if (!hi.ok()) hi = Value{cir::IntImm::make(0), false};
  if (!step.ok()) step = Value{cir::IntImm::make(1), false};
  // A constant step, however written (`-1`, `2 - 3`), must be positive.
  if (step.ok()) {
    cir::Expr folded = cir::simplify(step.e);
    if (auto k = folded.as<cir::IntImm>(); k && k->value <= 0)
      error_if_final(r.step->span, "the loop step must be positive, got " + std::to_string(k->value));
  }
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

Value Lowering::int_operand(const ast::Expr& e, const char* what) {
  Value v = lower(e);
  if (!v.ok()) return v;
  if (v.is_tile() || !is_int(v.dtype())) {
    if (final_)
      diags_->error(e.span, std::string("the ") + what + " must be an integer, but this is " + describe(v));
    return {};
  }
  return cast_to(v, DType::I64);
}

std::string Lowering::describe(const Value& v) {
  if (v.is_tile()) return "a tile of " + std::string(dtype_name(v.dtype()));
  return std::string(v.weak && is_float(v.dtype()) ? "a float" : dtype_name(v.dtype()));
}

void Lowering::lower_yield(const ast::Yield& y, cir::Block& out) {
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
    int given = *annotations_.reduce_axis;
    std::optional<size_t> resolved = reduced_loop(loops_.size());
    if (!resolved) {
      size_t needed = given < 0 ? static_cast<size_t>(-given) : static_cast<size_t>(given) + 1;
      if (final_)
        diags_->error(y.span, "reduce axis=" + std::to_string(given) + " needs at least " + std::to_string(needed) +
                                  " loops around the yield, but there are " + std::to_string(loops_.size()))
            .note(annotations_.kind_span, "the axis is given here");
      return;
    }
    size_t axis = *resolved;
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
Expr Lowering::normalized_index(const Symbol& loop) {
  Expr v = cir::Var::make(loop.cir_name, cir::Type::scalar(DType::I64));
  auto is_const = [](const Expr& e, int64_t k) { return e.as<cir::IntImm>() && e.as<cir::IntImm>()->value == k; };
  Expr rel = is_const(loop.lo, 0) ? v : cir::simplify(v - loop.lo);
  return is_const(loop.step, 1) ? rel : cir::simplify(rel / loop.step);
}

Expr Lowering::trip_count(const Symbol& loop) {
  auto is_const = [](const Expr& e, int64_t k) { return e.as<cir::IntImm>() && e.as<cir::IntImm>()->value == k; };
  if (is_const(loop.lo, 0) && is_const(loop.step, 1)) return loop.hi;
  Expr n = cir::max(loop.hi - loop.lo, cir::i64(0));
  return cir::simplify((n + loop.step - cir::i64(1)) / loop.step);
}

void Lowering::lower_shared(const ast::SharedVar& s, cir::Block& out) {
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
  // Sizes known now are checked now, located, as a run would find them.
  Shape known;
  for (const Expr& d : shape) {
    Expr size = cir::simplify(d);
    if (auto c = size.as<cir::IntImm>()) known.push_back(c->value);
  }
  if (known.size() == shape.size()) {
    try {
      Tensor::bytes_for(t, known);
    } catch (const DataError& e) {
      error_if_final(s.span, "shared array '" + s.name + "': " + e.what());
      Symbol* sym = declare(s.name, SymKind::Shared, s.name_span, &s);  // uses say nothing more
      sym->type = cir::Type::tensor(t, shape);
      poisoned_.insert(sym);
      return;
    }
  }
  Symbol* sym = declare(s.name, SymKind::Shared, s.name_span, &s);
  sym->type = cir::Type::tensor(t, shape);
  out.push_back(cir::make_allocate(sym->cir_name, sym->type, cir::MemorySpace::Shared, s.span));
}

}  // namespace zyntax::lowering
