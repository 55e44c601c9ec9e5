#include "api/trace.hpp"

#include <cmath>
#include <cstring>

#include "cir/passes/simplify.hpp"
#include "cir/verifier.hpp"
#include "zyntax/errors.hpp"

namespace zyntax {

namespace {

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

}  // namespace

Trace* Trace::of(std::initializer_list<ExprId> args) {
  for (const ExprId& a : args)
    if (a.trace()) return a.trace();
  return nullptr;
}

uint32_t Trace::intern(Node n) {
  auto key = std::make_tuple(n.op, n.args, float_bits(n.constant), n.input);
  auto it = interned_.find(key);
  if (it != interned_.end()) return it->second;
  nodes_.push_back(std::move(n));
  uint32_t index = static_cast<uint32_t>(nodes_.size() - 1);
  interned_.emplace(std::move(key), index);
  return index;
}

uint32_t Trace::index_in_graph(const ExprId& e) {
  if (e.trace() == this) {
    check(e);
    return e.index();
  }
  if (e.trace()) throw ComputeError("elementwise: an expression of another elementwise call was used");
  Node c{Op::Constant, {}, e.constant_, 0};
  return intern(c);
}

std::vector<ExprId> Trace::inputs(size_t n) {
  std::vector<ExprId> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(this, intern(Node{Op::Input, {}, 0, static_cast<uint32_t>(i)}));
  return out;
}

ExprId Trace::node(Op op, std::vector<ExprId> args) {
  Node n{op, {}, 0, 0};
  for (const ExprId& a : args) n.args.push_back(index_in_graph(a));
  return ExprId(this, intern(std::move(n)));
}

std::string Trace::key(const std::vector<ExprId>& outputs, size_t numel, const std::vector<DType>& dtypes,
                       const std::vector<size_t>& lengths) const {
  std::string k = std::to_string(numel) + ";";
  for (size_t i = 0; i < dtypes.size(); ++i) k += std::string(dtype_name(dtypes[i])) + ":" + std::to_string(lengths[i]) + ",";
  k += ";";
  for (const Node& n : nodes_) {
    k += std::to_string(static_cast<int>(n.op));
    for (uint32_t a : n.args) k += "," + std::to_string(a);
    if (n.op == Op::Constant) k += "=" + std::to_string(float_bits(n.constant));
    if (n.op == Op::Input) k += "@" + std::to_string(n.input);
    k += ";";
  }
  for (const ExprId& o : outputs) {
    check(o);
    k += ">" + std::to_string(o.index());
  }
  return k;
}

void Trace::check(const ExprId& e) const {
  if (e.trace() != this || e.index() >= nodes_.size())
    throw ComputeError("elementwise: an expression no operation of this call made (ExprId " + std::to_string(e.index()) + " of " +
                       std::to_string(nodes_.size()) + ")");
}

cir::Kernel Trace::kernel(const std::vector<ExprId>& outputs, size_t numel, const std::vector<DType>& dtypes,
                          const std::vector<size_t>& lengths) const {
  using namespace cir;
  for (const ExprId& o : outputs) check(o);
  Kernel k;
  k.name = "elementwise";
  k.kind = KernelKind::Elementwise;
  for (size_t i = 0; i < dtypes.size(); ++i)
    k.params.push_back({ParamRole::Input, "x" + std::to_string(i), Type::tensor(dtypes[i], {i64(static_cast<int64_t>(lengths[i]))})});
  bool multi = outputs.size() > 1;
  std::vector<Expr> out_shape = {i64(static_cast<int64_t>(numel))};
  if (multi) out_shape.insert(out_shape.begin(), i64(static_cast<int64_t>(outputs.size())));
  Type out_type = Type::tensor(DType::F32, out_shape);
  k.params.push_back({ParamRole::Output, "out", out_type});

  // How often each node is used: a node used twice or more is a let.
  std::vector<int> uses(nodes_.size(), 0);
  std::vector<bool> live(nodes_.size(), false);
  for (const ExprId& o : outputs) live[o.index()] = true;
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (!live[i]) continue;
    for (uint32_t a : nodes_[i].args) {
      live[a] = true;
      ++uses[a];
    }
  }
  for (const ExprId& o : outputs) ++uses[o.index()];

  Expr index = Var::make("i", Type::scalar(DType::I64));
  Block body;
  std::vector<Expr> value(nodes_.size());
  auto f32 = [](double v) { return FloatImm::make(v, DType::F32); };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!live[i]) continue;
    const Node& n = nodes_[i];
    auto arg = [&](int j) { return value[n.args[j]]; };
    auto math = [&](MathFn fn) {
      std::vector<Expr> args;
      for (size_t j = 0; j < n.args.size(); ++j) args.push_back(arg(static_cast<int>(j)));
      return Math::make(fn, args);
    };
    auto flag = [&](BinaryOp op) { return Cast::make(DType::F32, Binary::make(op, arg(0), arg(1))); };
    Expr e;
    switch (n.op) {
      case Op::Input: {
        const Param& p = k.params[n.input];
        Expr at = lengths[n.input] == numel ? index
                                             : Binary::make(BinaryOp::Mod, index, i64(static_cast<int64_t>(lengths[n.input])));
        e = make_access(p.name, p.type, {AxisSel::at(at)});
        if (dtypes[n.input] != DType::F32) e = Cast::make(DType::F32, e);
        break;
      }
      case Op::Constant: e = f32(n.constant); break;
      case Op::Add: e = Binary::make(BinaryOp::Add, arg(0), arg(1)); break;
      case Op::Sub: e = Binary::make(BinaryOp::Sub, arg(0), arg(1)); break;
      case Op::Mul: e = Binary::make(BinaryOp::Mul, arg(0), arg(1)); break;
      case Op::Div: e = Binary::make(BinaryOp::Div, arg(0), arg(1)); break;
      case Op::Neg: e = Unary::make(UnaryOp::Neg, arg(0)); break;
      case Op::Lt: e = flag(BinaryOp::Lt); break;
      case Op::Gt: e = flag(BinaryOp::Gt); break;
      case Op::Le: e = flag(BinaryOp::Le); break;
      case Op::Ge: e = flag(BinaryOp::Ge); break;
      case Op::Exp: e = math(MathFn::Exp); break;
      case Op::Log: e = math(MathFn::Log); break;
      case Op::Sqrt: e = math(MathFn::Sqrt); break;
      case Op::Rsqrt: e = math(MathFn::Rsqrt); break;
      case Op::Tanh: e = math(MathFn::Tanh); break;
      case Op::Sin: e = math(MathFn::Sin); break;
      case Op::Cos: e = math(MathFn::Cos); break;
      case Op::Abs: e = math(MathFn::Abs); break;
      case Op::Sigmoid: e = math(MathFn::Sigmoid); break;
      case Op::Silu: e = math(MathFn::Silu); break;
      case Op::Gelu: e = math(MathFn::Gelu); break;
      case Op::Relu: e = math(MathFn::Relu); break;
      case Op::Pow: e = math(MathFn::Pow); break;
      case Op::Min: e = math(MathFn::Min); break;
      case Op::Max: e = math(MathFn::Max); break;
      case Op::Where: e = Select::make(Binary::make(BinaryOp::Ne, arg(0), f32(0.0)), arg(1), arg(2)); break;
    }
    if (uses[i] > 1 && n.op != Op::Constant && n.op != Op::Input) {
      std::string name = "t" + std::to_string(i);
      body.push_back(make_let(name, e));
      e = Var::make(name, Type::scalar(DType::F32));
    }
    value[i] = e;
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::vector<AxisSel> at;
    if (multi) at.push_back(AxisSel::at(i64(static_cast<int64_t>(o))));
    at.push_back(AxisSel::at(index));
    body.push_back(make_store("out", at, value[outputs[o].index()]));
  }
  k.body = {make_for("i", i64(0), i64(static_cast<int64_t>(numel)), i64(1), std::move(body), LoopKind::Parallel)};
  verify_or_throw(k, "elementwise trace");
  return k;
}

// ------------------------------------------------------------ ExprId

ExprId::ExprId(float constant) : constant_(constant) {}
ExprId::ExprId(double constant) : constant_(static_cast<float>(constant)) {}
ExprId::ExprId(int constant) : constant_(static_cast<float>(constant)) {}

namespace {

using Op = Trace::Op;

ExprId apply(Op op, std::initializer_list<ExprId> args) {
  Trace* t = Trace::of(args);
  if (!t) throw ComputeError("elementwise: an expression of constants only (compute it in C++ instead)");
  return t->node(op, args);
}

}  // namespace

ExprId operator+(ExprId a, ExprId b) { return apply(Op::Add, {a, b}); }
ExprId operator-(ExprId a, ExprId b) { return apply(Op::Sub, {a, b}); }
ExprId operator*(ExprId a, ExprId b) { return apply(Op::Mul, {a, b}); }
ExprId operator/(ExprId a, ExprId b) { return apply(Op::Div, {a, b}); }
ExprId operator-(ExprId a) { return apply(Op::Neg, {a}); }
ExprId operator<(ExprId a, ExprId b) { return apply(Op::Lt, {a, b}); }
ExprId operator>(ExprId a, ExprId b) { return apply(Op::Gt, {a, b}); }
ExprId operator<=(ExprId a, ExprId b) { return apply(Op::Le, {a, b}); }
ExprId operator>=(ExprId a, ExprId b) { return apply(Op::Ge, {a, b}); }
ExprId exp(ExprId x) { return apply(Op::Exp, {x}); }
ExprId log(ExprId x) { return apply(Op::Log, {x}); }
ExprId sqrt(ExprId x) { return apply(Op::Sqrt, {x}); }
ExprId rsqrt(ExprId x) { return apply(Op::Rsqrt, {x}); }
ExprId tanh(ExprId x) { return apply(Op::Tanh, {x}); }
ExprId sin(ExprId x) { return apply(Op::Sin, {x}); }
ExprId cos(ExprId x) { return apply(Op::Cos, {x}); }
ExprId abs(ExprId x) { return apply(Op::Abs, {x}); }
ExprId sigmoid(ExprId x) { return apply(Op::Sigmoid, {x}); }
ExprId silu(ExprId x) { return apply(Op::Silu, {x}); }
ExprId gelu(ExprId x) { return apply(Op::Gelu, {x}); }
ExprId relu(ExprId x) { return apply(Op::Relu, {x}); }
ExprId pow(ExprId x, ExprId y) { return apply(Op::Pow, {x, y}); }
ExprId min(ExprId a, ExprId b) { return apply(Op::Min, {a, b}); }
ExprId max(ExprId a, ExprId b) { return apply(Op::Max, {a, b}); }
ExprId where(ExprId cond, ExprId a, ExprId b) { return apply(Op::Where, {cond, a, b}); }

}  // namespace zyntax
