// An all-reduce in flight (Communicator::all_reduce_async) in two steps:
// the header exchange checks that the ranks agree, then the data's
// reductions are posted. Posting the data waits until the check is settled,
// which happens when the handle is tested or waited on, or before the next
// collective on the communicator posts anything, so every rank posts its MPI
// calls in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/collective_header.hpp"
#include "dist/comm_state.hpp"
#include "dist/reduce_op.hpp"
#include "runtime/tensor.hpp"

namespace zyntax::dist {

struct AsyncAllReduce {
  enum class Phase { Agreeing, Reducing, Done, Failed };
  Phase phase = Phase::Agreeing;
  std::string op;  // "all_reduce_async of f32[10] (op sum)", for messages
  Tensor tensor;   // holds the result
  void* data = nullptr;
  int64_t count = 0;
  DType dtype = DType::F32;
  ReduceOp reduce = ReduceOp::Sum;
  std::shared_ptr<std::vector<CollectiveHeader>> headers;
  Pending pending;        // the header exchange, then the data's reductions
  std::string error;      // the DistError's message once Failed
  bool reported = false;  // whether wait() has thrown it
};

// Posts the header exchange of an all-reduce of `t` and makes it the
// communicator's unsettled one (after settling the one before). Under mu.
std::shared_ptr<AsyncAllReduce> begin_async_all_reduce(CommState& s, std::unique_lock<std::mutex>& lock, Tensor& t,
                                                       ReduceOp reduce);

// Settles s.unsettled, if any: posts its data where the ranks agree, else
// fails it (it throws on wait(); nothing is posted, on any rank). With
// `block` false, returns false while the header exchange is in flight
// instead of waiting for it. A timeout or an MPI error throws (and fails
// the all-reduce too). Under mu.
bool settle_unsettled(CommState& s, std::unique_lock<std::mutex>& lock, bool block);

}  // namespace zyntax::dist
