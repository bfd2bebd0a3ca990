// gcoll's implementation of the intercepted collectives, shared by the C and Fortran
// entry points (Fortran ones convert handles and sentinels first).
#pragma once

#include <mpi.h>

namespace gcoll {

int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm);
int finalize();

}  // namespace gcoll
