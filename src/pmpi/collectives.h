// gcoll's implementation of the intercepted collectives, shared by the C and Fortran
// entry points (Fortran ones convert handles and sentinels first).
#pragma once

#include <mpi.h>

#include "base/stats.h"

namespace gcoll {

int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm);
int finalize();

// A call the MPI made itself, outside gcoll's paths (the MPI-4 large-count calls whose
// counts do not fit an int, entry_c.cc): counted as passthrough with `bytes` (its result
// size) when rc is MPI_SUCCESS, else as an error. Returns rc.
int count_passthrough(Coll coll, int rc, unsigned long long bytes);

}  // namespace gcoll
