// The emulated GPU's fused one-shot kernel: see emulate_fused.h.
#include "cuda/emulate_fused.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "cuda/emulate_streams.h"
#include "kernels/host_reduce.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

// Steps 1 to 5 of kernels/fused.h, block after block (a valid schedule of the GPU's
// concurrent blocks: every block publishes and posts before any waits). Waiting yields
// the CPU (the emulation shares a few cores with all the ranks), within p.spin_ns. A
// random delay (GCOLL_EMU_DELAY, now and then 8 times as long) before each block's
// result, as on a slow or busy SM, keeps readers of a bank late enough for an early
// overwrite to show.
bool run_fused(const FusedEmuJob &j) {
  const FusedParams &p = j.p;
  FusedControl *const mine = j.ctl[p.me];
  // Stream-ordered (seq 0): the number kept on the device, and the op's bank.
  const std::uint64_t s = p.seq ? p.seq : __atomic_load_n(&mine->epoch, __ATOMIC_ACQUIRE) + 1;
  const std::size_t off = p.seq ? 0 : static_cast<std::size_t>(s & 1) * p.bank_stride;
  bool all_done = true;
  if (!p.resume) {
    const bool publish = !p.failed && (p.kind != FusedKind::Bcast || p.me == p.root);
    for (int b = 0; b < p.blocks; ++b) {
      std::size_t lo, hi;
      fused_range(p.bytes, p.blocks, b, &lo, &hi);
      if (publish && hi > lo) std::memcpy(j.bank[p.me] + off + lo, j.in + lo, hi - lo);
      if (p.failed) __atomic_store_n(&mine->failed[s & 1], s, __ATOMIC_RELEASE);
      __atomic_store_n(&mine->flag[b], s, __ATOMIC_RELEASE);
    }
  }
  const std::uint64_t budget_ns = p.spin_ns;
  for (int b = 0; b < p.blocks; ++b) {
    std::uint64_t code = p.failed ? kFusedFailed : kFusedDone;
    for (int q = 0; q < p.nranks; ++q) {
      if (q == p.me) continue;
      const std::uint64_t *flag = &j.ctl[q]->flag[b];
      const auto t0 = std::chrono::steady_clock::now();
      bool arrived = false;
      for (unsigned spin = 0;; ++spin) {
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) >= s) {
          arrived = true;
          break;
        }
        const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
        if (static_cast<std::uint64_t>(waited.count()) > budget_ns) break;
        if (spin < 16)
          sched_yield();
        else
          std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      if (!arrived)
        code = std::max<std::uint64_t>(code, kFusedTimedOut);
      else if (__atomic_load_n(&j.ctl[q]->failed[s & 1], __ATOMIC_ACQUIRE) == s)
        code = std::max<std::uint64_t>(code, kFusedFailed);
    }
    std::size_t lo, hi;
    fused_range(p.bytes, p.blocks, b, &lo, &hi);
    if (code == kFusedDone && hi > lo) {
      std::uint32_t us = random_delay_us();
      if (us % 8 == 1) us *= 8;  // now and then a much slower block
      if (us) std::this_thread::sleep_for(std::chrono::microseconds(us));
      switch (p.kind) {
        case FusedKind::Allreduce: {
          const void *srcs[kFusedMaxRanks];
          for (int q = 0; q < p.nranks; ++q) srcs[q] = j.bank[q] + off + lo;
          if (!ok(host_reduce(p.dtype, p.op, j.out + lo, srcs, p.nranks, (hi - lo) / p.elem))) code = kFusedFailed;
          break;
        }
        case FusedKind::Bcast:
          if (p.me != p.root) std::memcpy(j.out + lo, j.bank[p.root] + off + lo, hi - lo);
          break;
        case FusedKind::Allgather:
          for (int q = 0; q < p.nranks; ++q)
            if (j.dst[q]) std::memcpy(j.dst[q] + lo, j.bank[q] + off + lo, hi - lo);
          break;
      }
    }
    __atomic_store_n(&j.status[b], (s << 2) | code, __ATOMIC_RELEASE);
    all_done = all_done && code == kFusedDone;
  }
  // The blocks ran one after the other: the last one moves the epoch on.
  if (!p.seq) __atomic_store_n(&mine->epoch, s, __ATOMIC_RELEASE);
  return all_done;
}

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
