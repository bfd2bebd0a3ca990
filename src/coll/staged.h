// The staged path: a call on device buffers that the engine does not take (a derived
// datatype, a user-defined op, several nodes, ranks with mixed memory kinds,
// GCOLL_DEVICE_BUFFERS=staged) is run by the real MPI on pinned host copies. The MPI only
// ever sees host memory, so an MPI that is not CUDA-aware is safe.
//
// Each rank stages only its own device buffers and makes exactly the PMPI_* call it would
// make on host buffers, so staged ranks and ranks passing host memory (passthrough) may
// meet in the same call. What is copied is the buffer's span as the datatype lays it out
// (true lower bound to the end of the last element); a receive buffer whose datatype has
// holes is copied in first too, so the holes keep their contents as the MPI leaves them.
#pragma once

#include <mpi.h>

#include <string>

#include "base/status.h"

namespace gcoll {

struct StagedBuffers {
  bool send_device = false;  // allreduce/allgather send buffer (not MPI_IN_PLACE)
  bool recv_device = false;  // allreduce/allgather receive buffer; bcast buffer
  int device = 0;            // the GPU of the device buffer(s)
};

// The outcome of a staged call: the MPI's own return code (its error handler has already
// seen any error), or, when `status` is not Ok, a staging failure (out of pinned memory, a
// CUDA error) that the caller reports through the communicator's error handler with `why`.
struct StagedResult {
  int mpi_rc = MPI_SUCCESS;
  Status status = Status::Ok;
  std::string why;
};

StagedResult staged_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, StagedBuffers b);
StagedResult staged_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          StagedBuffers b);
StagedResult staged_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b);

// Inside MPI_Finalize: frees the pooled pinned buffers and the staging streams (before the
// application may reset its devices; mem/pinned.h).
void release_staging();

}  // namespace gcoll
