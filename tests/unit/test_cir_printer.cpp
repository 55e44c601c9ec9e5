// The CIR text form: expressions with minimal parentheses, types, every
// statement kind, and whole kernels with their header lines.
#include <gtest/gtest.h>

#include <cmath>

#include "cir/printer.hpp"
#include "test_cir_kernels.hpp"

namespace zyntax::cir {
namespace {

using namespace fixtures;

Expr bin(BinaryOp op, Expr a, Expr b) { return Binary::make(op, std::move(a), std::move(b)); }
Expr neg(Expr a) { return Unary::make(UnaryOp::Neg, std::move(a)); }
Expr flag(const std::string& name) { return var(name, DType::Bool); }
Expr tile(const std::string& name, std::vector<Expr> shape) { return Var::make(name, tensor(std::move(shape))); }

TEST(CirPrinter, Literals) {
  EXPECT_EQ(print(i64(3)), "3");
  EXPECT_EQ(print(i64(-3)), "-3");
  EXPECT_EQ(print(IntImm::make(3, DType::I32)), "i32(3)");
  EXPECT_EQ(print(IntImm::make(-1, DType::U8)), "u8(255)");
  EXPECT_EQ(print(f32(0.5)), "0.5");
  EXPECT_EQ(print(f32(1.0)), "1.0");
  EXPECT_EQ(print(f32(0.1)), "0.1");
  EXPECT_EQ(print(f32(1e30)), "1e+30");
  EXPECT_EQ(print(f32(INFINITY)), "inf");
  EXPECT_EQ(print(f32(-INFINITY)), "-inf");
  EXPECT_EQ(print(f32(NAN)), "nan");
  EXPECT_EQ(print(FloatImm::make(0.5, DType::F64)), "f64(0.5)");
  EXPECT_EQ(print(FloatImm::make(0.1, DType::F64)), "f64(0.1)");
  EXPECT_EQ(print(BoolImm::make(true)), "true");
  EXPECT_EQ(print(BoolImm::make(false)), "false");
}

TEST(CirPrinter, ArithmeticPrecedence) {
  Expr a = var("a"), b = var("b"), c = var("c");
  EXPECT_EQ(print(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(print((a - b) - c), "a - b - c");
  EXPECT_EQ(print(a + b * c), "a + b * c");
  EXPECT_EQ(print((a + b) * c), "(a + b) * c");
  EXPECT_EQ(print(a / (b * c)), "a / (b * c)");
  EXPECT_EQ(print(bin(BinaryOp::Mod, a * b, c)), "a * b % c");
  EXPECT_EQ(print(bin(BinaryOp::Pow, a, bin(BinaryOp::Pow, b, c))), "a ** (b ** c)");
  EXPECT_EQ(print(bin(BinaryOp::Pow, bin(BinaryOp::Pow, a, b), c)), "(a ** b) ** c");
  EXPECT_EQ(print(a * bin(BinaryOp::Pow, b, c)), "a * b ** c");
  EXPECT_EQ(print(a + i64(-3)), "a + -3");
  EXPECT_EQ(print(a - i64(-3)), "a - -3");
}

TEST(CirPrinter, UnaryBindsTighterThanBinary) {
  Expr a = var("a"), b = var("b");
  EXPECT_EQ(print(neg(a)), "-a");
  EXPECT_EQ(print(neg(a) * b), "-a * b");
  EXPECT_EQ(print(neg(a * b)), "-(a * b)");
  EXPECT_EQ(print(neg(neg(a))), "-(-a)");
  EXPECT_EQ(print(neg(i64(-3))), "-(-3)");
  EXPECT_EQ(print(bin(BinaryOp::Pow, neg(a), b)), "-a ** b");
  EXPECT_EQ(print(Unary::make(UnaryOp::Not, bin(BinaryOp::Lt, a, b))), "not (a < b)");
  EXPECT_EQ(print(Unary::make(UnaryOp::Not, flag("p"))), "not p");
}

TEST(CirPrinter, LogicalAndComparisonPrecedence) {
  Expr a = var("a"), b = var("b"), p = flag("p"), q = flag("q"), r = flag("r");
  Expr lt = bin(BinaryOp::Lt, a, b);
  EXPECT_EQ(print(bin(BinaryOp::Or, bin(BinaryOp::And, lt, p), q)), "a < b and p or q");
  EXPECT_EQ(print(bin(BinaryOp::And, bin(BinaryOp::Or, p, q), r)), "(p or q) and r");
  EXPECT_EQ(print(bin(BinaryOp::Eq, lt, p)), "(a < b) == p");
  EXPECT_EQ(print(bin(BinaryOp::Le, a + b, a * b)), "a + b <= a * b");
  EXPECT_EQ(print(bin(BinaryOp::Ne, a, b)), "a != b");
}

TEST(CirPrinter, Calls) {
  Expr a = var("a"), b = var("b"), x = var("x", DType::F32), y = var("y", DType::F32);
  EXPECT_EQ(print(min(a, b)), "min(a, b)");
  EXPECT_EQ(print(max(a + i64(1), b) * i64(2)), "max(a + 1, b) * 2");
  EXPECT_EQ(print(Cast::make(DType::F32, a + b)), "f32(a + b)");
  EXPECT_EQ(print(Select::make(bin(BinaryOp::Lt, a, b), x, y)), "select(a < b, x, y)");
  EXPECT_EQ(print(Math::make(MathFn::Exp, {x})), "exp(x)");
  EXPECT_EQ(print(Math::make(MathFn::Pow, {x, y})), "pow(x, y)");
  EXPECT_EQ(print(Math::make(MathFn::Clamp, {x, f32(0.0), f32(1.0)})), "clamp(x, 0.0, 1.0)");
}

TEST(CirPrinter, AccessesAndSlices) {
  Expr i = var("i"), k = var("k"), b = var("b"), h = var("h"), kv = var("kv");
  Type a = tensor({var("M"), var("K")});
  Type kt = tensor({var("B"), var("H"), var("S"), var("D")});
  EXPECT_EQ(print(make_access("A", a, {at(i), at(k)})), "A[i, k]");
  EXPECT_EQ(print(make_access("K", kt, {at(b), at(h), AxisSel::slice(kv, kv + i64(64))})), "K[b, h, kv:kv + 64]");
  EXPECT_EQ(print(make_access("K", kt, {at(b), at(h), AxisSel::slice(kv, {})})), "K[b, h, kv:]");
  EXPECT_EQ(print(make_access("K", kt, {at(b), AxisSel::slice({}, {})})), "K[b, :]");
  EXPECT_EQ(print(make_access("K", kt, {at(b), AxisSel::slice({}, i64(8))})), "K[b, :8]");
}

TEST(CirPrinter, TileOperations) {
  Expr d = var("d");
  Expr x = tile("x", {i64(64), d}), w = tile("w", {d, i64(32)}), v = tile("v", {d});
  EXPECT_EQ(print(make_dot(v, v)), "dot(v, v)");
  EXPECT_EQ(print(make_reduce(ReduceOp::Sum, x, std::nullopt, false)), "reduce(+, x)");
  EXPECT_EQ(print(make_reduce(ReduceOp::Max, x, 1, false)), "reduce(max, x, axis=1)");
  EXPECT_EQ(print(make_reduce(ReduceOp::Max, x, 1, true)), "reduce(max, x, axis=1, keepdims)");
  EXPECT_EQ(print(make_reduce(ReduceOp::ArgMin, x, std::nullopt, true)), "reduce(argmin, x, keepdims)");
  EXPECT_EQ(print(make_matmul(x, w)), "x @ w");
  EXPECT_EQ(print(make_matmul(x, w) * f32(2.0)), "x @ w * 2.0");
  EXPECT_EQ(print(x * make_matmul(x, make_transpose(x))), "x * (x @ transpose(x))");
  EXPECT_EQ(print(make_matmul(x + x, w)), "(x + x) @ w");
  EXPECT_EQ(print(make_fill(f32(0.0), {i64(64), d})), "fill(0.0, [64, d])");
}

TEST(CirPrinter, GpuIndices) {
  auto gpu = [](GpuIndexKind k, int axis) { return Expr(std::make_shared<GpuIndex>(k, axis, Span{})); };
  EXPECT_EQ(print(gpu(GpuIndexKind::ThreadIdx, 0)), "thread_idx.x");
  EXPECT_EQ(print(gpu(GpuIndexKind::BlockIdx, 1)), "block_idx.y");
  EXPECT_EQ(print(gpu(GpuIndexKind::BlockDim, 2)), "block_dim.z");
  EXPECT_EQ(print(gpu(GpuIndexKind::GridDim, 0)), "grid_dim.x");
}

TEST(CirPrinter, Types) {
  EXPECT_EQ(print(Type::scalar(DType::F32)), "f32");
  EXPECT_EQ(print(Type::scalar(DType::Bool)), "bool");
  EXPECT_EQ(print(tensor({var("M"), var("K")})), "tensor[M, K, f32]");
  EXPECT_EQ(print(tensor({i64(3) * var("hidden")}, DType::BF16)), "tensor[3 * hidden, bf16]");
}

TEST(CirPrinter, Loops) {
  Expr i = var("i"), M = var("M");
  Block body = {make_barrier()};
  EXPECT_EQ(print(make_for("i", i64(0), M, i64(1), body)), "for i in 0..M {\n  barrier(block)\n}\n");
  EXPECT_EQ(print(make_for("i", i64(0), M, i64(64), {})), "for i in 0..M step 64 {\n}\n");
  EXPECT_EQ(print(make_for("i", i64(0), M, i64(1), {}, LoopKind::Parallel)), "parallel for i in 0..M {\n}\n");
  EXPECT_EQ(print(make_for("i", i64(0), M, i64(1), {}, LoopKind::Vectorized, 8)), "vectorized(8) for i in 0..M {\n}\n");
  EXPECT_EQ(print(make_for("i", i64(0), M, i64(1), {}, LoopKind::Unrolled, 4)), "unrolled(4) for i in 0..M {\n}\n");
  EXPECT_EQ(print(make_for("i", i64(0), M, i64(1), {}, LoopKind::GpuBlock, 0)), "gpu_block.x for i in 0..M {\n}\n");
  EXPECT_EQ(print(make_for("i", i64(0), M, i64(1), {}, LoopKind::GpuThread, 1)), "gpu_thread.y for i in 0..M {\n}\n");
  EXPECT_EQ(print(make_for("i", var("lo"), M + i64(1), var("s"), {})), "for i in lo..M + 1 step s {\n}\n");
  EXPECT_EQ(print(make_for("i", i64(0), M, i64(1), body), 2), "    for i in 0..M {\n      barrier(block)\n    }\n");
}

TEST(CirPrinter, Conditionals) {
  Expr c = bin(BinaryOp::Lt, var("i"), var("n"));
  Stmt set = make_assign("x", f32(1.0));
  EXPECT_EQ(print(make_if(c, {set})), "if i < n {\n  x = 1.0\n}\n");
  EXPECT_EQ(print(make_if(c, {set}, {make_assign("x", f32(2.0))})), "if i < n {\n  x = 1.0\n} else {\n  x = 2.0\n}\n");
}

TEST(CirPrinter, LocalsAndStores) {
  Expr i = var("i"), j = var("j"), n = var("n");
  EXPECT_EQ(print(make_let("x", var("a", DType::F32) * f32(0.5))), "let x: f32 = a * 0.5\n");
  EXPECT_EQ(print(make_let("t", make_fill(f32(0.0), {n}))), "let t: tensor[n, f32] = fill(0.0, [n])\n");
  EXPECT_EQ(print(make_decl("sum", Type::scalar(DType::F32), f32(0.0))), "var sum: f32 = 0.0\n");
  EXPECT_EQ(print(make_decl("t", tensor({i64(64), n}), {})), "var t: tensor[64, n, f32]\n");
  EXPECT_EQ(print(make_assign("sum", var("sum", DType::F32) + f32(1.0))), "sum = sum + 1.0\n");
  EXPECT_EQ(print(make_store("out", {at(i), at(j)}, f32(0.0))), "out[i, j] = 0.0\n");
  EXPECT_EQ(print(make_allocate("up", tensor({n}), MemorySpace::Shared)), "shared up: tensor[n, f32]\n");
  EXPECT_EQ(print(make_allocate("t", tensor({i64(4)}, DType::I32), MemorySpace::Local)), "local t: tensor[4, i32]\n");
}

TEST(CirPrinter, Yields) {
  Expr i = var("i"), j = var("j"), v = var("v", DType::F32);
  EXPECT_EQ(print(make_yield(v, {}, {i})), "yield[i] v\n");
  EXPECT_EQ(print(make_yield(v, {}, {})), "yield v\n");
  EXPECT_EQ(print(make_yield(v, j, {i})), "yield[i] (v, j)\n");
  EXPECT_EQ(print(make_yield(v, j, {i, i + i64(1)})), "yield[i, i + 1] (v, j)\n");
}

TEST(CirPrinter, BarriersAndAtomics) {
  EXPECT_EQ(print(make_barrier(FenceScope::Block)), "barrier(block)\n");
  EXPECT_EQ(print(make_barrier(FenceScope::Device)), "barrier(device)\n");
  auto atomic = [](AtomicOp op, FenceScope scope) {
    return Stmt(std::make_shared<Atomic>(op, "out", std::vector<Expr>{var("i")}, var("v", DType::F32), scope, Span{}));
  };
  EXPECT_EQ(print(atomic(AtomicOp::Add, FenceScope::Device)), "atomic_add out[i], v\n");
  EXPECT_EQ(print(atomic(AtomicOp::Max, FenceScope::Device)), "atomic_max out[i], v\n");
  EXPECT_EQ(print(atomic(AtomicOp::Exchange, FenceScope::Device)), "atomic_exchange out[i], v\n");
  EXPECT_EQ(print(atomic(AtomicOp::Add, FenceScope::Block)), "atomic_add(block) out[i], v\n");
}

TEST(CirPrinter, MatMulKernel) {
  EXPECT_EQ(print(matmul_kernel()),
            "kernel C: matmul\n"
            "  dims M, K, N\n"
            "  in A: tensor[M, K, f32]\n"
            "  in B: tensor[K, N, f32]\n"
            "  out out: tensor[M, N, f32]\n"
            "{\n"
            "  parallel for i in 0..M {\n"
            "    for j in 0..N {\n"
            "      var sum: f32 = 0.0\n"
            "      for k in 0..K {\n"
            "        sum = sum + A[i, k] * B[k, j]\n"
            "      }\n"
            "      out[i, j] = sum\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(CirPrinter, KernelHeaderLines) {
  Kernel k = matmul_kernel();
  k.dims.push_back(dim("hidden", DimSource::Host));
  k.params.insert(k.params.begin() + 2, scalar("eps", DType::F32));
  k.hints.workgroup = std::array<int64_t, 3>{16, 16, 1};
  k.hints.shared_bytes = i64(2048);
  k.hints.tile = {{"block_q", 64}, {"block_kv", 64}};
  k.hints.broadcast = {{"vector", 1}};
  k.hints.device = "auto";
  k.hints.parallel = "data";
  k.body = {};
  EXPECT_EQ(print(k),
            "kernel C: matmul\n"
            "  dims M, K, N\n"
            "  host_dims hidden\n"
            "  in A: tensor[M, K, f32]\n"
            "  in B: tensor[K, N, f32]\n"
            "  scalar eps: f32\n"
            "  out out: tensor[M, N, f32]\n"
            "  workgroup 16, 16, 1\n"
            "  shared_bytes 2048\n"
            "  tile block_kv=64, block_q=64\n"
            "  broadcast vector axis=1\n"
            "  device \"auto\"\n"
            "  parallel data\n"
            "{\n"
            "}\n");
}

TEST(CirPrinter, ReduceKernel) {
  EXPECT_EQ(print(row_sum_kernel()),
            "kernel s: reduce(+, axis=1)\n"
            "  dims R, C\n"
            "  in x: tensor[R, C, f32]\n"
            "  out s: tensor[R, f32]\n"
            "{\n"
            "  parallel for r in 0..R {\n"
            "    for c in 0..C {\n"
            "      yield[r] x[r, c]\n"
            "    }\n"
            "  }\n"
            "}\n");
  Kernel all = row_sum_kernel();
  all.reduce_op = ReduceOp::Max;
  all.reduce_axis.reset();
  EXPECT_EQ(print(all).substr(0, print(all).find('\n')), "kernel s: reduce(max)");
}

TEST(CirPrinter, FlashAttentionKernel) {
  EXPECT_EQ(print(flash_attention_kernel()),
            "kernel attn: flash_attention\n"
            "  dims B, H, S, D\n"
            "  in Q: tensor[B, H, S, D, f32]\n"
            "  in K: tensor[B, H, S, D, f32]\n"
            "  in V: tensor[B, H, S, D, f32]\n"
            "  scalar scale: f32\n"
            "  out out: tensor[B, H, S, D, f32]\n"
            "  tile block_kv=64, block_q=64\n"
            "{\n"
            "  parallel for b in 0..B {\n"
            "    parallel for h in 0..H {\n"
            "      for q in 0..S step 64 {\n"
            "        let qt: tensor[min(q + 64, S) - q, D, f32] = Q[b, h, q:q + 64]\n"
            "        var m: tensor[min(q + 64, S) - q, 1, f32] = fill(-inf, [min(q + 64, S) - q, 1])\n"
            "        var l: tensor[min(q + 64, S) - q, 1, f32] = fill(0.0, [min(q + 64, S) - q, 1])\n"
            "        var acc: tensor[min(q + 64, S) - q, D, f32] = fill(0.0, [min(q + 64, S) - q, D])\n"
            "        for kv in 0..S step 64 {\n"
            "          let kt: tensor[min(kv + 64, S) - kv, D, f32] = K[b, h, kv:kv + 64]\n"
            "          let s: tensor[min(q + 64, S) - q, min(kv + 64, S) - kv, f32] = qt @ transpose(kt) * scale\n"
            "          let m_new: tensor[min(q + 64, S) - q, 1, f32] = max(m, reduce(max, s, axis=1, keepdims))\n"
            "          let p: tensor[min(q + 64, S) - q, min(kv + 64, S) - kv, f32] = exp(s - m_new)\n"
            "          l = l * exp(m - m_new) + reduce(+, p, axis=1, keepdims)\n"
            "          acc = acc * exp(m - m_new) + p @ V[b, h, kv:kv + 64]\n"
            "          m = m_new\n"
            "        }\n"
            "        out[b, h, q:q + 64] = acc / l\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(CirPrinter, UndefinedNodesPrintAsPlaceholders) {
  EXPECT_EQ(print(Expr()), "<undefined>");
  EXPECT_EQ(print(Stmt()), "<undefined>\n");
}

}  // namespace
}  // namespace zyntax::cir
