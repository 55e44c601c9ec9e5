// Hand-built CIR kernels shared by the CIR unit tests.
#pragma once

#include <cmath>

#include "cir/ir.hpp"

namespace zyntax::cir::fixtures {

inline Expr var(const std::string& name, DType t = DType::I64) { return Var::make(name, Type::scalar(t)); }
inline Expr f32(double v) { return FloatImm::make(v, DType::F32); }
inline Param input(const std::string& name, Type t) { return {ParamRole::Input, name, std::move(t)}; }
inline Param output(const std::string& name, Type t) { return {ParamRole::Output, name, std::move(t)}; }
inline Param scalar(const std::string& name, DType t) { return {ParamRole::Scalar, name, Type::scalar(t)}; }
inline Type tensor(std::vector<Expr> shape, DType t = DType::F32) { return Type::tensor(t, std::move(shape)); }
inline AxisSel at(Expr i) { return AxisSel::at(std::move(i)); }
inline DimParam dim(const std::string& name, DimSource source = DimSource::Input) {
  DimParam d;
  d.name = name;
  d.source = source;
  return d;
}

// out[i, j] = sum over k of A[i, k] * B[k, j], generic in M, K, N.
inline Kernel matmul_kernel() {
  Expr M = var("M"), K = var("K"), N = var("N");
  Expr i = var("i"), j = var("j"), k = var("k");
  Type a = tensor({M, K}), b = tensor({K, N}), c = tensor({M, N});
  Expr sum = var("sum", DType::F32);
  Expr product = make_access("A", a, {at(i), at(k)}) * make_access("B", b, {at(k), at(j)});
  Block inner = {make_assign("sum", sum + product)};
  Block row = {
      make_decl("sum", Type::scalar(DType::F32), f32(0.0)),
      make_for("k", i64(0), K, i64(1), inner),
      make_store("out", {at(i), at(j)}, sum),
  };
  Kernel kern;
  kern.name = "C";
  kern.kind = KernelKind::MatMul;
  kern.dims = {dim("M"), dim("K"), dim("N")};
  kern.params = {input("A", a), input("B", b), output("out", c)};
  kern.body = {make_for("i", i64(0), M, i64(1), {make_for("j", i64(0), N, i64(1), row)}, LoopKind::Parallel)};
  return kern;
}

// s[r] = sum over c of x[r, c], a reduce kernel over axis 1.
inline Kernel row_sum_kernel() {
  Expr R = var("R"), C = var("C");
  Type x = tensor({R, C});
  Expr r = var("r"), c = var("c");
  Kernel kern;
  kern.name = "s";
  kern.kind = KernelKind::Reduce;
  kern.reduce_op = ReduceOp::Sum;
  kern.reduce_axis = 1;
  kern.dims = {dim("R"), dim("C")};
  kern.params = {input("x", x), output("s", tensor({R}))};
  Block inner = {make_yield(make_access("x", x, {at(r), at(c)}), {}, {r})};
  kern.body = {make_for("r", i64(0), R, i64(1), {make_for("c", i64(0), C, i64(1), inner)}, LoopKind::Parallel)};
  return kern;
}

// Blocked attention with an online softmax: tiles, slices, fills, matmuls
// and keepdims reductions.
inline Kernel flash_attention_kernel() {
  Expr B = var("B"), H = var("H"), S = var("S"), D = var("D");
  Type qkv = tensor({B, H, S, D});
  Expr b = var("b"), h = var("h"), q = var("q"), kv = var("kv");
  Expr scale = var("scale", DType::F32);
  auto block = [&](Expr start) { return AxisSel::slice(start, start + i64(64)); };

  Expr qt_value = make_access("Q", qkv, {at(b), at(h), block(q)});
  Expr rows = qt_value->type.shape[0];
  Type column = tensor({rows, i64(1)});
  Type acc_type = tensor({rows, D});
  Expr qt = Var::make("qt", qt_value->type);
  Expr m = Var::make("m", column), l = Var::make("l", column), acc = Var::make("acc", acc_type);

  Expr kt_value = make_access("K", qkv, {at(b), at(h), block(kv)});
  Expr kt = Var::make("kt", kt_value->type);
  Expr s_value = make_matmul(qt, make_transpose(kt)) * scale;
  Expr s = Var::make("s", s_value->type);
  Expr m_new_value = max(m, make_reduce(ReduceOp::Max, s, 1, true));
  Expr m_new = Var::make("m_new", m_new_value->type);
  Expr p_value = Math::make(MathFn::Exp, {s - m_new});
  Expr p = Var::make("p", p_value->type);
  Expr correction = Math::make(MathFn::Exp, {m - m_new});
  Block kv_body = {
      make_let("kt", kt_value),
      make_let("s", s_value),
      make_let("m_new", m_new_value),
      make_let("p", p_value),
      make_assign("l", l * correction + make_reduce(ReduceOp::Sum, p, 1, true)),
      make_assign("acc", acc * correction + make_matmul(p, make_access("V", qkv, {at(b), at(h), block(kv)}))),
      make_assign("m", m_new),
  };
  Block q_body = {
      make_let("qt", qt_value),
      make_decl("m", column, make_fill(f32(-INFINITY), column.shape)),
      make_decl("l", column, make_fill(f32(0.0), column.shape)),
      make_decl("acc", acc_type, make_fill(f32(0.0), acc_type.shape)),
      make_for("kv", i64(0), S, i64(64), kv_body),
      make_store("out", {at(b), at(h), block(q)}, acc / l),
  };
  Kernel kern;
  kern.name = "attn";
  kern.kind = KernelKind::FlashAttention;
  kern.dims = {dim("B"), dim("H"), dim("S"), dim("D")};
  kern.params = {input("Q", qkv), input("K", qkv), input("V", qkv), scalar("scale", DType::F32), output("out", qkv)};
  kern.hints.tile = {{"block_q", 64}, {"block_kv", 64}};
  kern.body = {
      make_for("b", i64(0), B, i64(1),
               {make_for("h", i64(0), H, i64(1), {make_for("q", i64(0), S, i64(64), q_body)}, LoopKind::Parallel)},
               LoopKind::Parallel)};
  return kern;
}

}  // namespace zyntax::cir::fixtures
