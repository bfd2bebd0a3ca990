// The emulated GPU's streams: see emulate_streams.h.
#include "cuda/emulate_streams.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

#include "base/config.h"
#include "base/log.h"
#include "cuda/emulate_machine.h"
#include "cuda/stream_order.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

std::atomic<int> g_delay_override{-1};

thread_local EmuStream *EmuStream::t_running_ = nullptr;

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

void note_device_wait() {
  if (!in_stream_ordered_call()) return;
  if (g_stream_ordered_device_waits.fetch_add(1, std::memory_order_relaxed) == 0)
    GCOLL_WARN("emulated GPU: a wait for the whole device on the thread of a stream-ordered call (MPIX_*_enqueue): "
               "on a GPU it can hang, the application's stream waiting for this very call");
}

void note_exclusive(const char *what) {
  if (!in_stream_ordered_call()) return;
  if (g_stream_ordered_device_waits.fetch_add(1, std::memory_order_relaxed) == 0)
    GCOLL_WARN("emulated GPU: %s on the thread of a stream-ordered call (MPIX_*_enqueue): on a GPU it waits for the "
               "driver's lock, which an application's thread holds while it waits for its stream (a copy to pageable "
               "memory queued after the call): it hangs",
               what);
}

void wait_value32(const volatile std::uint32_t *word, std::uint32_t value) {
  constexpr int kYields = 256;  // about as long as a short collective takes to land
  for (int i = 0; __atomic_load_n(word, __ATOMIC_ACQUIRE) != value; ++i) {
    if (i < kYields) {
      std::this_thread::yield();
    } else {
      // 20 us at first, up to 50 us: a word set late is seen within 50 us.
      const int us = std::min(20 + (i - kYields), 50);
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
  }
}

State &state() {
  static State *const s = new State;
  return *s;
}

bool default_stream_handle(void *s) {
  const auto v = reinterpret_cast<std::uintptr_t>(s);
  return v == 0 || v == 1 || v == 2;  // 0, cudaStreamLegacy, cudaStreamPerThread
}

EmuStream *resolve_stream(void *s) {
  return default_stream_handle(s) ? state().legacy() : static_cast<EmuStream *>(s);
}

EmuStream *resolve_checked(void *s) {
  if (default_stream_handle(s)) return state().legacy();
  auto *es = static_cast<EmuStream *>(s);
  if (state().known(es)) return es;
  set_error("emulated GPU: %p is not a stream of the emulation", s);
  return nullptr;
}

bool refused_under_capture(EmuStream *es, const char *what, bool unsupported) {
  if (!es->invalidate_capture(what)) return false;
  set_error("emulated GPU: %s on stream %p, which is capturing a graph: %s; the capture is invalidated "
            "(its end gives no graph)",
            what, static_cast<void *>(es),
            unsupported ? "not supported by the emulation under capture"
                        : "not permitted while capturing (CUDA: cudaErrorStreamCaptureUnsupported)");
  return true;
}

bool pageable_copy_refused(EmuStream *es, int dst_kind, int src_kind) {
  if ((dst_kind >= 0 && src_kind >= 0) || !es->invalidate_capture("a copy to or from pageable host memory"))
    return false;
  set_error("emulated GPU: a copy %s pageable host memory on stream %p, which is capturing a graph: the "
            "copy is staged or waited for when it is queued (cudaMemcpyAsync's way with pageable memory), "
            "which a graph cannot replay (use pinned memory); the capture is invalidated",
            src_kind < 0 ? "from" : "to", static_cast<void *>(es));
  return true;
}

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
