// MPI_Scan: rank i gets the reduction of ranks 0..i. Its arguments -> the MPI's call and the staged one (pmpi/call.h);
// the engine has no algorithm for it.
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int scan(const CallForm &form, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
         MPI_Comm comm) {
  if (!library_active()) return pmpi_scan(form, sendbuf, recvbuf, count, datatype, op, comm);
  Buffers bufs;
  if (count > 0) {
    bufs.send = sendbuf == MPI_IN_PLACE ? nullptr : sendbuf;
    bufs.recv = recvbuf;
  }
  const auto fail = [&] { return raise_error(comm, Status::ErrCount, func_of(Coll::Scan, form), "negative count"); };
  return run_call(
      Coll::Scan, form, "MPI_Scan", comm, bufs, engine_declines,
      [&] {
        if (count < 0) return fail();
        return pmpi_scan(form, sendbuf, recvbuf, count, datatype, op, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (count < 0) return {fail()};
        return staged_scan(false, sendbuf, recvbuf, count, datatype, op, comm, sb);
      },
      [&] { return payload(count, datatype); });
}

unsigned long long scan_large_bytes(const void *, void *, MPI_Count count, MPI_Datatype datatype, MPI_Op, MPI_Comm) {
  return payload(count, datatype);
}

}  // namespace gcoll
