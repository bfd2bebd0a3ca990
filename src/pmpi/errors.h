// The MPI side of the guard: Status -> MPI error class, and raising an error through the
// communicator's error handler exactly as MPI would.
#pragma once

#include <mpi.h>

#include <new>

#include "base/log.h"
#include "base/status.h"

namespace gcoll {

// MPI error class for a status (never called with Ok or NotSupported in practice; they
// map to MPI_SUCCESS and MPI_ERR_UNSUPPORTED_OPERATION).
int mpi_error_class(Status s);

// Logs "func: detail (MPI_ERR_X)" and invokes the error handler of `comm` (of
// MPI_COMM_WORLD when comm is MPI_COMM_NULL, as Open MPI does). Returns the error class,
// which the wrapper returns to the application when the handler returns.
int raise_error(MPI_Comm comm, Status s, const char *func, const char *detail);

// The boundary between the application and gcoll: runs `body` (which returns an MPI
// return code). No C++ exception gets past it: std::bad_alloc becomes MPI_ERR_NO_MEM and
// anything else MPI_ERR_INTERN, raised through the error handler of `comm` like every
// other error. The handler runs outside the catch block, so an application handler
// that throws its own exception (C++ MPI bindings) propagates it. An exception that the
// application's own code throws while MPI calls it back inside the call (a throwing error
// handler or user op; unwinding through the C MPI library is undefined anyway) is caught
// here like gcoll's own: the handler then runs once more, outside, and what it throws
// propagates.
// Collective setup steps catch their own allocation failures before they agree with
// the other ranks (coll/engine.cc): this is the last resort, for the rest.
template <class Body, class OnException>
int guarded(MPI_Comm comm, const char *func, Body &&body, OnException &&on_exception) {
  Status failed = Status::Ok;
  try {
    return body();
  } catch (const std::bad_alloc &) {
    failed = Status::ErrNoMem;
  } catch (...) {
    failed = Status::ErrInternal;
  }
  on_exception();  // e.g. count the call as an error
  return raise_error(comm, failed, func,
                     failed == Status::ErrNoMem ? "out of memory inside gcoll" : "unexpected internal error in gcoll");
}

// Runs `body` and reports whether it completed: false after any exception (logged with
// `what`). For code that MPI itself calls (attribute delete callbacks, the finalize hook),
// where nothing may be thrown into the MPI library.
template <class Body>
bool no_throw(const char *what, Body &&body) noexcept {
  try {
    body();
    return true;
  } catch (...) {
    log_exception(what);
    return false;
  }
}

}  // namespace gcoll
