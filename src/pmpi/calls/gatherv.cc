// MPI_Gatherv: its arguments -> the MPI's call and the staged one (pmpi/call.h); the engine
// has no algorithm for it. Every rank sends sendcount x sendtype (the root: MPI_IN_PLACE,
// its block already in place); the root alone receives block i (recvcounts[i] x recvtype)
// at displs[i] extents. A staged root copies back the blocks the MPI writes (in place: all
// but its own), never the bytes between them.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int gatherv(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (!library_active())
    return pmpi_gatherv(form, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  const RootRole r = root_of(comm, root);
  const bool in_place = r.root && !r.inter && sendbuf == MPI_IN_PLACE;
  const bool sends = r.member && !in_place;
  const int n = r.root ? r.n : 0;  // the root's arrays
  // Negative counts where the MPI reads them: reported here (MPICH crashes on some); a
  // missing array goes to the MPI.
  const bool negative = (sends && sendcount < 0) || any_negative(recvcounts, n);
  const long long total = sum_of(recvcounts, n);
  Buffers bufs;
  if (sends && sendcount > 0) bufs.send = sendbuf;
  if (r.root && recvcounts && displs && total > 0) bufs.recv = recvbuf;
  return run_call(
      Coll::Gatherv, form, "MPI_Gatherv", comm, bufs, engine_declines,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, func_of(Coll::Gatherv, form), "negative count");
        return pmpi_gatherv(form, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, func_of(Coll::Gatherv, form), "negative count")};
        return staged_gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, sb);
      },
      [&] {
        // The root: what it gathers; the others: their block.
        return r.root ? payload(total, recvtype) : r.member ? payload(sendcount, sendtype) : 0;
      });
}

unsigned long long gatherv_large_bytes(const void *, MPI_Count sendcount, MPI_Datatype sendtype, void *,
                                       const MPI_Count recvcounts[], const MPI_Aint[], MPI_Datatype recvtype, int root,
                                       MPI_Comm comm) {
  const RootRole r = root_of(comm, root);
  if (!r.root) return r.member ? payload(sendcount, sendtype) : 0;
  long long total = 0;
  for (int i = 0; recvcounts && i < r.n; ++i) total += recvcounts[i] > 0 ? recvcounts[i] : 0;
  return payload(total, recvtype);
}

}  // namespace gcoll
