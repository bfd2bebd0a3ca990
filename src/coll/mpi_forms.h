// The three forms of every collective of the call list (base/coll_list.h: blocking,
// nonblocking, persistent) as one call: pmpi_<lower>(form, arguments...) makes the
// PMPI_<Name>, PMPI_I<lower> or persistent-init call the form names, with the same
// arguments. Each collective's paths (pmpi/calls/<name>.cc, coll/staged.cc) are written
// once and serve every form through it: what differs is only this last call.
#pragma once

#include <mpi.h>

#include "base/coll_list.h"
#include "base/stats.h"

#if defined(OPEN_MPI) && !defined(MPI_ABI_VERSION)
#include <mpi-ext.h>
#endif

// The persistent-init call of the MPI: MPI-4's PMPI_<Name>_init, or Open MPI 4.1's
// PMPIX_<Name>_init (mpiext pcollreq, the same signature). GCOLL_MPI_PERSISTENT: 0 when
// the MPI has neither (the persistent forms are then not defined).
#if MPI_VERSION >= 4
#define GCOLL_MPI_PERSISTENT 1
#define GCOLL_PMPI_INIT(Name) PMPI_##Name##_init
#define GCOLL_MPI_INIT_NAME(Name) MPI_##Name##_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define GCOLL_MPI_PERSISTENT 1
#define GCOLL_PMPI_INIT(Name) PMPIX_##Name##_init
#define GCOLL_MPI_INIT_NAME(Name) MPIX_##Name##_init
#else
#define GCOLL_MPI_PERSISTENT 0
#define GCOLL_MPI_INIT_NAME(Name) MPI_##Name##_init
#endif
// Its names as strings: C ("MPIX_Allreduce_init"), Fortran ("mpix_allreduce_init_").
#define GCOLL_FORM_STR_(x) #x
#define GCOLL_FORM_STR(x) GCOLL_FORM_STR_(x)
#define GCOLL_MPI_INIT_STR(Name) GCOLL_FORM_STR(GCOLL_MPI_INIT_NAME(Name))
#if MPI_VERSION < 4 && defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define GCOLL_MPI_F_INIT_STR(lower) "mpix_" #lower "_init_"
#else
#define GCOLL_MPI_F_INIT_STR(lower) "mpi_" #lower "_init_"
#endif

// C parameters of the call list's kinds: (KIND, name) -> "type name".
#define GCOLL_C_PARAM(kind, name) GCOLL_C_PARAM_##kind(name)
#define GCOLL_C_PARAM_SBUF(n) const void *n
#define GCOLL_C_PARAM_RBUF(n) void *n
#define GCOLL_C_PARAM_CNT(n) int n
#define GCOLL_C_PARAM_DT(n) MPI_Datatype n
#define GCOLL_C_PARAM_OP(n) MPI_Op n
#define GCOLL_C_PARAM_ROOT(n) int n
#define GCOLL_C_PARAM_COMM(n) MPI_Comm n
#define GCOLL_C_PARAM_CNTS(n) const int n[]
#define GCOLL_C_PARAM_DISPLS(n) const int n[]
#define GCOLL_C_PARAM_ROOTCNTS(n) const int n[]
#define GCOLL_C_PARAM_ROOTDISPLS(n) const int n[]
#define GCOLL_C_PARAM_LOCALCNTS(n) const int n[]
#define GCOLL_C_PARAM_DTS(n) const MPI_Datatype n[]
#define GCOLL_C_PARAM_WDISPLS(n) const int n[]
#define GCOLL_C_PARAM_INCNTS(n) const int n[]
#define GCOLL_C_PARAM_INDISPLS(n) const int n[]
#define GCOLL_C_PARAM_OUTCNTS(n) const int n[]
#define GCOLL_C_PARAM_OUTDISPLS(n) const int n[]
#define GCOLL_C_PARAM_INDTS(n) const MPI_Datatype n[]
#define GCOLL_C_PARAM_OUTDTS(n) const MPI_Datatype n[]
#define GCOLL_C_PARAM_INADISPLS(n) const MPI_Aint n[]
#define GCOLL_C_PARAM_OUTADISPLS(n) const MPI_Aint n[]

// The argument itself.
#define GCOLL_ARG(kind, name) name

namespace gcoll {

// How the application called: the form, and for the nonblocking and persistent ones
// where the request goes (and the persistent one's info).
struct CallForm {
  Form form = Form::Blocking;
  MPI_Request *request = nullptr;
  MPI_Info info = MPI_INFO_NULL;
  static CallForm nonblocking(MPI_Request *r) { return {Form::Nonblocking, r, MPI_INFO_NULL}; }
  static CallForm persistent(MPI_Info i, MPI_Request *r) { return {Form::Persistent, r, i}; }
  bool blocking() const { return form == Form::Blocking; }
};

// pmpi_<lower>(form, the row's arguments): the MPI's call of that form.
#if GCOLL_MPI_PERSISTENT
#define GCOLL_PMPI_PERSISTENT_CASE(Name, ...) \
  case Form::Persistent: return GCOLL_PMPI_INIT(Name)(__VA_ARGS__, f.info, f.request);
#else
#define GCOLL_PMPI_PERSISTENT_CASE(Name, ...)
#endif
#define GCOLL_X(Name, lower, UPPER, ...)                                                 \
  inline int pmpi_##lower(const CallForm &f, GCOLL_PP_MAP(GCOLL_C_PARAM, __VA_ARGS__)) { \
    switch (f.form) {                                                                    \
      case Form::Nonblocking: return PMPI_I##lower(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__), f.request); \
      GCOLL_PMPI_PERSISTENT_CASE(Name, GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__))             \
      default: break;                                                                    \
    }                                                                                    \
    return PMPI_##Name(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__));                            \
  }
GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#undef GCOLL_PMPI_PERSISTENT_CASE

}  // namespace gcoll
