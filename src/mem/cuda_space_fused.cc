// The driver of the fused one-shot kernel on a device memory space (cuda_space_impl.h).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "mem/cuda_space_impl.h"
#include "mem/device_scope.h"

namespace gcoll {
namespace cuda_space_impl {

Status CudaSpace::fused(const FusedCall &c) {
  if (!fuse_blocks_) return Status::NotSupported;
  const int n = local_size(), me = local_rank();
  if (c.bytes > bank_bytes_ || c.root < 0 || c.root >= n) return Status::ErrInternal;
  // Decided alike on every rank, before anything moves (the selection avoids both: registry.cc).
  if (c.kind == FusedKind::Allreduce &&
      (!rt().reduce_supported(c.op, c.dtype) || c.elem != dtype_size(c.dtype) || kFusedAlign % c.elem != 0))
    return Status::NotSupported;
  if (broken_) {
    GCOLL_WARN("device engine: an earlier fused collective of this communicator did not complete; this one fails "
               "at once");
    return Status::ErrInternal;
  }
  DeviceScope d(opt_.device);
  Status mine = pending_;  // ordering after the application's work (begin_call)
  pending_ = Status::Ok;
  FusedParams p;
  p.kind = c.kind;
  p.dtype = c.dtype;
  p.op = c.op;
  p.elem = c.elem;
  p.nranks = n;
  p.me = me;
  p.root = c.kind == FusedKind::Bcast ? c.root : 0;
  p.seq = ++fused_seq_;
  p.spin_ns = static_cast<std::uint64_t>(opt_.fused_spin_us * 1000.0);
  p.bytes = c.bytes;
  p.blocks = blocks_for(c.bytes);
  p.in = c.in;
  p.out = c.out;
  for (int q = 0; q < n; ++q) {
    p.bank[q] = bank(q, p.seq & 1);
    p.ctl[q] = control(q);
    p.dst[q] = c.kind == FusedKind::Allgather ? c.dst[q] : nullptr;
  }
  p.status = status_;
  p.failed = failed_ || !ok(mine);
  if (c.kind != FusedKind::Bcast || me == c.root) bytes_published += c.bytes;
  const auto start = std::chrono::steady_clock::now();
  auto next_check = start + std::chrono::seconds(1);
  for (int attempt = 0;; ++attempt) {
    p.resume = attempt > 0;
    for (int b = 0; b < p.blocks; ++b) status_[b] = 0;  // the previous launch wrote its words already
    Status st = cuda_status(rt().fused(p, stream_), "fused collective");
    if (!ok(st) && !p.resume && !p.failed) {
      // Post my flags anyway, as failed, so that the peers return an error rather than wait.
      mine = st;
      p.failed = true;
      st = cuda_status(rt().fused(p, stream_), "fused collective (posting a failure)");
    }
    if (ok(st)) {
      enqueued_ = true;
      // The blocks' words come last in each block: when all are there, the kernel has
      // done its work (only its exit is left, before my stream's next work). A short
      // spin on them saves the event for small ops; the event wait covers the rest,
      // and device errors.
      if (!outcomes_within(p.seq, p.blocks, std::chrono::microseconds(50))) st = drain();
      enqueued_ = false;
    }
    if (!ok(st)) {
      broken_ = true;  // my flags may never have been posted: the protocol cannot go on
      return st;
    }
    int late = 0;
    bool failed = false;
    for (int b = 0; b < p.blocks; ++b) {
      const std::uint64_t v = __atomic_load_n(&status_[b], __ATOMIC_ACQUIRE);
      if (v >> 2 != p.seq) {
        GCOLL_WARN("device engine: fused collective %llu: block %d left no outcome (0x%llx)",
                   static_cast<unsigned long long>(p.seq), b, static_cast<unsigned long long>(v));
        broken_ = true;
        return Status::ErrInternal;
      }
      late += (v & 3) == kFusedTimedOut;
      failed = failed || (v & 3) == kFusedFailed;
    }
    if (!late) {
      if (p.failed) return ok(mine) ? Status::ErrInternal : mine;
      return failed ? Status::ErrInternal : Status::Ok;
    }
    // A peer is late: the host waits for it (the kernel gave up after spin_ns), then
    // relaunches the op, which skips the publish and waits again.
    const auto now = std::chrono::steady_clock::now();
    if (opt_.timeout_s > 0 && std::chrono::duration<double>(now - start).count() > opt_.timeout_s) {
      GCOLL_WARN("device engine: a node peer did not arrive within %.0f s (GCOLL_TIMEOUT)", opt_.timeout_s);
      broken_ = true;
      return Status::ErrTransport;
    }
    if (now >= next_check) {
      next_check = now + std::chrono::seconds(1);
      if (!peers_alive()) {
        broken_ = true;
        return Status::ErrTransport;
      }
    }
    if (attempt >= 2)
      std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 50 << std::min(attempt - 2, 5))));
  }
}

Status CudaSpace::clear_control() {
  std::memset(status_, 0, sizeof(std::uint64_t) * kFusedMaxBlocks);
  const std::vector<unsigned char> zeros(sizeof(FusedControl), 0);
  char *ctl = static_cast<char *>(mine_) + 2 * bank_bytes_;
  Status st = cuda_status(rt().memcpy_async(ctl, zeros.data(), zeros.size(), stream_), "clearing the flags");
  if (ok(st)) st = cuda_status(rt().stream_synchronize(stream_), "clearing the flags");
  return st;
}

int CudaSpace::blocks_for(std::size_t bytes) const {
  const std::size_t want = (bytes + kFusedBlockBytes - 1) / kFusedBlockBytes;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(want, fuse_blocks_)));
}

bool CudaSpace::outcomes_within(std::uint64_t seq, int blocks, std::chrono::microseconds spin) const {
  const auto t0 = std::chrono::steady_clock::now();
  for (unsigned i = 0;; ++i) {
    int b = 0;
    while (b < blocks && __atomic_load_n(&status_[b], __ATOMIC_ACQUIRE) >> 2 == seq) ++b;
    if (b == blocks) return true;
    if ((i & 15) == 15 && std::chrono::steady_clock::now() - t0 > spin) return false;
  }
}

}  // namespace cuda_space_impl

FusedDecision decide_fused(const std::vector<FusedVote> &votes) {
  FusedDecision d;
  const int n = static_cast<int>(votes.size());
  bool all_on = n > 0, any_off = false;
  int blocks = kFusedMaxBlocks;
  for (const FusedVote &v : votes) {
    all_on = all_on && v.mode == FusedMode::On;
    any_off = any_off || v.mode == FusedMode::Off;
    int sharing = 0;
    for (const FusedVote &w : votes) sharing += std::memcmp(v.uuid, w.uuid, sizeof v.uuid) == 0;
    // A time-sliced GPU: a spinning kernel would wait for peers that cannot run meanwhile.
    if (sharing > 1 && v.mps != 1) d.time_sliced = true;
    blocks = std::min(blocks, std::max(1, v.sm_count / sharing));
  }
  if (n >= 1 && n <= kFusedMaxRanks && !any_off && (!d.time_sliced || all_on)) d.blocks = blocks;
  return d;
}

}  // namespace gcoll
