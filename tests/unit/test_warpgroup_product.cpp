// cir::WarpgroupProduct in the CIR layer: the printer shows every field (the
// printed text is the kernel's hash); the verifier holds the statement to its
// comment's rules; product_tile numbers every tile once; reads/writes/binds
// and the mutator treat it like the other statements; the reference executor
// runs it as ir.hpp defines it (against a float64 product computed here), for
// k-major and MN-major bf16 factors, a batched rank-3 factor, views narrower
// than their input (zero past an axis' extent) and TF32 factors; the support
// check takes it only on a GPU with warpgroup matrix units and tensor copies.
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
Expr fimm(double v) { return cir::FloatImm::make(v, DType::F32); }
Expr lt(Expr a, Expr b) { return cir::Binary::make(BinaryOp::Lt, std::move(a), std::move(b)); }

// A factor of side x depth (x batches where batched), stored k-major
// ([side, depth_stride]) or MN-major ([depth, side_stride]); strides past the
// extent pad each row with elements the view must not read.
struct Factor {
  cir::ProductOperand view;
  cir::Type type;
};

Factor factor(const std::string& name, DType t, bool k_major, int64_t side, int64_t depth, int64_t batches, int64_t pad) {
  Factor f;
  f.view.buffer = name;
  f.view.dtype = t;
  f.view.k_major = k_major;
  f.view.rank = batches > 1 ? 3 : 2;
  int64_t fast = (k_major ? depth : side) + pad, slow = k_major ? side : depth;
  f.view.dims = {k_major ? depth : side, slow, batches};
  f.view.strides = {fast, batches > 1 ? fast * slow : 0};
  std::vector<Expr> shape = {cir::i64(slow), cir::i64(fast)};
  if (batches > 1) shape.insert(shape.begin(), cir::i64(batches));
  f.type = cir::Type::tensor(t, shape);
  return f;
}

struct Case {
  const char* name;
  DType dtype;
  bool a_k_major, b_k_major;
  int64_t m, n, k, batches;
  int64_t pad_a, pad_b;
  int group;
};

cir::WarpgroupProduct product_of(const Case& c, const Factor& a, const Factor& b) {
  cir::WarpgroupProduct p{Span{}};
  p.a = a.view;
  p.b = b.view;
  p.rows = c.m;
  p.cols = c.n;
  p.depth = c.k;
  p.batches = c.batches;
  p.tile_rows = 16;
  p.tile_cols = 32;
  p.tile_depth = 8;
  p.stages = 4;
  p.consumers = 2;
  p.group = c.group;
  p.first_tile = ivar("blk");
  p.tile_stride = cir::i64(3);
  p.stage = "stage";
  p.batch_var = "b";
  p.row = "row";
  p.col = "col";
  p.value = "value";
  std::vector<cir::AxisSel> at = {cir::AxisSel::at(ivar("row")), cir::AxisSel::at(ivar("col"))};
  if (c.batches > 1) at.insert(at.begin(), cir::AxisSel::at(ivar("b")));
  Expr v = cir::Binary::make(BinaryOp::Add, cir::Binary::make(BinaryOp::Mul, cir::Var::make("value", cir::Type::scalar(DType::F32)), fimm(2)),
                             fimm(1));
  Expr inside = cir::Binary::make(BinaryOp::And, lt(ivar("row"), cir::i64(c.m)), lt(ivar("col"), cir::i64(c.n)));
  p.epilogue = {cir::make_if(inside, {cir::make_store("out", at, v)})};
  return p;
}

// gpu_block for blk in 0..3: shared stage; warpgroup_product (wrapped by `wrap`).
cir::Kernel kernel_of(const Case& c, const Factor& a, const Factor& b, const cir::WarpgroupProduct& p,
                      std::function<cir::Block(cir::Stmt alloc, cir::Stmt product)> wrap = {}) {
  cir::Kernel k;
  k.name = "wgp";
  k.kind = cir::KernelKind::MatMul;
  std::vector<Expr> out = {cir::i64(c.m), cir::i64(c.n)};
  if (c.batches > 1) out.insert(out.begin(), cir::i64(c.batches));
  k.params = {{cir::ParamRole::Input, "A", a.type}, {cir::ParamRole::Input, "B", b.type},
              {cir::ParamRole::Output, "out", cir::Type::tensor(DType::F32, out)}};
  cir::Stmt alloc = cir::make_allocate("stage", cir::Type::tensor(DType::U8, {cir::i64(p.stage_bytes())}), cir::MemorySpace::Shared);
  cir::Stmt prod = cir::make_warpgroup_product(p);
  cir::Block body = wrap ? wrap(alloc, prod) : cir::Block{alloc, prod};
  k.body = {cir::make_for("blk", cir::i64(0), cir::i64(3), cir::i64(1), body, cir::LoopKind::GpuBlock)};
  return k;
}

const Case kBf16 = {"bf16 k-major", DType::BF16, true, true, 37, 45, 19, 1, 0, 0, 2};

std::string problems(const cir::Kernel& k) {
  std::string all;
  for (const std::string& s : cir::verify(k)) all += s + "\n";
  return all;
}

// ---------------------------------------------------------------- printer

TEST(WarpgroupProduct, PrintsEveryField) {
  Factor a = factor("A", DType::BF16, true, 37, 19, 1, 5), b = factor("B", DType::BF16, false, 45, 19, 1, 3);
  cir::WarpgroupProduct p = product_of(kBf16, a, b);
  cir::Kernel k = kernel_of(kBf16, a, b, p);
  std::string text = cir::print(k);
  for (const char* want : {"warpgroup_product 1x37x45 over 19 tiles blk.. step 3 tile 16x32x8 stages 4 consumers 2 group 2 stage stage",
                           "a=A[k-major bf16 rank 2 dims (19, 37, 1) strides (24, 0)]", "b=B[mn-major bf16 rank 2 dims (45, 19, 1) strides (48, 0)]",
                           "-> (b, row, col, value) {", "out[row, col] = value * 2"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  // Each field changes the printed form, and so the hash.
  uint64_t h = cir::hash_kernel(k);
  std::vector<std::function<void(cir::WarpgroupProduct&)>> edits = {
      [](auto& q) { q.a.k_major = !q.a.k_major; }, [](auto& q) { q.b.dtype = DType::F16; }, [](auto& q) { q.a.rank = 3; },
      [](auto& q) { q.b.dims[2] = 2; }, [](auto& q) { q.a.strides[1] = 7; }, [](auto& q) { q.a.buffer = "B"; },
      [](auto& q) { q.rows = 36; }, [](auto& q) { q.cols = 44; }, [](auto& q) { q.depth = 18; }, [](auto& q) { q.batches = 2; },
      [](auto& q) { q.tile_rows = 64; }, [](auto& q) { q.tile_cols = 64; }, [](auto& q) { q.tile_depth = 16; },
      [](auto& q) { q.stages = 3; }, [](auto& q) { q.consumers = 1; }, [](auto& q) { q.group = 4; },
      [](auto& q) { q.first_tile = cir::i64(0); }, [](auto& q) { q.tile_stride = cir::i64(2); }, [](auto& q) { q.stage = "s2"; },
      [](auto& q) { q.batch_var = "bb"; }, [](auto& q) { q.row = "r2"; }, [](auto& q) { q.col = "c2"; }, [](auto& q) { q.value = "v2"; },
      [](auto& q) { q.epilogue = {}; }};
  std::set<uint64_t> seen = {h};
  for (size_t i = 0; i < edits.size(); ++i) {
    cir::WarpgroupProduct q = p;
    edits[i](q);
    EXPECT_TRUE(seen.insert(cir::hash_kernel(kernel_of(kBf16, a, b, q))).second) << "edit " << i << " does not change the hash";
  }
}

// ---------------------------------------------------------------- verifier

TEST(WarpgroupProduct, TheVerifierHoldsItToItsRules) {
  Factor a = factor("A", DType::BF16, true, 37, 19, 1, 0), b = factor("B", DType::BF16, true, 45, 19, 1, 0);
  cir::WarpgroupProduct good = product_of(kBf16, a, b);
  EXPECT_EQ(problems(kernel_of(kBf16, a, b, good)), "");
  auto with = [&](std::function<void(cir::WarpgroupProduct&)> edit) {
    cir::WarpgroupProduct q = good;
    edit(q);
    return problems(kernel_of(kBf16, a, b, q));
  };
  auto has = [](const std::string& all, const std::string& what) { return all.find(what) != std::string::npos; };
  // Operands.
  std::string wrong = with([](auto& q) { q.a.dtype = DType::F16; });
  EXPECT_TRUE(has(wrong, "factor 'A' is read as f16 but the input is bf16")) << wrong;
  EXPECT_TRUE(has(wrong, "its factors are f16 and bf16")) << wrong;
  EXPECT_TRUE(has(with([](auto& q) { q.a.buffer = "out"; }), "factor 'out' is not an input"));
  EXPECT_TRUE(has(with([](auto& q) { q.a.buffer = "nothing"; }), "factor 'nothing' is not an input"));
  EXPECT_TRUE(has(with([](auto& q) { q.b.rank = 4; }), "has rank 4, not 2 or 3"));
  EXPECT_TRUE(has(with([](auto& q) { q.b.dims[1] = 0; }), "has an axis of 0 elements"));
  EXPECT_TRUE(has(with([](auto& q) { q.b.strides[0] = -1; }), "has a negative stride"));
  std::string past = with([](auto& q) { q.a.strides[0] = 20; });
  EXPECT_TRUE(has(past, "factor 'A' is viewed up to element 738, past the input's 703")) << past;
  EXPECT_TRUE(has(with([](auto& q) { q.b.dims[0] = 20; }), "past the input's"));
  // A TF32 product's second factor needs the depth as its fast axis (the
  // first is read into registers from a tile of either major).
  {
    Factor fa = factor("A", DType::F32, true, 37, 19, 1, 0), fb = factor("B", DType::F32, false, 45, 19, 1, 0);
    cir::WarpgroupProduct q = product_of(kBf16, fa, fb);
    std::string all = problems(kernel_of(kBf16, fa, fb, q));
    EXPECT_TRUE(has(all, "a TF32 product's second factor must have the depth as its fast axis")) << all;
    q.b = factor("B", DType::F32, true, 45, 19, 1, 0).view;
    EXPECT_EQ(problems(kernel_of(kBf16, fa, factor("B", DType::F32, true, 45, 19, 1, 0), q)), "");
    Factor mn = factor("A", DType::F32, false, 37, 19, 1, 0);
    q.a = mn.view;
    EXPECT_EQ(problems(kernel_of(kBf16, mn, factor("B", DType::F32, true, 45, 19, 1, 0), q)), "");
  }
  {
    Factor ia = factor("A", DType::I32, true, 37, 19, 1, 0), ib = factor("B", DType::I32, true, 45, 19, 1, 0);
    EXPECT_TRUE(has(problems(kernel_of(kBf16, ia, ib, product_of(kBf16, ia, ib))), "both f16, bf16 or f32"));
  }
  // Tiles and the pipeline.
  EXPECT_TRUE(has(with([](auto& q) { q.tile_cols = 0; }), "tiles of 16x0x8"));
  EXPECT_TRUE(has(with([](auto& q) { q.stages = 1; }), "1 stages, fewer than 2"));
  EXPECT_TRUE(has(with([](auto& q) { q.consumers = 0; }), "0 consumer warpgroups"));
  EXPECT_TRUE(has(with([](auto& q) { q.group = 0; }), "tiles grouped by 0"));
  EXPECT_TRUE(has(with([](auto& q) { q.first_tile = cir::IntImm::make(0, DType::I32); }), "first tile "));
  EXPECT_TRUE(has(with([](auto& q) { q.first_tile = cir::IntImm::make(0, DType::I32); }), "is not an i64 scalar"));
  EXPECT_TRUE(has(with([](auto& q) { q.tile_stride = ivar("undefined"); }), "Var 'undefined' is not defined"));
  // The stages: missing, too small, not shared.
  auto wrapped = [&](std::function<cir::Block(cir::Stmt, cir::Stmt)> wrap) { return problems(kernel_of(kBf16, a, b, good, wrap)); };
  std::string missing = wrapped([](cir::Stmt, cir::Stmt p) { return cir::Block{p}; });
  EXPECT_TRUE(has(missing, "its stages 'stage' are not a shared array of the GPU block")) << missing;
  std::string small = wrapped([&](cir::Stmt, cir::Stmt p) {
    return cir::Block{cir::make_allocate("stage", cir::Type::tensor(DType::U8, {cir::i64(good.stage_bytes() - 1)}), cir::MemorySpace::Shared), p};
  });
  EXPECT_TRUE(has(small, "have 4159 bytes, fewer than the 4160 it needs")) << small;
  EXPECT_TRUE(has(wrapped([&](cir::Stmt, cir::Stmt p) {
                    return cir::Block{cir::make_allocate("stage", cir::Type::tensor(DType::U8, {cir::i64(good.stage_bytes())}), cir::MemorySpace::Local), p};
                  }),
                  "are not a shared array of the GPU block"));
  // A larger stage array of another dtype is fine.
  EXPECT_EQ(wrapped([&](cir::Stmt, cir::Stmt p) {
              return cir::Block{cir::make_allocate("stage", cir::Type::tensor(DType::F32, {cir::i64(good.stage_bytes() / 4 + 1)}), cir::MemorySpace::Shared), p};
            }),
            "");
  // Placement: in a thread loop, or outside any block loop.
  std::string in_thread = wrapped([](cir::Stmt alloc, cir::Stmt p) {
    return cir::Block{alloc, cir::make_for("t", cir::i64(0), cir::i64(128), cir::i64(1), {p}, cir::LoopKind::GpuThread)};
  });
  EXPECT_TRUE(has(in_thread, "warpgroup_product inside a GPU thread loop")) << in_thread;
  {
    cir::Kernel k = kernel_of(kBf16, a, b, good);
    cir::WarpgroupProduct q = good;
    q.first_tile = cir::i64(0);
    k.body = {cir::make_allocate("stage", cir::Type::tensor(DType::U8, {cir::i64(good.stage_bytes())}), cir::MemorySpace::Shared),
              cir::make_warpgroup_product(q)};
    std::string all = problems(k);
    EXPECT_TRUE(has(all, "warpgroup_product is not inside a GPU block loop")) << all;
  }
  // The epilogue: its names bound with their types, no barriers, no reads of the output.
  EXPECT_TRUE(has(with([](auto& q) {
                    q.epilogue = {cir::make_store("out", {cir::AxisSel::at(ivar("row")), cir::AxisSel::at(ivar("col"))}, ivar("value"))};
                  }),
                  "Var 'value' has dtype i64 but the let has dtype f32"));
  EXPECT_TRUE(has(with([](auto& q) { q.epilogue.push_back(cir::make_barrier(cir::FenceScope::Block)); }), "barrier inside a GPU thread loop"));
  EXPECT_TRUE(has(with([&](auto& q) {
                    cir::Type out = cir::Type::tensor(DType::F32, {cir::i64(37), cir::i64(45)});
                    q.epilogue = {cir::make_store("out", {cir::AxisSel::at(ivar("row")), cir::AxisSel::at(ivar("col"))},
                                                  cir::make_access("out", out, {cir::AxisSel::at(ivar("row")), cir::AxisSel::at(ivar("col"))}))};
                  }),
                  "its epilogue reads the output 'out'"));
  EXPECT_TRUE(has(with([](auto& q) { q.row = "blk"; }), "'blk' is declared more than once"));
}

// ---------------------------------------------------------------- tiles

TEST(WarpgroupProduct, ProductTileTakesEveryTileOnce) {
  for (auto [row_tiles, col_tiles, group, batches] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 8, 1}, {5, 3, 2, 1}, {5, 3, 8, 2}, {7, 4, 3, 3}, {16, 5, 8, 1}, {17, 2, 8, 2},
        {3, 9, 1, 1}, {9, 1, 4, 4}, {8, 8, 8, 1}, {12, 7, 5, 2}}) {
    std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
    int64_t tiles = batches * row_tiles * col_tiles;
    for (int64_t t = 0; t < tiles; ++t) {
      cir::ProductTile pt = cir::product_tile(t, row_tiles, col_tiles, group);
      ASSERT_TRUE(pt.batch >= 0 && pt.batch < batches && pt.row_tile >= 0 && pt.row_tile < row_tiles && pt.col_tile >= 0 && pt.col_tile < col_tiles)
          << row_tiles << "x" << col_tiles << " group " << group << " tile " << t;
      EXPECT_EQ(pt.batch, t / (row_tiles * col_tiles));
      EXPECT_TRUE(seen.insert({pt.batch, pt.row_tile, pt.col_tile}).second) << "tile " << t << " taken twice";
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), tiles);
  }
  // Down a column of the group, then right; the last group of one row tile.
  using RowCol = std::pair<int64_t, int64_t>;
  auto at = [](int64_t t) {
    cir::ProductTile p = cir::product_tile(t, 5, 3, 2);
    return RowCol{p.row_tile, p.col_tile};
  };
  EXPECT_EQ(at(0), RowCol(0, 0));
  EXPECT_EQ(at(1), RowCol(1, 0));
  EXPECT_EQ(at(2), RowCol(0, 1));
  EXPECT_EQ(at(6), RowCol(2, 0));
  EXPECT_EQ(at(12), RowCol(4, 0));
  EXPECT_EQ(at(14), RowCol(4, 2));
}

// ---------------------------------------------------------------- traversals

TEST(WarpgroupProduct, ReadsWritesAndTheMutator) {
  Factor a = factor("A", DType::BF16, true, 37, 19, 1, 0), b = factor("B", DType::BF16, true, 45, 19, 1, 0);
  cir::WarpgroupProduct p = product_of(kBf16, a, b);
  p.epilogue.push_back(cir::make_store("out", {cir::AxisSel::at(cir::i64(0)), cir::AxisSel::at(cir::i64(0))},
                                       cir::Var::make("scale", cir::Type::scalar(DType::F32))));
  cir::Stmt s = cir::make_warpgroup_product(p);
  EXPECT_EQ(cir::reads(s), (std::set<std::string>{"A", "B", "stage", "blk", "scale"}));
  EXPECT_EQ(cir::writes(s), (std::set<std::string>{"out", "stage", "b", "row", "col", "value"}));
  EXPECT_EQ(cir::binds(s), (std::set<std::string>{"b", "row", "col", "value"}));
  // Unchanged: the same node; a changed stride: a new node with the other fields kept.
  cir::IRMutator same;
  EXPECT_TRUE(same.mutate(s).same_as(s));
  struct Stride : cir::IRMutator {
    using IRMutator::visit;
    Expr visit(const cir::IntImm* op) override { return op->value == 3 ? cir::i64(5) : IRMutator::visit(op); }
  } stride;
  cir::Stmt t = stride.mutate(s);
  ASSERT_FALSE(t.same_as(s));
  std::string before = cir::print(s), after = cir::print(t);
  EXPECT_NE(after.find("step 5 tile"), std::string::npos) << after;
  size_t at = before.find("step 3");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(before.replace(at, 6, "step 5"), after);
  struct Epilogue : cir::IRMutator {
    using IRMutator::visit;
    Expr visit(const cir::FloatImm* op) override { return op->value == 2 ? fimm(3) : IRMutator::visit(op); }
  } epilogue;
  EXPECT_NE(cir::print(epilogue.mutate(s)).find("value * 3"), std::string::npos);
}

// ---------------------------------------------------------------- reference executor

// out = 2 * (a . b) + 1 in float64 from the inputs as stored (rounded to TF32 for f32).
Tensor expected(const Case& c, const Factor& a, const Factor& b, const Tensor& ta, const Tensor& tb, double* scale) {
  Shape shape = {c.m, c.n};
  if (c.batches > 1) shape.insert(shape.begin(), c.batches);
  Tensor out = Tensor::zeros(DType::F64, shape);
  auto value = [&](const Factor& f, const Tensor& t, int64_t side, int64_t d, int64_t batch) {
    if (!f.view.inside(side, d)) return 0.0;
    double v = t.get_f64(f.view.flat_index(side, d, batch));
    return f.view.dtype == DType::F32 ? static_cast<double>(round_to_tf32(static_cast<float>(v))) : v;
  };
  *scale = 1;
  for (int64_t g = 0; g < c.batches; ++g)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double s = 0, mag = 0;
        for (int64_t d = 0; d < c.k; ++d) {
          double x = value(a, ta, i, d, g) * value(b, tb, j, d, g);
          s += x;
          mag += std::fabs(x);
        }
        *scale = std::max(*scale, mag);
        out.set((g * c.m + i) * c.n + j, Scalar::of_float(2 * s + 1, DType::F64));
      }
  return out;
}

TEST(WarpgroupProduct, TheReferenceExecutorRunsTheProduct) {
  const Case cases[] = {
      {"bf16 k-major", DType::BF16, true, true, 37, 45, 19, 1, 0, 0, 2},
      {"bf16 mn-major", DType::BF16, false, false, 37, 45, 19, 1, 0, 0, 2},
      {"bf16 mixed, padded rows", DType::BF16, true, false, 33, 70, 21, 1, 5, 3, 8},
      {"bf16 batched", DType::BF16, false, true, 37, 45, 19, 3, 0, 2, 2},
      {"f16 batched, one tile", DType::F16, true, false, 5, 7, 3, 2, 1, 0, 8},
      {"tf32", DType::F32, true, true, 29, 40, 13, 1, 2, 0, 1},
  };
  for (const Case& c : cases) {
    Factor a = factor("A", c.dtype, c.a_k_major, c.m, c.k, c.batches, c.pad_a);
    Factor b = factor("B", c.dtype, c.b_k_major, c.n, c.k, c.batches, c.pad_b);
    if (std::string(c.name) == "bf16 batched") {  // b the same for every batch element: rank 2
      b = factor("B", c.dtype, c.b_k_major, c.n, c.k, 1, c.pad_b);
      b.view.dims[2] = c.batches;
    }
    cir::Kernel k = kernel_of(c, a, b, product_of(c, a, b));
    ASSERT_EQ(problems(k), "") << c.name << "\n" << cir::print(k);
    Random rng(11);
    auto shape_of = [](const cir::Type& t) {
      Shape s;
      for (const Expr& e : t.shape) s.push_back(e.as<cir::IntImm>()->value);
      return s;
    };
    Tensor ta = rand_normal(rng, c.dtype, shape_of(a.type)), tb = rand_normal(rng, c.dtype, shape_of(b.type));
    double scale = 1;
    Tensor want = expected(c, a, b, ta, tb, &scale);
    Tensor got = ReferenceKernel(k).run({ta, tb}, {}).astype(DType::F64);
    ASSERT_EQ(got.shape(), want.shape()) << c.name;
    for (int64_t e = 0; e < want.numel(); ++e)
      ASSERT_NEAR(got.get_f64(e), want.get_f64(e), 1e-5 * scale) << c.name << " element " << e;
  }
}

// Fewer blocks than a stride over the tiles leave tiles out; a stride of
// more blocks than tiles takes none twice.
TEST(WarpgroupProduct, TheBlocksStrideDecidesWhichTilesAreWritten) {
  Case c = kBf16;
  Factor a = factor("A", DType::BF16, true, c.m, c.k, 1, 0), b = factor("B", DType::BF16, true, c.n, c.k, 1, 0);
  cir::WarpgroupProduct p = product_of(c, a, b);
  p.tile_stride = cir::i64(4);  // 3 blocks of a stride of 4: the tiles 3, 7 (3x2 tiles in all: tile 3 only) stay unwritten
  cir::Kernel k = kernel_of(c, a, b, p);
  Random rng(2);
  Tensor ta = rand_normal(rng, DType::BF16, {c.m, c.k}), tb = rand_normal(rng, DType::BF16, {c.n, c.k});
  Tensor got = ReferenceKernel(k).run({ta, tb}, {});
  cir::ProductTile skipped = cir::product_tile(3, p.row_tiles(), p.col_tiles(), p.group);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      bool in_skipped = i / p.tile_rows == skipped.row_tile && j / p.tile_cols == skipped.col_tile;
      double v = got.get_f64(i * c.n + j);
      if (in_skipped) ASSERT_EQ(v, 0.0) << i << "," << j;
      else ASSERT_NE(v, 0.0) << i << "," << j;
    }
}

// ---------------------------------------------------------------- support

TEST(WarpgroupProduct, OnlyGpusWithWarpgroupMatrixUnitsAndTensorCopiesTakeIt) {
  Factor a = factor("A", DType::BF16, true, 300, 200, 1, 0), b = factor("B", DType::BF16, true, 500, 200, 1, 0);
  Case c = {"large", DType::BF16, true, true, 300, 500, 200, 1, 0, 0, 8};
  cir::WarpgroupProduct p = product_of(c, a, b);
  p.tile_rows = 128;
  p.tile_cols = 256;
  p.tile_depth = 64;
  cir::Kernel k = kernel_of(c, a, b, p);  // a 197 KiB stage array: more than a thread's private memory
  ASSERT_EQ(problems(k), "");
  GpuTarget hopper = testing::nvidia_target("sm_90");
  hopper.warpgroup_mma = hopper.tensor_copies = true;
  GpuSupport ok = gpu_support(k, hopper);
  EXPECT_TRUE(ok.ok()) << *ok.why_not;
  EXPECT_GE(ok.shared_bytes, p.stage_bytes());
  for (auto [mma, copies] : {std::pair{false, true}, std::pair{true, false}}) {
    GpuTarget t = hopper;
    t.warpgroup_mma = mma;
    t.tensor_copies = copies;
    GpuSupport no = gpu_support(k, t);
    ASSERT_FALSE(no.ok());
    EXPECT_EQ(*no.why_not, "warpgroup matrix products with tensor copies");
  }
  std::optional<std::string> cpu = cpu_unsupported_reason(k);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(*cpu, "warpgroup matrix products with tensor copies");
  // Beyond the block's shared memory.
  GpuTarget small = hopper;
  small.shared_memory_max = 100 << 10;
  EXPECT_FALSE(gpu_support(k, small).ok());
}

}  // namespace
}  // namespace zyntax
