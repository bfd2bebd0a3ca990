// The emulated GPU's fused one-shot kernel (kernels/fused.h), run on a stream's worker
// thread. Internal to src/cuda/emulate*.cc.
#pragma once

#include <cstdint>

#include "kernels/fused.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

constexpr int kEmuSms = 16;  // the emulated GPU's SM count (the fused kernels' blocks, all ranks together)

// One op of kernels/fused.h with every pointer translated to the emulation's views.
struct FusedEmuJob {
  FusedParams p;
  unsigned char *bank[kFusedMaxRanks] = {};
  FusedControl *ctl[kFusedMaxRanks] = {};
  unsigned char *dst[kFusedMaxRanks] = {};
  const unsigned char *in = nullptr;
  unsigned char *out = nullptr;
  std::uint64_t *status = nullptr;
};

// Steps 1 to 5 of kernels/fused.h, block after block (a valid schedule of the GPU's
// concurrent blocks: every block publishes and posts before any waits). Whether every
// block's outcome is kFusedDone.
bool run_fused(const FusedEmuJob &j);

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
