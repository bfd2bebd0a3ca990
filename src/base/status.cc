#include "base/status.h"

namespace gcoll {

const char *status_name(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::NotSupported: return "not supported";
    case Status::ErrCount: return "invalid count";
    case Status::ErrType: return "invalid datatype";
    case Status::ErrOp: return "invalid op";
    case Status::ErrComm: return "invalid communicator";
    case Status::ErrRoot: return "invalid root";
    case Status::ErrBuffer: return "invalid buffer";
    case Status::ErrArg: return "invalid argument";
    case Status::ErrRequest: return "invalid request";
    case Status::ErrNoMem: return "out of memory";
    case Status::ErrTransport: return "transport error";
    case Status::ErrMismatch: return "a rank without gcoll";
    case Status::ErrInternal: return "internal error";
  }
  return "unknown status";
}

}  // namespace gcoll
