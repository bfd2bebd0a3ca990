// The dispatch decision: which path a call takes. Pure (no MPI calls), unit-tested.
//
// Rank uniformity: the engine's protocol is not compatible with the MPI's, so whether a
// call takes the engine must be the same on every rank. Staged and passthrough both end
// in the same PMPI_* collective (staged only copies device data to host first), so they
// may differ between ranks. Every input that can select the engine must therefore be
// rank-uniform: settings (agreed once per communicator), `engine_supports` (computed
// from count, datatype, op, root and communicator only) and `mem`, the memory kinds the
// ranks agreed for the call (team_memory.h; for calls the engine does not support, this
// rank's own: they never take the engine). A rank whose own buffers differ from `mem` on
// an engine call adapts them itself (coll/deviate.h); outside the engine each rank goes
// by its own buffers (`local_device`): its device buffers staged, host ones to the MPI.
#pragma once

#include "base/stats.h"

namespace gcoll {

enum class CallMem {
  Host,    // every buffer is host memory (or no bytes move)
  Device,  // every buffer is device memory
  Mixed,   // some ranks (or buffers) host, some device: no engine
};

struct DispatchInput {
  CallMem mem = CallMem::Host;
  bool local_device = false;         // this rank passes a device buffer (may differ from `mem`)
  bool host_buffers_engine = false;  // setting: host buffers may take the engine
  bool device_engine = true;         // setting (and every device buffer on the communicator's GPU)
  bool engine_supports = false;      // an engine algorithm supports these rank-uniform arguments
};

inline Path decide(const DispatchInput &in) {
  const bool engine_kind = (in.mem == CallMem::Device && in.device_engine) ||
                           (in.mem == CallMem::Host && in.host_buffers_engine);  // Mixed: never
  if (engine_kind && in.engine_supports) return Path::Engine;
  return in.local_device ? Path::Staged : Path::Passthrough;  // never a device pointer to the MPI
}

}  // namespace gcoll
