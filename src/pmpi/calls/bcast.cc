// MPI_Bcast: its arguments -> the engine's call, the MPI's and the staged one (pmpi/call.h).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int bcast(const CallForm &form, void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (!library_active()) return pmpi_bcast(form, buffer, count, datatype, root, comm);
  // By type signature (pack.h): the engine moves count x type size bytes, the same on
  // every rank whatever its datatype; a rank whose layout is not one run packs.
  const auto prepare = [&](CollArgs *a, PackPlan *plan) {
    ByteLayout l;
    if (!byte_layout(count, datatype, &l) || !valid_buffer(buffer, count) || root < 0 || root >= comm_size(comm))
      return false;
    a->recvbuf = buffer;
    a->dtype = DType::Uint8;
    a->elem = 1;
    a->count = l.bytes;
    a->root = root;
    if (l.bytes) plan->recv = PackSide{buffer, count, datatype, l, false};
    return true;
  };
  Buffers bufs;
  if (count > 0) bufs.recv = buffer;
  return run_call(
      Coll::Bcast, form, "MPI_Bcast", comm, bufs, prepare,
      [&] { return pmpi_bcast(form, buffer, count, datatype, root, comm); },
      [&](StagedBuffers sb) { return staged_bcast(buffer, count, datatype, root, comm, sb); },
      [&] {
        return payload(count, datatype);
      });
}

unsigned long long bcast_large_bytes(void *, MPI_Count count, MPI_Datatype datatype, int, MPI_Comm) {
  return payload(count, datatype);
}

}  // namespace gcoll
