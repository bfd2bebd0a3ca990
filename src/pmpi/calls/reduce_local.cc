// MPI_Reduce_local: no communicator, no other form. Host buffers go to the MPI; device
// buffers are staged (coll/staged.h: both copied in, the in-out buffer back). Errors go to
// MPI_COMM_SELF's error handler (MPI-4.1 9.3: errors not tied to a communicator).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op) {
  if (!library_active()) return PMPI_Reduce_local(inbuf, inoutbuf, count, datatype, op);
  const char *func = "MPI_Reduce_local";
  Stats &stats = process_stats();
  return guarded(
      MPI_COMM_SELF, func,
      [&] {
        const int app_errno = errno;
        const void *ptrs[2] = {count > 0 ? inbuf : nullptr, count > 0 ? inoutbuf : nullptr};
        const LocalMemory lm = count > 0 && device_memory_possible() ? classify_local(ptrs, 2, -1) : LocalMemory{};
        if (count < 0) {
          stats.record(Coll::Reduce_local, Path::Error, 0);
          return raise_error(MPI_COMM_SELF, Status::ErrCount, func, "negative count");
        }
        int rc = MPI_SUCCESS;
        if (!lm.device) {
          rc = PMPI_Reduce_local(inbuf, inoutbuf, count, datatype, op);
        } else {
          Stager st(lm.ordinal);
          const CallForm blocking;
          StagedBuffers sb;
          sb.send_device = lm.is_device[0];
          sb.recv_device = lm.is_device[1];
          sb.device = lm.ordinal;
          sb.stager = &st;
          sb.form = &blocking;
          const StagedResult r = staged_reduce_local(inbuf, inoutbuf, count, datatype, op, sb);
          if (!ok(r.status)) {
            stats.record(Coll::Reduce_local, Path::Error, 0);
            return raise_error(MPI_COMM_SELF, r.status, func, r.why.c_str());
          }
          rc = r.mpi_rc;
          errno = app_errno;
        }
        stats.record(Coll::Reduce_local, rc != MPI_SUCCESS ? Path::Error : lm.device ? Path::Staged : Path::Passthrough,
                     rc == MPI_SUCCESS ? payload(count, datatype) : 0);
        return rc;
      },
      [&] { stats.record(Coll::Reduce_local, Path::Error, 0); });
}

}  // namespace gcoll
