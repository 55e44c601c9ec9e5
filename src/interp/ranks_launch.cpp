// `compute(...) @parallel(data, ranks)`: a block's work shared out over the
// ranks of a job (`mpirun -np N zyntax run`), as `@parallel(data)` shares it
// over devices (runtime/split_launch): each rank runs its part on its own
// device, and the parts are gathered on every rank, so each holds exactly
// the single-process result. A kernel that does not split runs whole on
// every rank. Outside mpirun (or without MPI) the one rank runs it all.
#include "interp/ranks_launch.hpp"

#include "runtime/split_part.hpp"
#include "runtime/split_scatter.hpp"

#ifdef ZYNTAX_HAVE_MPI
#include "dist/communicator.hpp"
#endif

namespace zyntax {

Tensor launch_over_ranks(CompiledCompute& compiled, Device& device, SplitMode mode, const std::vector<Tensor>& inputs,
                         const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars) {
  int rank = 0, ranks = 1;
#ifdef ZYNTAX_HAVE_MPI
  dist::Communicator* job = dist::Communicator::job();
  if (job) rank = job->rank(), ranks = job->size();
#endif
  if (ranks == 1) return compiled.launch(device, inputs, host_dims, scalars);
  LaunchPart part = launch_part(compiled, device, mode, inputs, host_dims, scalars, rank, ranks);
  if (part.slab.whole()) return std::move(part.out);
#ifdef ZYNTAX_HAVE_MPI
  // The parts tile the split axis from the first part's start to its end,
  // in rank order: gathered, they are that stretch of the output.
  Tensor gathered;
  try {
    gathered = job->all_gather(part.out, part.slab.axis);
  } catch (const dist::DistError& e) {
    throw DataError(std::string("@parallel(data, ranks): ") + e.what());
  }
  Tensor result = Tensor::zeros(part.out.dtype(), part.whole_shape);
  put_slab(gathered, result, Slab{part.slab.axis, part.first, part.whole_shape[static_cast<size_t>(part.slab.axis)]});
  return result;
#else
  return std::move(part.out);
#endif
}

}  // namespace zyntax
