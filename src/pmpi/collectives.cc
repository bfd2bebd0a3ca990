#include "pmpi/collectives.h"

#include <cstdint>

#include "base/log.h"
#include "base/stats.h"
#include "pmpi/dispatch.h"
#include "pmpi/errors.h"
#include "pmpi/runtime.h"

namespace gcoll {

namespace {

// Size in bytes of `count` elements, for stats. Only called after the MPI accepted the
// datatype (a bad one must reach the error handler through the collective, not here).
std::uint64_t payload(int count, MPI_Datatype type) {
  if (count <= 0) return 0;
  int size = 0;
  PMPI_Type_size(type, &size);
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size > 0 ? size : 0);
}

// The one template method every collective goes through (the guard at the boundary):
//   1. reject what the MPI would crash on, through the error handler;
//   2. decide the path, the same on every rank, before any byte moves;
//   3. run it; a path that answers NotSupported (decided from rank-uniform arguments,
//      before anything moved) falls back to the MPI;
//   4. count the call.
// `mpi` runs the PMPI_* call; `bytes` gives the result size after success.
template <class Mpi, class Bytes>
int run(Coll coll, const char *func, MPI_Comm comm, Mpi &&mpi, Bytes &&bytes) {
  Stats &stats = process_stats();
  if (comm == MPI_COMM_NULL) {  // Open MPI 4.1.4 segfaults on this in MPI_Allgather
    stats.record(coll, Path::Error, 0);
    return raise_error(comm, Status::ErrComm, func, "the communicator is MPI_COMM_NULL");
  }
  DispatchInput in;  // host memory; no engine yet: only passthrough is reachable
  Path path = decide(in);
  if (path != Path::Passthrough) path = Path::Passthrough;  // NotSupported: no engine/staging built yet
  const int rc = mpi();
  if (rc != MPI_SUCCESS) {
    stats.record(coll, Path::Error, 0);
    return rc;
  }
  const std::uint64_t b = bytes();
  stats.record(coll, path, b);
  GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(path));
  return rc;
}

}  // namespace

int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (!library_active()) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  return run(
      Coll::Allreduce, "MPI_Allreduce", comm,
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); },
      [&] { return payload(count, datatype); });
}

int bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (!library_active()) return PMPI_Bcast(buffer, count, datatype, root, comm);
  return run(
      Coll::Bcast, "MPI_Bcast", comm, [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); },
      [&] { return payload(count, datatype); });
}

int allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active())
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return run(
      Coll::Allgather, "MPI_Allgather", comm,
      [&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
      [&] {
        int inter = 0, n = 0;
        PMPI_Comm_test_inter(comm, &inter);
        if (inter) PMPI_Comm_remote_size(comm, &n);
        else PMPI_Comm_size(comm, &n);
        return payload(recvcount, recvtype) * static_cast<std::uint64_t>(n);
      });
}

int finalize() {
  before_finalize();
  return PMPI_Finalize();
}

}  // namespace gcoll
