// The fused one-shot collectives on device memory: what one kernel per rank and op needs,
// shared by the CUDA kernels (cuda_fused*.cu) and the emulated GPU (cuda/emulate_fused.cc).
// Plain C++ (no CUDA headers); nvcc compiles fused_range() for the device too.
//
// The protocol (docs/engine.md, "Device buffers"). Every rank of a node owns, in one
// IPC-exported device allocation, two banks and a FusedControl; every peer has mapped
// them. Op number s (1, 2, ...: the same sequence on every rank) uses bank s & 1. Each
// rank's kernel has `blocks` blocks (the same number on every rank); block b
//   1. copies its byte range of my input into my bank (publish; skipped on a resume),
//   2. posts flag[b] = s (system-scope fence, then a release store; a rank whose part
//      failed first stores failed[s & 1] = s and publishes nothing),
//   3. waits until every peer's flag[b] >= s (at most spin_ns, read from %globaltimer;
//      then it gives up: status TimedOut, and the host relaunches the op as a resume),
//   4. if no rank failed: reduces all banks' range into my output (allreduce), copies the
//      root's bank (bcast) or every rank's bank to its place in my output (allgather),
//   5. writes status[b] = (s << 2) | code into pinned host memory, last (after a
//      system-scope fence): the host may take it as the end of the block's work.
// No other barrier is needed: my kernel s starts after my kernel s - 1 ended (one stream),
// and every block of kernel s - 1 saw every peer's flag >= s - 1, which a peer posts only
// in its kernel s - 1, after its kernel s - 2 (the last reader of my bank s & 1) ended.
// A peer is therefore never more than one op ahead, so failed[s & 1] still says s when
// a slow rank looks (the peer overwrites it at s + 2 at the earliest).
//
// Stream-ordered ops (seq == 0: MPIX_<Name>_enqueue's device path, coll/stream_device.h)
// keep the op number on the device, so that a CUDA graph replays them right: every block
// reads s = ctl[me]->epoch + 1 when it starts, uses bank s & 1 (bank[q] + (s & 1) *
// bank_stride), and the last block of the kernel to finish (ctl[me]->done counts them)
// stores epoch = s; my next kernel, queued after this one on the same stream, starts
// after it ended and reads it. The same protocol as above otherwise, on banks and flags of
// their own (never shared with host-numbered ops). Nobody waits for the kernel on the
// host: a block that times out or sees a failure stops the stream instead (`trap`), so
// that the application's next synchronisation reports an error rather than a wrong result.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/types.h"

#if defined(__CUDACC__)
#define GCOLL_HOST_DEVICE __host__ __device__
#else
#define GCOLL_HOST_DEVICE
#endif

namespace gcoll {

constexpr int kFusedMaxRanks = 16;         // node ranks (one source per rank in the fold)
constexpr int kFusedMaxBlocks = 64;        // blocks of one kernel (flags per rank)
constexpr int kFusedThreads = 512;         // threads per block (>= kFusedMaxRanks)
constexpr std::size_t kFusedAlign = 16;    // block ranges start at multiples of this
constexpr std::size_t kFusedBlockBytes = 16 << 10;  // bytes per block the host aims for

enum class FusedKind : std::uint8_t { Allreduce, Bcast, Allgather };

// One rank's control words, in device memory right after its two banks.
struct FusedControl {
  std::uint64_t flag[kFusedMaxBlocks];  // flag[b]: the latest op whose block b this rank posted
  std::uint64_t failed[2];              // failed[s & 1] == s: this rank's part of op s failed
  std::uint64_t epoch;                  // stream-ordered ops: the latest op this rank's kernels ended
  std::uint32_t done;                   // stream-ordered ops: blocks of the current op that ended
  std::uint32_t unused;
};

// status[b] = (seq << 2) | code. Greater codes win within a block.
enum FusedCode : std::uint64_t {
  kFusedDone = 1,      // the block's range of the result is written
  kFusedFailed = 2,    // a rank's part failed (mine or a peer's): nothing written
  kFusedTimedOut = 3,  // a peer had not posted within spin_ns: relaunch as a resume
};

struct FusedParams {
  FusedKind kind = FusedKind::Allreduce;
  DType dtype = DType::Uint8;  // allreduce
  ROp op = ROp::Sum;           // allreduce
  bool failed = false;         // my part failed: post failure, wait, write nothing
  bool resume = false;         // a relaunch after a timeout: publish and flags are done
  int nranks = 0, me = 0, root = 0, blocks = 1;
  std::uint64_t seq = 0;       // this op's number (>= 1), the same on every rank; 0: stream-
                               // ordered, the number kept on the device (ctl[me]->epoch + 1)
  std::size_t bank_stride = 0; // seq == 0: bank[q] is rank q's bank 0, its bank 1 this far on
  bool trap = false;           // a block that times out or sees a failure stops the stream
  std::uint64_t spin_ns = 0;   // how long a block waits for its peers in one launch
  std::size_t bytes = 0;       // allreduce, bcast: this op's bytes; allgather: one rank's piece
  std::size_t elem = 1;        // allreduce: bytes per element (divides kFusedAlign)
  const void *in = nullptr;    // what I publish: my input (allreduce), my piece (allgather),
                               // the buffer (bcast, root; others publish nothing)
  void *out = nullptr;         // my result (allreduce), my buffer (bcast; the root's is not written)
  char *bank[kFusedMaxRanks] = {};          // every rank's bank s & 1 (seq == 0: bank 0), mapped here (mine too)
  FusedControl *ctl[kFusedMaxRanks] = {};   // every rank's control words, mapped here
  void *dst[kFusedMaxRanks] = {};           // allgather: where rank q's piece goes (nullptr: nowhere)
  std::uint64_t *status = nullptr;          // pinned host memory, `blocks` words (seq == 0: any
                                            // memory the device writes; nobody waits for them)
};

// Whether the parameters describe an op a kernel can run (the checks of cuda_fused and of
// the emulated GPU, before anything is queued).
inline bool fused_params_valid(const FusedParams &p) {
  return p.nranks >= 1 && p.nranks <= kFusedMaxRanks && p.me >= 0 && p.me < p.nranks && p.blocks >= 1 &&
         p.blocks <= kFusedMaxBlocks && p.root >= 0 && p.root < p.nranks && p.status &&
         (p.seq != 0 || (p.bank_stride >= p.bytes && p.bank_stride % kFusedAlign == 0 && !p.resume));
}

// Block b's byte range [*lo, *hi) of an op of `bytes` bytes over `blocks` blocks: equal
// parts rounded up to kFusedAlign (so a range of elements never splits one), possibly
// empty at the end.
GCOLL_HOST_DEVICE inline void fused_range(std::size_t bytes, int blocks, int b, std::size_t *lo,
                                          std::size_t *hi) {
  std::size_t per = (bytes + static_cast<std::size_t>(blocks) - 1) / static_cast<std::size_t>(blocks);
  per = (per + kFusedAlign - 1) / kFusedAlign * kFusedAlign;
  std::size_t l = per * static_cast<std::size_t>(b);
  if (l > bytes) l = bytes;
  std::size_t h = l + per;
  if (h > bytes) h = bytes;
  *lo = l;
  *hi = h;
}

}  // namespace gcoll
