// An application's MPI communicator, handed to Communicator's constructor.
// The one public header of dist/ that includes <mpi.h>: code that only uses
// Communicator::world() needs no MPI headers.
#pragma once

#include <mpi.h>

namespace zyntax::dist {

struct MpiComm {
  MPI_Comm comm;
};

}  // namespace zyntax::dist
