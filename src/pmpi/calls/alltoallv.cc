// MPI_Alltoallv: its arguments -> the MPI's call and the staged one (pmpi/call.h); the
// engine has no algorithm for it. Every rank sends block i (sendcounts[i] x sendtype at
// sdispls[i] extents) to rank i and receives block i (recvcounts[i] x recvtype at
// rdispls[i]) from it (n blocks: the communicator's size, an intercommunicator's remote
// group). In place: the receive buffer's blocks are the input too. A staged rank copies
// back the blocks the MPI writes, never the bytes between them.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int alltoallv(const CallForm &form, const void *sendbuf, const int sendcounts[], const int sdispls[],
              MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
              MPI_Comm comm) {
  if (!library_active())
    return pmpi_alltoallv(form, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int n = comm_group_size(comm);
  const bool negative = any_negative(recvcounts, n) || (!in_place && any_negative(sendcounts, n));
  const long long sent = in_place ? 0 : sum_of(sendcounts, n), got = sum_of(recvcounts, n);
  Buffers bufs;
  if (sent > 0) bufs.send = sendbuf;
  if (got > 0) bufs.recv = recvbuf;
  const auto fail = [&] {
    return raise_error(comm, Status::ErrCount, func_of(Coll::Alltoallv, form), "negative count");
  };
  return run_call(
      Coll::Alltoallv, form, "MPI_Alltoallv", comm, bufs, engine_declines,
      [&] {
        if (negative) return fail();
        return pmpi_alltoallv(form, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                              comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {fail()};
        return staged_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                                sb);
      },
      [&] { return payload(got, recvtype); });
}

unsigned long long alltoallv_large_bytes(const void *, const MPI_Count[], const MPI_Aint[], MPI_Datatype, void *,
                                         const MPI_Count recvcounts[], const MPI_Aint[], MPI_Datatype recvtype,
                                         MPI_Comm comm) {
  const int n = comm_group_size(comm);
  long long total = 0;
  for (int i = 0; recvcounts && i < n; ++i) total += recvcounts[i] > 0 ? recvcounts[i] : 0;
  return payload(total, recvtype);
}

}  // namespace gcoll
