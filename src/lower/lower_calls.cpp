#include "lower/lowering.hpp"

#include <algorithm>

#include "cir/passes/simplify.hpp"

namespace zyntax::lowering {

Value Lowering::lower_call(const ast::Call& c) {
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

std::optional<DType> Lowering::cast_target(const std::string& fn) {
  if (fn == "float") return DType::F32;
  if (fn == "int") return DType::I64;
  return parse_dtype(fn);
}

bool Lowering::arity(const ast::Call& c, size_t n) {
  if (c.args.size() == n) return true;
  // The arguments still count for binding dimensions (`relu(x[i], 2.0)`
  // must not also leave the bound of `i` unbound).
  for (const ast::Arg& a : c.args) lower(*a.value);
  error_if_final(c.span, "'" + ast::as<ast::Name>(*c.callee).name + "' takes " + std::to_string(n) + " argument" +
                             (n == 1 ? "" : "s") + ", but " + std::to_string(c.args.size()) + " were given");
  return false;
}

Value Lowering::lower_math(const ast::Call& c, MathFn fn) {
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

Value Lowering::lower_reduce(const ast::Call& c) {
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

Value Lowering::lower_fill(const ast::Call& c, const std::string& fn) {
  size_t first_dim = fn == "full" ? 1 : 0;
  if (c.args.size() <= first_dim) {
    error_if_final(c.span, fn == "full" ? "full takes a value and the sizes: full(v, rows, cols)"
                                        : fn + " takes the sizes: " + fn + "(rows, cols)");
    return {};
  }
  std::vector<Expr> shape;
  auto add_dim = [&](const ast::Expr& d) {
    Value v = int_operand(d, "size");
    if (v.ok()) {
      // As the reference executor: a tile has no negative size.
      Expr size = cir::simplify(v.e);
      if (auto c = size.as<cir::IntImm>(); c && c->value < 0) {
        error_if_final(d.span, "a tile size is negative (" + std::to_string(c->value) + ")");
        return false;
      }
      shape.push_back(v.e);
    }
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

}  // namespace zyntax::lowering
