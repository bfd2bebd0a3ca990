// MPI_Scatterv: its arguments -> the MPI's call and the staged one (pmpi/call.h); the
// engine has no algorithm for it. The root alone sends block i (sendcounts[i] x sendtype)
// at displs[i] extents to rank i; every rank receives recvcount x recvtype (the root:
// MPI_IN_PLACE, its block left where it is).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int scatterv(const CallForm &form, const void *sendbuf, const int sendcounts[], const int displs[],
             MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (!library_active())
    return pmpi_scatterv(form, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
  const RootRole r = root_of(comm, root);
  const bool in_place = r.root && !r.inter && recvbuf == MPI_IN_PLACE;
  const bool receives = r.member && !in_place;
  const int n = r.root ? r.n : 0;  // the root's arrays
  // Negative counts where the MPI reads them: reported here (MPICH crashes on some); a
  // missing array goes to the MPI.
  const bool negative = (receives && recvcount < 0) || any_negative(sendcounts, n);
  const long long total = sum_of(sendcounts, n);
  Buffers bufs;
  if (r.root && sendcounts && displs && total > 0) bufs.send = sendbuf;
  if (receives && recvcount > 0) bufs.recv = recvbuf;
  return run_call(
      Coll::Scatterv, form, "MPI_Scatterv", comm, bufs, engine_declines,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, func_of(Coll::Scatterv, form), "negative count");
        return pmpi_scatterv(form, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, func_of(Coll::Scatterv, form), "negative count")};
        return staged_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, sb);
      },
      [&] {
        // The root: what it scatters; the others: their block.
        return r.root ? payload(total, sendtype) : r.member ? payload(recvcount, recvtype) : 0;
      });
}

unsigned long long scatterv_large_bytes(const void *, const MPI_Count sendcounts[], const MPI_Aint[],
                                        MPI_Datatype sendtype, void *, MPI_Count recvcount, MPI_Datatype recvtype,
                                        int root, MPI_Comm comm) {
  const RootRole r = root_of(comm, root);
  if (!r.root) return r.member ? payload(recvcount, recvtype) : 0;
  long long total = 0;
  for (int i = 0; sendcounts && i < r.n; ++i) total += sendcounts[i] > 0 ? sendcounts[i] : 0;
  return payload(total, sendtype);
}

}  // namespace gcoll
