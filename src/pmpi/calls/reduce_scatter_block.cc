// MPI_Reduce_scatter_block: its arguments -> the engine's call, the MPI's and the staged
// one (pmpi/call.h). Every rank's input is n blocks of recvcount elements (n: the
// communicator's size); rank r gets block r of their reduction. In place: the input is
// the receive buffer (n blocks), the result its first block. MPI requires the same
// recvcount, datatype and op on every rank (a reduction).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int reduce_scatter_block(const CallForm &form, const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm) {
  if (!library_active()) return pmpi_reduce_scatter_block(form, sendbuf, recvbuf, recvcount, datatype, op, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const auto blocks = [&] { return static_cast<long long>(recvcount) * comm_size(comm); };
  const auto prepare = [&](CollArgs *a, PackPlan *) {
    const long long total = blocks();
    if (recvcount < 0 || !map_reduction(datatype, op, &a->dtype, &a->op) ||
        !valid_buffer(recvbuf, in_place ? total : recvcount) || (!in_place && !valid_buffer(sendbuf, total)) ||
        (sendbuf == recvbuf && recvcount > 0))
      return false;
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = recvbuf;
    a->count = static_cast<std::size_t>(recvcount);
    a->elem = dtype_size(a->dtype);
    return true;
  };
  Buffers bufs;
  if (recvcount > 0) {
    bufs.send = in_place ? nullptr : sendbuf;
    bufs.recv = recvbuf;
  }
  return run_call(
      Coll::Reduce_scatter_block, form, "MPI_Reduce_scatter_block", comm, bufs, prepare,
      [&] {
        // (as MPI_Allreduce: MPICH 4.0.2 crashes on negative counts)
        if (recvcount < 0)
          return raise_error(comm, Status::ErrCount, func_of(Coll::Reduce_scatter_block, form), "negative count");
        return pmpi_reduce_scatter_block(form, sendbuf, recvbuf, recvcount, datatype, op, comm);
      },
      [&](StagedBuffers sb) {
        return staged_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, sb);
      },
      [&] { return payload(blocks(), datatype); });
}

unsigned long long reduce_scatter_block_large_bytes(const void *, void *, MPI_Count recvcount, MPI_Datatype datatype,
                                                    MPI_Op, MPI_Comm comm) {
  return payload(recvcount, datatype) * static_cast<std::uint64_t>(comm_size(comm));
}

}  // namespace gcoll
