// MPI_Reduce_scatter: its arguments -> the engine's call (device buffers on one node, not
// in place: coll/reduce_scatter_direct.cc), the MPI's and the staged one (pmpi/call.h).
// MPI requires the same recvcounts, datatype and op on every rank. Every rank's input is the blocks of every rank of
// its group one after the other (recvcounts[i] elements for rank i); rank r gets block r of their reduction. In place:
// the input is the receive buffer, the result its start.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int reduce_scatter(const CallForm &form, const void *sendbuf, void *recvbuf, const int recvcounts[],
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (!library_active()) return pmpi_reduce_scatter(form, sendbuf, recvbuf, recvcounts, datatype, op, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int n = comm == MPI_COMM_NULL ? 0 : comm_size(comm);
  const int rank = n > 0 ? comm_rank(comm) : -1;
  // Negative counts: reported here (MPICH crashes on some); a missing array goes to the MPI.
  const bool negative = any_negative(recvcounts, n);
  const long long total = sum_of(recvcounts, n);
  Buffers bufs;
  if (recvcounts && !negative && total > 0) {
    bufs.send = in_place ? nullptr : sendbuf;
    if (in_place || recvcounts[rank] > 0) bufs.recv = recvbuf;
  }
  const auto prepare = [&](CollArgs *a, PackPlan *) {
    if (!recvcounts || negative || rank < 0 || !map_reduction(datatype, op, &a->dtype, &a->op) ||
        !valid_buffer(recvbuf, in_place ? total : recvcounts[rank]) || (!in_place && !valid_buffer(sendbuf, total)) ||
        (sendbuf == recvbuf && total > 0))
      return false;
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = recvbuf;
    a->count = static_cast<std::size_t>(total);
    a->counts = recvcounts;
    a->elem = dtype_size(a->dtype);
    return true;
  };
  return run_call(
      Coll::Reduce_scatter, form, "MPI_Reduce_scatter", comm, bufs, prepare,
      [&] {
        if (negative)
          return raise_error(comm, Status::ErrCount, func_of(Coll::Reduce_scatter, form),
                             "negative count in recvcounts");
        return pmpi_reduce_scatter(form, sendbuf, recvbuf, recvcounts, datatype, op, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative)
          return {
              raise_error(comm, Status::ErrCount, func_of(Coll::Reduce_scatter, form), "negative count in recvcounts")};
        return staged_reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, sb);
      },
      [&] { return payload(total, datatype); });  // the input, as reduce_scatter_block's
}

unsigned long long reduce_scatter_large_bytes(const void *, void *, const MPI_Count recvcounts[], MPI_Datatype datatype,
                                              MPI_Op, MPI_Comm comm) {
  const int n = array_length(comm, ArrayRanks::Local, 0);
  long long total = 0;
  for (int i = 0; recvcounts && i < n; ++i) total += recvcounts[i] > 0 ? recvcounts[i] : 0;
  return payload(total, datatype);
}

}  // namespace gcoll
