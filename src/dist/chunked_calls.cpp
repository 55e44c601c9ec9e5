#include "dist/chunked_calls.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "dist/mpi_types.hpp"

namespace zyntax::dist {

namespace {

// Calls post(offset, n) over [0, count) in pieces of at most `limit`.
template <class Post>
void in_chunks(int64_t count, int64_t limit, Post post) {
  for (int64_t offset = 0; offset < count; offset += limit) post(offset, std::min(limit, count - offset));
}

unsigned char* at(void* base, int64_t elements, DType t) {
  return static_cast<unsigned char*>(base) + elements * static_cast<int64_t>(dtype_size(t));
}
const unsigned char* at(const void* base, int64_t elements, DType t) {
  return static_cast<const unsigned char*>(base) + elements * static_cast<int64_t>(dtype_size(t));
}

// Where each rank's block starts, in elements.
std::vector<int64_t> offsets_of(const std::vector<int64_t>& counts) {
  std::vector<int64_t> offsets(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  return offsets;
}

// MPI_Request slot for one more call.
MPI_Request* next_request(Pending& p) {
  p.requests.push_back(MPI_REQUEST_NULL);
  return &p.requests.back();
}

// After a call that failed, its slot holds no request.
void posted(CommState& s, int rc, Pending& p, const std::string& op) {
  if (rc != MPI_SUCCESS) p.requests.pop_back();
  s.check_posted(rc, p, op);
}

}  // namespace

void post_broadcast(CommState& s, Pending& p, void* data, int64_t count, DType t, int root, const std::string& op) {
  MPI_Datatype type = mpi_datatype(t);
  in_chunks(count, s.max_chunk, [&](int64_t offset, int64_t n) {
    int rc = MPI_Ibcast(at(data, offset, t), static_cast<int>(n), type, root, s.comm(), next_request(p));
    posted(s, rc, p, op);
  });
}

void post_all_reduce(CommState& s, Pending& p, void* data, int64_t count, DType t, ReduceOp reduce,
                     const std::string& op) {
  MPI_Datatype type = mpi_datatype(t);
  MPI_Op mpi_reduce = mpi_op(t, reduce);
  in_chunks(count, s.max_chunk, [&](int64_t offset, int64_t n) {
    int rc = MPI_Iallreduce(MPI_IN_PLACE, at(data, offset, t), static_cast<int>(n), type, mpi_reduce, s.comm(),
                            next_request(p));
    posted(s, rc, p, op);
  });
}

void post_all_gather(CommState& s, Pending& p, const void* mine, const std::vector<int64_t>& counts, DType t, void* out,
                     const std::string& op) {
  MPI_Datatype type = mpi_datatype(t);
  std::vector<int64_t> offsets = offsets_of(counts);
  int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (total == 0) return;
  if (total <= s.max_chunk) {
    // One call: every count and offset fits in an int.
    std::vector<int> ints(counts.begin(), counts.end()), displs(offsets.begin(), offsets.end());
    int rc = MPI_Iallgatherv(mine, ints[static_cast<size_t>(s.rank())], type, out, ints.data(), displs.data(), type,
                             s.comm(), next_request(p));
    posted(s, rc, p, op);
    return;
  }
  // Too many for int offsets: each rank broadcasts its block, in chunks,
  // straight from and into `out`.
  size_t me = static_cast<size_t>(s.rank());
  std::memcpy(at(out, offsets[me], t), mine, static_cast<size_t>(counts[me]) * dtype_size(t));
  for (int r = 0; r < s.size(); ++r) {
    in_chunks(counts[static_cast<size_t>(r)], s.max_chunk, [&](int64_t offset, int64_t n) {
      int rc = MPI_Ibcast(at(out, offsets[static_cast<size_t>(r)] + offset, t), static_cast<int>(n), type, r,
                          s.comm(), next_request(p));
      posted(s, rc, p, op);
    });
  }
}

void post_reduce_scatter(CommState& s, Pending& p, const void* in, const std::vector<int64_t>& counts, DType t,
                         ReduceOp reduce, void* out, const std::string& op) {
  MPI_Datatype type = mpi_datatype(t);
  MPI_Op mpi_reduce = mpi_op(t, reduce);
  std::vector<int64_t> offsets = offsets_of(counts);
  int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (total == 0) return;
  if (total <= s.max_chunk) {
    std::vector<int> ints(counts.begin(), counts.end());
    int rc = MPI_Ireduce_scatter(in, out, ints.data(), type, mpi_reduce, s.comm(), next_request(p));
    posted(s, rc, p, op);
    return;
  }
  // Each rank's segment reduced onto that rank, in chunks.
  for (int r = 0; r < s.size(); ++r) {
    in_chunks(counts[static_cast<size_t>(r)], s.max_chunk, [&](int64_t offset, int64_t n) {
      void* recv = r == s.rank() ? at(out, offset, t) : nullptr;
      int rc = MPI_Ireduce(at(in, offsets[static_cast<size_t>(r)] + offset, t), recv, static_cast<int>(n), type,
                           mpi_reduce, r, s.comm(), next_request(p));
      posted(s, rc, p, op);
    });
  }
}

}  // namespace zyntax::dist
