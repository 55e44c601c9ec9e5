// MPI for the whole process: started for Communicator::world() where the
// application has not started it, and finished at exit unless a collective
// was abandoned.
#pragma once

#include <string>

namespace zyntax::dist {

// MPI_Init_thread asking for MPI_THREAD_MULTIPLE, unless MPI is running
// already; a DistError once MPI has been finalised.
void start_mpi();
// MPI_Finalize, where start_mpi started MPI and nothing stopped it since,
// and no collective's requests were abandoned (finalising with requests
// pending can wait forever for ranks that are gone; a process that skips it
// makes mpirun end the job, which is what a failed collective should do).
void finish_mpi();

bool mpi_running();  // initialised and not finalised

// Whether a launcher started this process as a rank of a job: Open MPI's
// and PMIx's, MPICH's (Hydra, PMI) and Slurm's rank variables.
bool started_by_launcher();

// Records that requests were left pending after a failure.
void note_abandoned_requests();
bool abandoned_requests();

// MPI's text for an error code.
std::string mpi_error_text(int code);

// Whether the MPI library says it can move CUDA device memory, asked at run
// time where the library has the query (Open MPI's MPIX_Query_cuda_support).
bool mpi_cuda_aware();

}  // namespace zyntax::dist
