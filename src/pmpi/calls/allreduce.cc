// MPI_Allreduce: its arguments -> the engine's call, the MPI's and the staged one (pmpi/call.h).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int allreduce(const CallForm &form, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm) {
  if (!library_active()) return pmpi_allreduce(form, sendbuf, recvbuf, count, datatype, op, comm);
  // Reductions: MPI requires the same count and datatype on every rank.
  const auto prepare = [&](CollArgs *a, PackPlan *) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    if (count < 0 || !map_reduction(datatype, op, &a->dtype, &a->op) || !valid_buffer(recvbuf, count) ||
        (!in_place && !valid_buffer(sendbuf, count)) || (sendbuf == recvbuf && count > 1))
      return false;
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = recvbuf;
    a->count = static_cast<std::size_t>(count);
    a->elem = dtype_size(a->dtype);
    return true;
  };
  Buffers bufs;
  if (count > 0) {
    bufs.send = sendbuf == MPI_IN_PLACE ? nullptr : sendbuf;
    bufs.recv = recvbuf;
  }
  return run_call(
      Coll::Allreduce, form, "MPI_Allreduce", comm, bufs, prepare,
      [&] {
        // MPICH 4.0.2's PMPI_Allreduce crashes on a negative count (a memcpy of -4 bytes):
        // reported here, with the class Open MPI gives it.
        if (count < 0) return raise_error(comm, Status::ErrCount, func_of(Coll::Allreduce, form), "negative count");
        return pmpi_allreduce(form, sendbuf, recvbuf, count, datatype, op, comm);
      },
      [&](StagedBuffers sb) { return staged_allreduce(sendbuf, recvbuf, count, datatype, op, comm, sb); },
      [&] { return payload(count, datatype); });
}

unsigned long long allreduce_large_bytes(const void *, void *, MPI_Count count, MPI_Datatype datatype, MPI_Op,
                                         MPI_Comm) {
  return payload(count, datatype);
}

}  // namespace gcoll
