// The MPI side of the guard: Status -> MPI error class, and raising an error through the
// communicator's error handler exactly as MPI would.
#pragma once

#include <mpi.h>

#include "base/status.h"

namespace gcoll {

// MPI error class for a status (never called with Ok or NotSupported in practice; they
// map to MPI_SUCCESS and MPI_ERR_UNSUPPORTED_OPERATION).
int mpi_error_class(Status s);

// Logs "func: detail (MPI_ERR_X)" and invokes the error handler of `comm` (of
// MPI_COMM_WORLD when comm is MPI_COMM_NULL, as Open MPI does). Returns the error class,
// which the wrapper returns to the application when the handler returns.
int raise_error(MPI_Comm comm, Status s, const char *func, const char *detail);

}  // namespace gcoll
