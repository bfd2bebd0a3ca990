#include "pmpi/call.h"

#include "pmpi/call_kinds.h"
#include "pmpi/collectives.h"

namespace gcoll {

// The sizes of the predefined datatypes this thread met last (their handles are never
// freed, so an entry stays true; a derived datatype's size is asked every time: its handle
// may be freed and reused for another type). A few entries: a call often names two types.
// `derived`: the last handle found not predefined; no predefined handle can ever take its
// value, so a call with it skips the envelope query.
namespace {
constexpr int kTypeSizes = 4;
struct TypeSizes {  // trivial: zero TLS, no init function
  MPI_Datatype type[kTypeSizes];
  int size[kTypeSizes];
  unsigned next;
  MPI_Datatype derived;
};
thread_local TypeSizes t_type_sizes __attribute__((tls_model("initial-exec")));
}  // namespace

// Size in bytes of `count` elements, for stats. Only called after the MPI accepted the
// datatype (a bad one must reach the error handler through the collective, not here).
std::uint64_t payload(long long count, MPI_Datatype type) {
  if (count <= 0) return 0;
  TypeSizes &c = t_type_sizes;
  for (int i = 0; i < kTypeSizes; ++i)
    if (c.type[i] == type && type != MPI_Datatype())
      return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(c.size[i]);
  if (detail::tl_bytes_probe) {  // (base/stats.h)
    detail::tl_bytes_probe = 2;
    return 0;
  }
  int size = 0, ni = 0, na = 0, nd = 0, combiner = 0;
  PMPI_Type_size(type, &size);
  size = size > 0 ? size : 0;
  if (type != c.derived && PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) == MPI_SUCCESS) {
    if (combiner == MPI_COMBINER_NAMED) {
      const unsigned k = c.next++ % kTypeSizes;
      c.type[k] = type;
      c.size[k] = size;
    } else {
      c.derived = type;
    }
  }
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size);
}

bool valid_buffer(const void *p, long long count) { return count == 0 || (p != nullptr && p != MPI_IN_PLACE); }

int comm_rank_slow(MPI_Comm comm) {
  int r = -1;
  if (PMPI_Comm_rank(comm, &r) != MPI_SUCCESS) return -1;
  return r;
}

int comm_size_slow(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

bool any_negative(const int *counts, int n) {
  for (int i = 0; counts && i < n; ++i)
    if (counts[i] < 0) return true;
  return false;
}

long long sum_of(const int *counts, int n) {
  long long s = 0;
  for (int i = 0; counts && i < n; ++i) s += counts[i] > 0 ? counts[i] : 0;
  return s;
}

std::uint64_t payload_typed(int n, const int *counts, const MPI_Datatype *types) {
  std::uint64_t b = 0;
  for (int i = 0; counts && types && i < n; ++i) b += payload(counts[i], types[i]);
  return b;
}

int array_length(MPI_Comm comm, ArrayRanks which, int root) {
  if (comm == MPI_COMM_NULL) return 0;
  int inter = 0, n = 0, rank = -1;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
  switch (which) {
    case ArrayRanks::Local: PMPI_Comm_size(comm, &n); return n;
    case ArrayRanks::Group:
      if (inter) PMPI_Comm_remote_size(comm, &n);
      else PMPI_Comm_size(comm, &n);
      return n;
    case ArrayRanks::Root:
      if (inter) {
        if (root != MPI_ROOT) return 0;
        PMPI_Comm_remote_size(comm, &n);
        return n;
      }
      PMPI_Comm_rank(comm, &rank);
      if (root != rank) return 0;
      PMPI_Comm_size(comm, &n);
      return n;
    case ArrayRanks::In:
    case ArrayRanks::Out: {
      const NeighborDegrees d = neighbor_degrees(comm);
      return which == ArrayRanks::In ? d.in : d.out;
    }
  }
  return 0;
}


const char *form_func_name(Coll line) {
  switch (line) {
#define GCOLL_X(Name, lower, ...)             \
  case Coll::Name: return "MPI_" #Name;       \
  case Coll::I##lower: return "MPI_I" #lower; \
  case Coll::Name##_init: return GCOLL_MPI_INIT_STR(Name);
    GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#define GCOLL_X(Name, lower) \
  case Coll::Name##_enqueue: return "MPIX_" #Name "_enqueue";
    GCOLL_ENQUEUE_COLLS(GCOLL_X)
#undef GCOLL_X
    case Coll::Reduce_local: return "MPI_Reduce_local";
    case Coll::kCount: break;
  }
  return "MPI_?";
}

int finalize() {
  const int app_errno = errno;
  no_throw("MPI_Finalize (stats)", [] { before_finalize(); });
  errno = app_errno;  // the MPI's finalize then leaves what it leaves (gcoll's teardown: runtime.cc)
  return PMPI_Finalize();
}

int count_passthrough(Coll coll, int rc, unsigned long long bytes) {
  process_stats().record(coll, rc == MPI_SUCCESS ? Path::Passthrough : Path::Error,
                         rc == MPI_SUCCESS ? bytes : 0);
  return rc;
}

}  // namespace gcoll
