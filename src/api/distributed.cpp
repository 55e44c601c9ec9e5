// The C++ API's ranks and collectives (include/zyntax/distributed.hpp) over
// dist::Communicator; in a build without MPI, a world of one rank.
#include "zyntax/distributed.hpp"

#include <chrono>
#include <cstring>
#include <optional>

#include "api/api_internal.hpp"

#ifdef ZYNTAX_HAVE_MPI
#include "dist/communicator.hpp"
#include "dist/mpi_comm.hpp"
#endif

namespace zyntax {

class CommunicatorImpl {
 public:
#ifdef ZYNTAX_HAVE_MPI
  explicit CommunicatorImpl(dist::Communicator& world) : comm_(&world) {}
  explicit CommunicatorImpl(std::unique_ptr<dist::Communicator> own) : owned_(std::move(own)), comm_(owned_.get()) {}
  dist::Communicator& comm() { return *comm_; }
#else
  CommunicatorImpl() = default;
#endif
  int rank() const {
#ifdef ZYNTAX_HAVE_MPI
    return comm_->rank();
#else
    return 0;
#endif
  }
  int size() const {
#ifdef ZYNTAX_HAVE_MPI
    return comm_->size();
#else
    return 1;
#endif
  }

 private:
#ifdef ZYNTAX_HAVE_MPI
  std::unique_ptr<dist::Communicator> owned_;
  dist::Communicator* comm_ = nullptr;
#endif
};

namespace {

// A collective's failure as the API's error.
template <class F>
auto collective(F&& f) {
#ifdef ZYNTAX_HAVE_MPI
  try {
    return f();
  } catch (const dist::DistError& e) {
    throw ComputeError(e.what());
  }
#else
  return f();
#endif
}

#ifdef ZYNTAX_HAVE_MPI
dist::ReduceOp dist_op(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::Sum: return dist::ReduceOp::Sum;
    case CollectiveOp::Max: return dist::ReduceOp::Max;
    case CollectiveOp::Min: return dist::ReduceOp::Min;
    case CollectiveOp::Mean: return dist::ReduceOp::Mean;
  }
  return dist::ReduceOp::Sum;
}
#endif

// The buffer's elements, computed where pending, current on the host and
// about to be written there (a device's copy is dropped).
Tensor& written_on_host(const Buffer& b) {
  if (!b.impl()) throw ComputeError("a collective on an empty buffer handle");
  return b.impl()->value();
}

}  // namespace

Communicator::Communicator(std::shared_ptr<CommunicatorImpl> impl) : impl_(std::move(impl)) {}

Communicator Communicator::world() {
#ifdef ZYNTAX_HAVE_MPI
  static std::shared_ptr<CommunicatorImpl> w = std::make_shared<CommunicatorImpl>(dist::Communicator::world());
#else
  static std::shared_ptr<CommunicatorImpl> w = std::make_shared<CommunicatorImpl>();
#endif
  return Communicator(w);
}

Communicator Communicator::from_mpi(const void* mpi_comm) {
#ifdef ZYNTAX_HAVE_MPI
  if (!mpi_comm) throw ComputeError("Communicator::from_mpi: no communicator (pass &comm, an MPI_Comm*)");
  dist::MpiComm c{*static_cast<const MPI_Comm*>(mpi_comm)};
  return Communicator(std::make_shared<CommunicatorImpl>(collective([&] { return std::make_unique<dist::Communicator>(c); })));
#else
  (void)mpi_comm;
  throw ComputeError("Communicator::from_mpi: this build of zyntax has no MPI (install libopenmpi-dev and rebuild)");
#endif
}

bool Communicator::built_with_mpi() {
#ifdef ZYNTAX_HAVE_MPI
  return true;
#else
  return false;
#endif
}

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }

void Communicator::set_timeout(double seconds) {
#ifdef ZYNTAX_HAVE_MPI
  impl_->comm().set_timeout(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
#else
  (void)seconds;
#endif
}

void Communicator::barrier() {
#ifdef ZYNTAX_HAVE_MPI
  collective([&] {
    impl_->comm().barrier();
    return 0;
  });
#endif
}

void Communicator::all_reduce(Buffer& buffer, CollectiveOp op) {
  Tensor& t = written_on_host(buffer);
#ifdef ZYNTAX_HAVE_MPI
  collective([&] {
    impl_->comm().all_reduce(t, dist_op(op));
    return 0;
  });
#else
  (void)t, (void)op;
#endif
}

void Communicator::broadcast(Buffer& buffer, int root) {
  if (root < 0 || root >= size())
    throw ComputeError("broadcast: root " + std::to_string(root) + " is not a rank (ranks are 0 to " + std::to_string(size() - 1) + ")");
  Tensor& t = written_on_host(buffer);
#ifdef ZYNTAX_HAVE_MPI
  collective([&] {
    impl_->comm().broadcast(t, root);
    return 0;
  });
#else
  (void)t;
#endif
}

Buffer Communicator::all_gather(const Buffer& buffer) {
  const Tensor& t = written_on_host(buffer);
#ifdef ZYNTAX_HAVE_MPI
  Tensor all = collective([&] { return impl_->comm().all_gather(t, 0); });
#else
  Tensor all = t.clone();
#endif
  return Buffer(std::make_shared<BufferImpl>(std::move(all), buffer.device()));
}

// ------------------------------------------------------------ gradient averaging

struct GradientAverager::State {
  Communicator comm;
  std::vector<size_t> sizes;
  struct Place {
    size_t bucket = 0, offset = 0;
  };
  std::vector<Place> places;
  struct Bucket {
    std::vector<size_t> members;  // gradient indices
    Tensor packed;                // f32, their elements one after another
    size_t in = 0;                // members given this step
#ifdef ZYNTAX_HAVE_MPI
    std::optional<dist::AllReduceHandle> reducing;
#endif
  };
  std::vector<Bucket> buckets;
  std::vector<std::optional<Buffer>> grads;  // this step's, by index
  double seconds = 0;

  // Starts the bucket's reduction (a world of one has nothing to do).
  void start(Bucket& b) {
#ifdef ZYNTAX_HAVE_MPI
    if (comm.size() > 1) b.reducing.emplace(collective([&] { return comm.impl()->comm().all_reduce_async(b.packed, dist::ReduceOp::Mean); }));
#else
    (void)b;
#endif
  }
  // Moves the reductions in flight on (MPI progresses them inside its calls).
  void progress() {
#ifdef ZYNTAX_HAVE_MPI
    for (Bucket& b : buckets)
      if (b.reducing) collective([&] { return b.reducing->done(); });
#endif
  }
  void wait(Bucket& b) {
#ifdef ZYNTAX_HAVE_MPI
    if (b.reducing) {
      collective([&] {
        b.reducing->wait();
        return 0;
      });
      b.reducing.reset();
    }
#else
    (void)b;
#endif
  }
};

namespace {

class Timed {
 public:
  explicit Timed(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Timed() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

GradientAverager::GradientAverager(Communicator comm, std::vector<size_t> sizes, size_t bucket_bytes)
    : state_(std::make_unique<State>(State{std::move(comm), std::move(sizes), {}, {}, {}, 0})) {
  State& s = *state_;
  size_t limit = std::max<size_t>(bucket_bytes / sizeof(float), 1);
  std::vector<size_t> elements;
  for (size_t i = 0; i < s.sizes.size(); ++i) {
    if (s.buckets.empty() || (elements.back() > 0 && elements.back() + s.sizes[i] > limit)) {
      s.buckets.emplace_back();
      elements.push_back(0);
    }
    s.places.push_back({s.buckets.size() - 1, elements.back()});
    s.buckets.back().members.push_back(i);
    elements.back() += s.sizes[i];
  }
  for (size_t b = 0; b < s.buckets.size(); ++b)
    s.buckets[b].packed = Tensor::zeros(DType::F32, {static_cast<int64_t>(elements[b])});
  s.grads.resize(s.sizes.size());
}

GradientAverager::~GradientAverager() {
  // Reductions still in flight finish before their buffers go.
  for (State::Bucket& b : state_->buckets) {
    try {
      state_->wait(b);
    } catch (...) {
    }
  }
}

void GradientAverager::ready(size_t index, const Buffer& grad) {
  State& s = *state_;
  Timed timed(s.seconds);
  if (index >= s.sizes.size())
    throw ComputeError("GradientAverager::ready: gradient " + std::to_string(index) + " of " + std::to_string(s.sizes.size()));
  if (s.grads[index]) throw ComputeError("GradientAverager::ready: gradient " + std::to_string(index) + " given twice in one step");
  if (grad.size() != s.sizes[index])
    throw ShapeError("GradientAverager::ready: gradient " + std::to_string(index) + " has " + std::to_string(grad.size()) +
                     " elements, but it was made for " + std::to_string(s.sizes[index]));
  const Tensor& t = written_on_host(grad);
  if (t.dtype() != DType::F32) throw ShapeError("GradientAverager::ready: gradient " + std::to_string(index) + " is not f32");
  State::Place p = s.places[index];
  State::Bucket& b = s.buckets[p.bucket];
  std::memcpy(b.packed.data_as<float>() + p.offset, t.data(), t.nbytes());
  s.grads[index] = grad;
  if (++b.in == b.members.size()) s.start(b);
  s.progress();
}

void GradientAverager::finish() {
  State& s = *state_;
  Timed timed(s.seconds);
  for (size_t i = 0; i < s.grads.size(); ++i)
    if (!s.grads[i]) throw ComputeError("GradientAverager::finish: gradient " + std::to_string(i) + " was not given this step");
  for (State::Bucket& b : s.buckets) {
    s.wait(b);
    b.in = 0;
    if (s.comm.size() == 1) continue;  // the mean over one rank is the gradient itself
    const Tensor& packed = b.packed;
    for (size_t i : b.members) {
      Tensor& g = s.grads[i]->impl()->value();
      std::memcpy(g.data(), packed.data_as<float>() + s.places[i].offset, g.nbytes());
    }
  }
  for (std::optional<Buffer>& g : s.grads) g.reset();
}

size_t GradientAverager::buckets() const { return state_->buckets.size(); }
double GradientAverager::seconds() const { return state_->seconds; }

}  // namespace zyntax
