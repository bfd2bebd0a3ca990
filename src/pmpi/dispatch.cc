#include "pmpi/dispatch.h"

namespace gcoll {

Path decide(const DispatchInput &in) {
  if (in.mem == MemKind::Device)
    return in.engine_supports ? Path::Engine : Path::Staged;  // never hand a device pointer to the MPI
  if (in.host_buffers_engine && in.engine_supports) return Path::Engine;
  return Path::Passthrough;
}

}  // namespace gcoll
