// Ranks of a job started by mpirun (`mpirun -np N my_app`), and the
// collectives between them on buffers: data-parallel training averages its
// gradients with them. A process not started by mpirun, or a library built
// without MPI, is rank 0 of 1, and the collectives leave their buffers as
// they are. Collectives that cannot complete (a rank that left, ranks that
// disagree on a buffer's size) throw ComputeError naming the rank and the
// operation on every rank, within the timeout, instead of hanging.
//
//   zyntax::Communicator world = zyntax::Communicator::world();
//   zyntax::GradientAverager average(world, sizes);   // the gradients' sizes, in the order backward makes them
//   ...backward: average.ready(i, grad[i]) as each gradient is final...
//   average.finish();                                 // every gradient is now the mean over the ranks
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "zyntax/buffer.hpp"
#include "zyntax/errors.hpp"
#include "zyntax/export.hpp"

namespace zyntax {

enum class CollectiveOp { Sum, Max, Min, Mean };

class CommunicatorImpl;

class ZYNTAX_API Communicator {
 public:
  // Every rank of the job (MPI_COMM_WORLD; MPI started on first use).
  static Communicator world();
  // The ranks of an application's MPI communicator: `mpi_comm` points at
  // its MPI_Comm (`&comm`). A ComputeError in a build without MPI.
  static Communicator from_mpi(const void* mpi_comm);
  // Whether this library was built with MPI.
  static bool built_with_mpi();

  int rank() const;
  int size() const;
  // How long a collective waits for the other ranks (ZYNTAX_DIST_TIMEOUT_S, else 60 s).
  void set_timeout(double seconds);

  void barrier();
  // Every rank's buffer becomes the element-wise reduction of all ranks' (equal sizes).
  void all_reduce(Buffer& buffer, CollectiveOp op = CollectiveOp::Sum);
  // Every rank's buffer becomes root's (equal sizes).
  void broadcast(Buffer& buffer, int root = 0);
  // Every rank's buffer, one after another in rank order (sizes may differ).
  Buffer all_gather(const Buffer& buffer);

  // For the library itself.
  explicit Communicator(std::shared_ptr<CommunicatorImpl> impl);
  const std::shared_ptr<CommunicatorImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<CommunicatorImpl> impl_;
};

// Gradients averaged over the ranks as PyTorch's DistributedDataParallel
// does: packed into buckets of about `bucket_bytes` in the order backward
// makes them, each bucket's all-reduce started as soon as its last gradient
// is ready, so the first buckets travel while backward computes the rest.
class ZYNTAX_API GradientAverager {
 public:
  // `sizes`: every gradient's elements, in the order ready() will be called.
  GradientAverager(Communicator comm, std::vector<size_t> sizes, size_t bucket_bytes = size_t{25} << 20);
  ~GradientAverager();
  GradientAverager(const GradientAverager&) = delete;
  GradientAverager& operator=(const GradientAverager&) = delete;

  // Gradient `index` (of `sizes`) is final: its bucket takes it, and
  // starts its all-reduce once every gradient of it is in.
  void ready(size_t index, const Buffer& grad);
  // Waits for every bucket and writes the means into the gradients given
  // to ready(); the next step starts afresh. A ComputeError where a
  // gradient was not given, or a collective failed.
  void finish();

  size_t buckets() const;
  // Seconds this rank spent in the averager since it was made (packing,
  // starting and waiting for reductions, unpacking): its cost in a step.
  double seconds() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace zyntax
