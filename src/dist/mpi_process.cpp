#include "dist/mpi_process.hpp"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "dist/dist_error.hpp"

namespace zyntax::dist {

namespace {

std::mutex start_mu;
bool started_here = false;  // under start_mu
std::atomic<bool> abandoned{false};

}  // namespace

void start_mpi() {
  std::lock_guard<std::mutex> lock(start_mu);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw DistError("MPI has been finalised in this process: no collective can run any more");
  if (initialized) return;
  // Whatever thread level comes back is accepted: a communicator makes its
  // MPI calls one at a time under its own lock.
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) throw DistError("MPI_Init_thread failed: " + mpi_error_text(rc));
  started_here = true;
}

void finish_mpi() {
  std::lock_guard<std::mutex> lock(start_mu);
  if (!started_here || !mpi_running() || abandoned_requests()) return;
  MPI_Finalize();
}

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS", "SLURM_PROCID"})
    if (std::getenv(name)) return true;
  return false;
}

void note_abandoned_requests() { abandoned.store(true); }
bool abandoned_requests() { return abandoned.load(); }

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

bool mpi_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  // The macro says how the headers were built; the query asks the library
  // actually loaded, which may differ.
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace zyntax::dist
