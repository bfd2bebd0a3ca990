// Internal status codes. Nothing inside gcoll throws across the MPI boundary; every
// internal function that can fail returns a Status, and src/pmpi/errors.h maps it to an
// MPI error class (or, for NotSupported, to the fallback path).
#pragma once

namespace gcoll {

enum class Status : int {
  Ok = 0,
  NotSupported,  // decided before any byte moved: the caller falls back
  ErrCount,      // negative or unrepresentable count
  ErrType,       // null, invalid or uncommitted datatype
  ErrOp,         // null op, or op not defined for the datatype
  ErrComm,       // null or invalid communicator
  ErrRoot,       // root out of range
  ErrBuffer,     // invalid buffer
  ErrArg,        // invalid argument (e.g. MPI_IN_PLACE where not allowed)
  ErrRequest,    // a request the call may not take (a collective's active request freed or cancelled)
  ErrNoMem,      // allocation failed
  ErrTransport,  // a peer could not be reached / network error
  ErrMismatch,   // some rank of the communicator does not run gcoll (GCOLL_ENABLE=0, no libgcoll.so)
  ErrInternal,   // bug or unexpected state
};

const char *status_name(Status s);
inline bool ok(Status s) { return s == Status::Ok; }

}  // namespace gcoll
