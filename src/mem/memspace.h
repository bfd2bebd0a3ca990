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
//   device: publish() copies (on the GPU) into the rank's device bank, which node peers
//           mapped once through CUDA IPC; reduce() and copy() are kernels / async copies on
//           the space's own stream; sync() waits for that stream before it raises its flag.
//
// Zero-copy exposure (device only, can_expose()): expose() publishes where a user buffer
// lives (IPC handle of its allocation base + offset, cached by buffer ID) instead of its
// bytes; after the next sync() every node peer gets a pointer to it with exposed(). The
// buffer itself is not double-buffered: the algorithm must sync once more after the last
// peer read of it before the call returns (finish() does).
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
  // Node barrier: my publications become visible, and I see everyone's.
  virtual Status sync() = 0;
  // Peer `lr`'s bank as published before the last sync().
  virtual const void *peer(int lr) const = 0;

  // dst = op(srcs[0], ..., srcs[m-1]) element-wise, left fold in source order. dst may be
  // one of the sources itself (the same elements), never a partial overlap.
  virtual Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count) = 0;
  virtual Status copy(void *dst, const void *src, std::size_t bytes) = 0;

  // A call starts (device: mappings it uses are kept until the next call) / ends. Device:
  // finish() waits until everything enqueued is complete (the result is in the user's
  // buffer) and then syncs once more, so that no peer still reads my buffers or banks
  // when the call returns (the application may reuse them, or free the communicator).
  virtual void begin_call() {}
  virtual Status finish() { return Status::Ok; }

  // This rank's part of the current call failed (a device error, a peer's buffer it could
  // not map). Every rank's next sync() of the call, and each one after, returns
  // ErrInternal, so that no rank returns a result that lacks this rank's part: an error
  // on every rank instead of a silent wrong answer on some. The rank must still take
  // part in that sync (the algorithms sync on every rank whatever happened).
  virtual void mark_failed() {}

  // Memory for an algorithm's private intermediate results, where reduce() and copy()
  // may write (at least 4 x capacity() bytes); nullptr: use host memory (the engine's).
  virtual char *work_area() { return nullptr; }

  // Zero-copy exposure of user buffers (see above). `slot` < kExposeSlots.
  static constexpr int kExposeSlots = 4;
  virtual bool can_expose() const { return false; }
  virtual Status expose(int slot, const void *buf, std::size_t bytes) {
    (void)slot, (void)buf, (void)bytes;
    return Status::NotSupported;
  }
  virtual Status exposed(int lr, int slot, void **out) {
    (void)lr, (void)slot, (void)out;
    return Status::NotSupported;
  }

  // Work to run while sync() waits for peers (the network phase of another chunk, so
  // that the intra- and inter-node phases overlap). Cleared by the caller when done;
  // returns an error to abort the wait.
  std::function<Status()> while_waiting;

  // Bytes this rank published (intra-node traffic, for stats).
  std::uint64_t bytes_published = 0;
};

}  // namespace gcoll
