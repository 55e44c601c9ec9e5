// cir::WarpgroupAttention in the CIR layer: the reference executor runs it as
// ir.hpp defines it (against softmax(Q K^T * scale) V computed here in
// float64, with and without the causal mask, over query tiles shared out
// among persistent blocks); the printer shows its fields; the verifier holds
// it to its rules; reads/writes/binds and the mutator treat it like the
// warpgroup product; the support check takes it only on a GPU with
// warpgroup matrix units and tensor copies.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <tuple>

#include "backends/reference/reference_executor.hpp"
#include "cir/hash.hpp"
#include "cir/mutator.hpp"
#include "cir/printer.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"
#include "gpu_targets.hpp"
#include "plan/kernel_support.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using cir::Expr;

Expr ivar(const std::string& n) { return cir::Var::make(n, cir::Type::scalar(DType::I64)); }
Expr lt(Expr a, Expr b) { return cir::Binary::make(BinaryOp::Lt, std::move(a), std::move(b)); }

struct Shape3 {
  int64_t batches, seq, head_dim;
  bool causal;
};

// An input [batches, rows, head_dim] as an operand view: the head dimension
// is axis 0 (the depth of Q K^T for queries and keys, K-major; the side of
// P V for values, MN-major), the rows axis 1, the batch axis 2.
cir::ProductOperand operand(const std::string& name, DType t, bool k_major, int64_t batches, int64_t rows, int64_t head_dim) {
  cir::ProductOperand o;
  o.buffer = name;
  o.dtype = t;
  o.k_major = k_major;
  o.rank = 3;
  o.dims = {head_dim, rows, batches};
  o.strides = {head_dim, rows * head_dim};
  return o;
}

// Query tiles of 128 rows over keys in tiles of 128, taken by block `blk`
// with a stride of 3; the epilogue stores the rows below the queries.
cir::WarpgroupAttention attention_of(const Shape3& s, DType t = DType::BF16) {
  cir::WarpgroupAttention a{Span{}};
  a.q = operand("Q", t, true, s.batches, s.seq, s.head_dim);
  a.k = operand("K", t, true, s.batches, s.seq, s.head_dim);
  a.v = operand("V", t, false, s.batches, s.seq, s.head_dim);
  a.queries = s.seq;
  a.keys = s.seq;
  a.head_dim = s.head_dim;
  a.batches = s.batches;
  a.scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  a.causal = s.causal;
  a.tile_rows = 128;
  a.tile_keys = 128;
  a.stages = 2;
  a.consumers = 2;
  a.first_tile = ivar("blk");
  a.tile_stride = cir::i64(3);
  a.stage = "stage";
  a.batch_var = "b";
  a.row = "row";
  a.col = "col";
  a.value = "value";
  std::vector<cir::AxisSel> at = {cir::AxisSel::at(ivar("b")), cir::AxisSel::at(ivar("row")), cir::AxisSel::at(ivar("col"))};
  a.epilogue = {cir::make_if(lt(ivar("row"), cir::i64(s.seq)), {cir::make_store("out", at, cir::Var::make("value", cir::Type::scalar(DType::F32)))})};
  return a;
}

// gpu_block for blk in 0..3: shared stage; warpgroup_attention (wrapped by `wrap`).
cir::Kernel kernel_of(const Shape3& s, const cir::WarpgroupAttention& a, DType t = DType::BF16,
                      std::function<cir::Block(cir::Stmt alloc, cir::Stmt attention)> wrap = {}) {
  cir::Kernel k;
  k.name = "wga";
  k.kind = cir::KernelKind::FlashAttention;
  cir::Type io = cir::Type::tensor(t, {cir::i64(s.batches), cir::i64(s.seq), cir::i64(s.head_dim)});
  k.params = {{cir::ParamRole::Input, "Q", io},
              {cir::ParamRole::Input, "K", io},
              {cir::ParamRole::Input, "V", io},
              {cir::ParamRole::Output, "out", cir::Type::tensor(DType::F32, io.shape)}};
  cir::Stmt alloc = cir::make_allocate("stage", cir::Type::tensor(DType::U8, {cir::i64(a.stage_bytes())}), cir::MemorySpace::Shared);
  cir::Stmt att = cir::make_warpgroup_attention(a);
  cir::Block body = wrap ? wrap(alloc, att) : cir::Block{alloc, att};
  k.body = {cir::make_for("blk", cir::i64(0), cir::i64(3), cir::i64(1), body, cir::LoopKind::GpuBlock)};
  return k;
}

std::string problems(const cir::Kernel& k) {
  std::string all;
  for (const std::string& s : cir::verify(k)) all += s + "\n";
  return all;
}

bool has(const std::string& all, const std::string& what) { return all.find(what) != std::string::npos; }

// softmax(Q K^T * scale) V in float64 from the inputs as stored, without rounding the weights.
Tensor expected(const Shape3& s, double scale, const Tensor& q, const Tensor& k, const Tensor& v) {
  int64_t n = s.seq, d = s.head_dim;
  Tensor out = Tensor::zeros(DType::F64, {s.batches, n, d});
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t b = 0; b < s.batches; ++b)
    for (int64_t r = 0; r < n; ++r) {
      int64_t seen = s.causal ? r + 1 : n;
      double m = -INFINITY;
      for (int64_t j = 0; j < seen; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += q.get_f64((b * n + r) * d + e) * k.get_f64((b * n + j) * d + e);
        w[static_cast<size_t>(j)] = scale * dot;
        m = std::max(m, w[static_cast<size_t>(j)]);
      }
      double l = 0;
      for (int64_t j = 0; j < seen; ++j) l += (w[static_cast<size_t>(j)] = std::exp(w[static_cast<size_t>(j)] - m));
      for (int64_t c = 0; c < d; ++c) {
        double o = 0;
        for (int64_t j = 0; j < seen; ++j) o += w[static_cast<size_t>(j)] * v.get_f64((b * n + j) * d + c);
        out.set((b * n + r) * d + c, Scalar::of_float(o / l, DType::F64));
      }
    }
  return out;
}

// ---------------------------------------------------------------- reference executor

// Rows of 37 and 130 queries: one query tile with rows past the queries,
// and two tiles, the last partly past them; 2 batch elements, so that 3
// blocks with a stride of 3 take 2 or 4 tiles between them, one block two.
TEST(WarpgroupAttentionReference, TheReferenceExecutorComputesSoftmaxAttention) {
  for (const Shape3& s : {Shape3{2, 37, 64, false}, Shape3{2, 37, 64, true}, Shape3{2, 130, 64, false}, Shape3{2, 130, 64, true}}) {
    std::string name = std::to_string(s.seq) + (s.causal ? " causal" : "");
    cir::WarpgroupAttention a = attention_of(s);
    cir::Kernel k = kernel_of(s, a);
    ASSERT_EQ(problems(k), "") << name << "\n" << cir::print(k);
    Random rng(static_cast<uint64_t>(s.seq * 2 + s.causal));
    Shape shape = {s.batches, s.seq, s.head_dim};
    Tensor tq = rand_normal(rng, DType::BF16, shape), tk = rand_normal(rng, DType::BF16, shape), tv = rand_normal(rng, DType::BF16, shape);
    Tensor want = expected(s, a.scale, tq, tk, tv);
    Tensor got = ReferenceKernel(k).run({tq, tk, tv}, {}).astype(DType::F64);
    ASSERT_EQ(got.shape(), want.shape()) << name;
    // The weights rounded to bf16 (8 bits) move each value by a few parts in
    // a thousand of the values' magnitude.
    double largest = 0, diff2 = 0, want2 = 0, worst = 0;
    for (int64_t e = 0; e < want.numel(); ++e) {
      double g = got.get_f64(e), w = want.get_f64(e);
      ASSERT_TRUE(std::isfinite(g)) << name << " element " << e;
      largest = std::max(largest, std::fabs(w));
      worst = std::max(worst, std::fabs(g - w));
      diff2 += (g - w) * (g - w);
      want2 += w * w;
    }
    EXPECT_LT(worst / largest, 1e-2) << name;
    EXPECT_LT(std::sqrt(diff2 / want2), 1e-2) << name;
    // The first row sees only its own key under the mask: V's first row exactly.
    if (s.causal) {
      for (int64_t c = 0; c < s.head_dim; ++c) EXPECT_EQ(got.get_f64(c), tv.get_f64(c)) << name << " column " << c;
    }
  }
}

// The weights are rounded to the values' dtype before P V: with f32
// operands they are not, and the result is the float64 one to f32 sums.
TEST(WarpgroupAttentionReference, F32OperandsKeepTheWeightsUnrounded) {
  Shape3 s{1, 37, 64, true};
  cir::WarpgroupAttention a = attention_of(s, DType::F32);
  cir::Kernel k = kernel_of(s, a, DType::F32);
  Random rng(5);
  Shape shape = {s.batches, s.seq, s.head_dim};
  Tensor tq = rand_normal(rng, DType::F32, shape), tk = rand_normal(rng, DType::F32, shape), tv = rand_normal(rng, DType::F32, shape);
  Tensor want = expected(s, a.scale, tq, tk, tv);
  Tensor got = ReferenceKernel(k).run({tq, tk, tv}, {}).astype(DType::F64);
  for (int64_t e = 0; e < want.numel(); ++e) ASSERT_NEAR(got.get_f64(e), want.get_f64(e), 1e-5) << "element " << e;
}

// A stride of more than the 3 blocks leaves tiles out: 2x130 queries are 4
// tiles, and blocks 0..2 with a stride of 4 take tiles 0, 1 and 2; tile 3
// (attention_tile: batch 1, the first row tile) stays unwritten.
TEST(WarpgroupAttentionReference, TheBlocksStrideDecidesWhichTilesAreWritten) {
  Shape3 s{2, 130, 64, false};
  cir::WarpgroupAttention a = attention_of(s);
  a.tile_stride = cir::i64(4);
  cir::Kernel k = kernel_of(s, a);
  Random rng(3);
  Shape shape = {s.batches, s.seq, s.head_dim};
  Tensor tq = rand_normal(rng, DType::BF16, shape), tk = rand_normal(rng, DType::BF16, shape), tv = rand_normal(rng, DType::BF16, shape);
  Tensor got = ReferenceKernel(k).run({tq, tk, tv}, {});
  cir::AttentionTile skipped = cir::attention_tile(3, a.batches, a.row_tiles());
  ASSERT_EQ(skipped.batch, 1);
  ASSERT_EQ(skipped.row_tile, 0);
  for (int64_t b = 0; b < s.batches; ++b)
    for (int64_t r = 0; r < s.seq; ++r) {
      bool in_skipped = b == skipped.batch && r / a.tile_rows == skipped.row_tile;
      for (int64_t c = 0; c < s.head_dim; ++c) {
        double v = got.get_f64((b * s.seq + r) * s.head_dim + c);
        if (in_skipped) ASSERT_EQ(v, 0.0) << b << "," << r << "," << c;
        else ASSERT_NE(v, 0.0) << b << "," << r << "," << c;
      }
    }
}

TEST(WarpgroupAttentionReference, AttentionTileTakesEveryTileOnceTheLastRowsFirst) {
  for (auto [batches, row_tiles] : {std::pair<int64_t, int64_t>{1, 1}, {2, 2}, {3, 5}, {8, 1}, {1, 7}}) {
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int64_t t = 0; t < batches * row_tiles; ++t) {
      cir::AttentionTile at = cir::attention_tile(t, batches, row_tiles);
      ASSERT_TRUE(at.batch >= 0 && at.batch < batches && at.row_tile >= 0 && at.row_tile < row_tiles) << t;
      EXPECT_TRUE(seen.insert({at.batch, at.row_tile}).second) << "tile " << t << " taken twice";
      if (t < batches) {
        EXPECT_EQ(at.row_tile, row_tiles - 1);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), batches * row_tiles);
  }
}

// ---------------------------------------------------------------- printer

TEST(WarpgroupAttentionReference, PrintsEveryField) {
  Shape3 s{2, 37, 64, true};
  cir::WarpgroupAttention a = attention_of(s);
  a.scale = 0.125;
  cir::Kernel k = kernel_of(s, a);
  std::string text = cir::print(k);
  for (const char* want : {"warpgroup_attention 2x37x37x64 scale 0.125 causal tiles blk.. step 3 tile 128x128 stages 2 consumers 2 stage stage",
                           "q=Q[k-major bf16 rank 3 dims (64, 37, 2) strides (64, 2368)]", "k=K[k-major bf16 rank 3 dims (64, 37, 2) strides (64, 2368)]",
                           "v=V[mn-major bf16 rank 3 dims (64, 37, 2) strides (64, 2368)]", "-> (b, row, col, value) {", "out[b, row, col] = value"})
    EXPECT_TRUE(has(text, want)) << want << "\n" << text;
  // Each field changes the printed form, and so the hash.
  std::vector<std::function<void(cir::WarpgroupAttention&)>> edits = {
      [](auto& q) { q.q.k_major = false; }, [](auto& q) { q.k.dtype = DType::F16; }, [](auto& q) { q.v.strides[1] = 7; },
      [](auto& q) { q.v.buffer = "K"; }, [](auto& q) { q.queries = 36; }, [](auto& q) { q.keys = 36; }, [](auto& q) { q.head_dim = 32; },
      [](auto& q) { q.batches = 1; }, [](auto& q) { q.scale = 0.1250001; }, [](auto& q) { q.causal = false; },
      [](auto& q) { q.tile_rows = 64; }, [](auto& q) { q.tile_keys = 64; }, [](auto& q) { q.stages = 3; }, [](auto& q) { q.consumers = 1; },
      [](auto& q) { q.first_tile = cir::i64(0); }, [](auto& q) { q.tile_stride = cir::i64(2); }, [](auto& q) { q.stage = "s2"; },
      [](auto& q) { q.batch_var = "bb"; }, [](auto& q) { q.row = "r2"; }, [](auto& q) { q.col = "c2"; }, [](auto& q) { q.value = "v2"; },
      [](auto& q) { q.epilogue = {}; }};
  std::set<uint64_t> seen = {cir::hash_kernel(k)};
  for (size_t i = 0; i < edits.size(); ++i) {
    cir::WarpgroupAttention q = a;
    edits[i](q);
    EXPECT_TRUE(seen.insert(cir::hash_kernel(kernel_of(s, q))).second) << "edit " << i << " does not change the hash";
  }
}

// ---------------------------------------------------------------- verifier

TEST(WarpgroupAttentionReference, TheVerifierHoldsItToItsRules) {
  Shape3 s{2, 37, 64, false};
  cir::WarpgroupAttention good = attention_of(s);
  EXPECT_EQ(problems(kernel_of(s, good)), "");
  auto with = [&](std::function<void(cir::WarpgroupAttention&)> edit) {
    cir::WarpgroupAttention q = good;
    edit(q);
    return problems(kernel_of(s, q));
  };
  std::string wrong = with([](auto& q) { q.v.dtype = DType::F16; });
  EXPECT_TRUE(has(wrong, "factor 'V' is read as f16 but the input is bf16")) << wrong;
  EXPECT_TRUE(has(wrong, "its operands are bf16, bf16 and f16; all f16 or all bf16")) << wrong;
  {
    cir::WarpgroupAttention f = attention_of(s, DType::F32);
    std::string all = problems(kernel_of(s, f, DType::F32));
    EXPECT_TRUE(has(all, "all f16 or all bf16")) << all;
  }
  EXPECT_TRUE(has(with([](auto& q) { q.k.k_major = false; }), "queries and keys must have the head dimension as their fast axis"));
  EXPECT_TRUE(has(with([](auto& q) { q.v.k_major = true; }), "its values must have the key rows as their depth (mn-major)"));
  EXPECT_TRUE(has(with([](auto& q) { q.q.buffer = "out"; }), "factor 'out' is not an input"));
  EXPECT_TRUE(has(with([](auto& q) { q.k.dims[1] = 38; }), "factor 'K' is viewed up to element"));
  EXPECT_TRUE(has(with([](auto& q) { q.v.dims[2] = 1; }), "batch axis has 1 elements, fewer than the statement's 2"));
  EXPECT_TRUE(has(with([](auto& q) { q.keys = -1; }), "a negative extent"));
  EXPECT_TRUE(has(with([](auto& q) { q.scale = NAN; }), "a scale of"));
  EXPECT_TRUE(has(with([](auto& q) { q.tile_keys = 0; }), "tiles of 128 rows by 0 keys"));
  EXPECT_TRUE(has(with([](auto& q) { q.consumers = 0; }), "0 consumer warpgroups"));
  EXPECT_TRUE(has(with([](auto& q) { q.consumers = 3; }), "128 rows do not split over 3 consumer warpgroups"));
  EXPECT_TRUE(has(with([](auto& q) { q.stages = 1; }), "1 stages, fewer than 2"));
  EXPECT_TRUE(has(with([](auto& q) { q.tile_stride = cir::IntImm::make(3, DType::I32); }), "tile stride"));
  // The stages: too small, or missing.
  auto wrapped = [&](std::function<cir::Block(cir::Stmt, cir::Stmt)> wrap) { return problems(kernel_of(s, good, DType::BF16, wrap)); };
  std::string small = wrapped([&](cir::Stmt, cir::Stmt att) {
    return cir::Block{cir::make_allocate("stage", cir::Type::tensor(DType::U8, {cir::i64(good.stage_bytes() - 1)}), cir::MemorySpace::Shared), att};
  });
  EXPECT_TRUE(has(small, "fewer than the " + std::to_string(good.stage_bytes()) + " it needs")) << small;
  EXPECT_TRUE(has(wrapped([](cir::Stmt, cir::Stmt att) { return cir::Block{att}; }), "its stages 'stage' are not a shared array of the GPU block"));
  std::string in_thread = wrapped([](cir::Stmt alloc, cir::Stmt att) {
    return cir::Block{alloc, cir::make_for("t", cir::i64(0), cir::i64(128), cir::i64(1), {att}, cir::LoopKind::GpuThread)};
  });
  EXPECT_TRUE(has(in_thread, "warpgroup_attention inside a GPU thread loop")) << in_thread;
  // The epilogue: no barriers, no reads of the output, its names bound once.
  EXPECT_TRUE(has(with([](auto& q) { q.epilogue.push_back(cir::make_barrier(cir::FenceScope::Block)); }), "barrier inside a GPU thread loop"));
  EXPECT_TRUE(has(with([&](auto& q) {
                    cir::Type out = cir::Type::tensor(DType::F32, {cir::i64(2), cir::i64(37), cir::i64(64)});
                    std::vector<cir::AxisSel> at = {cir::AxisSel::at(ivar("b")), cir::AxisSel::at(ivar("row")), cir::AxisSel::at(ivar("col"))};
                    q.epilogue = {cir::make_store("out", at, cir::make_access("out", out, at))};
                  }),
                  "its epilogue reads the output 'out'"));
  EXPECT_TRUE(has(with([](auto& q) { q.col = "blk"; }), "'blk' is declared more than once"));
}

// ---------------------------------------------------------------- traversals and support

TEST(WarpgroupAttentionReference, ReadsWritesAndTheMutator) {
  Shape3 s{2, 37, 64, false};
  cir::WarpgroupAttention a = attention_of(s);
  cir::Stmt st = cir::make_warpgroup_attention(a);
  EXPECT_EQ(cir::reads(st), (std::set<std::string>{"Q", "K", "V", "stage", "blk"}));
  EXPECT_EQ(cir::writes(st), (std::set<std::string>{"out", "stage", "b", "row", "col", "value"}));
  EXPECT_EQ(cir::binds(st), (std::set<std::string>{"b", "row", "col", "value"}));
  cir::IRMutator same;
  EXPECT_TRUE(same.mutate(st).same_as(st));
  struct Stride : cir::IRMutator {
    using IRMutator::visit;
    Expr visit(const cir::IntImm* op) override { return op->value == 3 ? cir::i64(5) : IRMutator::visit(op); }
  } stride;
  cir::Stmt t = stride.mutate(st);
  ASSERT_FALSE(t.same_as(st));
  std::string before = cir::print(st), after = cir::print(t);
  size_t at = before.find("step 3");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(before.replace(at, 6, "step 5"), after);
}

TEST(WarpgroupAttentionReference, OnlyGpusWithWarpgroupMatrixUnitsAndTensorCopiesTakeIt) {
  Shape3 s{2, 130, 64, true};
  cir::Kernel k = kernel_of(s, attention_of(s));
  ASSERT_EQ(problems(k), "");
  GpuTarget hopper = testing::nvidia_target("sm_90");
  hopper.warpgroup_mma = hopper.tensor_copies = true;
  GpuSupport ok = gpu_support(k, hopper);
  EXPECT_TRUE(ok.ok()) << *ok.why_not;
  EXPECT_GE(ok.shared_bytes, attention_of(s).stage_bytes());
  for (auto [mma, copies] : {std::pair{false, true}, std::pair{true, false}}) {
    GpuTarget t = hopper;
    t.warpgroup_mma = mma;
    t.tensor_copies = copies;
    GpuSupport no = gpu_support(k, t);
    ASSERT_FALSE(no.ok());
    EXPECT_EQ(*no.why_not, "warpgroup attention with tensor copies");
  }
  std::optional<std::string> cpu = cpu_unsupported_reason(k);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(*cpu, "warpgroup attention with tensor copies");
}

}  // namespace
}  // namespace zyntax
