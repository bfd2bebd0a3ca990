// MPI_Allgatherv: its arguments -> the MPI's call and the staged one (pmpi/call.h); the
// engine has no algorithm for it. Every rank sends sendcount x sendtype and receives block
// i (recvcounts[i] x recvtype) at displs[i] extents, for each rank i of the communicator
// (an intercommunicator's remote group). In place: this rank's block is its input. A
// staged call copies back the blocks the MPI writes, never the bytes between them.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
               const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active())
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int n = comm == MPI_COMM_NULL ? 0 : group_size(comm);
  // Negative counts: reported here (MPICH crashes on some); a missing array goes to the MPI.
  const bool negative = any_negative(recvcounts, n) || (!in_place && sendcount < 0);
  const long long total = sum_of(recvcounts, n);
  Buffers bufs;
  if (!in_place && sendcount > 0) bufs.send = sendbuf;
  if (recvcounts && displs && total > 0) bufs.recv = recvbuf;
  return run_call(
      Coll::Allgatherv, "MPI_Allgatherv", comm, bufs, engine_declines,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, "MPI_Allgatherv", "negative count");
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, "MPI_Allgatherv", "negative count")};
        return staged_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, sb);
      },
      [&](bool) { return payload(total, recvtype); });
}

unsigned long long allgatherv_large_bytes(const void *, MPI_Count, MPI_Datatype, void *, const MPI_Count recvcounts[],
                                          const MPI_Aint[], MPI_Datatype recvtype, MPI_Comm comm) {
  const int n = array_length(comm, ArrayRanks::Group, 0);
  long long total = 0;
  for (int i = 0; recvcounts && i < n; ++i) total += recvcounts[i] > 0 ? recvcounts[i] : 0;
  return payload(total, recvtype);
}

}  // namespace gcoll
