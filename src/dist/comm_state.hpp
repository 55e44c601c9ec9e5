// One communicator's state, shared by the Communicator and the handles of
// its collectives in flight: its MPI communicator, its settings, and how its
// collectives wait (polling against a deadline) and fail.
#pragma once

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dist/collective_header.hpp"

namespace zyntax::dist {

struct AsyncAllReduce;

// MPI requests in flight, and what they read or write: the buffers must
// outlive the requests, even requests abandoned after a failure.
struct Pending {
  std::vector<MPI_Request> requests;
  std::vector<std::shared_ptr<const void>> keep_alive;
};

class CommState {
 public:
  // A duplicate of `parent` (MPI must be running), returning errors instead
  // of aborting; the duplicate is owned, `parent` is not.
  explicit CommState(MPI_Comm parent);
  // Frees the duplicate, unless MPI is finalised or requests were abandoned.
  ~CommState();
  CommState(const CommState&) = delete;
  CommState& operator=(const CommState&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every MPI call on the communicator, and every field below, is made
  // under this lock; waits release it while they sleep.
  std::mutex mu;
  std::chrono::milliseconds timeout;
  int64_t max_chunk;
  // The collectives begun so far (the next header's sequence number).
  uint64_t sequence = 0;
  // The async all-reduce whose agreement check has not been settled (its
  // data not yet posted); at most one, settled before anything else is
  // posted, so that every rank posts its MPI calls in the same order.
  std::shared_ptr<AsyncAllReduce> unsettled;
  // Whether a thread is waiting for the unsettled one's headers (with mu
  // released); other threads wait for `settled` rather than settle it too.
  bool settling = false;
  std::condition_variable settled;

  // "rank 1 of 4: <op>: <what>"
  std::string message(const std::string& op, const std::string& what) const;
  [[noreturn]] void fail(const std::string& op, const std::string& what) const;
  // A DistError when an earlier failure left the communicator unusable.
  void check_usable(const std::string& op) const;
  bool usable() const { return broken_.empty(); }

  // Waits until every request of `p` is complete. On a timeout or an MPI
  // error the requests are abandoned (with their buffers), the communicator
  // becomes unusable, and a DistError names `op`. `lock` holds mu.
  void wait(std::unique_lock<std::mutex>& lock, Pending& p, const std::string& op);
  // One test without blocking: true when every request is complete; on an
  // MPI error as wait(). Under mu.
  bool test(Pending& p, const std::string& op);
  // After posting a call into `p`: an MPI error code makes the
  // communicator unusable and throws, as wait() does.
  void check_posted(int rc, Pending& p, const std::string& op);
  // Leaves `p`'s requests pending for good, their buffers kept alive.
  void abandon(Pending& p);

  // The first step of every collective: settles the unsettled async
  // all-reduce, then exchanges `mine` (its sequence set here) with every
  // rank and returns all ranks' headers, in rank order; DistError on every
  // rank where they disagree. Under mu.
  std::vector<CollectiveHeader> agree(std::unique_lock<std::mutex>& lock, CollectiveHeader mine, const std::string& op);
  // The exchange begun without waiting: `all` receives the headers. Under mu.
  Pending post_headers(CollectiveHeader& mine, std::shared_ptr<std::vector<CollectiveHeader>> all,
                       const std::string& op);

 private:
  [[noreturn]] void break_with(Pending& p, const std::string& op, const std::string& what);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  // Why no collective can run any more; empty while the communicator is usable.
  std::string broken_;
  std::vector<std::shared_ptr<const void>> abandoned_;
};

// "5 s", "0.5 s", "250 ms"
std::string duration_text(std::chrono::milliseconds d);

}  // namespace zyntax::dist
