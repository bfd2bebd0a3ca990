// The emulated GPU's streams: see emulate_streams.h.
#include "cuda/emulate_streams.h"

#include <unistd.h>

#include <chrono>
#include <random>

#include "base/config.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

std::atomic<int> g_delay_override{-1};

std::uint32_t random_delay_us() {
  const int o = g_delay_override.load(std::memory_order_relaxed);
  const int max = o >= 0 ? o : config().emu_delay_us;
  if (max <= 0) return 0;
  thread_local std::minstd_rand rng(static_cast<std::uint32_t>(
      static_cast<std::uint64_t>(getpid()) * 2654435761u ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      std::hash<std::thread::id>{}(std::this_thread::get_id())));
  return std::uniform_int_distribution<std::uint32_t>(0, static_cast<std::uint32_t>(max))(rng);
}

State &state() {
  static State *const s = new State;
  return *s;
}

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
