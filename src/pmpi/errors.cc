#include "pmpi/errors.h"

#include "base/log.h"

namespace gcoll {

int mpi_error_class(Status s) {
  switch (s) {
    case Status::Ok: return MPI_SUCCESS;
    case Status::NotSupported: return MPI_ERR_UNSUPPORTED_OPERATION;
    case Status::ErrCount: return MPI_ERR_COUNT;
    case Status::ErrType: return MPI_ERR_TYPE;
    case Status::ErrOp: return MPI_ERR_OP;
    case Status::ErrComm: return MPI_ERR_COMM;
    case Status::ErrRoot: return MPI_ERR_ROOT;
    case Status::ErrBuffer: return MPI_ERR_BUFFER;
    case Status::ErrArg: return MPI_ERR_ARG;
    case Status::ErrRequest: return MPI_ERR_REQUEST;
    case Status::ErrNoMem: return MPI_ERR_NO_MEM;
    case Status::ErrTransport: return MPI_ERR_OTHER;
    case Status::ErrMismatch: return MPI_ERR_OTHER;
    case Status::ErrInternal: return MPI_ERR_INTERN;
  }
  return MPI_ERR_UNKNOWN;
}

int raise_error(MPI_Comm comm, Status s, const char *func, const char *detail) {
  const int cls = mpi_error_class(s);
  char name[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  PMPI_Error_string(cls, name, &len);
  GCOLL_WARN("%s: %s (%s)", func, detail, name);
  PMPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, cls);
  return cls;
}

}  // namespace gcoll
