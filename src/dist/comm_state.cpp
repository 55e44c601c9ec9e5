#include "dist/comm_state.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "dist/async_all_reduce.hpp"
#include "dist/dist_error.hpp"
#include "dist/mpi_process.hpp"

namespace zyntax::dist {

namespace {

constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::seconds(60);

std::chrono::milliseconds timeout_from_environment() {
  const char* text = std::getenv("ZYNTAX_DIST_TIMEOUT_S");
  if (!text || !*text) return kDefaultTimeout;
  char* end = nullptr;
  errno = 0;
  double seconds = std::strtod(text, &end);
  if (end == text || *end || errno || !(seconds > 0) || seconds > 1e9)
    throw DistError(std::string("ZYNTAX_DIST_TIMEOUT_S is '") + text + "': expected a number of seconds above 0");
  return std::max(std::chrono::milliseconds(1), std::chrono::milliseconds(std::llround(seconds * 1000)));
}

// Between tests of requests in flight: yield at first (a collective among
// ranks that are all there completes in microseconds), then sleep longer
// and longer, up to 1 ms, so that a rank waiting for a late one leaves the
// cores to the others.
void back_off(int polls) {
  constexpr int kYields = 100;
  if (polls < kYields) {
    std::this_thread::yield();
    return;
  }
  int step = std::min((polls - kYields) / 16, 7);
  std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 10 << step)));
}

}  // namespace

std::string duration_text(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms < 1000) return std::to_string(ms) + " ms";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  std::string text = std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
  while (text.back() == '0') text.pop_back();
  return text + " s";
}

CommState::CommState(MPI_Comm parent) : timeout(timeout_from_environment()), max_chunk(INT_MAX) {
  if (!mpi_running())
    throw DistError("MPI is not running: initialise it before making a Communicator of an MPI_Comm, or use "
                    "Communicator::world()");
  MPI_Comm_rank(parent, &rank_);
  MPI_Comm_size(parent, &size_);
  std::unique_lock<std::mutex> lock(mu);
  Pending p;
  p.requests.resize(1);
  int rc = MPI_Comm_idup(parent, &comm_, &p.requests[0]);
  if (rc != MPI_SUCCESS) fail("making a communicator", "MPI_Comm_idup failed: " + mpi_error_text(rc));
  wait(lock, p, "making a communicator");
  // Errors come back as codes, which the collectives turn into DistErrors
  // naming the operation, instead of aborting the job.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
}

CommState::~CommState() {
  if (!abandoned_.empty()) {
    // MPI may still write into these buffers: they stay allocated for the
    // rest of the process.
    new std::vector<std::shared_ptr<const void>>(std::move(abandoned_));
    return;
  }
  if (broken_.empty() && comm_ != MPI_COMM_NULL && mpi_running()) MPI_Comm_free(&comm_);
}

std::string CommState::message(const std::string& op, const std::string& what) const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " + op + ": " + what;
}

void CommState::fail(const std::string& op, const std::string& what) const { throw DistError(message(op, what)); }

void CommState::check_usable(const std::string& op) const {
  if (!broken_.empty())
    fail(op, "this communicator can run no more collectives, since an earlier one failed (" + broken_ + ")");
}

void CommState::wait(std::unique_lock<std::mutex>& lock, Pending& p, const std::string& op) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int polls = 0;; ++polls) {
    if (test(p, op)) return;
    if (std::chrono::steady_clock::now() >= deadline)
      break_with(p, op, "no answer from the other ranks within " + duration_text(timeout) +
                            "; a rank may have exited or be in another collective");
    lock.unlock();
    back_off(polls);
    lock.lock();
  }
}

bool CommState::test(Pending& p, const std::string& op) {
  if (p.requests.empty()) return true;
  std::vector<MPI_Status> statuses(p.requests.size());
  int flag = 0;
  int rc = MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &flag, statuses.data());
  if (rc == MPI_SUCCESS) {
    if (flag) p = Pending{};
    return flag != 0;
  }
  int code = rc;
  if (rc == MPI_ERR_IN_STATUS) {
    for (const MPI_Status& s : statuses) {
      if (s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) {
        code = s.MPI_ERROR;
        break;
      }
    }
  }
  break_with(p, op, "MPI reported an error: " + mpi_error_text(code));
}

void CommState::check_posted(int rc, Pending& p, const std::string& op) {
  if (rc != MPI_SUCCESS) break_with(p, op, "MPI reported an error: " + mpi_error_text(rc));
}

void CommState::abandon(Pending& p) {
  for (auto& keep : p.keep_alive) abandoned_.push_back(std::move(keep));
  p = Pending{};
  note_abandoned_requests();
}

void CommState::break_with(Pending& p, const std::string& op, const std::string& what) {
  broken_ = message(op, what);
  abandon(p);
  throw DistError(broken_);
}

Pending CommState::post_headers(CollectiveHeader& mine, std::shared_ptr<std::vector<CollectiveHeader>> all,
                                const std::string& op) {
  mine.sequence = ++sequence;
  all->resize(static_cast<size_t>(size_));
  auto sent = std::make_shared<CollectiveHeader>(mine);
  Pending p;
  p.requests.resize(1);
  p.keep_alive = {sent, all};
  int rc = MPI_Iallgather(sent.get(), sizeof(CollectiveHeader), MPI_BYTE, all->data(), sizeof(CollectiveHeader),
                          MPI_BYTE, comm_, &p.requests[0]);
  if (rc != MPI_SUCCESS) p.requests.clear();
  check_posted(rc, p, op);
  return p;
}

std::vector<CollectiveHeader> CommState::agree(std::unique_lock<std::mutex>& lock, CollectiveHeader mine,
                                               const std::string& op) {
  check_usable(op);
  settle_unsettled(*this, lock, /*block=*/true);
  auto all = std::make_shared<std::vector<CollectiveHeader>>();
  Pending p = post_headers(mine, all, op);
  wait(lock, p, op);
  std::string disagreement = find_disagreement(*all);
  if (!disagreement.empty()) fail(op, disagreement);
  return *all;
}

}  // namespace zyntax::dist
