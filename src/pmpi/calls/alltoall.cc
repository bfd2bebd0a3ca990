// MPI_Alltoall: its arguments -> the MPI's call and the staged one (pmpi/call.h); the
// engine has no algorithm for it. Every rank sends n blocks of sendcount x sendtype and
// receives n blocks of recvcount x recvtype (n: the communicator's size, an
// intercommunicator's remote group). In place: the receive buffer is the input too.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
             MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active()) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  // Negative counts: reported here (MPICH crashes on some); in place, sendcount is ignored.
  const bool negative = recvcount < 0 || (!in_place && sendcount < 0);
  Buffers bufs;
  if (!in_place && sendcount > 0) bufs.send = sendbuf;
  if (recvcount > 0) bufs.recv = recvbuf;
  return run_call(
      Coll::Alltoall, "MPI_Alltoall", comm, bufs, engine_declines,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, "MPI_Alltoall", "negative count");
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, "MPI_Alltoall", "negative count")};
        return staged_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, sb);
      },
      [&](bool) { return payload(recvcount, recvtype) * static_cast<std::uint64_t>(group_size(comm)); });
}

unsigned long long alltoall_large_bytes(const void *, MPI_Count, MPI_Datatype, void *, MPI_Count recvcount,
                                        MPI_Datatype recvtype, MPI_Comm comm) {
  const int n = group_size(comm);
  return payload(recvcount, recvtype) * static_cast<std::uint64_t>(n > 0 ? n : 0);
}

}  // namespace gcoll
