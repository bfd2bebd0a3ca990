// MPI_Alltoall: its arguments -> the engine's call (device buffers on one node, not in
// place: coll/alltoall_direct.cc; elsewhere, in place too: coll/alltoall_hier.cc), the
// MPI's and the staged one (pmpi/call.h). Every rank sends n blocks of sendcount x sendtype and
// receives n blocks of recvcount x recvtype (n: the communicator's size, an
// intercommunicator's remote group). In place: the receive buffer is the input too.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int alltoall(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
             int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active()) return pmpi_alltoall(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  // Negative counts: reported here (MPICH crashes on some); in place, sendcount is ignored.
  const bool negative = recvcount < 0 || (!in_place && sendcount < 0);
  Buffers bufs;
  if (!in_place && sendcount > 0) bufs.send = sendbuf;
  if (recvcount > 0) bufs.recv = recvbuf;
  // By type signature (pack.h), as MPI_Allgather: every block is recvcount x recvtype size
  // bytes on every rank whatever its datatypes; a rank whose layouts are not one run packs.
  const auto prepare = [&](CollArgs *a, PackPlan *plan) {
    const int n = comm_size(comm);
    ByteLayout rl, block, sl;
    if (negative || !byte_layout(recvcount, recvtype, &block) ||
        !valid_buffer(recvbuf, static_cast<long long>(recvcount) * n) ||
        !byte_layout(static_cast<long long>(recvcount) * n, recvtype, &rl))
      return false;
    if (!in_place) {
      // The send signature must carry exactly one block per rank.
      ByteLayout one;
      if (!byte_layout(sendcount, sendtype, &one) || one.bytes != block.bytes ||
          !valid_buffer(sendbuf, static_cast<long long>(sendcount) * n) ||
          !byte_layout(static_cast<long long>(sendcount) * n, sendtype, &sl))
        return false;
    }
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = recvbuf;
    a->dtype = DType::Uint8;
    a->elem = 1;
    a->count = block.bytes;
    if (block.bytes) {
      if (!in_place) plan->send = PackSide{const_cast<void *>(sendbuf), sendcount, sendtype, sl, false};
      plan->recv = PackSide{recvbuf, recvcount, recvtype, rl, false};
    }
    return true;
  };
  return run_call(
      Coll::Alltoall, form, "MPI_Alltoall", comm, bufs, prepare,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, func_of(Coll::Alltoall, form), "negative count");
        return pmpi_alltoall(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, func_of(Coll::Alltoall, form), "negative count")};
        return staged_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, sb);
      },
      [&] { return payload(recvcount, recvtype) * static_cast<std::uint64_t>(comm_group_size(comm)); });
}

unsigned long long alltoall_large_bytes(const void *, MPI_Count, MPI_Datatype, void *, MPI_Count recvcount,
                                        MPI_Datatype recvtype, MPI_Comm comm) {
  const int n = comm_group_size(comm);
  return payload(recvcount, recvtype) * static_cast<std::uint64_t>(n > 0 ? n : 0);
}

}  // namespace gcoll
