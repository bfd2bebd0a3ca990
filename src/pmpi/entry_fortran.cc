// Fortran entry points. Which ones gcoll defines depends on how the MPI's Fortran
// bindings reach the C layer (pmpi/mpi_flavor.h):
//
// Open MPI (GCOLL_MPI_FORTRAN_ENTRY_POINTS): its Fortran bindings call PMPI_* directly, so
// a Fortran application never reaches the C wrappers: define every spelling they use.
//   mpif.h and `use mpi`:  mpi_x_, mpi_x__, mpi_x, MPI_X   (ierror required)
//   `use mpi_f08`:         mpi_x_f08_                       (ierror OPTIONAL: may be NULL;
//                          handles are TYPE(MPI_Comm) etc., whose only member is the
//                          INTEGER handle, so they arrive as MPI_Fint*)
// Buffers arrive as addresses; MPI_IN_PLACE and MPI_BOTTOM are the addresses of the
// common blocks mpi_fortran_in_place / mpi_fortran_bottom, in whichever decoration the
// MPI's Fortran compiler used (all are checked; absent ones are null weak symbols).
//
// MPICH: its bindings call the C MPI_Allreduce / MPI_Bcast / MPI_Allgather / MPI_Finalize
// (after mapping their own MPI_IN_PLACE), which gcoll's C entry points catch, except
// `use mpi_f08`'s MPI_Finalize (mpi_finalize_f08_ calls PMPI_Finalize): gcoll defines
// that one, so that the stats are written.
//
// The MPI standard ABI: nothing (it has no Fortran part; pmpi/mpi_flavor.h).
#include "pmpi/mpi_flavor.h"

#if GCOLL_MPI_FORTRAN_ENTRY_POINTS || GCOLL_MPI_FORTRAN_FINALIZE_F08

#include "pmpi/call_kinds.h"
#include "pmpi/collectives.h"

namespace {

void set_ierror(MPI_Fint *ierror, int rc) {
  if (ierror) *ierror = static_cast<MPI_Fint>(rc);
}

}  // namespace

extern "C" {

__attribute__((visibility("hidden"))) void gcoll_f_finalize(MPI_Fint *ierror) {
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFFinalize))
    return reinterpret_cast<decltype(&gcoll_f_finalize)>(next)(ierror);
  set_ierror(ierror, gcoll::finalize());
}

#define GCOLL_FORTRAN_ALIAS(name, target, params) \
  __attribute__((visibility("default"))) void name params __attribute__((alias(#target)));

}  // extern "C"

#if GCOLL_MPI_FORTRAN_ENTRY_POINTS

extern "C" {
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));
}

namespace {

bool is_one_of(const void *p, const void *a, const void *b, const void *c, const void *d) {
  return p && (p == a || p == b || p == c || p == d);
}

// Fortran buffer address -> C buffer argument.
void *f2c_buffer(void *p) {
  if (is_one_of(p, &mpi_fortran_in_place_, &mpi_fortran_in_place, &mpi_fortran_in_place__, &MPI_FORTRAN_IN_PLACE))
    return MPI_IN_PLACE;
  if (is_one_of(p, &mpi_fortran_bottom_, &mpi_fortran_bottom, &mpi_fortran_bottom__, &MPI_FORTRAN_BOTTOM))
    return MPI_BOTTOM;
  return p;
}

// Fortran INTEGER array -> C int array (MPI_Fint is int under Open MPI).
const int *f2c_ints(const MPI_Fint *p) {
  static_assert(sizeof(MPI_Fint) == sizeof(int), "INTEGER arrays are passed on as int arrays");
  return reinterpret_cast<const int *>(p);
}

}  // namespace

extern "C" {

// One set per row of the call list (base/coll_list.h): gcoll_f_<lower> converts the
// Fortran arguments (or forwards them unchanged under another MPI: every argument is a
// pointer), and every Fortran spelling is an alias of it.
#define GCOLL_FORTRAN_SPELLINGS(lower, upper, target, params) \
  GCOLL_FORTRAN_ALIAS(lower##_, target, params)               \
  GCOLL_FORTRAN_ALIAS(lower##__, target, params)              \
  GCOLL_FORTRAN_ALIAS(lower, target, params)                  \
  GCOLL_FORTRAN_ALIAS(upper, target, params)                  \
  GCOLL_FORTRAN_ALIAS(lower##_f08_, target, params)

#define GCOLL_X(Name, lower, UPPER, ...)                                                                \
  __attribute__((visibility("hidden"))) void gcoll_f_##lower(GCOLL_PP_MAP(GCOLL_F_PARAM, __VA_ARGS__),  \
                                                             MPI_Fint *ierror) {                       \
    if (void *next = gcoll::flavor::foreign(gcoll::flavor::kF##Name))                                 \
      return reinterpret_cast<decltype(&gcoll_f_##lower)>(next)(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__), ierror); \
    set_ierror(ierror, gcoll::lower(GCOLL_PP_MAP(GCOLL_F_ARG, __VA_ARGS__)));                          \
  }                                                                                                    \
  GCOLL_FORTRAN_SPELLINGS(mpi_##lower, MPI_##UPPER, gcoll_f_##lower,                                   \
                          (GCOLL_PP_MAP(GCOLL_F_TYPE, __VA_ARGS__), MPI_Fint *))
GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X

GCOLL_FORTRAN_SPELLINGS(mpi_finalize, MPI_FINALIZE, gcoll_f_finalize, (MPI_Fint *))

}  // extern "C"

#else  // MPICH

extern "C" {
GCOLL_FORTRAN_ALIAS(mpi_finalize_f08_, gcoll_f_finalize, (MPI_Fint *))
}

#endif  // GCOLL_MPI_FORTRAN_ENTRY_POINTS
#endif  // any Fortran symbol
