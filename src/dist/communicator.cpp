#include "dist/communicator.hpp"

#include <climits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "dist/async_all_reduce.hpp"
#include "dist/chunked_calls.hpp"
#include "dist/collective_header.hpp"
#include "dist/comm_state.hpp"
#include "dist/gather_layout.hpp"
#include "dist/mean.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/mpi_process.hpp"

namespace zyntax::dist {

namespace {

// "all_reduce of f32[1000] (op sum)"
std::string describe(CollectiveKind kind, DType t, const Shape& shape, const std::string& detail) {
  return std::string(collective_name(kind)) + " of " + tensor_text(t, shape) +
         (detail.empty() ? "" : " (" + detail + ")");
}

std::string op_detail(ReduceOp op) { return std::string("op ") + reduce_op_name(op); }

// A tensor's storage, kept alive while MPI may use it.
std::shared_ptr<const void> keep(const Tensor& t) { return std::make_shared<Tensor>(t); }

void keep_too(Pending& p, std::shared_ptr<const void> k) {
  if (k) p.keep_alive.push_back(std::move(k));
}

// A raw buffer's count, checked once every rank has agreed on it.
void check_count(CommState& s, const std::string& op, int64_t count) {
  if (count < 0) s.fail(op, "the count of elements is " + std::to_string(count) + ", below 0");
}

void check_mean(CommState& s, const std::string& op, DType t, ReduceOp reduce) {
  if (t == DType::Bool && reduce == ReduceOp::Mean)
    s.fail(op, "the mean of a bool tensor is not defined (sum and max are a logical or, min a logical and)");
}

// The process's world communicator, made on first use; at exit it goes,
// then MPI where it was started here (dist/mpi_process.hpp).
struct World {
  Communicator* comm = nullptr;
  World() {
    start_mpi();
    comm = new Communicator(MpiComm{MPI_COMM_WORLD});
  }
  ~World() {
    // After a failed collective MPI may still use the communicator's
    // buffers, and MPI_Finalize may wait for ranks that are gone: both stay.
    if (abandoned_requests()) return;
    delete comm;
    finish_mpi();
  }
};

// `buffer(is_root)`: the tensor's bytes, asked for once the ranks agree.
template <class Buffer>
void run_broadcast(CommState& s, DType t, const Shape& shape, int root, Buffer buffer,
                   std::shared_ptr<const void> keep_alive) {
  std::string op = describe(CollectiveKind::Broadcast, t, shape, "root " + std::to_string(root));
  std::unique_lock<std::mutex> lock(s.mu);
  s.agree(lock, make_header(CollectiveKind::Broadcast, 0, t, shape, ReduceOp::Sum, root), op);
  check_count(s, op, shape.empty() ? 1 : shape[0]);
  if (root < 0 || root >= s.size())
    s.fail(op, "root " + std::to_string(root) + " is not a rank of this communicator of " + std::to_string(s.size()));
  Pending p;
  keep_too(p, std::move(keep_alive));
  post_broadcast(s, p, buffer(root == s.rank()), shape_numel(shape), t, root, op);
  s.wait(lock, p, op);
}

template <class Buffer>
void run_all_reduce(CommState& s, DType t, const Shape& shape, ReduceOp reduce, Buffer buffer,
                    std::shared_ptr<const void> keep_alive) {
  std::string op = describe(CollectiveKind::AllReduce, t, shape, op_detail(reduce));
  std::unique_lock<std::mutex> lock(s.mu);
  s.agree(lock, make_header(CollectiveKind::AllReduce, 0, t, shape, reduce), op);
  check_count(s, op, shape.empty() ? 1 : shape[0]);
  check_mean(s, op, t, reduce);
  void* data = buffer();
  int64_t n = shape_numel(shape);
  Pending p;
  keep_too(p, std::move(keep_alive));
  post_all_reduce(s, p, data, n, t, reduce, op);
  s.wait(lock, p, op);
  if (reduce == ReduceOp::Mean) divide_by_ranks(data, n, t, s.size());
}

// The elements of each rank's segment when `shape`'s leading axis is split
// over the ranks.
std::vector<int64_t> segment_counts(const Shape& shape, int ranks) {
  int64_t row = shape_numel(Shape(shape.begin() + 1, shape.end()));
  std::vector<int64_t> counts;
  for (int r = 0; r < ranks; ++r) counts.push_back(row_split(shape[0], r, ranks).count * row);
  return counts;
}

}  // namespace

Communicator& Communicator::world() {
  static World world;
  return *world.comm;
}

Communicator* Communicator::job() {
  static const bool launched = started_by_launcher();
  if (!launched && !mpi_running()) return nullptr;
  return &world();
}

Communicator::Communicator(const MpiComm& comm) : state_(std::make_shared<CommState>(comm.comm)) {}
Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

int Communicator::rank() const { return state_->rank(); }
int Communicator::size() const { return state_->size(); }

bool Communicator::cuda_aware() const {
  static const bool aware = mpi_cuda_aware();
  return aware;
}

void Communicator::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0)
    throw std::invalid_argument("Communicator::set_timeout: the timeout must be above 0, not " +
                                std::to_string(timeout.count()) + " ms");
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->timeout = timeout;
}

std::chrono::milliseconds Communicator::timeout() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->timeout;
}

void Communicator::set_max_chunk_elements(int64_t n) {
  if (n < 1 || n > INT_MAX)
    throw std::invalid_argument("Communicator::set_max_chunk_elements: " + std::to_string(n) +
                                " is not between 1 and INT_MAX (" + std::to_string(INT_MAX) + ")");
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->max_chunk = n;
}

int64_t Communicator::max_chunk_elements() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->max_chunk;
}

void Communicator::barrier() {
  CommState& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  // Every rank's header arrives only once every rank has sent its own: the
  // exchange is the barrier.
  s.agree(lock, make_header(CollectiveKind::Barrier, 0, DType::F32, {}), "barrier");
}

void Communicator::broadcast(Tensor& t, int root) {
  run_broadcast(
      *state_, t.dtype(), t.shape(), root,
      [&](bool is_root) -> void* {
        // The root only reads (a device's copy stays valid); the others'
        // bytes are all replaced, so a device's copy of them just goes.
        if (is_root) return const_cast<void*>(std::as_const(t).data());
        return t.data_for_overwrite();
      },
      keep(t));
}

void Communicator::all_reduce(Tensor& t, ReduceOp op) {
  // The writing accessor: a device's only current copy comes back first,
  // and the device's copy goes, as the host's bytes change.
  run_all_reduce(*state_, t.dtype(), t.shape(), op, [&] { return t.data(); }, keep(t));
}

AllReduceHandle Communicator::all_reduce_async(Tensor& t, ReduceOp op) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return AllReduceHandle(state_, begin_async_all_reduce(*state_, lock, t, op));
}

Tensor Communicator::all_gather(const Tensor& t, int axis) {
  CommState& s = *state_;
  int ndim = static_cast<int>(t.rank());
  int norm = axis < 0 ? axis + ndim : axis;
  std::string op = describe(CollectiveKind::AllGather, t.dtype(), t.shape(), "axis " + std::to_string(axis));
  std::unique_lock<std::mutex> lock(s.mu);
  std::vector<CollectiveHeader> headers =
      s.agree(lock, make_header(CollectiveKind::AllGather, 0, t.dtype(), t.shape(), ReduceOp::Sum, norm), op);
  if (ndim == 0) s.fail(op, "a 0-d tensor has no axis to gather along (reshape it to [1])");
  if (norm < 0 || norm >= ndim)
    s.fail(op, "axis " + std::to_string(axis) + " is out of range for a tensor of " + std::to_string(ndim) + " axes");

  std::vector<int64_t> sizes, counts;
  for (const CollectiveHeader& h : headers) {
    sizes.push_back(h.dims[norm]);
    counts.push_back(shape_numel(h.shape()));
  }
  Shape out_shape = t.shape();
  out_shape[static_cast<size_t>(norm)] = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  Tensor out = Tensor::for_overwrite(t.dtype(), out_shape);
  // Along the first axis the blocks land in place; along another they are
  // gathered whole, then interleaved.
  Tensor gathered = norm == 0 ? out : Tensor::for_overwrite(t.dtype(), {out.numel()});
  Pending p;
  p.keep_alive = {keep(t), keep(gathered)};
  post_all_gather(s, p, t.data(), counts, t.dtype(), gathered.data(), op);
  s.wait(lock, p, op);
  if (norm != 0) {
    int64_t outer = shape_numel(Shape(t.shape().begin(), t.shape().begin() + norm));
    int64_t inner = shape_numel(Shape(t.shape().begin() + norm + 1, t.shape().end()));
    interleave_blocks(static_cast<const unsigned char*>(std::as_const(gathered).data()), sizes, outer,
                      inner * static_cast<int64_t>(dtype_size(t.dtype())), static_cast<unsigned char*>(out.data()));
  }
  return out;
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOp op) {
  CommState& s = *state_;
  std::string op_text = describe(CollectiveKind::ReduceScatter, t.dtype(), t.shape(), op_detail(op));
  std::unique_lock<std::mutex> lock(s.mu);
  s.agree(lock, make_header(CollectiveKind::ReduceScatter, 0, t.dtype(), t.shape(), op), op_text);
  if (t.rank() == 0) s.fail(op_text, "a 0-d tensor has no leading axis to split (reshape it to [1])");
  check_mean(s, op_text, t.dtype(), op);

  Shape out_shape = t.shape();
  out_shape[0] = row_split(t.dim(0), s.rank(), s.size()).count;
  Tensor out = Tensor::for_overwrite(t.dtype(), out_shape);
  Pending p;
  p.keep_alive = {keep(t), keep(out)};
  post_reduce_scatter(s, p, t.data(), segment_counts(t.shape(), s.size()), t.dtype(), op, out.data(), op_text);
  s.wait(lock, p, op_text);
  if (op == ReduceOp::Mean) divide_by_ranks(out.data(), out.numel(), out.dtype(), s.size());
  return out;
}

void Communicator::broadcast(void* data, int64_t count, DType dtype, int root) {
  run_broadcast(*state_, dtype, {count}, root, [&](bool) { return data; }, nullptr);
}

void Communicator::all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) {
  run_all_reduce(*state_, dtype, {count}, op, [&] { return data; }, nullptr);
}

void Communicator::all_gather(const void* send, int64_t count, DType dtype, void* recv) {
  CommState& s = *state_;
  std::string op = describe(CollectiveKind::AllGather, dtype, {count}, "");
  std::unique_lock<std::mutex> lock(s.mu);
  // Axis -1 in the header: no dimension may differ between the ranks.
  s.agree(lock, make_header(CollectiveKind::AllGather, 0, dtype, {count}, ReduceOp::Sum, -1), op);
  check_count(s, op, count);
  Pending p;
  post_all_gather(s, p, send, std::vector<int64_t>(static_cast<size_t>(s.size()), count), dtype, recv, op);
  s.wait(lock, p, op);
}

void Communicator::reduce_scatter(const void* send, int64_t count, DType dtype, void* recv, ReduceOp op) {
  CommState& s = *state_;
  std::string op_text = describe(CollectiveKind::ReduceScatter, dtype, {count}, op_detail(op));
  std::unique_lock<std::mutex> lock(s.mu);
  s.agree(lock, make_header(CollectiveKind::ReduceScatter, 0, dtype, {count}, op), op_text);
  check_count(s, op_text, count);
  check_mean(s, op_text, dtype, op);
  Pending p;
  post_reduce_scatter(s, p, send, segment_counts({count}, s.size()), dtype, op, recv, op_text);
  s.wait(lock, p, op_text);
  if (op == ReduceOp::Mean) divide_by_ranks(recv, row_split(count, s.rank(), s.size()).count, dtype, s.size());
}

}  // namespace zyntax::dist
