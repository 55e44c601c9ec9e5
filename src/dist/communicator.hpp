// Collectives over MPI between processes (ranks) that each hold tensors in
// host memory: broadcast, all-reduce (blocking or not), all-gather and
// reduce-scatter, on Tensors or on raw buffers.
//
// Every collective first checks that all ranks are in the same one, on the
// same dtype and shapes (a small exchange of headers), so a mismatch is an
// error on every rank instead of a hang or a corrupt result. Every MPI call
// is non-blocking and polled against a deadline: a rank that does not answer
// in time (it exited, crashed, or is in another collective) makes the
// collective throw DistError instead of hanging. After such a timeout or an
// MPI error the communicator is unusable (MPI cannot cancel a collective):
// the process should report the error and exit non-zero; the world's
// MPI_Finalize is then skipped, so mpirun ends the job.
//
// Tensors with a device mirror: a collective reads the bytes through
// Tensor::data() (the device's copy comes back first where it is the only
// current one) and a tensor it writes is left with current host bytes and no
// device mirror.
//
// Calls on one communicator must come in the same order on every rank (as in
// MPI) and, from several threads, one at a time; handles' wait() and done()
// may run on any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "dist/dist_error.hpp"
#include "dist/reduce_op.hpp"
#include "dist/row_split.hpp"
#include "runtime/tensor.hpp"

namespace zyntax::dist {

struct MpiComm;         // dist/mpi_comm.hpp
class CommState;        // dist/comm_state.hpp
struct AsyncAllReduce;  // dist/async_all_reduce.hpp

// An all-reduce in flight (Communicator::all_reduce_async). The tensor holds
// the result once wait() returns or done() is true.
class AllReduceHandle {
 public:
  AllReduceHandle() = default;  // nothing in flight: done() is true
  AllReduceHandle(AllReduceHandle&& o) noexcept = default;
  // Waits for the reduction this handle held before taking o's.
  AllReduceHandle& operator=(AllReduceHandle&& o) noexcept;
  // Waits too; a failure then goes to stderr, as a destructor cannot throw.
  ~AllReduceHandle();

  // Blocks until the reduction is complete; DistError where it failed (the
  // ranks disagreed on it, or no answer came within the timeout).
  void wait();
  // Whether wait() would return or throw at once. Moves the reduction on
  // without blocking (MPI progresses a collective only inside its calls).
  bool done();

 private:
  friend class Communicator;
  AllReduceHandle(std::shared_ptr<CommState> state, std::shared_ptr<AsyncAllReduce> op)
      : state_(std::move(state)), op_(std::move(op)) {}
  void finish_quietly() noexcept;

  std::shared_ptr<CommState> state_;
  std::shared_ptr<AsyncAllReduce> op_;
};

class Communicator {
 public:
  // Every rank of the job (MPI_COMM_WORLD). Starts MPI on first use where
  // the application has not (asking for MPI_THREAD_MULTIPLE, accepting what
  // it gets) and finishes it at exit. A process not started by mpirun is
  // rank 0 of 1.
  static Communicator& world();
  // world() where this process is one rank of an MPI job: started by a
  // launcher (mpirun, srun: their rank variables are set) or with MPI
  // already initialised by the application. nullptr otherwise, and MPI is
  // not started: a lone process is rank 0 of 1 without paying MPI_Init.
  static Communicator* job();
  // The ranks of an application's communicator (dist/mpi_comm.hpp), once MPI
  // is initialised. The collectives run on a duplicate of it, so they never
  // match the application's own messages; `comm` itself is not owned.
  explicit Communicator(const MpiComm& comm);
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  int rank() const;
  int size() const;
  // Whether MPI could move GPU memory itself (a CUDA-aware Open MPI, asked
  // at run time). The collectives here always go through host memory.
  bool cuda_aware() const;

  // How long a collective waits for the other ranks before throwing:
  // ZYNTAX_DIST_TIMEOUT_S seconds where set, else 60 s.
  void set_timeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const;
  // The most elements one MPI call carries (MPI counts are int): larger
  // tensors go in chunks of at most this many. INT_MAX unless set lower.
  void set_max_chunk_elements(int64_t n);
  int64_t max_chunk_elements() const;

  // Returns once every rank has called it.
  void barrier();

  // Every rank's `t` becomes root's; all ranks pass the same dtype and shape.
  void broadcast(Tensor& t, int root);
  // Every rank's `t` becomes the elementwise reduction of all ranks' `t`.
  void all_reduce(Tensor& t, ReduceOp op);
  // all_reduce begun: `t` must stay unused until the handle is done.
  AllReduceHandle all_reduce_async(Tensor& t, ReduceOp op);
  // The ranks' tensors concatenated along `axis` in rank order (negative
  // axes count from the end). Only the sizes along `axis` may differ.
  Tensor all_gather(const Tensor& t, int axis = 0);
  // The reduction of all ranks' `t` (all the same shape), split along the
  // leading axis: this rank's rows are row_split(t.dim(0), rank(), size()).
  Tensor reduce_scatter(const Tensor& t, ReduceOp op);

  // The same on raw buffers of `count` elements of `dtype`. A DistError for
  // a timeout leaves a buffer that MPI may still write into.
  void broadcast(void* data, int64_t count, DType dtype, int root);
  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op);
  // Every rank passes the same count; `recv` takes count * size() elements.
  void all_gather(const void* send, int64_t count, DType dtype, void* recv);
  // `recv` takes row_split(count, rank(), size()).count elements.
  void reduce_scatter(const void* send, int64_t count, DType dtype, void* recv, ReduceOp op);

 private:
  std::shared_ptr<CommState> state_;
};

}  // namespace zyntax::dist
