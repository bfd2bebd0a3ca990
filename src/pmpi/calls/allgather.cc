// MPI_Allgather: its arguments -> the engine's call, the MPI's and the staged one (pmpi/call.h).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int allgather(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active()) return pmpi_allgather(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  // By type signature (pack.h): every rank's block is recvcount x recvtype size bytes,
  // the same on every rank whatever its datatypes; a rank whose layouts are not one run
  // packs.
  const auto prepare = [&](CollArgs *a, PackPlan *plan) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    const int n = comm_size(comm);
    ByteLayout rl, block, sl;
    if (!byte_layout(recvcount, recvtype, &block) || !valid_buffer(recvbuf, recvcount) ||
        !byte_layout(static_cast<long long>(recvcount) * n, recvtype, &rl))
      return false;
    if (!in_place) {
      // The send signature must carry exactly one block.
      if (!byte_layout(sendcount, sendtype, &sl) || !valid_buffer(sendbuf, sendcount) || sl.bytes != block.bytes)
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
  Buffers bufs;
  if (sendbuf != MPI_IN_PLACE && sendcount > 0) bufs.send = sendbuf;
  if (recvcount > 0) bufs.recv = recvbuf;
  return run_call(
      Coll::Allgather, form, "MPI_Allgather", comm, bufs, prepare,
      [&] { return pmpi_allgather(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
      [&](StagedBuffers sb) {
        return staged_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, sb);
      },
      [&] { return payload(recvcount, recvtype) * static_cast<std::uint64_t>(comm_group_size(comm)); });
}

unsigned long long allgather_large_bytes(const void *, MPI_Count, MPI_Datatype, void *, MPI_Count recvcount,
                                         MPI_Datatype recvtype, MPI_Comm comm) {
  int inter = 0, n = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter)
    PMPI_Comm_remote_size(comm, &n);
  else
    PMPI_Comm_size(comm, &n);
  return payload(recvcount, recvtype) * static_cast<std::uint64_t>(n > 0 ? n : 0);
}

}  // namespace gcoll
