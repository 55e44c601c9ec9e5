// tile_transposed_loops: two nested parallel loops that write along the
// inner one and read an input across it (a transpose, a permute of the last
// two axes) run tile by tile; anything else keeps its loops. The tiled
// kernels on the CPU device give the reference's bits at odd sizes.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/reference/reference_executor.hpp"
#include "backends/registry.hpp"
#include "cir/hash.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/passes/tile_transposed_loops.hpp"
#include "cir/printer.hpp"
#include "kernel_source.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

const char* kTranspose =
    "def f(x: tensor[R, C, f32]) {\n return compute(x) {\n @kernel elementwise\n"
    " for j in 0..C, i in 0..R:\n  out[j, i] = x[i, j] * 2.0\n }\n}";
// The last two axes of a batch swapped.
const char* kPermute =
    "def f(x: tensor[B, R, C, f32]) {\n return compute(x) {\n @kernel elementwise\n"
    " for b in 0..B, j in 0..C, i in 0..R:\n  out[b, j, i] = x[b, i, j]\n }\n}";
const char* kScaleRows =
    "def f(x: tensor[R, C, f32], s: tensor[R, f32]) {\n return compute(x, s) {\n @kernel elementwise\n"
    " for i in 0..R, j in 0..C:\n  out[i, j] = x[i, j] * s[i]\n }\n}";

TEST(TileTransposedLoops, ATransposeRunsTileByTile) {
  cir::Kernel k = cir::specialize(kernel_of(kTranspose), {{"R", 4096}, {"C", 1000}});
  std::string text = cir::print(cir::tile_transposed_loops(k));
  EXPECT_NE(text.find("parallel for j%t in 0..32 {\n    for i%t in 0..128 {\n      for j in j%t * 32..min(j%t * 32 + 32, 1000) {\n"
                      "        parallel for i in i%t * 32..min(i%t * 32 + 32, 4096) {"),
            std::string::npos)
      << text;
  text = cir::print(cir::tile_transposed_loops(cir::specialize(kernel_of(kPermute), {{"B", 3}, {"R", 100}, {"C", 70}})));
  EXPECT_NE(text.find("parallel for b in 0..3 {\n    parallel for j%t in 0..3 {"), std::string::npos) << text;
}

// Rows scaled (written and read along the same axis), and a transpose with a
// side shorter than two tiles, keep their loops.
TEST(TileTransposedLoops, OtherLoopsStayAsTheyAre) {
  for (const cir::Kernel& k : {cir::specialize(kernel_of(kScaleRows), {{"R", 500}, {"C", 300}}),
                               cir::specialize(kernel_of(kTranspose), {{"R", 4096}, {"C", 63}})}) {
    EXPECT_EQ(cir::print(cir::tile_transposed_loops(k)), cir::print(cir::simplify(k)));
  }
}

TEST(TileTransposedLoops, TiledKernelsGiveTheReferenceBits) {
  Device* cpu = device_registry().find("cpu");
  ASSERT_NE(cpu, nullptr);
  Random rng(29);
  struct Case {
    const char* src;
    std::map<std::string, int64_t> dims;
    Shape shape;
  };
  for (const Case& c : {Case{kTranspose, {{"R", 65}, {"C", 64}}, {65, 64}}, Case{kTranspose, {{"R", 333}, {"C", 129}}, {333, 129}},
                        Case{kTranspose, {{"R", 1000}, {"C", 97}}, {1000, 97}},
                        Case{kPermute, {{"B", 2}, {"R", 70}, {"C", 91}}, {2, 70, 91}}}) {
    cir::Kernel k = cir::specialize(kernel_of(c.src), c.dims);
    SCOPED_TRACE(cir::print(k).substr(0, 80));
    ASSERT_NE(cir::print(cir::tile_transposed_loops(k)).find("%t"), std::string::npos);
    Tensor x = rand_uniform(rng, DType::F32, c.shape, -1, 1);
    Tensor want = ReferenceKernel(k).run({x}, {});
    Tensor tiled = ReferenceKernel(cir::tile_transposed_loops(k)).run({x}, {});
    Device::Attempt got = cpu->execute_choice(k, cir::hash_kernel(k), {}, {x}, {});
    ASSERT_EQ(got.outcome, Device::Outcome::Done);
    ASSERT_EQ(got.result.nbytes(), want.nbytes());
    EXPECT_EQ(std::memcmp(want.data(), tiled.data(), want.nbytes()), 0);
    EXPECT_EQ(std::memcmp(want.data(), got.result.data(), want.nbytes()), 0);
  }
}

}  // namespace
}  // namespace zyntax
