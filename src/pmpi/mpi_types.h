// MPI datatype and op handles -> the engine's DType and ROp. Only predefined handles map;
// anything else (derived types, user ops) is not the engine's business.
#pragma once

#include <mpi.h>

#include "kernels/types.h"

namespace gcoll {

bool map_datatype(MPI_Datatype t, DType *out);
bool map_op(MPI_Op op, ROp *out);
// A (type, op) pair the MPI standard defines and the engine implements.
bool map_reduction(MPI_Datatype t, MPI_Op op, DType *dt, ROp *rop);

}  // namespace gcoll
