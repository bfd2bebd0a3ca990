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
// peer read of it before the call returns (finish() does, for calls that exposed).
//
// Fused ops (device only, can_fuse()): one collective step of every node rank in ONE
// kernel per rank (kernels/fused.h): it copies my part into my bank, raises my flag in
// device memory, waits for the peers' flags and writes my result; the host launches it
// and waits once. No sync() is involved. Where a space can fuse, its banks are the fused
// ops' only (the bank algorithms do not run there: registry.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "base/status.h"
#include "kernels/compress.h"
#include "kernels/fused.h"
#include "kernels/types.h"

namespace gcoll {

// One fused op (MemSpace::fused): my part of one step of a collective, on at most
// capacity() bytes (allgather: per rank). Every rank of the node makes the same fused()
// calls in the same order (with its own buffers).
struct FusedCall {
  FusedKind kind = FusedKind::Allreduce;
  DType dtype = DType::Uint8;  // allreduce
  ROp op = ROp::Sum;           // allreduce
  std::size_t elem = 1;        // allreduce: bytes per element
  const void *in = nullptr;    // allreduce: my input; allgather: my piece; bcast: the
                               // buffer on the root (unused elsewhere)
  void *out = nullptr;         // allreduce: my result; bcast: my buffer
  std::size_t bytes = 0;       // allreduce, bcast: bytes of the op; allgather: one piece
  int root = 0;                // bcast: the root's local rank
  void *dst[kFusedMaxRanks] = {};  // allgather: where local rank q's piece goes in my
                                   // result (nullptr: nowhere, e.g. my own in place)
};

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
  // Whether reduce() takes (t, op) at all: known before a call starts (coll/engine.cc
  // asks it before the algorithm is chosen), the same on every rank of a build.
  virtual bool can_reduce(DType t, ROp op) const { return op_supported(op, t); }
  virtual Status copy(void *dst, const void *src, std::size_t bytes) = 0;
  // The compressed allreduce's formats (kernels/compress.h) where the space's memory is:
  // n elements of t encoded from src into dst / decoded into dst / decoded and added into
  // dst, in dst's precision. Host: the host functions, at once. Device: the runtime's
  // (cuda/runtime.h), queued on the space's stream like reduce() and copy().
  virtual Status compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst) {
    gcoll::compress_encode(c, t, src, n, dst);
    return Status::Ok;
  }
  virtual Status compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst) {
    gcoll::compress_decode(c, t, src, n, dst);
    return Status::Ok;
  }
  virtual Status compress_decode_add(Compress c, DType t, const void *src, std::size_t n, void *dst) {
    gcoll::compress_decode_add(c, t, src, n, dst);
    return Status::Ok;
  }

  // A call starts (device: mappings it uses are kept until the next call) / ends. Device:
  // finish() waits until everything enqueued is complete (the result is in the user's
  // buffer); when the call exposed user buffers it then syncs once more, so that no peer
  // still reads them when the call returns (the application may reuse or free them).
  // Banks need no final sync: a peer overwrites the bank I read last only after its next
  // sync, which waits for me (and my stream) to get there.
  virtual void begin_call() {}
  virtual Status finish() { return Status::Ok; }

  // Waits until the work this rank queued on the space is complete (device: its stream),
  // so that what it wrote may be read, and what it reads may be overwritten, by something
  // outside the space: the rails call it before every network step on the call's memory
  // (net/device_channel.h). Never runs while_waiting. Host: nothing is ever queued.
  virtual Status settle() { return Status::Ok; }

  // This rank's part of the current call failed (a device error, a peer's buffer it could
  // not map). Every rank's next sync() of the call, and each one after, returns
  // ErrInternal, so that no rank returns a result that lacks this rank's part: an error
  // on every rank instead of a silent wrong answer on some. The rank must still take
  // part in that sync (the algorithms sync on every rank whatever happened).
  virtual void mark_failed() {}

  // Fused ops (see above). can_fuse() is agreed by the node's ranks when the space is
  // created (the same on every rank). fused(): Ok on every rank, or ErrInternal on every
  // rank when a rank's part failed (mark_failed() before it, or a device error it could
  // report); a peer that does not arrive within GCOLL_TIMEOUT, or dies, gives
  // ErrTransport, after which every fused op of the space fails at once.
  virtual bool can_fuse() const { return false; }
  // Device: node ranks share a GPU without MPS, so their work runs in turn (agreed at
  // creation, as can_fuse()): each step that needs every rank's GPU work costs a round of
  // context switches there, and the defaults stage small calls instead (tune.cc).
  virtual bool time_sliced() const { return false; }
  virtual Status fused(const FusedCall &c) {
    (void)c;
    return Status::NotSupported;
  }

  // Memory for an algorithm's private intermediate results, where reduce() and copy()
  // may write (at least 4 x capacity() bytes); nullptr: use host memory (the engine's),
  // or (a space that fuses) none: the algorithms that need it do not run there.
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
