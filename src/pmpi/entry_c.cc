// C entry points. The application's calls land here instead of in the MPI library.
#include <mpi.h>

#include <initializer_list>

#include "pmpi/call.h"
#include "pmpi/call_kinds.h"
#include "pmpi/collectives.h"
#include "pmpi/mpi_flavor.h"
#include "pmpi/requests.h"

#define GCOLL_EXPORT __attribute__((visibility("default")))

// Under another MPI (pmpi/mpi_flavor.h, the load check): the call goes on unchanged. The
// pointer is loaded and jumped to before anything else, so the arguments reach the
// process's MPI in the registers the caller used (its handles may be wider or narrower
// than this build's).
#define GCOLL_FORWARD(entry, type, ...)                                          \
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::entry)) return reinterpret_cast<type>(next)(__VA_ARGS__);

extern "C" {

// Three entry points per row of the call list (base/coll_list.h): blocking, nonblocking,
// persistent (where the MPI has the persistent forms: coll/mpi_forms.h).
#if GCOLL_MPI_PERSISTENT
#define GCOLL_PERSISTENT_ENTRY(Name, lower, ...)                                                                   \
  GCOLL_EXPORT int GCOLL_MPI_INIT_NAME(Name)(GCOLL_PP_MAP(GCOLL_C_PARAM, __VA_ARGS__), MPI_Info info,            \
                                             MPI_Request * request) {                                            \
    GCOLL_FORWARD(kInit_##lower, decltype(&GCOLL_MPI_INIT_NAME(Name)), GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__), info, \
                  request)                                                                                       \
    return gcoll::lower(gcoll::CallForm::persistent(info, request), GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__));      \
  }
#else
#define GCOLL_PERSISTENT_ENTRY(Name, lower, ...)
#endif
#define GCOLL_X(Name, lower, UPPER, ...)                                                                     \
  GCOLL_EXPORT int MPI_##Name(GCOLL_PP_MAP(GCOLL_C_PARAM, __VA_ARGS__)) {                                    \
    GCOLL_FORWARD(k##Name, decltype(&MPI_##Name), GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__))                      \
    return gcoll::lower(gcoll::CallForm{}, GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__));                           \
  }                                                                                                          \
  GCOLL_EXPORT int MPI_I##lower(GCOLL_PP_MAP(GCOLL_C_PARAM, __VA_ARGS__), MPI_Request *request) {            \
    GCOLL_FORWARD(kI##lower, decltype(&MPI_I##lower), GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__), request)         \
    return gcoll::lower(gcoll::CallForm::nonblocking(request), GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__));       \
  }                                                                                                          \
  GCOLL_PERSISTENT_ENTRY(Name, lower, __VA_ARGS__)
GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X

// The completion calls and the persistent requests' starts (pmpi/requests.h).
#define GCOLL_REQ_ENTRY(Name, lower, params, args) \
  GCOLL_EXPORT int MPI_##Name params {             \
    GCOLL_FORWARD(k##Name, decltype(&MPI_##Name), GCOLL_PP_UNPAREN args) \
    return gcoll::lower args;                      \
  }
#define GCOLL_PP_UNPAREN(...) __VA_ARGS__
GCOLL_REQ_ENTRY(Wait, wait, (MPI_Request * request, MPI_Status *status), (request, status))
GCOLL_REQ_ENTRY(Test, test, (MPI_Request * request, int *flag, MPI_Status *status), (request, flag, status))
GCOLL_REQ_ENTRY(Waitall, waitall, (int count, MPI_Request requests[], MPI_Status statuses[]),
                (count, requests, statuses))
GCOLL_REQ_ENTRY(Testall, testall, (int count, MPI_Request requests[], int *flag, MPI_Status statuses[]),
                (count, requests, flag, statuses))
GCOLL_REQ_ENTRY(Waitany, waitany, (int count, MPI_Request requests[], int *index, MPI_Status *status),
                (count, requests, index, status))
GCOLL_REQ_ENTRY(Testany, testany, (int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status),
                (count, requests, index, flag, status))
GCOLL_REQ_ENTRY(Waitsome, waitsome,
                (int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]),
                (incount, requests, outcount, indices, statuses))
GCOLL_REQ_ENTRY(Testsome, testsome,
                (int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]),
                (incount, requests, outcount, indices, statuses))
GCOLL_REQ_ENTRY(Request_get_status, request_get_status, (MPI_Request request, int *flag, MPI_Status *status),
                (request, flag, status))
GCOLL_REQ_ENTRY(Request_free, request_free, (MPI_Request * request), (request))
GCOLL_REQ_ENTRY(Start, start, (MPI_Request * request), (request))
GCOLL_REQ_ENTRY(Startall, startall, (int count, MPI_Request requests[]), (count, requests))
GCOLL_REQ_ENTRY(Cancel, cancel, (MPI_Request * request), (request))
#undef GCOLL_REQ_ENTRY

GCOLL_EXPORT int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op) {
  GCOLL_FORWARD(kReduce_local, decltype(&MPI_Reduce_local), inbuf, inoutbuf, count, datatype, op)
  return gcoll::reduce_local(inbuf, inoutbuf, count, datatype, op);
}

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

// One large-count function per form: `fn` its name, `entry` its forwarding entry, `line`
// its stats line, `form` the gcoll::CallForm, `extra` the form's parameters after the
// row's and `xargs` their names (the nonblocking request; the persistent info and
// request). A nonblocking or persistent call with counts beyond an int is the MPI's own
// (its request is not gcoll's: nothing is staged, a persistent one's starts are not
// counted).
#define GCOLL_LC_ENTRY(fn, pfn, entry, line, form, lower, extra, xargs, ...)                                    \
  GCOLL_EXPORT int fn(GCOLL_PP_MAP(GCOLL_LC_PARAM, __VA_ARGS__) GCOLL_PP_UNPAREN extra) {                        \
    GCOLL_FORWARD(entry, decltype(&fn), GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__) GCOLL_PP_UNPAREN xargs)              \
    GCOLL_PP_EACH(GCOLL_LC_LOCAL, __VA_ARGS__)                                                                  \
    if (all_fit({GCOLL_PP_MAP(GCOLL_LC_FITS, __VA_ARGS__)}))                                                    \
      return gcoll::lower(form, GCOLL_PP_MAP(GCOLL_LC_ARG, __VA_ARGS__));                                       \
    return gcoll::count_passthrough(line, pfn(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__) GCOLL_PP_UNPAREN xargs),      \
                                    gcoll::lower##_large_bytes(GCOLL_PP_MAP(GCOLL_ARG, __VA_ARGS__)));          \
  }
#define GCOLL_X(Name, lower, UPPER, ...)                                                                         \
  GCOLL_LC_ENTRY(MPI_##Name##_c, PMPI_##Name##_c, k##Name##C, gcoll::Coll::Name, gcoll::CallForm{}, lower, (), (), \
                 __VA_ARGS__)                                                                                    \
  GCOLL_LC_ENTRY(MPI_I##lower##_c, PMPI_I##lower##_c, kI##lower##C, gcoll::Coll::I##lower,                       \
                 gcoll::CallForm::nonblocking(request), lower, (, MPI_Request * request), (, request), __VA_ARGS__) \
  GCOLL_LC_ENTRY(MPI_##Name##_init_c, PMPI_##Name##_init_c, kInit_##lower##C, gcoll::Coll::Name##_init,          \
                 gcoll::CallForm::persistent(info, request), lower, (, MPI_Info info, MPI_Request * request),     \
                 (, info, request), __VA_ARGS__)
GCOLL_COUNTED_COLLS(GCOLL_X)
#undef GCOLL_X
#undef GCOLL_LC_ENTRY

GCOLL_EXPORT int MPI_Reduce_local_c(const void *inbuf, void *inoutbuf, MPI_Count count, MPI_Datatype datatype,
                                    MPI_Op op) {
  GCOLL_FORWARD(kReduce_localC, decltype(&MPI_Reduce_local_c), inbuf, inoutbuf, count, datatype, op)
  if (count >= 0 && count <= INT_MAX) return gcoll::reduce_local(inbuf, inoutbuf, static_cast<int>(count), datatype, op);
  return gcoll::count_passthrough(gcoll::Coll::Reduce_local, PMPI_Reduce_local_c(inbuf, inoutbuf, count, datatype, op),
                                  gcoll::payload(count, datatype));
}
#endif

GCOLL_EXPORT int MPI_Finalize(void) {
  GCOLL_FORWARD(kFinalize, decltype(&MPI_Finalize))
  return gcoll::finalize();
}

}  // extern "C"
