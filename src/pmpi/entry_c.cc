// C entry points. The application's calls land here instead of in the MPI library.
#include <mpi.h>

#include "pmpi/collectives.h"

#define GCOLL_EXPORT __attribute__((visibility("default")))

extern "C" {

GCOLL_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm) {
  return gcoll::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

GCOLL_EXPORT int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return gcoll::bcast(buffer, count, datatype, root, comm);
}

GCOLL_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return gcoll::allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

GCOLL_EXPORT int MPI_Finalize(void) { return gcoll::finalize(); }

}  // extern "C"
