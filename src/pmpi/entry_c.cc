// C entry points. The application's calls land here instead of in the MPI library.
#include <mpi.h>

#include <initializer_list>

#include "pmpi/call_kinds.h"
#include "pmpi/collectives.h"
#include "pmpi/mpi_flavor.h"

#define GCOLL_EXPORT __attribute__((visibility("default")))

// Under another MPI (pmpi/mpi_flavor.h, the load check): the call goes on unchanged. The
// pointer is loaded and jumped to before anything else, so the arguments reach the
// process's MPI in the registers the caller used (its handles may be wider or narrower
// than this build's).
#define GCOLL_FORWARD(entry, type, ...)                                          \
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::entry)) return reinterpret_cast<type>(next)(__VA_ARGS__);

extern "C" {

// One entry point per row of the call list (base/coll_list.h).
#define GCOLL_X(Name, lower, UPPER, ...)                                                   \
  GCOLL_EXPORT int MPI_##Name(GCOLL_PP_MAP(GCOLL_C_PARAM, __VA_ARGS__)) {                  \
    GCOLL_FORWARD(k##Name, decltype(&MPI_##Name), GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__))    \
    return gcoll::lower(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__));                            \
  }
GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X

// MPI-4 large counts (MPI_Count), where the MPI has them (MPICH 4; Open MPI 4.1 has
// none): a call whose counts fit an int takes gcoll's path like any other (the MPI's own
// int-count call behind it computes the same); a larger one goes to the MPI's large-count
// call and is counted as passthrough, so that every call is seen and the stats add up.
// (A device buffer of more than 2^31 elements therefore reaches the MPI as it is.) Count
// and displacement arrays are converted to int arrays first (pmpi/call_kinds.h), the
// entries the MPI reads on this rank.
// Forwarded by the load check like the others (a library built for the standard ABI may
// meet a program built for MPICH's native ABI, which makes these calls).
#if GCOLL_MPI_LARGE_COUNT
namespace {
bool all_fit(std::initializer_list<bool> fits) {
  for (bool f : fits)
    if (!f) return false;
  return true;
}
}  // namespace

#define GCOLL_X(Name, lower, UPPER, ...)                                                          \
  GCOLL_EXPORT int MPI_##Name##_c(GCOLL_PP_MAP(GCOLL_LC_PARAM, __VA_ARGS__)) {                    \
    GCOLL_FORWARD(k##Name##C, decltype(&MPI_##Name##_c), GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__))    \
    GCOLL_PP_EACH(GCOLL_LC_LOCAL, __VA_ARGS__)                                                    \
    if (all_fit({GCOLL_PP_MAP(GCOLL_LC_FITS, __VA_ARGS__)}))                                      \
      return gcoll::lower(GCOLL_PP_MAP(GCOLL_LC_ARG, __VA_ARGS__));                               \
    return gcoll::count_passthrough(gcoll::Coll::Name, PMPI_##Name##_c(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__)), \
                                    gcoll::lower##_large_bytes(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__)));        \
  }
GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#endif

GCOLL_EXPORT int MPI_Finalize(void) {
  GCOLL_FORWARD(kFinalize, decltype(&MPI_Finalize))
  return gcoll::finalize();
}

}  // extern "C"
