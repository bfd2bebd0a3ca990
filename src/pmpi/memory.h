// Memory kinds of a call: what this rank's buffers are (classified through the CUDA
// driver, cuda/device.h) and what all ranks' buffers are (agreed before anything moves).
#pragma once

#include <mpi.h>

#include "pmpi/comm_state.h"
#include "pmpi/dispatch.h"

namespace gcoll {

struct LocalMemory {
  bool host = false;       // some buffer is host memory
  bool device = false;     // some buffer is device memory
  bool non_ipc = false;    // some device buffer cannot be exported by CUDA IPC (pools, cuMemCreate)
  bool split_gpu = false;  // device buffers on two GPUs, or not on the communicator's engine GPU
  int ordinal = -1;        // the GPU of the device buffers
  bool is_device[2] = {false, false};  // per buffer given to classify_local (first two)
};

// Classifies the buffers that carry bytes (nullptr entries are skipped: MPI_IN_PLACE, no
// bytes). Without a usable driver every buffer is host memory, at the cost of a branch.
LocalMemory classify_local(const void *const *bufs, int n, int engine_device);

struct CallMemory {
  CallMem mem = CallMem::Host;
  bool zero_copy = false;      // Device: every rank's buffers can be exposed
  bool device_engine = false;  // Device: the engine may take it (settings, one GPU per rank)
};

// Once per intracommunicator, at its first call (any collective: every rank makes it):
// whether any rank can hold device memory, and the memory settings all ranks use.
void agree_once(CommState *cs);

// For a call the engine supports on an intracommunicator: agrees, with one small
// PMPI_Allreduce over the communicator, on what all ranks pass, unless no rank can hold
// device memory or every rank promised uniform memory kinds (GCOLL_UNIFORM_MEMORY). The
// first such call on a communicator also agrees on those two facts (one more allreduce).
// Collective: every rank must call it for the same calls (engine_supports is
// rank-uniform), before any byte moves.
Status agree_memory(CommState *cs, const LocalMemory &lm, CallMemory *out);

// This rank's own view, for calls that never take the engine (no agreement needed).
inline CallMem local_kind(const LocalMemory &lm) {
  return lm.device ? (lm.host ? CallMem::Mixed : CallMem::Device) : CallMem::Host;
}

}  // namespace gcoll
