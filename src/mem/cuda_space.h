// Device memory space: the node's ranks reduce and copy on the GPU, reading each other's
// memory through CUDA IPC. See memspace.h for the protocol.
//   - banks: each rank allocates two device banks once and exports them once; every
//     node peer maps them at creation. publish() is an async copy into my bank.
//   - exposure: user buffers exported by IPC handle of their allocation base + offset
//     (cached by buffer ID on both sides, cuda/device.h), for zero-copy algorithms.
//   - sync: my stream's work is complete (event polled with backoff), then the flags of
//     a small host segment (a HostSpace, which also carries the IPC handles).
// Everything runs on the space's own non-blocking stream, on the GPU of the buffers.
#pragma once

#include <mpi.h>

#include <memory>

#include "mem/memspace.h"

namespace gcoll {

struct CudaSpaceOptions {
  int device = 0;                            // the GPU (the user buffers' ordinal)
  std::size_t bank_bytes = 8 << 20;          // per rank and bank
  double timeout_s = 0;                      // as HostSpaceOptions
  std::size_t ipc_cache_bytes = 16ull << 30; // bound on peers' mapped buffers
};

// Collective over node_comm. Every rank returns; the caller agrees on success across
// the communicator (a rank may fail to map a peer, e.g. GPUs without peer access).
// NotSupported when gcoll is built without CUDA.
Status create_cuda_space(MPI_Comm node_comm, const CudaSpaceOptions &opt, std::unique_ptr<MemSpace> *out);

}  // namespace gcoll
