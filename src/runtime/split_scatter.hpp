// One share of a split kernel (split_launch.hpp) for a device with memory of
// its own (a GPU; the reference executor): the share is given only the
// slabs its range of the split loop touches, of the output and of every
// input read at that loop's index, instead of whole tensors. The loop keeps
// its values; accesses of the sliced tensors along their split axis are
// rebased to the slab. An input read anywhere else along that axis is
// passed whole.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cir/ir.hpp"
#include "runtime/split_launch.hpp"
#include "runtime/tensor.hpp"

namespace zyntax {

// Indices [lo, hi) along `axis` of a tensor; axis -1: the whole tensor.
struct Slab {
  int axis = -1;
  int64_t lo = 0, hi = 0;
  bool whole() const { return axis < 0; }
};

struct ScatteredShare {
  cir::Kernel kernel;          // iterations [first, end) of the split loop, over the slabs
  std::vector<Slab> inputs;    // one per input, in order
  Slab out;                    // the output's slab: what this share owns
};

// The share running iterations [first, end) of `p`'s loop and owning the
// output's indices [first index, owned_end) along its split axis; nothing
// where the kernel reads its output other than at the loop's index (the
// launch then runs whole).
std::optional<ScatteredShare> scatter_share(const cir::Kernel& k, const SplitPlan& p, int64_t first, int64_t end,
                                            int64_t owned_end);

// A contiguous copy of slab `s` of `t` (the tensor itself for a whole slab).
// A slab a GPU holds in one piece is copied there (DeviceMirror::part).
Tensor take_slab(const Tensor& t, const Slab& s);
// Writes `part` (shaped as slab `s` of `into`) into its place in `into`.
void put_slab(const Tensor& part, Tensor& into, const Slab& s);

}  // namespace zyntax
