// Device memory space: the node's ranks reduce and copy on the GPU, reading each other's
// memory through CUDA IPC. See memspace.h for the protocol.
//   - banks: each rank allocates two device banks once and exports them once; every
//     node peer maps them at creation. publish() is an async copy into my bank.
//   - exposure: user buffers exported by IPC handle of their allocation base + offset
//     (cached by buffer ID on both sides, cuda/device.h), for zero-copy algorithms.
//   - sync: my stream's work is complete (event polled with backoff), then the flags of
//     a small host segment (a HostSpace, which also carries the IPC handles).
//   - fused ops (kernels/fused.h): the banks, with flags in device memory next to them,
//     where every GPU that ranks share runs them under MPS (agreed at creation; the GPU
//     is time-sliced between processes otherwise, and a spinning kernel would burn its
//     slice waiting for peers that cannot run): then the space serves only fused ops and
//     zero-copy exposure, and has no work area.
// Everything runs on the space's own non-blocking stream, on the GPU of the buffers.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "base/config.h"  // FusedMode
#include "mem/memspace.h"

namespace gcoll {

struct CudaSpaceOptions {
  int device = 0;                            // the GPU (the user buffers' ordinal)
  std::size_t bank_bytes = 8 << 20;          // per rank and bank
  double timeout_s = 0;                      // as HostSpaceOptions
  std::size_t ipc_cache_bytes = 16ull << 30; // bound on peers' mapped buffers
  FusedMode fused = FusedMode::Auto;         // GCOLL_DEVICE_FUSED
  double fused_spin_us = 2000;               // how long one launch of a fused kernel waits
                                             // for its peers before the host relaunches it
  // The node peers whose banks are mapped, by local rank (empty: all). Others' banks are
  // never opened and peer() gives nullptr for them: only for algorithms that read no
  // more than these (the NVLink ring's neighbours); the space then must not fuse.
  std::vector<bool> map_peers;
};

// What one rank says at creation about the fused ops (exchanged inside the node).
struct FusedVote {
  unsigned char uuid[16] = {};  // its GPU
  int sm_count = 0;
  int mps = -1;                 // cuda::DeviceInfo::mps
  FusedMode mode = FusedMode::Auto;  // its GCOLL_DEVICE_FUSED
};

// The node's decision, the same on every rank (they all see the same votes).
//   time_sliced: some GPU is shared by ranks of which one does not run under MPS (or
//     cannot tell): their contexts get the GPU in turn.
//   blocks: 0 when the space does not fuse, else the most blocks one rank's fused kernel
//     may have. It fuses when no rank says off, there are at most kFusedMaxRanks ranks,
//     and the GPUs are not time-sliced, or every rank says on. One block per SM of a GPU
//     for all the ranks on it together (so that they can all be resident while they
//     spin), the smallest over the ranks, at most kFusedMaxBlocks.
struct FusedDecision {
  int blocks = 0;
  bool time_sliced = false;
};
FusedDecision decide_fused(const std::vector<FusedVote> &votes);

// Collective over node_comm. Every rank returns; the caller agrees on success across
// the communicator (a rank may fail to map a peer, e.g. GPUs without peer access).
// NotSupported when gcoll is built without CUDA.
Status create_cuda_space(MPI_Comm node_comm, const CudaSpaceOptions &opt, std::unique_ptr<MemSpace> *out);

}  // namespace gcoll
