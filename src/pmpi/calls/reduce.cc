// MPI_Reduce: its arguments -> the engine's call (device buffers on one node:
// coll/reduce_direct.cc), the MPI's and the staged one (pmpi/call.h). Every rank gives
// count elements (the root: MPI_IN_PLACE, its input in the receive buffer); the root alone
// gets their reduction, so only its receive buffer is significant, and only it is copied
// back from a staged call. MPI requires the same count, datatype, op and root everywhere.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int reduce(const CallForm &form, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
           int root, MPI_Comm comm) {
  if (!library_active()) return pmpi_reduce(form, sendbuf, recvbuf, count, datatype, op, root, comm);
  const RootRole r = root_of(comm, root);
  // (as MPI_Allreduce: MPICH 4.0.2 crashes on negative counts; the count counts wherever
  // a buffer does)
  const bool negative = count < 0 && (r.root || r.member);
  Buffers bufs;
  if (count > 0) {
    if (r.member && sendbuf != MPI_IN_PLACE) bufs.send = sendbuf;
    if (r.root) bufs.recv = recvbuf;
  }
  // The engine's call: decided from count, datatype, op and root only (the same on every
  // rank); an intercommunicator never reaches the engine (pmpi/call.h).
  const auto prepare = [&](CollArgs *a, PackPlan *) {
    const bool in_place = r.root && sendbuf == MPI_IN_PLACE;
    if (!r.valid || r.inter || count < 0 || !map_reduction(datatype, op, &a->dtype, &a->op) ||
        (!in_place && !valid_buffer(sendbuf, count)) || (r.root && !valid_buffer(recvbuf, count)) ||
        (r.root && sendbuf == recvbuf && count > 0))
      return false;
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = r.root ? recvbuf : nullptr;
    a->count = static_cast<std::size_t>(count);
    a->elem = dtype_size(a->dtype);
    a->root = root;
    return true;
  };
  return run_call(
      Coll::Reduce, form, "MPI_Reduce", comm, bufs, prepare,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, func_of(Coll::Reduce, form), "negative count");
        return pmpi_reduce(form, sendbuf, recvbuf, count, datatype, op, root, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, func_of(Coll::Reduce, form), "negative count")};
        return staged_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, sb);
      },
      [&] { return payload(count, datatype); });
}

unsigned long long reduce_large_bytes(const void *, void *, MPI_Count count, MPI_Datatype datatype, MPI_Op, int,
                                      MPI_Comm) {
  return payload(count, datatype);
}

}  // namespace gcoll
