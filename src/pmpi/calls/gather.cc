// MPI_Gather: its arguments -> the MPI's call and the staged one (pmpi/call.h); the engine
// has no algorithm for it. Every rank sends sendcount x sendtype (the root: MPI_IN_PLACE,
// its block already in place); the root alone receives n blocks of recvcount x recvtype,
// block i at i x recvcount extents. A staged root copies back the blocks the MPI writes
// (in place: all but its own).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int gather(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (!library_active())
    return pmpi_gather(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  const RootRole r = root_of(comm, root);
  const bool in_place = r.root && !r.inter && sendbuf == MPI_IN_PLACE;
  const bool sends = r.member && !in_place;
  // Negative counts where the MPI reads them: reported here (MPICH crashes on some).
  const bool negative = (sends && sendcount < 0) || (r.root && recvcount < 0);
  Buffers bufs;
  if (sends && sendcount > 0) bufs.send = sendbuf;
  if (r.root && recvcount > 0 && r.n > 0) bufs.recv = recvbuf;
  return run_call(
      Coll::Gather, form, "MPI_Gather", comm, bufs, engine_declines,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, func_of(Coll::Gather, form), "negative count");
        return pmpi_gather(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, func_of(Coll::Gather, form), "negative count")};
        return staged_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, sb);
      },
      [&] {
        // The root: what it gathers; the others: their block.
        return r.root     ? payload(recvcount, recvtype) * static_cast<std::uint64_t>(r.n)
               : r.member ? payload(sendcount, sendtype)
                          : 0;
      });
}

unsigned long long gather_large_bytes(const void *, MPI_Count sendcount, MPI_Datatype sendtype, void *,
                                      MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const RootRole r = root_of(comm, root);
  return r.root     ? payload(recvcount, recvtype) * static_cast<std::uint64_t>(r.n)
         : r.member ? payload(sendcount, sendtype)
                    : 0;
}

}  // namespace gcoll
