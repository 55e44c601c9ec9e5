// place_shared_arrays: a GPU block's shared arrays whose lives a barrier
// separates share bytes; arrays alive together, or touched by a loop that
// outlives the other, do not. The reference executor runs placed arrays as
// views of one region, so a placement that overlaps live arrays is a race
// (or a wrong result) there: flash attention, scheduled and placed, is
// checked that way at odd sizes, and its placed size, in
// test_schedule_gpu_tiles.
#include <gtest/gtest.h>

#include "cir/mutator.hpp"
#include "cir/passes/place_shared_arrays.hpp"
#include "cir/printer.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "plan/kernel_support.hpp"
#include "backends/reference/reference_executor.hpp"
#include "ptxas.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {
namespace {

using namespace cir;

const Type kRow = Type::tensor(DType::F32, {i64(4)});

Expr var(const char* n) { return Var::make(n, Type::scalar(DType::I64)); }
Expr at(const char* array, const Expr& i) { return make_access(array, kRow, {AxisSel::at(i)}); }
Stmt threads(const char* t, Block body) { return make_for(t, i64(0), i64(4), i64(1), std::move(body), LoopKind::GpuThread); }
Stmt store(const char* array, const Expr& i, Expr v) { return make_store(array, {AxisSel::at(i)}, std::move(v)); }

// A kernel of two blocks over `body`, writing out[b, 0:4].
Kernel block_kernel(Block body) {
  Kernel k;
  k.name = "k";
  k.params = {{ParamRole::Output, "out", Type::tensor(DType::F32, {i64(2), i64(4)})}};
  k.body = {make_for("b", i64(0), i64(2), i64(1), std::move(body), LoopKind::GpuBlock)};
  return k;
}

Stmt result_from(const char* array) {
  return threads("u", {make_store("out", {AxisSel::at(var("b")), AxisSel::at(var("u"))}, at(array, i64(3) - var("u")))});
}

// a = t + b; c = reversed a, doubled; e = reversed c, plus one; out = reversed e.
// a is dead once c is written, so e may take its bytes; c may not.
Kernel relay() {
  Expr t1 = var("t1"), t2 = var("t2"), t3 = var("t3");
  return block_kernel({
      make_allocate("a", kRow, MemorySpace::Shared),
      threads("t1", {store("a", t1, Cast::make(DType::F32, t1 + var("b")))}),
      make_barrier(),
      make_allocate("c", kRow, MemorySpace::Shared),
      threads("t2", {store("c", t2, at("a", i64(3) - t2) * FloatImm::make(2.0))}),
      make_barrier(),
      make_allocate("e", kRow, MemorySpace::Shared),
      threads("t3", {store("e", t3, at("c", i64(3) - t3) + FloatImm::make(1.0))}),
      make_barrier(),
      result_from("e"),
      make_barrier(),
  });
}

std::map<std::string, int64_t> offsets(const Kernel& k) {
  struct Offsets : IRVisitor {
    std::map<std::string, int64_t> out;
    using IRVisitor::visit;
    void visit(const Allocate* op) override { out[op->name] = op->offset; }
  } v;
  v.include(k.body);
  return v.out;
}

TEST(PlaceSharedArrays, AnArrayDeadBeforeABarrierGivesItsBytesToOneAllocatedAfter) {
  Kernel k = relay();
  ASSERT_TRUE(verify(k).empty()) << verify(k)[0];
  Kernel placed = place_shared_arrays(k);
  std::map<std::string, int64_t> at = offsets(placed);
  EXPECT_EQ(at["a"], 0);
  EXPECT_EQ(at["c"], kSharedArrayAlignment);  // alive with a, then with e
  EXPECT_EQ(at["e"], 0);
  EXPECT_EQ(gpu_shared_bytes(k), 3 * kSharedArrayAlignment);
  EXPECT_EQ(gpu_shared_bytes(placed), 2 * kSharedArrayAlignment);
  EXPECT_NE(print(placed).find("shared e: tensor[4, f32] at byte 0"), std::string::npos) << print(placed);
  // out[b, u] = e[3 - u] = c[u] + 1 = 2 a[3 - u] + 1 = 2 (3 - u + b) + 1
  Tensor out = ReferenceKernel(placed).run({}, {});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t u = 0; u < 4; ++u) EXPECT_EQ(out.get_f64(b * 4 + u), 2.0 * static_cast<double>(3 - u + b) + 1.0);
}

// Arrays placed by hand on the reference: overlapping ones alive together
// are found out.
Kernel with_offsets(Kernel k, const std::map<std::string, int64_t>& offsets) {
  struct Put : IRMutator {
    const std::map<std::string, int64_t>& at;
    explicit Put(const std::map<std::string, int64_t>& a) : at(a) {}
    using IRMutator::visit;
    Stmt visit(const Allocate* op) override {
      return make_allocate(op->name, op->type, op->space, op->span, op->capacity, at.at(op->name));
    }
  };
  return Put(offsets).mutate(k);
}

TEST(PlaceSharedArrays, TheReferenceFindsArraysThatShareBytesWhileAlive) {
  Kernel wrong = with_offsets(relay(), {{"a", 0}, {"c", 0}, {"e", 128}});
  ASSERT_TRUE(verify(wrong).empty()) << verify(wrong)[0];
  try {
    ReferenceKernel(wrong).run({}, {});
    ADD_FAILURE() << "no race reported";
  } catch (const Error& e) {
    // Thread 1 wrote c[1] where thread 2 then reads a[1].
    EXPECT_NE(std::string(e.what()).find("data race in the GPU schedule: thread 2 reads element 1 of a, which thread 1 wrote since the last barrier"),
              std::string::npos)
        << e.what();
  }
}

TEST(PlaceSharedArrays, AnArrayALoopTouchesLivesToTheLoopsEnd) {
  // a from before the loop, read in every iteration: c, allocated in the
  // loop after a's last read in the body, still may not take a's bytes.
  Expr t1 = var("t1"), t2 = var("t2"), t3 = var("t3"), t4 = var("t4");
  Type out_type = Type::tensor(DType::F32, {i64(2), i64(4)});
  Block loop = {
      make_allocate("c", kRow, MemorySpace::Shared),
      threads("t2", {store("c", t2, at("a", t2) * Cast::make(DType::F32, var("r")))}),
      make_barrier(),
      threads("t3", {make_store("out", {AxisSel::at(var("b")), AxisSel::at(t3)},
                                make_access("out", out_type, {AxisSel::at(var("b")), AxisSel::at(t3)}) + at("c", t3))}),
      make_barrier(),
  };
  Kernel k = block_kernel({
      make_allocate("a", kRow, MemorySpace::Shared),
      threads("t1", {store("a", t1, FloatImm::make(1.0))}),
      make_barrier(),
      make_for("r", i64(0), i64(3), i64(1), loop, LoopKind::Serial),
      make_allocate("e", kRow, MemorySpace::Shared),  // after the loop: a and c are dead
      threads("t4", {store("e", t4, FloatImm::make(0.0))}),
      make_barrier(),
  });
  ASSERT_TRUE(verify(k).empty()) << verify(k)[0];
  Kernel placed = place_shared_arrays(k);
  std::map<std::string, int64_t> at_ = offsets(placed);
  EXPECT_NE(at_["a"], at_["c"]);
  EXPECT_EQ(at_["e"], 0);
  Tensor out = ReferenceKernel(placed).run({}, {});
  EXPECT_EQ(out.get_f64(5), 0.0 + 1.0 + 2.0);
}

TEST(PlaceSharedArrays, KernelsItCannotReasonAboutAreLeftAlone) {
  // A barrier under a condition.
  Kernel k = relay();
  auto* block = const_cast<For*>(k.body[0].as<For>());
  block->body.insert(block->body.begin() + 2, make_if(Binary::make(BinaryOp::Lt, var("b"), i64(5)), {make_barrier()}));
  EXPECT_EQ(offsets(place_shared_arrays(k))["e"], -1);
  // Nothing to save: every array alive with every other.
  Expr t = var("t");
  Kernel together = block_kernel({make_allocate("a", kRow, MemorySpace::Shared), make_allocate("c", kRow, MemorySpace::Shared),
                                  threads("t", {store("a", t, FloatImm::make(1.0)), store("c", t, at("a", t))}), make_barrier(),
                                  result_from("c"), make_barrier()});
  EXPECT_EQ(offsets(place_shared_arrays(together))["c"], -1);
}

TEST(PlaceSharedArrays, TheVerifierWantsAllOrNoneAlignedAndInABlock) {
  EXPECT_TRUE(verify(with_offsets(relay(), {{"a", 0}, {"c", 128}, {"e", 0}})).empty());
  std::vector<std::string> mixed = verify(with_offsets(relay(), {{"a", 0}, {"c", 128}, {"e", -1}}));
  ASSERT_FALSE(mixed.empty());
  EXPECT_NE(mixed[0].find("shared array 'e' has no byte offset, but 'a' of the same kernel has one"), std::string::npos) << mixed[0];
  std::vector<std::string> odd = verify(with_offsets(relay(), {{"a", 0}, {"c", 100}, {"e", 0}}));
  ASSERT_FALSE(odd.empty());
  EXPECT_NE(odd[0].find("shared array 'c' is placed at byte 100, not a multiple of 128"), std::string::npos) << odd[0];
}

TEST(PlaceSharedArrays, PlacedArraysAreOneRegionOfStaticSharedMemory) {
  Kernel placed = place_shared_arrays(relay());
  testing::expect_ptx_assembles({placed}, {"placed"}, "placed_shared", [](const std::string& ptx) {
    EXPECT_NE(ptx.find(".shared .align 128 .b8 placed_$_shared[256]"), std::string::npos) << ptx.substr(0, 3000);
    EXPECT_EQ(ptx.find("placed_$_a"), std::string::npos) << ptx.substr(0, 3000);
  });
}

}  // namespace
}  // namespace zyntax
