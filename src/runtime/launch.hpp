// From a generic kernel and concrete arguments to a run: bind every
// dimension (from input shapes and host integers), check each input's shape
// against its type, specialise the kernel on those sizes (cached), and run
// it on a device.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "runtime/device.hpp"
#include "runtime/tensor.hpp"

namespace zyntax {

// What binding dimensions needs of an input: its dtype and shape (of a
// tensor, or of a result not computed yet, whose shape is known).
struct TensorSpec {
  DType dtype = DType::F32;
  Shape shape;
};

// The dims of `k` for these inputs and host values. Throws DataError naming
// the input, the axis, both sizes and where the dimension was bound.
std::map<std::string, int64_t> bind_dimensions(const cir::Kernel& k, const std::vector<TensorSpec>& inputs,
                                               const std::map<std::string, int64_t>& host_dims);
std::map<std::string, int64_t> bind_dimensions(const cir::Kernel& k, const std::vector<Tensor>& inputs,
                                               const std::map<std::string, int64_t>& host_dims);

// The shape of `k`'s output for these dims; nothing where an extent is not
// a function of them.
std::optional<Shape> output_shape(const cir::Kernel& k, const std::map<std::string, int64_t>& dims);

// Called with every specialised kernel a launch is about to run, for tools
// that collect them (`zyntax compile --sizes-from-run`); process-wide, and
// called from whichever thread launches, so it must lock what it keeps.
using LaunchObserver = std::function<void(const cir::Kernel& specialised, uint64_t hash)>;
void set_launch_observer(LaunchObserver observer);
// Whether one is set: fast paths that skip launch_bound take it while one is.
bool launches_observed();

// A kernel lowered for one set of input ranks and dtypes; specialisations
// for each set of sizes are made once and kept.
class CompiledCompute {
 public:
  explicit CompiledCompute(cir::Kernel generic) : generic_(std::move(generic)) {}

  const cir::Kernel& generic() const { return generic_; }

  struct Specialized {
    cir::Kernel kernel;
    uint64_t hash = 0;
  };
  std::shared_ptr<const Specialized> specialize(const std::map<std::string, int64_t>& dims);

  Tensor launch(Device& device, const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& host_dims,
                const std::map<std::string, Scalar>& scalars);
  // The same with the dims bound already (bind_dimensions of these inputs):
  // a caller that bound them to check the call first binds them once.
  Tensor launch_bound(Device& device, const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& dims,
                      const std::map<std::string, Scalar>& scalars);

 private:
  cir::Kernel generic_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::shared_ptr<const Specialized>> specialized_;
};

}  // namespace zyntax
