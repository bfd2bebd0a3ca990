// What this rank's buffers of one call are (coll/team_memory.h classifies them), and the
// last call's answer kept per communicator (Team::memo).
#pragma once

#include <atomic>
#include <cstdint>

namespace gcoll {

struct LocalMemory {
  bool host = false;       // some buffer is host memory
  bool device = false;     // some buffer is device memory
  bool non_ipc = false;    // some device buffer cannot be exported by CUDA IPC (pools, cuMemCreate)
  bool split_gpu = false;  // device buffers on two GPUs, or not on the communicator's engine GPU
  int ordinal = -1;        // the GPU of the device buffers
  bool is_device[2] = {false, false};  // per buffer given to classify_local (first two)
  bool reusable = false;   // every answer was `cacheable` (cuda/device.h): may be kept (KindMemo)
};

// The last call's classification on a communicator (its send and receive buffers), kept
// while the driver's kind epoch holds still: the same buffers call after call cost two
// compares and a load (the per-buffer cache of cuda/device.h is the next level).
struct KindMemo {
  const void *bufs[2] = {nullptr, nullptr};
  const std::atomic<std::uint64_t> *epoch = nullptr;  // nullptr: nothing kept
  std::uint64_t epoch_value = 0;
  std::uint64_t generation = 0;
  int engine_device = -1;
  LocalMemory lm;
};

}  // namespace gcoll
