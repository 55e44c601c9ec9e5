#include "codegen/shader/host_scalar_expressions.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"

namespace zyntax::codegen {

namespace {

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Mod: return "mod";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Min: return "min";
    case BinaryOp::Max: return "max";
    default: return nullptr;
  }
}

// The functions JavaScript's Math has (exactly, or within an ulp of f64,
// which the rounding to f32 hides), and the few the runtime writes out.
const char* math_name(MathFn fn) {
  switch (fn) {
    case MathFn::Sin: return "sin";
    case MathFn::Cos: return "cos";
    case MathFn::Tan: return "tan";
    case MathFn::Asin: return "asin";
    case MathFn::Acos: return "acos";
    case MathFn::Atan: return "atan";
    case MathFn::Sinh: return "sinh";
    case MathFn::Cosh: return "cosh";
    case MathFn::Tanh: return "tanh";
    case MathFn::Exp: return "exp";
    case MathFn::Exp2: return "exp2";
    case MathFn::Log: return "log";
    case MathFn::Log2: return "log2";
    case MathFn::Log10: return "log10";
    case MathFn::Sqrt: return "sqrt";
    case MathFn::Rsqrt: return "rsqrt";
    case MathFn::Abs: return "abs";
    case MathFn::Floor: return "floor";
    case MathFn::Ceil: return "ceil";
    case MathFn::Round: return "round";
    case MathFn::Trunc: return "trunc";
    case MathFn::Sign: return "sign";
    case MathFn::Relu: return "relu";
    case MathFn::Pow: return "pow";
    case MathFn::Atan2: return "atan2";
    case MathFn::Min: return "min";
    case MathFn::Max: return "max";
    case MathFn::Clamp: return "clamp";
    case MathFn::Fma: return "fma";
    default: return nullptr;  // erf and the activations built on it
  }
}

int scalar_param(const cir::Kernel& k, const std::string& name) {
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].role == cir::ParamRole::Scalar && k.params[i].name == name) return static_cast<int>(i);
  return -1;
}

// Whether the host can compute `e` as the reference does: an f64 scalar
// built of f64 scalar params and literals by the operations named above.
bool host_computable(const cir::Expr& e, const cir::Kernel& k) {
  if (e->type.dtype != DType::F64 || e->type.rank() != 0) return false;
  switch (e->kind) {
    case cir::ExprKind::FloatImm: return true;
    case cir::ExprKind::Var: return scalar_param(k, e.as<cir::Var>()->name) >= 0;
    case cir::ExprKind::Unary: {
      auto u = e.as<cir::Unary>();
      return u->op == UnaryOp::Neg && host_computable(u->a, k);
    }
    case cir::ExprKind::Binary: {
      auto b = e.as<cir::Binary>();
      return binary_name(b->op) && host_computable(b->a, k) && host_computable(b->b, k);
    }
    case cir::ExprKind::Math: {
      auto m = e.as<cir::Math>();
      if (!math_name(m->fn)) return false;
      for (const cir::Expr& a : m->args)
        if (!host_computable(a, k)) return false;
      return true;
    }
    default: return false;
  }
}

class Hoist : public cir::IRMutator {
 public:
  explicit Hoist(const cir::Kernel& k, HostScalarExpressions& out) : k_(k), out_(out) {}

  using IRMutator::mutate;
  cir::Expr mutate(const cir::Expr& e) override {
    bool operation = e.defined() && (e->kind == cir::ExprKind::Unary || e->kind == cir::ExprKind::Binary || e->kind == cir::ExprKind::Math);
    if (!operation || !host_computable(e, k_)) return IRMutator::mutate(e);
    for (size_t i = 0; i < out_.expressions.size(); ++i)
      if (cir::equal(out_.expressions[i], e)) return cir::Var::make(out_.names[i], e->type, e->span);
    out_.names.push_back("%host" + std::to_string(out_.names.size()));
    out_.expressions.push_back(e);
    return cir::Var::make(out_.names.back(), e->type, e->span);
  }

 private:
  const cir::Kernel& k_;
  HostScalarExpressions& out_;
};

std::string number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  if (v == 0.0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

HostScalarExpressions hoist_host_scalar_expressions(const cir::Kernel& k) {
  HostScalarExpressions out;
  Hoist hoist(k, out);
  out.kernel = hoist.mutate(k);
  return out;
}

std::string host_scalar_expression_json(const cir::Expr& e, const cir::Kernel& k) {
  auto op = [&](const char* name, const std::vector<cir::Expr>& args) {
    std::string s = std::string("{\"op\": \"") + name + "\", \"args\": [";
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + host_scalar_expression_json(args[i], k);
    return s + "]}";
  };
  switch (e->kind) {
    case cir::ExprKind::FloatImm: return "{\"op\": \"const\", \"value\": " + number(e.as<cir::FloatImm>()->value) + "}";
    case cir::ExprKind::Var: return "{\"op\": \"param\", \"index\": " + std::to_string(scalar_param(k, e.as<cir::Var>()->name)) + "}";
    case cir::ExprKind::Unary: return op("neg", {e.as<cir::Unary>()->a});
    case cir::ExprKind::Binary: {
      auto b = e.as<cir::Binary>();
      return op(binary_name(b->op), {b->a, b->b});
    }
    case cir::ExprKind::Math: {
      auto m = e.as<cir::Math>();
      return op(math_name(m->fn), m->args);
    }
    default: throw std::logic_error("host_scalar_expression_json: not an expression the host computes");
  }
}

}  // namespace zyntax::codegen
