// Zyntax dtypes as MPI datatypes, and the MPI reductions on them. f16 and
// bf16 have no MPI type: they travel as a 2-byte type of ours and reduce
// through operations of ours that compute in float.
#pragma once

#include <mpi.h>

#include "dist/reduce_op.hpp"
#include "support/dtype.hpp"

namespace zyntax::dist {

// The datatype of one element (MPI must be running).
MPI_Datatype mpi_datatype(DType t);
// The reduction `op` does on `t`: for Mean the sum (the caller divides); on
// bool MPI's logical or for Sum and Max, logical and for Min.
MPI_Op mpi_op(DType t, ReduceOp op);

}  // namespace zyntax::dist
