// Everything that differs between the MPIs gcoll builds for (one library per MPI, chosen
// at configure time: -DGCOLL_MPI=openmpi|mpich|abi, cmake/GcollMpiFlavor.cmake). The MPI
// is told by the mpi.h compiled against; no other file in the tree tests which MPI it is.
//
// What differs:
//   - Handles: Open MPI's are pointers to predefined objects, MPICH's are ints, the MPI-5
//     standard ABI's (mpi_abi.h, -DMPI_ABI) are pointer-sized small constants
//     (MPI_COMM_WORLD is (MPI_Comm)0x101). The code only compares handles with the
//     predefined ones (pmpi/mpi_types.cc builds its tables at run time), so all three
//     work unchanged.
//   - How Fortran reaches the MPI. Open MPI's Fortran bindings (mpif.h, `use mpi`,
//     `use mpi_f08`) call PMPI_* directly, so gcoll defines every Fortran spelling itself
//     (pmpi/entry_fortran.cc, with Open MPI's MPI_IN_PLACE / MPI_BOTTOM common blocks).
//     MPICH's libmpifort calls the C entry points (mpi_allreduce_ -> MPI_Allreduce, and
//     `use mpi_f08`'s mpi_allreduce_f08ts_ -> MPI_Allreduce through its descriptor
//     layer), after turning its own sentinels (MPIR_F_MPI_IN_PLACE, MPIR_F08_MPI_IN_PLACE)
//     into MPI_IN_PLACE: gcoll's C entry points see these Fortran calls, and gcoll defines
//     no Fortran symbol for them (that would bypass MPICH's sentinel handling). The
//     exception: `use mpi_f08`'s mpi_finalize_f08_ calls PMPI_Finalize, so gcoll defines
//     that one (else no stats file). Checked with objdump on Debian's MPICH 4.0.2
//     libmpichfort.so.12 (docs/mpich.md).
//     The MPI-4 large-count calls (MPI_Allreduce_c, MPI_Bcast_c, MPI_Allgather_c), which
//     `use mpi_f08` makes for INTEGER(MPI_COUNT_KIND) counts and C programs may make
//     directly, are defined where the MPI has them (GCOLL_MPI_LARGE_COUNT: MPICH 4; Open
//     MPI 4.1 has none): counts that fit an int take gcoll's path, larger ones go to the
//     MPI and are counted as passthrough (entry_c.cc).
//     The standard ABI covers C only: it has no MPI_Fint, and a Fortran binding above it
//     (none ships with MPICH's wheel) is not known to gcoll, so the ABI build defines no
//     Fortran symbol. A Fortran layer that calls the C MPI_* entry points is seen; one
//     that calls PMPI_* is not (docs/mpich.md).
//   - The loaded MPI: a symbol only that MPI's C library defines (kMpis), and whether the
//     library's PMPI_Abi_get_version reports the standard ABI, both looked up in the
//     library the process's PMPI_Init comes from, tell which MPI a process runs under
//     (the load check, pmpi/load_check.cc).
#pragma once

// A Fortran entry point in every spelling compilers use (name_, name__, name, NAME, and
// Open MPI's mpi_f08 name_f08_), each an alias of one function `target` (entry_fortran.cc,
// comm_info.cc).
#define GCOLL_FORTRAN_ALIAS(name, target, params) \
  __attribute__((visibility("default"))) void name params __attribute__((alias(#target)));
#define GCOLL_FORTRAN_SPELLINGS(lower, upper, target, params) \
  GCOLL_FORTRAN_ALIAS(lower##_, target, params)               \
  GCOLL_FORTRAN_ALIAS(lower##__, target, params)              \
  GCOLL_FORTRAN_ALIAS(lower, target, params)                  \
  GCOLL_FORTRAN_ALIAS(upper, target, params)                  \
  GCOLL_FORTRAN_ALIAS(lower##_f08_, target, params)

#include <mpi.h>

#include "base/coll_list.h"
#include "coll/mpi_forms.h"

// GCOLL_MPI_FORTRAN_ENTRY_POINTS: gcoll defines every Fortran spelling (Open MPI).
// GCOLL_MPI_FORTRAN_FINALIZE_F08: gcoll defines mpi_finalize_f08_ only (MPICH).
#if defined(MPI_ABI_VERSION)
#define GCOLL_MPI_FORTRAN_ENTRY_POINTS 0
#define GCOLL_MPI_FORTRAN_FINALIZE_F08 0
#elif defined(OPEN_MPI)
#define GCOLL_MPI_FORTRAN_ENTRY_POINTS 1
#define GCOLL_MPI_FORTRAN_FINALIZE_F08 0
#elif defined(MPICH)
#define GCOLL_MPI_FORTRAN_ENTRY_POINTS 0
#define GCOLL_MPI_FORTRAN_FINALIZE_F08 1
#else
#error "gcoll builds for Open MPI, MPICH or the MPI standard ABI (GCOLL_MPI); this mpi.h is none of them"
#endif
// The MPI-4 large-count calls (MPI_Allreduce_c, ...): MPI 4.0 and later (MPICH 4).
#if MPI_VERSION >= 4
#define GCOLL_MPI_LARGE_COUNT 1
#else
#define GCOLL_MPI_LARGE_COUNT 0
#endif

namespace gcoll {
namespace flavor {

// An MPI gcoll knows: its name and a symbol only its C library defines (looked up in
// that library, pmpi/load_check.cc).
struct MpiId {
  const char *name;
  const char *marker;
};
inline constexpr MpiId kMpis[] = {
    {"Open MPI", "ompi_mpi_init"},
    {"MPICH", "MPII_Comm_get_attr"},
};

// What gcoll was built for: one MPI's native ABI (kBuiltFor, a kMpis index), or the
// standard ABI (kBuiltAbi; any MPI that implements it, kBuiltFor -1).
#define GCOLL_MPI_STR2(x) #x
#define GCOLL_MPI_STR(x) GCOLL_MPI_STR2(x)
#if defined(MPI_ABI_VERSION)
inline constexpr int kBuiltFor = -1;
inline constexpr bool kBuiltAbi = true;
inline constexpr int kBuiltAbiMajor = MPI_ABI_VERSION;
inline constexpr const char kBuiltVersion[] = GCOLL_MPI_STR(MPI_ABI_VERSION) "." GCOLL_MPI_STR(MPI_ABI_SUBVERSION);
#elif defined(OPEN_MPI)
inline constexpr int kBuiltFor = 0;
inline constexpr bool kBuiltAbi = false;
inline constexpr int kBuiltAbiMajor = 0;
inline constexpr const char kBuiltVersion[] =
    GCOLL_MPI_STR(OMPI_MAJOR_VERSION) "." GCOLL_MPI_STR(OMPI_MINOR_VERSION) "." GCOLL_MPI_STR(OMPI_RELEASE_VERSION);
#else
inline constexpr int kBuiltFor = 1;
inline constexpr bool kBuiltAbi = false;
inline constexpr int kBuiltAbiMajor = 0;
inline constexpr const char kBuiltVersion[] = MPICH_VERSION;
#endif
#undef GCOLL_MPI_STR
#undef GCOLL_MPI_STR2

inline const char *built_for() { return kBuiltAbi ? "the MPI standard ABI" : kMpis[kBuiltFor].name; }

// The load check (pmpi/load_check.cc, at library load): when the process runs under another
// MPI than the one gcoll was built for (a library built for Open MPI preloaded under an
// MPICH program, or the reverse; one built for the standard ABI under a program built for
// an MPI's native ABI, or the reverse; gcoll's own dependencies then bring a second MPI
// in), gcoll prints one line naming both and
//   - stays out of the way when the program's MPI_Init / PMPI_Init are the program's MPI
//     (C programs): every entry point hands its call, arguments untouched, to the same
//     symbol of the program's MPI (`foreign(...)`), and gcoll itself never runs (no
//     stats);
//   - refuses (exit status 1, before MPI_Init) when the loader already bound the program's
//     MPI calls to gcoll's MPI (Fortran programs whose C MPI library is only an indirect
//     dependency): nothing can run correctly then.
// foreign() is null when the process runs under gcoll's own MPI.
//
// The completion and persistent calls gcoll defines beside the collectives' forms
// (pmpi/requests.h): X(Name, lower, UPPER) for MPI_<Name> and the Fortran spellings.
#define GCOLL_REQUEST_CALLS(X)                                                                        \
  X(Wait, wait, WAIT) X(Test, test, TEST) X(Waitall, waitall, WAITALL) X(Testall, testall, TESTALL)    \
  X(Waitany, waitany, WAITANY) X(Testany, testany, TESTANY) X(Waitsome, waitsome, WAITSOME)             \
  X(Testsome, testsome, TESTSOME) X(Request_get_status, request_get_status, REQUEST_GET_STATUS)         \
  X(Request_free, request_free, REQUEST_FREE) X(Start, start, START) X(Startall, startall, STARTALL)    \
  X(Cancel, cancel, CANCEL)
// One entry per row of the call list (base/coll_list.h) and form, then MPI_Finalize:
// C, C with MPI-4 large counts, Fortran (from kFFinalize on).
enum Entry {
#define GCOLL_X(Name, lower, ...) k##Name, kI##lower, kInit_##lower,
  GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#define GCOLL_R(Name, lower, UPPER) k##Name,
  GCOLL_REQUEST_CALLS(GCOLL_R)
#undef GCOLL_R
  kReduce_local,
  // The communicator calls that carry gcoll's info key (pmpi/comm_info.cc).
  kComm_set_info, kComm_dup_with_info, kComm_dup, kComm_get_info,
  kFinalize,
#define GCOLL_X(Name, lower, ...) k##Name##C, kI##lower##C, kInit_##lower##C,
  GCOLL_COUNTED_COLLS(GCOLL_X)
#undef GCOLL_X
  kReduce_localC,
  kFFinalize,
#define GCOLL_X(Name, lower, ...) kF##Name, kFI##lower, kFInit_##lower,
  GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#define GCOLL_R(Name, lower, UPPER) kF##Name,
  GCOLL_REQUEST_CALLS(GCOLL_R)
#undef GCOLL_R
  kFReduce_local,
  kFComm_set_info, kFComm_dup_with_info, kFComm_dup, kFComm_get_info,
  kEntries
};
extern void *g_foreign[kEntries];
extern bool g_foreign_mpi;
inline void *foreign(Entry e) { return __builtin_expect(g_foreign_mpi, 0) ? g_foreign[e] : nullptr; }

}  // namespace flavor
}  // namespace gcoll
