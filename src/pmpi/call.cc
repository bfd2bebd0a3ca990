#include "pmpi/call.h"

#include "pmpi/collectives.h"

namespace gcoll {

// Size in bytes of `count` elements, for stats. Only called after the MPI accepted the
// datatype (a bad one must reach the error handler through the collective, not here).
std::uint64_t payload(long long count, MPI_Datatype type) {
  if (count <= 0) return 0;
  int size = 0;
  PMPI_Type_size(type, &size);
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size > 0 ? size : 0);
}

// The size of a predefined datatype (one the engine maps: such handles are never freed),
// remembered per thread for the last one: PMPI_Type_size on every call costs a call and a
// store-to-load stall. Derived datatypes are always asked (their handles are reused).
namespace {
struct LastTypeSize {  // trivial: zero TLS, no init function
  MPI_Datatype type;
  int size;
};
thread_local LastTypeSize t_type_size __attribute__((tls_model("initial-exec")));
}  // namespace

std::uint64_t payload_predefined(long long count, MPI_Datatype type) {
  if (count <= 0) return 0;
  LastTypeSize &l = t_type_size;
  if (l.type != type || type == MPI_Datatype()) {
    int size = 0;
    PMPI_Type_size(type, &size);
    l.type = type;
    l.size = size > 0 ? size : 0;
  }
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(l.size);
}

bool valid_buffer(const void *p, long long count) { return count == 0 || (p != nullptr && p != MPI_IN_PLACE); }

int comm_size(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

int finalize() {
  no_throw("MPI_Finalize (stats)", [] { before_finalize(); });
  return PMPI_Finalize();
}

int count_passthrough(Coll coll, int rc, unsigned long long bytes) {
  process_stats().record(coll, rc == MPI_SUCCESS ? Path::Passthrough : Path::Error,
                         rc == MPI_SUCCESS ? bytes : 0);
  return rc;
}

}  // namespace gcoll
