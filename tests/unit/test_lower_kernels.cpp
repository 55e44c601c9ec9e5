// Lowering compute blocks to CIR: dimension binding, types, output shapes, and
// the compile-time errors, checked on the printed kernels and diagnostics.
#include <gtest/gtest.h>

#include "cir/printer.hpp"
#include "driver/session.hpp"
#include "lower/check_program.hpp"

namespace zyntax {
namespace {

struct Checked {
  Session session;
  std::vector<CheckedKernel> kernels;
  bool ok = false;
  std::string errors() { return session.diags().render_all(); }
  std::string cir(size_t i = 0) { return i < kernels.size() ? cir::print(kernels[i].kernel) : "<no kernel>"; }
};

std::unique_ptr<Checked> check(const std::string& src) {
  auto c = std::make_unique<Checked>();
  LoadedModule* m = c->session.load_text("k.zynml", src);
  c->ok = !c->session.diags().has_errors() && check_program(c->session, *m, &c->kernels);
  return c;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

TEST(LowerKernels, MatmulBindsDimensionsFromIndexPositions) {
  auto c = check(
      "let A = randn([3, 5])\nlet B = randn([5, 7])\n"
      "let C = compute(A, B) {\n  @kernel matmul\n  for i in 0..M, j in 0..N:\n    var sum = 0.0\n"
      "    for k in 0..K:\n      sum += A[i, k] * B[k, j]\n    out[i, j] = sum\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  std::string k = c->cir();
  EXPECT_TRUE(contains(k, "kernel C: matmul\n  dims M, K, N\n")) << k;
  EXPECT_TRUE(contains(k, "in A: tensor[M, K, f32]\n  in B: tensor[K, N, f32]\n  out out: tensor[M, N, f32]")) << k;
  EXPECT_TRUE(contains(k, "parallel for i in 0..M {\n    parallel for j in 0..N {\n      var sum: f32 = 0.0")) << k;
  EXPECT_TRUE(contains(k, "      for k in 0..K {\n        sum = sum + A[i, k] * B[k, j]")) << k;
}

TEST(LowerKernels, StaticShapeConflictIsACompileTimeError) {
  auto c = check(
      "let A = randn([3, 5])\nlet B = randn([6, 7])\n"
      "let C = compute(A, B) {\n  @kernel matmul\n  for i in 0..M, j in 0..N:\n    var sum = 0.0\n"
      "    for k in 0..K:\n      sum += A[i, k] * B[k, j]\n    out[i, j] = sum\n}\n");
  ASSERT_FALSE(c->ok);
  std::string e = c->errors();
  EXPECT_TRUE(contains(e, "dimension 'K' is 6 here (B axis 0)")) << e;
  EXPECT_TRUE(contains(e, "but 5 here (A axis 1)")) << e;
}

TEST(LowerKernels, LiteralsAdoptTheInputType) {
  auto c = check("let x = astype(randn([8]), f64)\nlet n = 8\nlet y = compute(x) {\n  @kernel elementwise\n"
                 "  for i in 0..n:\n    out[i] = x[i] * 0.5 + 1\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "out out: tensor[n, f64]")) << c->cir();
  EXPECT_TRUE(contains(c->cir(), "out[i] = x[i] * f64(0.5) + f64(1.0)")) << c->cir();
}

TEST(LowerKernels, RopeOutputShapeFromAffineIndices) {
  auto c = check(
      "let head_dim = 8\nlet x = randn([2, 3, 5, head_dim])\nlet cs = randn([5, 4])\nlet sn = randn([5, 4])\n"
      "let r = compute(x, cs, sn) {\n  @kernel elementwise\n"
      "  for b in 0..batch, h in 0..heads, s in 0..seq, d in 0..head_dim/2:\n"
      "    let x0 = x[b, h, s, d * 2]\n    let x1 = x[b, h, s, d * 2 + 1]\n"
      "    let c = cs[s, d]\n    let s_val = sn[s, d]\n"
      "    out[b, h, s, d * 2] = x0 * c - x1 * s_val\n    out[b, h, s, d * 2 + 1] = x0 * s_val + x1 * c\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "out out: tensor[batch, heads, seq, head_dim / 2 * 2, f32]")) << c->cir();
}

// A range that reads an outer loop's variable: the bound of the index takes
// the largest value of that variable too (here 1 * 4 + (1 + 2)).
TEST(LowerKernels, OutputShapeOverATriangularNest) {
  auto c = check("let x = randn([2, 5])\nlet y = compute(x) {\n  @kernel fused\n  for i in 0..2:\n"
                 "    for j in 0..i + 3:\n      out[i * 4 + j] = x[i, j] + 1.0\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "out out: tensor[8, f32]")) << c->cir();
}

TEST(LowerKernels, ReduceAlongAnAxis) {
  auto c = check("let m = randn([3, 4])\nlet s = compute(m) {\n  @kernel reduce(+, axis=1)\n"
                 "  for i in 0..rows, j in 0..cols:\n    yield m[i, j]\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "kernel s: reduce(+, axis=1)")) << c->cir();
  EXPECT_TRUE(contains(c->cir(), "out out: tensor[rows, f32]")) << c->cir();
  EXPECT_TRUE(contains(c->cir(), "yield[i] m[i, j]")) << c->cir();
}

TEST(LowerKernels, ArgmaxGivesAnIndex) {
  auto c = check("let d = randn([9])\nlet len = 9\nlet k = compute(d) {\n  @kernel reduce(argmax)\n"
                 "  for i in 0..len:\n    yield (d[i], i)\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "out out: i64\n")) << c->cir();
  EXPECT_TRUE(contains(c->cir(), "yield (d[i], i)")) << c->cir();
}

TEST(LowerKernels, SlicedTileWritesCoverTheWholeAxis) {
  auto c = check(
      "let q = randn([2, 3, 37, 8])\nlet blk = 16\nlet o = compute(q) {\n  @kernel flash_attention\n"
      "  for b in 0..batch, h in 0..heads:\n    for s0 in 0..seq step blk:\n"
      "      let t = q[b, h, s0:s0 + blk]\n      out[b, h, s0:s0 + blk] = t * 2.0\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "out out: tensor[batch, heads, seq, q.d3, f32]")) << c->cir();
}

TEST(LowerKernels, ShadowedLoopVariableUsedAsIndex) {
  auto c = check("let x = randn([4, 6])\nlet y = compute(x) {\n  @kernel elementwise\n"
                 "  for s in 0..n, d in 0..m:\n    let s = x[s, d]\n    out[s, d] = s\n}\n");
  ASSERT_FALSE(c->ok);
  std::string e = c->errors();
  EXPECT_TRUE(contains(e, "k.zynml:6:9: error: index 's' has type f32, but indices must be integers")) << e;
  EXPECT_TRUE(contains(e, "k.zynml:5:9: note: 's' refers to this declaration, which shadows the loop variable 's'")) << e;
  EXPECT_TRUE(contains(e, "k.zynml:4:7: note: the shadowed loop variable is declared here")) << e;
}

TEST(LowerKernels, UnboundDimensionHasAHint) {
  auto c = check("let y = compute() {\n  @kernel elementwise\n  for i in 0..N:\n    out[i] = 1.0\n}\n");
  ASSERT_FALSE(c->ok);
  std::string e = c->errors();
  EXPECT_TRUE(contains(e, "k.zynml:3:15: error: unbound dimension 'N'")) << e;
  EXPECT_TRUE(contains(e, "hint: bind it with a host variable")) << e;
}

TEST(LowerKernels, HostIntegersAreDimensionsAndFloatsAreScalars) {
  auto c = check("let x = randn([10])\nlet n = 10\nlet eps = 1e-5\nlet y = compute(x) {\n  @kernel elementwise\n"
                 "  for i in 0..n:\n    out[i] = x[i] + eps\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "host_dims n\n")) << c->cir();
  EXPECT_TRUE(contains(c->cir(), "scalar eps: f64\n")) << c->cir();
  EXPECT_TRUE(contains(c->cir(), "out[i] = x[i] + f32(eps)")) << c->cir();
}

TEST(LowerKernels, ParameterTypeDimensionsNameTheInput) {
  auto c = check("def f(x: tensor[batch, hidden]) {\n  return compute(x) {\n    @kernel elementwise\n"
                 "    for b in 0..batch, h in 0..hidden:\n      out[b, h] = x[b, h] * 2.0\n  }\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "dims batch, hidden\n  in x: tensor[batch, hidden, f32]")) << c->cir();
}

TEST(LowerKernels, KernelErrorsAreReportedTogether) {
  auto c = check("let x = randn([4])\nlet t = randn([4])\nlet y = compute(x) {\n  @kernel elementwise\n"
                 "  for i in 0..n:\n    x[i] = 1.0\n    out[i] = t[i] + nope\n    yield x[i]\n}\n");
  ASSERT_FALSE(c->ok);
  std::string e = c->errors();
  EXPECT_TRUE(contains(e, "input 'x' is read-only in the kernel")) << e;
  EXPECT_TRUE(contains(e, "tensor 't' is used in the kernel but is not an input of compute(...)")) << e;
  EXPECT_TRUE(contains(e, "unknown name 'nope'")) << e;
  EXPECT_TRUE(contains(e, "yield is only allowed in reduce kernels")) << e;
}

TEST(LowerKernels, UnknownKernelTypeListsTheKnownOnes) {
  auto c = check("let x = randn([4])\nlet y = compute(x) {\n  @kernel expensive\n  for i in 0..n:\n    out[i] = x[i]\n}\n");
  ASSERT_FALSE(c->ok);
  EXPECT_TRUE(contains(c->errors(), "unknown kernel type 'expensive'")) << c->errors();
  EXPECT_TRUE(contains(c->errors(), "hint: one of elementwise, reduce(op[, axis=k]), matmul")) << c->errors();
}

}  // namespace
}  // namespace zyntax

namespace zyntax {
namespace {

TEST(LowerKernels, NumberThatBecomesATileIsDeclaredWithTheTileShape) {
  auto c = check("let x = randn([5, 4])\nlet y = compute(x) {\n  @kernel fused\n  for b in 0..1:\n    var m = -inf\n"
                 "    let rows = 3\n    let S = x[0:rows] * 2.0\n    m = row_max(S)\n    out = m\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "var m: tensor[min(3, x.d0), 1, f32] = fill(-inf, [min(3, x.d0), 1])")) << c->cir();
  EXPECT_TRUE(contains(c->cir(), "out out: tensor[min(3, x.d0), 1, f32]")) << c->cir();
}

// The slice names the axis `seq` only after the first pass over the body; the
// running max typed from that slice must follow the new name.
TEST(LowerKernels, VariableTypedFromASliceFollowsTheDimensionItBinds) {
  auto c = check(
      "let q = randn([2, 24, 4, 16])\nlet blk = 16\nlet o = compute(q) {\n  @kernel fused\n"
      "  for b in 0..2, h in 0..4:\n    for s0 in 0..seq step blk:\n      var m = -inf\n"
      "      let t = q[b, s0:s0 + blk, h]\n      m = max(m, row_max(t))\n      out[b, s0:s0 + blk, h] = m\n}\n");
  ASSERT_TRUE(c->ok) << c->errors();
  EXPECT_TRUE(contains(c->cir(), "var m: tensor[min(blk + s0, seq) - s0, 1, f32]")) << c->cir();
  EXPECT_FALSE(contains(c->cir(), "q.d1")) << c->cir();
}

}  // namespace
}  // namespace zyntax
