// MPI_Scatter: its arguments -> the MPI's call and the staged one (pmpi/call.h); the engine
// has no algorithm for it. The root alone sends n blocks of sendcount x sendtype, block i
// at i x sendcount extents; every rank receives recvcount x recvtype (the root:
// MPI_IN_PLACE, its block left where it is).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int scatter(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
            int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (!library_active())
    return pmpi_scatter(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  const RootRole r = root_of(comm, root);
  const bool in_place = r.root && !r.inter && recvbuf == MPI_IN_PLACE;
  const bool receives = r.member && !in_place;
  // Negative counts where the MPI reads them: reported here (MPICH crashes on some).
  const bool negative = (receives && recvcount < 0) || (r.root && sendcount < 0);
  Buffers bufs;
  if (r.root && sendcount > 0 && r.n > 0) bufs.send = sendbuf;
  if (receives && recvcount > 0) bufs.recv = recvbuf;
  return run_call(
      Coll::Scatter, form, "MPI_Scatter", comm, bufs, engine_declines,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, func_of(Coll::Scatter, form), "negative count");
        return pmpi_scatter(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, func_of(Coll::Scatter, form), "negative count")};
        return staged_scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, sb);
      },
      [&] {
        // The root: what it scatters; the others: their block.
        return r.root     ? payload(sendcount, sendtype) * static_cast<std::uint64_t>(r.n)
               : r.member ? payload(recvcount, recvtype)
                          : 0;
      });
}

unsigned long long scatter_large_bytes(const void *, MPI_Count sendcount, MPI_Datatype sendtype, void *,
                                       MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const RootRole r = root_of(comm, root);
  return r.root     ? payload(sendcount, sendtype) * static_cast<std::uint64_t>(r.n)
         : r.member ? payload(recvcount, recvtype)
                    : 0;
}

}  // namespace gcoll
