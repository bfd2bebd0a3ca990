// gcoll's implementation of the intercepted collectives, shared by the C and Fortran
// entry points (Fortran ones convert handles and sentinels first): one function per row
// of the call list (base/coll_list.h), each in its argument file (pmpi/calls/<name>.cc),
// with the same parameters as MPI_<Name>.
#pragma once

#include <mpi.h>

#include "base/stats.h"
#include "pmpi/call_kinds.h"

namespace gcoll {

// `form`: the form the application called (blocking, nonblocking, persistent:
// coll/mpi_forms.h), whose MPI call the function makes.
#define GCOLL_X(Name, lower, UPPER, ...) int lower(const CallForm &form, GCOLL_PP_MAP(GCOLL_C_PARAM, __VA_ARGS__));
GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X

// The bytes of a large-count call the MPI makes itself (counts beyond an int, entry_c.cc),
// for the stats: what the int-count form would count. In each argument file too.
#define GCOLL_X(Name, lower, UPPER, ...) \
  unsigned long long lower##_large_bytes(GCOLL_PP_MAP(GCOLL_LC_PARAM, __VA_ARGS__));
GCOLL_COUNTED_COLLS(GCOLL_X)
#undef GCOLL_X

// MPI_Reduce_local (pmpi/calls/reduce_local.cc): no communicator, one form.
int reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op);

int finalize();

// A call the MPI made itself, outside gcoll's paths (the MPI-4 large-count calls whose
// counts do not fit an int, entry_c.cc): counted as passthrough with `bytes` (its result
// size) when rc is MPI_SUCCESS, else as an error. Returns rc.
int count_passthrough(Coll coll, int rc, unsigned long long bytes);

}  // namespace gcoll
