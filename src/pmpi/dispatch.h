// The dispatch decision: which path a call takes. Pure (no MPI calls), unit-tested.
//
// Rank uniformity: the engine's protocol is not compatible with the MPI's, so whether a
// call takes the engine must be the same on every rank. Staged and passthrough both end
// in the same PMPI_* collective (staged only copies device data to host first), so they
// may differ between ranks. Every input that can select the engine must therefore be
// rank-uniform: settings, `engine_supports` (computed from count, datatype, op, root and
// communicator only) and `mem`, the memory kind agreed for the call by all ranks.
#pragma once

#include "base/stats.h"

namespace gcoll {

enum class MemKind { Host, Device };

struct DispatchInput {
  MemKind mem = MemKind::Host;       // agreed across the communicator's ranks
  bool host_buffers_engine = false;  // host buffers may take the engine (setting)
  bool engine_supports = false;      // an engine algorithm supports these rank-uniform arguments
};

inline Path decide(const DispatchInput &in) {
  if (in.mem == MemKind::Device)
    return in.engine_supports ? Path::Engine : Path::Staged;  // never hand a device pointer to the MPI
  if (in.host_buffers_engine && in.engine_supports) return Path::Engine;
  return Path::Passthrough;
}

}  // namespace gcoll
