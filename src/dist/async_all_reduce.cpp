#include "dist/async_all_reduce.hpp"

#include <cstdio>

#include "dist/chunked_calls.hpp"
#include "dist/communicator.hpp"
#include "dist/dist_error.hpp"
#include "dist/mean.hpp"

namespace zyntax::dist {

namespace {

using Phase = AsyncAllReduce::Phase;

// Runs `step`; a DistError fails `a` with its message before going on.
template <class Step>
auto failing(AsyncAllReduce& a, Step step) {
  try {
    return step();
  } catch (const DistError& e) {
    a.phase = Phase::Failed;
    a.error = e.what();
    throw;
  }
}

// The agreement check done: post the data, or fail.
void after_agreement(CommState& s, AsyncAllReduce& a) {
  std::string disagreement = find_disagreement(*a.headers);
  if (disagreement.empty() && a.dtype == DType::Bool && a.reduce == ReduceOp::Mean)
    disagreement = "the mean of a bool tensor is not defined (sum and max are a logical or, min a logical and)";
  if (!disagreement.empty()) {
    a.phase = Phase::Failed;
    a.error = s.message(a.op, disagreement);
    return;
  }
  a.pending = Pending{};
  a.pending.keep_alive.push_back(std::make_shared<Tensor>(a.tensor));
  a.phase = Phase::Reducing;
  post_all_reduce(s, a.pending, a.data, a.count, a.dtype, a.reduce, a.op);
}

void after_reduction(CommState& s, AsyncAllReduce& a) {
  if (a.reduce == ReduceOp::Mean) divide_by_ranks(a.data, a.count, a.dtype, s.size());
  a.phase = Phase::Done;
}

}  // namespace

std::shared_ptr<AsyncAllReduce> begin_async_all_reduce(CommState& s, std::unique_lock<std::mutex>& lock, Tensor& t,
                                                       ReduceOp reduce) {
  auto a = std::make_shared<AsyncAllReduce>();
  a->op = std::string("all_reduce_async of ") + tensor_text(t.dtype(), t.shape()) + " (op " + reduce_op_name(reduce) +
          ")";
  s.check_usable(a->op);
  settle_unsettled(s, lock, /*block=*/true);
  a->tensor = t;
  // Through the writing accessor: a device's only current copy comes back
  // first, and the device's copy goes, as the host's bytes change.
  a->data = t.data();
  a->count = t.numel();
  a->dtype = t.dtype();
  a->reduce = reduce;
  a->headers = std::make_shared<std::vector<CollectiveHeader>>();
  CollectiveHeader mine = make_header(CollectiveKind::AllReduce, 0, t.dtype(), t.shape(), reduce);
  a->pending = s.post_headers(mine, a->headers, a->op);
  s.unsettled = a;
  return a;
}

bool settle_unsettled(CommState& s, std::unique_lock<std::mutex>& lock, bool block) {
  for (;;) {
    if (s.settling) {
      if (!block) return false;
      s.settled.wait(lock);
      continue;
    }
    std::shared_ptr<AsyncAllReduce> a = s.unsettled;
    if (!a) return true;
    if (!block) {
      // One test, the lock held throughout: no other thread gets between.
      if (!failing(*a, [&] { return s.test(a->pending, a->op); })) return false;
    } else {
      s.settling = true;
      try {
        failing(*a, [&] { s.wait(lock, a->pending, a->op); });
      } catch (const DistError&) {
        s.unsettled.reset();
        s.settling = false;
        s.settled.notify_all();
        throw;
      }
      s.settling = false;
      s.settled.notify_all();
    }
    s.unsettled.reset();
    failing(*a, [&] { after_agreement(s, *a); });
    return true;
  }
}

AllReduceHandle& AllReduceHandle::operator=(AllReduceHandle&& o) noexcept {
  if (this != &o) {
    finish_quietly();
    state_ = std::move(o.state_);
    op_ = std::move(o.op_);
  }
  return *this;
}

AllReduceHandle::~AllReduceHandle() { finish_quietly(); }

void AllReduceHandle::finish_quietly() noexcept {
  if (!op_) return;
  bool reported = op_->reported;
  try {
    wait();
  } catch (const std::exception& e) {
    if (!reported) std::fprintf(stderr, "zyntax: an all_reduce_async handle went away unfinished: %s\n", e.what());
  }
  op_.reset();
  state_.reset();
}

void AllReduceHandle::wait() {
  if (!op_) return;
  CommState& s = *state_;
  AsyncAllReduce& a = *op_;
  std::unique_lock<std::mutex> lock(s.mu);
  try {
    if (a.phase == Phase::Agreeing) settle_unsettled(s, lock, /*block=*/true);
    if (a.phase == Phase::Reducing) {
      failing(a, [&] {
        // After another collective failed these requests may never
        // complete: unless they already have, they are given up.
        if (!s.usable() && !s.test(a.pending, a.op)) {
          s.abandon(a.pending);
          s.check_usable(a.op);
        }
        s.wait(lock, a.pending, a.op);
      });
      // Another thread waiting on this handle may have finished it first.
      if (a.phase == Phase::Reducing) after_reduction(s, a);
    }
    if (a.phase == Phase::Failed) throw DistError(a.error);
  } catch (const DistError&) {
    a.reported = true;
    throw;
  }
}

bool AllReduceHandle::done() {
  if (!op_) return true;
  CommState& s = *state_;
  AsyncAllReduce& a = *op_;
  std::unique_lock<std::mutex> lock(s.mu);
  try {
    if (a.phase == Phase::Agreeing) settle_unsettled(s, lock, /*block=*/false);
    if (a.phase == Phase::Reducing && s.test(a.pending, a.op)) after_reduction(s, a);
  } catch (const DistError& e) {
    // wait() throws it.
    a.phase = Phase::Failed;
    a.error = e.what();
  }
  return a.phase == Phase::Done || a.phase == Phase::Failed;
}

}  // namespace zyntax::dist
