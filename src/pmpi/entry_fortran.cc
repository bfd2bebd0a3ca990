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
#include "base/wait.h"
#include "pmpi/requests.h"

#include <dlfcn.h>

#include <vector>

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

// Fortran datatype handles -> C (alltoallw's arrays): the `n` entries the MPI reads, in
// an array that lives until the call returns (a temporary of the call's expression).
std::vector<MPI_Datatype> f2c_types(const MPI_Fint *f, int n) {
  std::vector<MPI_Datatype> v(static_cast<std::size_t>(n > 0 ? n : 0) + 1, MPI_DATATYPE_NULL);
  for (int i = 0; f && i < n; ++i) v[static_cast<std::size_t>(i)] = PMPI_Type_f2c(f[i]);
  return v;
}

}  // namespace

extern "C" {

// One set per row of the call list (base/coll_list.h): gcoll_f_<lower> converts the
// Fortran arguments (or forwards them unchanged under another MPI: every argument is a
// pointer), and every Fortran spelling is an alias of it.

#define GCOLL_X(Name, lower, UPPER, ...)                                                                \
  __attribute__((visibility("hidden"))) void gcoll_f_##lower(GCOLL_PP_MAP(GCOLL_F_PARAM, __VA_ARGS__),  \
                                                             MPI_Fint *ierror) {                       \
    if (void *next = gcoll::flavor::foreign(gcoll::flavor::kF##Name))                                 \
      return reinterpret_cast<decltype(&gcoll_f_##lower)>(next)(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__), ierror); \
    set_ierror(ierror, gcoll::lower(gcoll::CallForm{}, GCOLL_PP_MAP(GCOLL_F_ARG, __VA_ARGS__)));       \
  }                                                                                                    \
  GCOLL_FORTRAN_SPELLINGS(mpi_##lower, MPI_##UPPER, gcoll_f_##lower,                                   \
                          (GCOLL_PP_MAP(GCOLL_F_TYPE, __VA_ARGS__), MPI_Fint *))
GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X

// The nonblocking and persistent forms: the same, with the request (and the persistent
// form's info) converted. Open MPI 4.1 spells the persistent ones mpix_<lower>_init.
#if MPI_VERSION >= 4
#define GCOLL_F_INIT_LOWER(lower) mpi_##lower##_init
#define GCOLL_F_INIT_UPPER(UPPER) MPI_##UPPER##_INIT
#else
#define GCOLL_F_INIT_LOWER(lower) mpix_##lower##_init
#define GCOLL_F_INIT_UPPER(UPPER) MPIX_##UPPER##_INIT
#endif
#define GCOLL_FORTRAN_SPELLINGS_OF(lower, upper, target, params) GCOLL_FORTRAN_SPELLINGS(lower, upper, target, params)
#if GCOLL_MPI_PERSISTENT
#define GCOLL_F_PERSISTENT(Name, lower, UPPER, ...)                                                                \
  __attribute__((visibility("hidden"))) void gcoll_f_init_##lower(GCOLL_PP_MAP(GCOLL_F_PARAM, __VA_ARGS__),       \
                                                                  MPI_Fint *info, MPI_Fint *request,             \
                                                                  MPI_Fint *ierror) {                            \
    if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFInit_##lower))                                     \
      return reinterpret_cast<decltype(&gcoll_f_init_##lower)>(next)(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__), info,  \
                                                                     request, ierror);                           \
    MPI_Request r = MPI_REQUEST_NULL;                                                                            \
    const int rc = gcoll::lower(gcoll::CallForm::persistent(PMPI_Info_f2c(*info), &r),                          \
                                GCOLL_PP_MAP(GCOLL_F_ARG, __VA_ARGS__));                                         \
    if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(r);                                                       \
    set_ierror(ierror, rc);                                                                                      \
  }                                                                                                              \
  GCOLL_FORTRAN_SPELLINGS_OF(GCOLL_F_INIT_LOWER(lower), GCOLL_F_INIT_UPPER(UPPER), gcoll_f_init_##lower,         \
                             (GCOLL_PP_MAP(GCOLL_F_TYPE, __VA_ARGS__), MPI_Fint *, MPI_Fint *, MPI_Fint *))
#else
#define GCOLL_F_PERSISTENT(Name, lower, UPPER, ...)
#endif
#define GCOLL_X(Name, lower, UPPER, ...)                                                                           \
  __attribute__((visibility("hidden"))) void gcoll_f_i##lower(GCOLL_PP_MAP(GCOLL_F_PARAM, __VA_ARGS__),           \
                                                              MPI_Fint *request, MPI_Fint *ierror) {             \
    if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFI##lower))                                         \
      return reinterpret_cast<decltype(&gcoll_f_i##lower)>(next)(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__), request,   \
                                                                 ierror);                                        \
    MPI_Request r = MPI_REQUEST_NULL;                                                                            \
    const int rc = gcoll::lower(gcoll::CallForm::nonblocking(&r), GCOLL_PP_MAP(GCOLL_F_ARG, __VA_ARGS__));       \
    if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(r);                                                       \
    set_ierror(ierror, rc);                                                                                      \
  }                                                                                                              \
  GCOLL_FORTRAN_SPELLINGS(mpi_i##lower, MPI_I##UPPER, gcoll_f_i##lower,                                          \
                          (GCOLL_PP_MAP(GCOLL_F_TYPE, __VA_ARGS__), MPI_Fint *, MPI_Fint *))                     \
  GCOLL_F_PERSISTENT(Name, lower, UPPER, __VA_ARGS__)
GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X

GCOLL_FORTRAN_SPELLINGS(mpi_finalize, MPI_FINALIZE, gcoll_f_finalize, (MPI_Fint *))

__attribute__((visibility("hidden"))) void gcoll_f_reduce_local(void *inbuf, void *inoutbuf, MPI_Fint *count,
                                                                MPI_Fint *datatype, MPI_Fint *op, MPI_Fint *ierror) {
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFReduce_local))
    return reinterpret_cast<decltype(&gcoll_f_reduce_local)>(next)(inbuf, inoutbuf, count, datatype, op, ierror);
  set_ierror(ierror, gcoll::reduce_local(inbuf, inoutbuf, *count, PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op)));
}
GCOLL_FORTRAN_SPELLINGS(mpi_reduce_local, MPI_REDUCE_LOCAL, gcoll_f_reduce_local,
                        (void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

}  // extern "C"

// The completion calls and the persistent requests' starts (pmpi/requests.h): Open MPI's
// own Fortran layer (ompi_<lower>_f in libmpi_mpifh, which both mpif.h/`use mpi` and
// `use mpi_f08` bindings call: it converts handles and statuses) makes the call; gcoll
// looks the requests up before and finishes its ops after, as the C entry points do.
namespace {

template <class Fn>
Fn mpifh(const char *name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// The C handles of n Fortran requests, for the lookup (nothing when none is tracked).
struct CHandles {
  CHandles(int n, const MPI_Fint *f) {
    if (!gcoll::requests_tracked() || !f) return;
    for (int i = 0; i < n; ++i) v.push_back(PMPI_Request_f2c(f[i]));
  }
  int n() const { return static_cast<int>(v.size()); }
  const MPI_Request *data() const { return v.empty() ? nullptr : v.data(); }
  std::vector<MPI_Request> v;
};

constexpr int kNoMpifh = MPI_ERR_INTERN;  // (a Fortran call without Open MPI's Fortran library: cannot be)

}  // namespace

extern "C" {

__attribute__((visibility("hidden"))) void gcoll_f_wait(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_wait);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFWait))
    return reinterpret_cast<F>(next)(request, status, ierror);
  static const F mpi = mpifh<F>("ompi_wait_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(1, request);
  gcoll::Watch w(c.n(), c.data());
  w.wait_engines();
  MPI_Fint e = MPI_SUCCESS;
  mpi(request, status, &e);
  if (e == MPI_SUCCESS && w.any()) e = w.completed(0);
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_test(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status,
                                                        MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_test);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFTest))
    return reinterpret_cast<F>(next)(request, flag, status, ierror);
  static const F mpi = mpifh<F>("ompi_test_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(1, request);
  gcoll::Watch w(c.n(), c.data());
  w.settle();
  MPI_Fint e = MPI_SUCCESS;
  mpi(request, flag, status, &e);
  if (e == MPI_SUCCESS && *flag && w.any()) e = w.completed(0);
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_waitall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses,
                                                           MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_waitall);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFWaitall))
    return reinterpret_cast<F>(next)(count, requests, statuses, ierror);
  static const F mpi = mpifh<F>("ompi_waitall_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(*count, requests);
  gcoll::Watch w(c.n(), c.data());
  w.wait_engines();
  MPI_Fint e = MPI_SUCCESS;
  mpi(count, requests, statuses, &e);
  if (e == MPI_SUCCESS && w.any()) e = w.all_completed();
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_testall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag,
                                                           MPI_Fint *statuses, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_testall);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFTestall))
    return reinterpret_cast<F>(next)(count, requests, flag, statuses, ierror);
  static const F mpi = mpifh<F>("ompi_testall_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(*count, requests);
  gcoll::Watch w(c.n(), c.data());
  w.settle();
  MPI_Fint e = MPI_SUCCESS;
  mpi(count, requests, flag, statuses, &e);
  if (e == MPI_SUCCESS && *flag && w.any()) e = w.all_completed();
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_waitany(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                                                           MPI_Fint *status, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_waitany);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFWaitany))
    return reinterpret_cast<F>(next)(count, requests, index, status, ierror);
  static const F mpi = mpifh<F>("ompi_waitany_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(*count, requests);
  gcoll::Watch w(c.n(), c.data());
  MPI_Fint e = MPI_SUCCESS;
  w.settle();
  if (w.engines_pending()) {
    // Whichever request completes first: poll (the MPI's wait never sees an engine op end).
    using T = void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
    static const T testany = mpifh<T>("ompi_testany_f");
    MPI_Fint flag = 0;
    gcoll::WaitPolicy p;
    for (;;) {
      w.settle();
      testany(count, requests, index, &flag, status, &e);
      if (e != MPI_SUCCESS || flag) break;
      p.pause();
    }
  } else {
    mpi(count, requests, index, status, &e);
  }
  if (e == MPI_SUCCESS && w.any() && *index != MPI_UNDEFINED) e = w.completed(*index - 1);  // 1-based
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_testany(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                                                           MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_testany);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFTestany))
    return reinterpret_cast<F>(next)(count, requests, index, flag, status, ierror);
  static const F mpi = mpifh<F>("ompi_testany_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(*count, requests);
  gcoll::Watch w(c.n(), c.data());
  w.settle();
  MPI_Fint e = MPI_SUCCESS;
  mpi(count, requests, index, flag, status, &e);
  if (e == MPI_SUCCESS && *flag && w.any() && *index != MPI_UNDEFINED) e = w.completed(*index - 1);
  set_ierror(ierror, e);
}

namespace {
// Waitsome / Testsome: the completed ones (1-based indices).
MPI_Fint some_completed(gcoll::Watch &w, MPI_Fint e, const MPI_Fint *outcount, const MPI_Fint *indices) {
  if (e != MPI_SUCCESS || !w.any() || *outcount == MPI_UNDEFINED) return e;
  for (int k = 0; k < *outcount; ++k) {
    const int r = w.completed(indices[k] - 1);
    if (e == MPI_SUCCESS) e = r;
  }
  return e;
}
}  // namespace

__attribute__((visibility("hidden"))) void gcoll_f_waitsome(MPI_Fint *incount, MPI_Fint *requests,
                                                            MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
                                                            MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_waitsome);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFWaitsome))
    return reinterpret_cast<F>(next)(incount, requests, outcount, indices, statuses, ierror);
  static const F mpi = mpifh<F>("ompi_waitsome_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(*incount, requests);
  gcoll::Watch w(c.n(), c.data());
  MPI_Fint e = MPI_SUCCESS;
  w.settle();
  if (w.engines_pending()) {
    static const F testsome = mpifh<F>("ompi_testsome_f");
    gcoll::WaitPolicy p;
    for (;;) {
      w.settle();
      testsome(incount, requests, outcount, indices, statuses, &e);
      if ((e != MPI_SUCCESS && e != MPI_ERR_IN_STATUS) || *outcount != 0) break;
      p.pause();
    }
  } else {
    mpi(incount, requests, outcount, indices, statuses, &e);
  }
  set_ierror(ierror, some_completed(w, e, outcount, indices));
}

__attribute__((visibility("hidden"))) void gcoll_f_testsome(MPI_Fint *incount, MPI_Fint *requests,
                                                            MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
                                                            MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_testsome);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFTestsome))
    return reinterpret_cast<F>(next)(incount, requests, outcount, indices, statuses, ierror);
  static const F mpi = mpifh<F>("ompi_testsome_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(*incount, requests);
  gcoll::Watch w(c.n(), c.data());
  w.settle();
  MPI_Fint e = MPI_SUCCESS;
  mpi(incount, requests, outcount, indices, statuses, &e);
  set_ierror(ierror, some_completed(w, e, outcount, indices));
}

__attribute__((visibility("hidden"))) void gcoll_f_request_get_status(MPI_Fint *request, MPI_Fint *flag,
                                                                      MPI_Fint *status, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_request_get_status);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFRequest_get_status))
    return reinterpret_cast<F>(next)(request, flag, status, ierror);
  static const F mpi = mpifh<F>("ompi_request_get_status_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(1, request);
  gcoll::Watch w(c.n(), c.data());
  w.settle();
  MPI_Fint e = MPI_SUCCESS;
  mpi(request, flag, status, &e);
  if (e == MPI_SUCCESS && *flag && w.any()) e = w.status_complete(0);
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_request_free(MPI_Fint *request, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_request_free);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFRequest_free))
    return reinterpret_cast<F>(next)(request, ierror);
  static const F mpi = mpifh<F>("ompi_request_free_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(1, request);
  gcoll::Watch w(c.n(), c.data());
  MPI_Fint e = w.any() ? w.may_free(0) : MPI_SUCCESS;
  if (e == MPI_SUCCESS) {
    mpi(request, &e);
    if (e == MPI_SUCCESS && w.any()) w.freed(0);
  }
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_cancel(MPI_Fint *request, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_cancel);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFCancel)) return reinterpret_cast<F>(next)(request, ierror);
  static const F mpi = mpifh<F>("ompi_cancel_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(1, request);
  gcoll::Watch w(c.n(), c.data());
  MPI_Fint e = w.any() ? w.may_cancel(0) : MPI_SUCCESS;
  if (e == MPI_SUCCESS) mpi(request, &e);
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_start(MPI_Fint *request, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_start);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFStart)) return reinterpret_cast<F>(next)(request, ierror);
  static const F mpi = mpifh<F>("ompi_start_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(1, request);
  gcoll::Watch w(c.n(), c.data());
  MPI_Fint e = w.any() ? w.before_start(0, "MPI_Start") : MPI_SUCCESS;
  if (e == MPI_SUCCESS) {
    mpi(request, &e);
    if (e == MPI_SUCCESS && w.any()) e = w.started(0, "MPI_Start");
  }
  set_ierror(ierror, e);
}

__attribute__((visibility("hidden"))) void gcoll_f_startall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_startall);
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::kFStartall))
    return reinterpret_cast<F>(next)(count, requests, ierror);
  static const F mpi = mpifh<F>("ompi_startall_f");
  if (!mpi) return set_ierror(ierror, kNoMpifh);
  const CHandles c(*count, requests);
  gcoll::Watch w(c.n(), c.data());
  MPI_Fint e = MPI_SUCCESS;
  for (int i = 0; w.any() && e == MPI_SUCCESS && i < *count; ++i) e = w.before_start(i, "MPI_Startall");
  if (e == MPI_SUCCESS) {
    mpi(count, requests, &e);
    for (int i = 0; e == MPI_SUCCESS && w.any() && i < *count; ++i) e = w.started(i, "MPI_Startall");
  }
  set_ierror(ierror, e);
}

#define GCOLL_R(Name, lower, UPPER) \
  GCOLL_FORTRAN_SPELLINGS_OF(mpi_##lower, MPI_##UPPER, gcoll_f_##lower, GCOLL_F_REQ_TYPES_##lower)
#define GCOLL_F_REQ_TYPES_wait (MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_test (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_waitall (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_testall (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_waitany (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_testany (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_waitsome (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_testsome (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_request_get_status (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_request_free (MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_start (MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_startall (MPI_Fint *, MPI_Fint *, MPI_Fint *)
#define GCOLL_F_REQ_TYPES_cancel (MPI_Fint *, MPI_Fint *)
GCOLL_REQUEST_CALLS(GCOLL_R)
#undef GCOLL_R

}  // extern "C"

#else  // MPICH

extern "C" {
GCOLL_FORTRAN_ALIAS(mpi_finalize_f08_, gcoll_f_finalize, (MPI_Fint *))
}

#endif  // GCOLL_MPI_FORTRAN_ENTRY_POINTS
#endif  // any Fortran symbol
