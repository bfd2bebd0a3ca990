// MPI_Reduce: its arguments -> the MPI's call and the staged one (pmpi/call.h); the engine
// has no algorithm for it. Every rank gives count elements (the root: MPI_IN_PLACE, its
// input in the receive buffer); the root alone gets their reduction, so only its receive
// buffer is significant, and only it is copied back from a staged call.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  if (!library_active()) return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  const RootRole r = root_role(comm, root);
  // (as MPI_Allreduce: MPICH 4.0.2 crashes on negative counts; the count counts wherever
  // a buffer does)
  const bool negative = count < 0 && (r.root || r.member);
  Buffers bufs;
  if (count > 0) {
    if (r.member && sendbuf != MPI_IN_PLACE) bufs.send = sendbuf;
    if (r.root) bufs.recv = recvbuf;
  }
  return run_call(
      Coll::Reduce, "MPI_Reduce", comm, bufs, engine_declines,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, "MPI_Reduce", "negative count");
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, "MPI_Reduce", "negative count")};
        return staged_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, sb);
      },
      [&](bool) { return payload(count, datatype); });
}

unsigned long long reduce_large_bytes(const void *, void *, MPI_Count count, MPI_Datatype datatype, MPI_Op, int,
                                      MPI_Comm) {
  return payload(count, datatype);
}

}  // namespace gcoll
