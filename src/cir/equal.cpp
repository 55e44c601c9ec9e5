#include "cir/equal.hpp"

#include <cmath>

namespace zyntax::cir {

namespace {

bool equal_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i])) return false;
  return true;
}

// Values, not IEEE comparison: NaN equals NaN, and -0.0 differs from 0.0.
bool same_float(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Compares the fields of two nodes of the same kind.
bool equal_fields(const Expr& x, const Expr& y) {
  switch (x->kind) {
    case ExprKind::IntImm: return x.as<IntImm>()->value == y.as<IntImm>()->value;
    case ExprKind::FloatImm: return same_float(x.as<FloatImm>()->value, y.as<FloatImm>()->value);
    case ExprKind::BoolImm: return x.as<BoolImm>()->value == y.as<BoolImm>()->value;
    case ExprKind::Var: return x.as<Var>()->name == y.as<Var>()->name;
    case ExprKind::Cast: return equal(x.as<Cast>()->value, y.as<Cast>()->value);
    case ExprKind::Unary: {
      auto a = x.as<Unary>(), b = y.as<Unary>();
      return a->op == b->op && equal(a->a, b->a);
    }
    case ExprKind::Binary: {
      auto a = x.as<Binary>(), b = y.as<Binary>();
      return a->op == b->op && equal(a->a, b->a) && equal(a->b, b->b);
    }
    case ExprKind::Select: {
      auto a = x.as<Select>(), b = y.as<Select>();
      return equal(a->cond, b->cond) && equal(a->t, b->t) && equal(a->f, b->f);
    }
    case ExprKind::Math: {
      auto a = x.as<Math>(), b = y.as<Math>();
      return a->fn == b->fn && equal_exprs(a->args, b->args);
    }
    case ExprKind::Access: {
      auto a = x.as<Access>(), b = y.as<Access>();
      return a->buffer == b->buffer && equal(a->axes, b->axes);
    }
    case ExprKind::Dot: {
      auto a = x.as<Dot>(), b = y.as<Dot>();
      return equal(a->a, b->a) && equal(a->b, b->b);
    }
    case ExprKind::Reduce: {
      auto a = x.as<Reduce>(), b = y.as<Reduce>();
      return a->op == b->op && a->axis == b->axis && a->keepdims == b->keepdims && equal(a->value, b->value);
    }
    case ExprKind::MatMul: {
      auto a = x.as<MatMul>(), b = y.as<MatMul>();
      return equal(a->a, b->a) && equal(a->b, b->b);
    }
    case ExprKind::Transpose: return equal(x.as<Transpose>()->value, y.as<Transpose>()->value);
    case ExprKind::Fill: return equal(x.as<Fill>()->value, y.as<Fill>()->value);
    case ExprKind::GpuIndex: {
      auto a = x.as<GpuIndex>(), b = y.as<GpuIndex>();
      return a->index_kind == b->index_kind && a->axis == b->axis;
    }
  }
  return false;
}

}  // namespace

bool equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  return a->kind == b->kind && equal(a->type, b->type) && equal_fields(a, b);
}

bool equal(const Type& a, const Type& b) { return a.dtype == b.dtype && equal_exprs(a.shape, b.shape); }

bool equal(const std::vector<AxisSel>& a, const std::vector<AxisSel>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_slice != b[i].is_slice || !equal(a[i].index, b[i].index) || !equal(a[i].lo, b[i].lo) ||
        !equal(a[i].hi, b[i].hi))
      return false;
  }
  return true;
}

}  // namespace zyntax::cir
