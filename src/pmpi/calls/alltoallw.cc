// MPI_Alltoallw: its arguments -> the MPI's call and the staged one (pmpi/call.h); the
// engine has no algorithm for it. Every rank sends block i (sendcounts[i] x sendtypes[i]
// at sdispls[i] bytes) to rank i and receives block i (recvcounts[i] x recvtypes[i] at
// rdispls[i] bytes) from it. In place: the receive buffer's blocks are the input too.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int alltoallw(const CallForm &form, const void *sendbuf, const int sendcounts[], const int sdispls[],
              const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
              const MPI_Datatype recvtypes[], MPI_Comm comm) {
  if (!library_active())
    return pmpi_alltoallw(form, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                          comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int n = comm_group_size(comm);
  const bool negative = any_negative(recvcounts, n) || (!in_place && any_negative(sendcounts, n));
  Buffers bufs;
  if (!in_place && sum_of(sendcounts, n) > 0) bufs.send = sendbuf;
  if (sum_of(recvcounts, n) > 0) bufs.recv = recvbuf;
  const auto fail = [&] { return raise_error(comm, Status::ErrCount, func_of(Coll::Alltoallw, form), "negative count"); };
  return run_call(
      Coll::Alltoallw, form, "MPI_Alltoallw", comm, bufs, engine_declines,
      [&] {
        if (negative) return fail();
        return pmpi_alltoallw(form, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                              comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {fail()};
        return staged_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm,
                                sb);
      },
      [&] { return payload_typed(n, recvcounts, recvtypes); });
}

unsigned long long alltoallw_large_bytes(const void *, const MPI_Count[], const MPI_Aint[], const MPI_Datatype[],
                                         void *, const MPI_Count recvcounts[], const MPI_Aint[],
                                         const MPI_Datatype recvtypes[], MPI_Comm comm) {
  const int n = comm_group_size(comm);
  unsigned long long b = 0;
  for (int i = 0; recvcounts && recvtypes && i < n; ++i) b += payload(recvcounts[i], recvtypes[i]);
  return b;
}

}  // namespace gcoll
