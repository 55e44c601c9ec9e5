// The collectives of src/dist on every dtype and reduction, checked against
// results each rank computes itself: every rank fills its tensors from its
// rank number, so each rank knows what every other rank holds. Run under
// mpirun with any number of ranks (tests/mpi/run_mpi_tests.sh runs 1, 2 and
// 3); every rank runs every test, in the same order (so no --gtest_shuffle
// without --gtest_random_seed). Rank 0 prints gtest's report; the others
// print only their failures, marked with their rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dist/collective_header.hpp"
#include "dist/communicator.hpp"
#include "dist/mpi_comm.hpp"

namespace zyntax::dist {
namespace {

using namespace std::chrono_literals;

Communicator& world() { return Communicator::world(); }

// Communicator::job() as main() found it, before anything started MPI.
Communicator* job_at_start = nullptr;

const std::vector<DType> kDTypes = {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I8,
                                    DType::I16, DType::I32,  DType::I64, DType::U8,  DType::U16,
                                    DType::U32, DType::U64,  DType::Bool};
const std::vector<ReduceOp> kOps = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean};
// 0-d, empty, odd and 2-d shapes.
const std::vector<Shape> kShapes = {{}, {0}, {1}, {7}, {1001}, {3, 5}, {2, 0, 3}};

std::string trace(DType t, const Shape& shape, const std::string& more = "") {
  return std::string(dtype_name(t)) + shape_str(shape) + (more.empty() ? "" : " " + more);
}

// Rank `rank`'s element i: small integers, so that sums over the ranks are
// exact in every dtype (bf16 included); negative ones where the dtype has
// them, so integer means truncate toward zero.
int64_t value(int rank, int64_t i, DType t, int salt) {
  if (t == DType::Bool) return (rank + i + salt) % 3 == 0;
  int64_t v = (rank * 7 + i * 3 + salt) % 11;
  return is_unsigned_int(t) ? v : v - 5;
}

Scalar scalar_of(int64_t v, DType t) { return is_bool(t) ? Scalar::of_bool(v != 0) : Scalar::from_int(v, t); }

Tensor filled(DType t, const Shape& shape, int rank, int salt) {
  Tensor x = Tensor::empty(t, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, scalar_of(value(rank, i, t, salt), t));
  return x;
}

// Element i of the reduction of every rank's filled(..., salt).
Scalar reduced(DType t, ReduceOp op, int64_t i, int salt) {
  int size = world().size();
  if (t == DType::Bool) {
    bool any = false, all = true;
    for (int r = 0; r < size; ++r) {
      bool b = value(r, i, t, salt) != 0;
      any = any || b;
      all = all && b;
    }
    return Scalar::of_bool(op == ReduceOp::Min ? all : any);
  }
  int64_t sum = 0, most = INT64_MIN, least = INT64_MAX;
  for (int r = 0; r < size; ++r) {
    int64_t v = value(r, i, t, salt);
    sum += v;
    most = std::max(most, v);
    least = std::min(least, v);
  }
  switch (op) {
    case ReduceOp::Sum: return Scalar::from_int(sum, t);
    case ReduceOp::Max: return Scalar::from_int(most, t);
    case ReduceOp::Min: return Scalar::from_int(least, t);
    case ReduceOp::Mean:
      if (is_float(t)) return Scalar::from_double(static_cast<double>(sum) / size, t);
      return Scalar::from_int(sum / size, t);
  }
  return {};
}

Tensor reduced_tensor(DType t, const Shape& shape, ReduceOp op, int salt, int64_t first = 0) {
  Tensor x = Tensor::empty(t, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, reduced(t, op, first + i, salt));
  return x;
}

void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_TRUE(got.valid());
  EXPECT_EQ(dtype_name(got.dtype()), std::string(dtype_name(want.dtype())));
  ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape()));
  int mismatches = 0;
  for (int64_t i = 0; i < want.numel() && mismatches < 5; ++i) {
    std::string g = got.get(i).str(), w = want.get(i).str();
    if (g != w) {
      ++mismatches;
      ADD_FAILURE() << "element " << i << ": got " << g << ", want " << w;
    }
  }
}

// The parts concatenated along `axis`, element by element.
Tensor concatenated(const std::vector<Tensor>& parts, int axis) {
  Shape shape = parts[0].shape();
  shape[axis] = 0;
  for (const Tensor& p : parts) shape[axis] += p.dim(axis);
  Tensor out = Tensor::empty(parts[0].dtype(), shape);
  std::vector<int64_t> strides = shape_strides(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) index[d] = i / strides[d] % shape[d];
    size_t part = 0;
    while (index[axis] >= parts[part].dim(axis)) index[axis] -= parts[part++].dim(axis);
    std::vector<int64_t> part_strides = shape_strides(parts[part].shape());
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat += index[d] * part_strides[d];
    out.set(i, parts[part].get(flat));
  }
  return out;
}

// The message of the DistError that `f` throws, or a failure.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const DistError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no DistError";
  return "";
}

std::string me() { return "rank " + std::to_string(world().rank()) + " of " + std::to_string(world().size()) + ": "; }

// Sets the chunk limit for a scope.
class ChunkLimit {
 public:
  explicit ChunkLimit(int64_t n) : before_(world().max_chunk_elements()) { world().set_max_chunk_elements(n); }
  ~ChunkLimit() { world().set_max_chunk_elements(before_); }

 private:
  int64_t before_;
};

// A device whose memory is a block of host memory of its own: the bytes a
// kernel left there, which the tensor's host bytes do not have yet.
class HostMemoryMirror : public DeviceMirror {
 public:
  explicit HostMemoryMirror(const Tensor& bytes) : bytes_(bytes.clone()) {}
  const std::string& device() const override { return device_; }
  void download(void* host, size_t bytes) const override {
    downloads.fetch_add(1);
    std::memcpy(host, bytes_.data(), bytes);
  }
  mutable std::atomic<int> downloads{0};

 private:
  std::string device_ = "test:0";
  Tensor bytes_;
};

// A tensor whose current bytes are on the device (filled(..., salt)), its
// host bytes stale.
Tensor on_device(DType t, const Shape& shape, int rank, int salt, std::shared_ptr<HostMemoryMirror>* mirror) {
  Tensor x = Tensor::full(t, shape, scalar_of(1, t));
  *mirror = std::make_shared<HostMemoryMirror>(filled(t, shape, rank, salt));
  EXPECT_TRUE(x.set_mirror(*mirror, /*host_current=*/false));
  return x;
}

// A lone process is no job's rank: job() is null and MPI is not started;
// under mpirun job() is the world. Once MPI runs, job() is the world too.
TEST(Collectives, TheJobIsTheWorldOnlyUnderALauncher) {
  bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  EXPECT_EQ(job_at_start != nullptr, launched);
  if (launched) EXPECT_EQ(job_at_start, &world());
  EXPECT_EQ(Communicator::job(), &world());
}

TEST(Collectives, RankAndSize) {
  if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE")) {
    EXPECT_EQ(world().size(), std::atoi(size));
  }
  if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK")) {
    EXPECT_EQ(world().rank(), std::atoi(rank));
  }
  EXPECT_GE(world().rank(), 0);
  EXPECT_LT(world().rank(), world().size());
  world().barrier();
  world().barrier();
}

TEST(Collectives, RowSplitGivesTheFirstRanksOneMore) {
  EXPECT_EQ(row_split(10, 0, 3).begin, 0);
  EXPECT_EQ(row_split(10, 0, 3).count, 4);
  EXPECT_EQ(row_split(10, 1, 3).begin, 4);
  EXPECT_EQ(row_split(10, 1, 3).count, 3);
  EXPECT_EQ(row_split(10, 2, 3).begin, 7);
  EXPECT_EQ(row_split(10, 2, 3).count, 3);
  EXPECT_EQ(row_split(2, 2, 3).count, 0);
  EXPECT_EQ(row_split(2, 2, 3).begin, 2);
}

TEST(Collectives, AllReduceEveryDTypeAndOp) {
  int salt = 0;
  for (DType t : kDTypes) {
    for (ReduceOp op : kOps) {
      if (t == DType::Bool && op == ReduceOp::Mean) continue;
      for (const Shape& shape : kShapes) {
        SCOPED_TRACE(trace(t, shape, reduce_op_name(op)));
        ++salt;
        Tensor x = filled(t, shape, world().rank(), salt);
        world().all_reduce(x, op);
        expect_same(x, reduced_tensor(t, shape, op, salt));
      }
    }
  }
}

TEST(Collectives, BoolMeanIsAnErrorOnEveryRank) {
  Tensor x = filled(DType::Bool, {4}, world().rank(), 0);
  std::string m = error_of([&] { world().all_reduce(x, ReduceOp::Mean); });
  EXPECT_NE(m.find(me() + "all_reduce of bool[4] (op mean): the mean of a bool tensor is not defined"),
            std::string::npos)
      << m;
  // The communicator goes on.
  world().all_reduce(x, ReduceOp::Max);
  expect_same(x, reduced_tensor(DType::Bool, {4}, ReduceOp::Max, 0));
}

TEST(Collectives, BroadcastEveryDTypeFromEveryRoot) {
  int salt = 0;
  for (DType t : kDTypes) {
    for (int root = 0; root < world().size(); ++root) {
      for (const Shape& shape : kShapes) {
        SCOPED_TRACE(trace(t, shape, "root " + std::to_string(root)));
        ++salt;
        Tensor x = filled(t, shape, world().rank(), salt);
        world().broadcast(x, root);
        expect_same(x, filled(t, shape, root, salt));
      }
    }
  }
}

TEST(Collectives, BroadcastFromARootOutOfRangeFailsOnEveryRank) {
  Tensor x = filled(DType::F32, {3}, world().rank(), 0);
  int root = world().size();
  std::string m = error_of([&] { world().broadcast(x, root); });
  EXPECT_NE(m.find(me() + "broadcast of f32[3] (root " + std::to_string(root) + "): root " + std::to_string(root) +
                   " is not a rank of this communicator of " + std::to_string(world().size())),
            std::string::npos)
      << m;
}

// Rank r's rows along the gathered axis: differ per rank, rank 1 has none.
int64_t rows_of(int rank) { return rank == 1 ? 0 : rank + 1; }

TEST(Collectives, AllGatherAlongTheFirstAxisWithDifferentSizes) {
  int salt = 0;
  for (DType t : kDTypes) {
    for (int64_t width : {3, 1, 0}) {
      SCOPED_TRACE(trace(t, {rows_of(world().rank()), width}));
      ++salt;
      std::vector<Tensor> parts;
      for (int r = 0; r < world().size(); ++r) parts.push_back(filled(t, {rows_of(r), width}, r, salt));
      Tensor got = world().all_gather(parts[static_cast<size_t>(world().rank())], 0);
      expect_same(got, concatenated(parts, 0));
    }
  }
}

TEST(Collectives, AllGatherOfOneDimensionalTensors) {
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1001}}) {
    std::vector<Tensor> parts;
    for (int r = 0; r < world().size(); ++r) parts.push_back(filled(DType::I32, {n + r}, r, 5));
    expect_same(world().all_gather(parts[static_cast<size_t>(world().rank())]), concatenated(parts, 0));
  }
}

TEST(Collectives, AllGatherAlongLaterAxes) {
  int salt = 0;
  for (DType t : kDTypes) {
    int r0 = world().rank();
    ++salt;
    {
      SCOPED_TRACE(trace(t, {2, rows_of(r0), 3}, "axis 1"));
      std::vector<Tensor> parts;
      for (int r = 0; r < world().size(); ++r) parts.push_back(filled(t, {2, rows_of(r), 3}, r, salt));
      expect_same(world().all_gather(parts[static_cast<size_t>(r0)], 1), concatenated(parts, 1));
      expect_same(world().all_gather(parts[static_cast<size_t>(r0)], -2), concatenated(parts, 1));
    }
    {
      SCOPED_TRACE(trace(t, {2, 3, r0 + 2}, "axis -1"));
      std::vector<Tensor> parts;
      for (int r = 0; r < world().size(); ++r) parts.push_back(filled(t, {2, 3, r + 2}, r, salt));
      expect_same(world().all_gather(parts[static_cast<size_t>(r0)], -1), concatenated(parts, 2));
    }
  }
}

TEST(Collectives, AllGatherNeedsAnAxis) {
  Tensor scalar = Tensor::scalar(Scalar::of_float(1.0, DType::F32));
  std::string m = error_of([&] { world().all_gather(scalar); });
  EXPECT_NE(m.find(me() + "all_gather of f32[] (axis 0): a 0-d tensor has no axis to gather along"), std::string::npos)
      << m;
  Tensor x = filled(DType::F32, {2, 3}, world().rank(), 0);
  m = error_of([&] { world().all_gather(x, 2); });
  EXPECT_NE(m.find(me() + "all_gather of f32[2,3] (axis 2): axis 2 is out of range for a tensor of 2 axes"),
            std::string::npos)
      << m;
}

TEST(Collectives, ReduceScatterSplitsUnevenly) {
  int salt = 0;
  for (DType t : kDTypes) {
    for (ReduceOp op : kOps) {
      if (t == DType::Bool && op == ReduceOp::Mean) continue;
      for (int64_t n : {0, 1, 7, 10}) {
        SCOPED_TRACE(trace(t, {n, 3}, reduce_op_name(op)));
        ++salt;
        Tensor x = filled(t, {n, 3}, world().rank(), salt);
        Tensor got = world().reduce_scatter(x, op);
        RowRange rows = row_split(n, world().rank(), world().size());
        expect_same(got, reduced_tensor(t, {rows.count, 3}, op, salt, rows.begin * 3));
      }
    }
  }
}

TEST(Collectives, ReduceScatterOfOneDimension) {
  Tensor x = filled(DType::F64, {1001}, world().rank(), 3);
  Tensor got = world().reduce_scatter(x, ReduceOp::Mean);
  RowRange rows = row_split(1001, world().rank(), world().size());
  expect_same(got, reduced_tensor(DType::F64, {rows.count}, ReduceOp::Mean, 3, rows.begin));
}

// With at most 7 elements a call, every collective goes in many chunks, and
// all_gather and reduce_scatter take their paths for totals past MPI's int.
TEST(Collectives, ChunkedTransfers) {
  for (int64_t limit : {7, 1}) {
    ChunkLimit chunks(limit);
    SCOPED_TRACE("chunks of " + std::to_string(limit));
    int salt = 100;
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::U8, DType::Bool}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min}) {
        SCOPED_TRACE(trace(t, {1001}, reduce_op_name(op)));
        ++salt;
        Tensor x = filled(t, {1001}, world().rank(), salt);
        world().all_reduce(x, op);
        expect_same(x, reduced_tensor(t, {1001}, op, salt));

        Tensor y = filled(t, {10, 3}, world().rank(), salt);
        RowRange rows = row_split(10, world().rank(), world().size());
        expect_same(world().reduce_scatter(y, op), reduced_tensor(t, {rows.count, 3}, op, salt, rows.begin * 3));
      }
      Tensor b = filled(t, {1001}, world().rank(), salt);
      world().broadcast(b, world().size() - 1);
      expect_same(b, filled(t, {1001}, world().size() - 1, salt));

      std::vector<Tensor> parts;
      for (int r = 0; r < world().size(); ++r) parts.push_back(filled(t, {rows_of(r) + 2, 3}, r, salt));
      expect_same(world().all_gather(parts[static_cast<size_t>(world().rank())]), concatenated(parts, 0));
      std::vector<Tensor> columns;
      for (int r = 0; r < world().size(); ++r) columns.push_back(filled(t, {3, rows_of(r)}, r, salt));
      expect_same(world().all_gather(columns[static_cast<size_t>(world().rank())], 1), concatenated(columns, 1));
    }
    Tensor a = filled(DType::I32, {100}, world().rank(), 9);
    AllReduceHandle h = world().all_reduce_async(a, ReduceOp::Mean);
    h.wait();
    expect_same(a, reduced_tensor(DType::I32, {100}, ReduceOp::Mean, 9));
  }
  EXPECT_EQ(world().max_chunk_elements(), INT_MAX);
}

TEST(Collectives, AsyncAllReduce) {
  int rank = world().rank();
  Tensor a = filled(DType::F32, {1001}, rank, 1);
  Tensor b = filled(DType::I16, {7}, rank, 2);
  Tensor c = filled(DType::BF16, {3, 5}, rank, 3);
  AllReduceHandle ha = world().all_reduce_async(a, ReduceOp::Sum);
  AllReduceHandle hb = world().all_reduce_async(b, ReduceOp::Mean);
  world().all_reduce(c, ReduceOp::Max);  // a blocking one between
  expect_same(c, reduced_tensor(DType::BF16, {3, 5}, ReduceOp::Max, 3));
  hb.wait();
  expect_same(b, reduced_tensor(DType::I16, {7}, ReduceOp::Mean, 2));
  while (!ha.done()) std::this_thread::yield();
  ha.wait();
  expect_same(a, reduced_tensor(DType::F32, {1001}, ReduceOp::Sum, 1));
  ha.wait();  // again: nothing more happens
  EXPECT_TRUE(ha.done());

  // Only done(), never wait().
  Tensor d = filled(DType::U64, {0}, rank, 4);
  AllReduceHandle hd = world().all_reduce_async(d, ReduceOp::Min);
  while (!hd.done()) std::this_thread::yield();

  // The destructor waits; a moved-to handle waits for what it held first.
  Tensor e = filled(DType::F64, {7}, rank, 5);
  Tensor f = filled(DType::I8, {7}, rank, 6);
  {
    AllReduceHandle he = world().all_reduce_async(e, ReduceOp::Min);
    AllReduceHandle moved = std::move(he);
    moved = world().all_reduce_async(f, ReduceOp::Max);
    expect_same(e, reduced_tensor(DType::F64, {7}, ReduceOp::Min, 5));
  }
  expect_same(f, reduced_tensor(DType::I8, {7}, ReduceOp::Max, 6));
  AllReduceHandle none;
  EXPECT_TRUE(none.done());
  none.wait();
}

TEST(Collectives, AsyncAllReduceWaitedOnAnotherThread) {
  Tensor a = filled(DType::F16, {1001}, world().rank(), 7);
  Tensor b = filled(DType::U32, {7}, world().rank(), 8);
  AllReduceHandle h = world().all_reduce_async(a, ReduceOp::Sum);
  std::thread waiter([&] { h.wait(); });
  world().all_reduce(b, ReduceOp::Sum);
  waiter.join();
  expect_same(a, reduced_tensor(DType::F16, {1001}, ReduceOp::Sum, 7));
  expect_same(b, reduced_tensor(DType::U32, {7}, ReduceOp::Sum, 8));
}

TEST(Collectives, ShapesThatDisagreeFailOnEveryRank) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  int rank = world().rank();
  Tensor x = filled(DType::F32, {4, rank == 1 ? 6 : 5}, rank, 0);
  std::string m = error_of([&] { world().all_reduce(x, ReduceOp::Sum); });
  std::string others = world().size() == 2 ? "rank 0 has f32[4,5], rank 1 has f32[4,6]"
                                            : "ranks 0, 2 have f32[4,5], rank 1 has f32[4,6]";
  EXPECT_NE(m.find(me() + "all_reduce of " + tensor_text(DType::F32, x.shape()) +
                   " (op sum): ranks disagree on the tensor: " + others),
            std::string::npos)
      << m;
  // Nothing moved, and the communicator goes on.
  expect_same(x, filled(DType::F32, x.shape(), rank, 0));
  Tensor y = filled(DType::F32, {4, 5}, rank, 0);
  world().all_reduce(y, ReduceOp::Sum);
  expect_same(y, reduced_tensor(DType::F32, {4, 5}, ReduceOp::Sum, 0));
}

TEST(Collectives, DTypesThatDisagreeFailOnEveryRank) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  int rank = world().rank();
  Tensor x = filled(rank == 0 ? DType::F16 : DType::BF16, {3}, rank, 0);
  std::string m = error_of([&] { world().reduce_scatter(x, ReduceOp::Sum); });
  EXPECT_NE(m.find("ranks disagree on the tensor: rank 0 has f16[3], rank"), std::string::npos) << m;
  EXPECT_NE(m.find(" bf16[3]"), std::string::npos) << m;
  EXPECT_EQ(m.find(me() + "reduce_scatter of "), 0u) << m;
}

TEST(Collectives, DifferentCollectivesFailOnEveryRank) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Tensor x = filled(DType::F32, {3}, world().rank(), 0);
  std::string m = error_of([&] {
    if (world().rank() == 0) {
      world().all_reduce(x, ReduceOp::Sum);
    } else {
      world().broadcast(x, 0);
    }
  });
  EXPECT_NE(m.find("ranks are not in the same collective: rank 0 is in all_reduce (collective "), std::string::npos)
      << m;
  EXPECT_NE(m.find(world().size() == 2 ? "rank 1 is in broadcast" : "ranks 1, 2 are in broadcast"), std::string::npos)
      << m;
}

TEST(Collectives, ReductionsThatDisagreeFailOnEveryRank) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Tensor x = filled(DType::I32, {3}, world().rank(), 0);
  std::string m = error_of([&] { world().all_reduce(x, world().rank() == 1 ? ReduceOp::Max : ReduceOp::Sum); });
  EXPECT_NE(m.find(world().size() == 2 ? "ranks disagree on the reduction: rank 0 has op sum, rank 1 has op max"
                                       : "ranks disagree on the reduction: ranks 0, 2 have op sum, rank 1 has op max"),
            std::string::npos)
      << m;
}

TEST(Collectives, RootsThatDisagreeFailOnEveryRank) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Tensor x = filled(DType::I32, {3}, world().rank(), 0);
  std::string m = error_of([&] { world().broadcast(x, world().rank() == 1 ? 1 : 0); });
  EXPECT_NE(m.find(world().size() == 2 ? "ranks disagree on the root: rank 0 has root 0, rank 1 has root 1"
                                       : "ranks disagree on the root: ranks 0, 2 have root 0, rank 1 has root 1"),
            std::string::npos)
      << m;
}

TEST(Collectives, AllGatherNeedsTheOtherDimsToAgree) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  int rank = world().rank();
  Tensor x = filled(DType::F32, {rank + 1, rank == 1 ? 4 : 3}, rank, 0);
  std::string m = error_of([&] { world().all_gather(x, 0); });
  EXPECT_NE(m.find(me() + "all_gather of " + tensor_text(DType::F32, x.shape()) +
                   " (axis 0): ranks disagree on the tensor (only axis 0 may differ): rank 0 has f32[1,3], rank 1 "
                   "has f32[2,4]"),
            std::string::npos)
      << m;
  Tensor y = filled(DType::F32, {2, rank + 1}, rank, 0);
  m = error_of([&] { world().all_gather(y, rank == 1 ? 0 : 1); });
  EXPECT_NE(m.find(world().size() == 2 ? "ranks disagree on the axis: rank 0 has axis 1, rank 1 has axis 0"
                                       : "ranks disagree on the axis: ranks 0, 2 have axis 1, rank 1 has axis 0"),
            std::string::npos)
      << m;
}

TEST(Collectives, AsyncAllReduceThatDisagreesFailsInWait) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  int rank = world().rank();
  Tensor x = filled(DType::F32, {rank == 1 ? 2 : 3}, rank, 0);
  AllReduceHandle h = world().all_reduce_async(x, ReduceOp::Sum);
  Tensor y = filled(DType::F32, {5}, rank, 1);
  world().all_reduce(y, ReduceOp::Sum);  // settles x's agreement check on the way
  expect_same(y, reduced_tensor(DType::F32, {5}, ReduceOp::Sum, 1));
  EXPECT_TRUE(h.done());
  std::string m = error_of([&] { h.wait(); });
  EXPECT_NE(m.find(me() + "all_reduce_async of " + tensor_text(DType::F32, x.shape()) +
                   " (op sum): ranks disagree on the tensor: "),
            std::string::npos)
      << m;
  EXPECT_EQ(error_of([&] { h.wait(); }), m);
}

TEST(Collectives, RawBuffers) {
  int rank = world().rank(), size = world().size();
  std::vector<float> a(1001);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(value(rank, static_cast<int64_t>(i), DType::F32, 1));
  world().all_reduce(a.data(), static_cast<int64_t>(a.size()), DType::F32, ReduceOp::Sum);
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(a[i], reduced(DType::F32, ReduceOp::Sum, static_cast<int64_t>(i), 1).as_double()) << i;

  std::vector<int32_t> b(7, rank == size - 1 ? 42 : -1);
  world().broadcast(b.data(), 7, DType::I32, size - 1);
  EXPECT_EQ(b, std::vector<int32_t>(7, 42));

  std::vector<int16_t> mine(5, static_cast<int16_t>(rank)), all(static_cast<size_t>(5 * size), -1);
  world().all_gather(mine.data(), 5, DType::I16, all.data());
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < 5; ++i) EXPECT_EQ(all[static_cast<size_t>(r * 5 + i)], r);

  std::vector<double> full(10);
  for (int i = 0; i < 10; ++i) full[static_cast<size_t>(i)] = static_cast<double>(value(rank, i, DType::F64, 2));
  RowRange rows = row_split(10, rank, size);
  std::vector<double> part(static_cast<size_t>(rows.count), -1);
  world().reduce_scatter(full.data(), 10, DType::F64, part.data(), ReduceOp::Max);
  for (int64_t i = 0; i < rows.count; ++i)
    EXPECT_EQ(part[static_cast<size_t>(i)], reduced(DType::F64, ReduceOp::Max, rows.begin + i, 2).as_double());

  world().all_reduce(nullptr, 0, DType::U8, ReduceOp::Sum);
  std::string m = error_of([&] { world().all_reduce(a.data(), -1, DType::F32, ReduceOp::Sum); });
  EXPECT_NE(m.find("the count of elements is -1, below 0"), std::string::npos) << m;
}

TEST(Collectives, RawAllGatherNeedsEqualCounts) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  int rank = world().rank();
  std::vector<int16_t> mine(static_cast<size_t>(rank + 1)), all(100);
  std::string m = error_of([&] { world().all_gather(mine.data(), rank + 1, DType::I16, all.data()); });
  EXPECT_NE(m.find("ranks disagree on the tensor: rank 0 has i16[1], rank 1 has i16[2]"), std::string::npos) << m;
}

TEST(Collectives, DeviceBytesAreReadAndTheStaleMirrorDropped) {
  int rank = world().rank();
  std::shared_ptr<HostMemoryMirror> m;
  Tensor x = on_device(DType::F32, {7}, rank, 11, &m);
  world().all_reduce(x, ReduceOp::Sum);
  EXPECT_EQ(m->downloads, 1);
  EXPECT_EQ(x.mirror(), nullptr) << "the host's bytes changed: the device's copy must go";
  expect_same(x, reduced_tensor(DType::F32, {7}, ReduceOp::Sum, 11));

  // A broadcast's root only reads; the others' bytes are replaced whole,
  // so their device copies go without coming back first.
  Tensor y = on_device(DType::I32, {5}, rank, 12, &m);
  world().broadcast(y, 0);
  expect_same(y, filled(DType::I32, {5}, 0, 12));
  if (rank == 0) {
    EXPECT_EQ(m->downloads, 1);
    EXPECT_EQ(y.mirror(), m);
  } else {
    EXPECT_EQ(m->downloads, 0);
    EXPECT_EQ(y.mirror(), nullptr);
  }

  // all_gather and reduce_scatter read their input, which keeps its mirror.
  Tensor z = on_device(DType::I64, {2, 3}, rank, 13, &m);
  std::vector<Tensor> parts;
  for (int r = 0; r < world().size(); ++r) parts.push_back(filled(DType::I64, {2, 3}, r, 13));
  expect_same(world().all_gather(z, 1), concatenated(parts, 1));
  EXPECT_EQ(z.mirror(), m);
  RowRange rows = row_split(2, rank, world().size());
  expect_same(world().reduce_scatter(z, ReduceOp::Sum),
              reduced_tensor(DType::I64, {rows.count, 3}, ReduceOp::Sum, 13, rows.begin * 3));
  EXPECT_EQ(m->downloads, 1);

  Tensor w = on_device(DType::F16, {7}, rank, 14, &m);
  AllReduceHandle h = world().all_reduce_async(w, ReduceOp::Max);
  h.wait();
  EXPECT_EQ(w.mirror(), nullptr);
  expect_same(w, reduced_tensor(DType::F16, {7}, ReduceOp::Max, 14));
}

TEST(Collectives, Settings) {
  EXPECT_THROW(world().set_timeout(0ms), std::invalid_argument);
  EXPECT_THROW(world().set_max_chunk_elements(0), std::invalid_argument);
  EXPECT_THROW(world().set_max_chunk_elements(int64_t{INT_MAX} + 1), std::invalid_argument);
  auto before = world().timeout();
  world().set_timeout(1500ms);
  EXPECT_EQ(world().timeout(), 1500ms);
  world().set_timeout(before);
  std::printf("rank %d: cuda_aware() = %d\n", world().rank(), world().cuda_aware() ? 1 : 0);
}

TEST(Collectives, TimeoutFromTheEnvironment) {
  const char* before = std::getenv("ZYNTAX_DIST_TIMEOUT_S");
  std::string saved = before ? before : "";
  setenv("ZYNTAX_DIST_TIMEOUT_S", "2.5", 1);
  {
    Communicator c(MpiComm{MPI_COMM_WORLD});
    EXPECT_EQ(c.timeout(), 2500ms);
    c.barrier();
  }
  setenv("ZYNTAX_DIST_TIMEOUT_S", "soon", 1);
  std::string m = error_of([] { Communicator c(MpiComm{MPI_COMM_WORLD}); });
  EXPECT_NE(m.find("ZYNTAX_DIST_TIMEOUT_S is 'soon': expected a number of seconds above 0"), std::string::npos) << m;
  if (before) {
    setenv("ZYNTAX_DIST_TIMEOUT_S", saved.c_str(), 1);
  } else {
    unsetenv("ZYNTAX_DIST_TIMEOUT_S");
  }
}

TEST(Collectives, CommunicatorOfAnApplicationsComm) {
  // Ranks split by parity: each half reduces among itself.
  int rank = world().rank();
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  {
    Communicator c(MpiComm{half});
    EXPECT_EQ(c.size(), (world().size() + 1 - rank % 2) / 2);
    EXPECT_EQ(c.rank(), rank / 2);
    Tensor x = Tensor::full(DType::I64, {3}, Scalar::of_int(rank, DType::I64));
    c.all_reduce(x, ReduceOp::Sum);
    int64_t sum = 0;
    for (int r = rank % 2; r < world().size(); r += 2) sum += r;
    expect_same(x, Tensor::full(DType::I64, {3}, Scalar::of_int(sum, DType::I64)));
  }
  MPI_Comm_free(&half);
}

// On ranks other than 0, gtest's report gives way to the failures alone.
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (!r.failed()) return;
    const testing::TestInfo* test = testing::UnitTest::GetInstance()->current_test_info();
    std::fprintf(stderr, "[rank %d] %s.%s: %s:%d: Failure\n%s\n", rank_, test ? test->test_suite_name() : "?",
                 test ? test->name() : "?", r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace zyntax::dist

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  zyntax::dist::job_at_start = zyntax::dist::Communicator::job();
  int mpi_started = 0;
  MPI_Initialized(&mpi_started);
  if (!zyntax::dist::job_at_start && mpi_started) {
    std::fprintf(stderr, "FAILED: Communicator::job() started MPI in a process no launcher started\n");
    return 1;
  }
  zyntax::dist::Communicator& world = zyntax::dist::Communicator::world();
  if (world.rank() != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new zyntax::dist::RankFailurePrinter(world.rank()));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  // A failure on any rank fails every rank.
  world.all_reduce(&failed, 1, zyntax::DType::I32, zyntax::dist::ReduceOp::Max);
  if (failed && world.rank() == 0) std::fprintf(stderr, "FAILED: a test failed on at least one rank\n");
  return failed;
}
