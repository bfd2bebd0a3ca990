// The memory-space interface: everything the algorithms need from the memory their data
// lives in, inside one node. The algorithms (src/coll/*) never touch memory directly
// except through this interface and the network (src/ucx), so the same schedule runs on
// host memory (shared-memory segment, CPU loops) and on device memory (CUDA IPC, kernels).
//
// Exposure protocol (banks). Each rank owns two banks. What a rank publishes before a
// sync() goes into its current bank; after the sync every node peer may read it, until
// the next sync(). Banks alternate at every sync, so a writer only overwrites a bank two
// syncs later, when every reader is done with it: no extra barrier is ever needed between
// steps or between calls.
//   host:   publish() copies into the rank's bank of the node's shared segment.
//   device: publish() would export the user buffer (IPC handle of allocation base +
//           offset) without copying; peer() maps it (cached by buffer ID).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "base/status.h"
#include "kernels/types.h"

namespace gcoll {

class MemSpace {
 public:
  virtual ~MemSpace() = default;

  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // Bytes one rank can publish between two syncs.
  virtual std::size_t capacity() const = 0;

  // Makes src[0, bytes) readable by node peers at offset `at` of my current bank.
  virtual Status publish(std::size_t at, const void *src, std::size_t bytes) = 0;
  // Where to write, directly, `bytes` that peers will read at offset `at` (host: my bank;
  // saves a copy when the data is produced in place, e.g. by a reduction).
  virtual void *publish_area(std::size_t at, std::size_t bytes) = 0;
  // Node barrier: my publications become visible, and I see everyone's.
  virtual Status sync() = 0;
  // Peer `lr`'s bank as published before the last sync().
  virtual const void *peer(int lr) const = 0;

  // dst = op(srcs[0], ..., srcs[m-1]) element-wise, left fold in source order.
  virtual Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count) = 0;
  virtual Status copy(void *dst, const void *src, std::size_t bytes) = 0;

  // Work to run while sync() waits for peers (the network phase of another chunk, so
  // that the intra- and inter-node phases overlap). Cleared by the caller when done;
  // returns an error to abort the wait.
  std::function<Status()> while_waiting;

  // Bytes this rank published (intra-node traffic, for stats).
  std::uint64_t bytes_published = 0;
};

}  // namespace gcoll
