// When gcoll may load the CUDA driver: only once the application's process has loaded
// libcuda.so.1 itself (issue 28: a process that never uses CUDA must end, under gcoll, with
// no trace of the driver: no thread of its, no descriptor on /dev/nvidia*, no eventfd,
// pipe or socket of its; found on an H200, docs/gpu-runs/2026-11-27c-h200.md).
//
// Why that is enough: device, pinned and managed memory only exist in a process that has
// loaded libcuda.so.1 (the runtime, static or shared, dlopens it at its first call). Until
// then every buffer is host memory, exactly, and nobody needs to ask a driver. An
// application often calls MPI_Init before its first CUDA call, so the process is looked at
// again later, where a classification would otherwise ask the driver (a memory-kind cache
// miss, device.h), cheaply: LibraryWatch.
//
// DriverGate is the state of the real driver (driver_cuda.cc), with its steps given as
// functions so that tests drive it without CUDA:
//   Unknown -> Absent:  GCOLL_CUDA=off, or neither an NVIDIA GPU visible
//                       (nvidia_gpu_visible(), or GCOLL_CUDA_ASSUME_GPU=1) nor libcuda
//                       loaded: no device memory, ever (the host fast path);
//   Unknown -> Dormant: a GPU is visible but libcuda is not loaded: usable() (the process
//                       may hold device memory later: communicators classify its buffers,
//                       so that device buffers are seen when they come), every buffer host;
//   Unknown/Dormant -> Active or Absent: libcuda is loaded (decided, or seen by a later
//                       look): the driver is probed (loaded through the runtime,
//                       initialised, its devices counted), and is usable or not.
// Decided once (usable() is one load after that); Dormant is left at most once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

namespace gcoll {
namespace cuda {

// Whether a library whose file name is `name` (or `name` followed by a dot and a version:
// "libcuda.so" matches libcuda.so, libcuda.so.1, libcuda.so.580.95.05) is loaded in this
// process, by its loaded objects' file names (dl_iterate_phdr). The objects are listed
// again only when the loader's counters of loads and unloads (dlpi_adds, dlpi_subs, read
// from the first object) moved since the last look: otherwise a look costs one
// dl_iterate_phdr that stops at its first object. Never loads, opens or changes anything
// (no dlopen: dlerror()'s message stays the application's). Once found, found for good.
// Thread-safe.
class LibraryWatch {
 public:
  explicit LibraryWatch(const char *name) : name_(name) {}
  bool loaded();
  // Full listings made so far (tests: the counters spare them).
  std::uint64_t scans() const { return scans_.load(std::memory_order_relaxed); }

 private:
  const char *name_;
  std::atomic<bool> found_{false};
  std::atomic<std::uint64_t> adds_{0}, subs_{0};  // at the last full listing (0: none yet)
  std::atomic<std::uint64_t> scans_{0};
  std::mutex mu_;
};

// The file name rule of LibraryWatch, for tests: `path`'s last component is `name` or
// `name` + "." + anything.
bool library_name_matches(const char *path, const char *name);

// Whether this machine shows an NVIDIA GPU to this process without asking CUDA: the
// driver's control device (/dev/nvidiactl), the kernel module's /proc/driver/nvidia/gpus,
// or WSL's GPU device (/dev/dxg). Files are only looked up (access), never opened.
bool nvidia_gpu_visible();

class DriverGate {
 public:
  enum class State : int { Unknown = -1, Absent = 0, Active = 1, Dormant = 2 };
  struct Steps {
    std::function<bool()> enabled;      // GCOLL_CUDA is not off
    std::function<bool()> gpu_visible;  // nvidia_gpu_visible() or GCOLL_CUDA_ASSUME_GPU
    std::function<bool()> loaded;       // libcuda.so.1 is in the process (LibraryWatch)
    std::function<void()> dormant;      // before Dormant is published (the memory hooks)
    std::function<bool()> probe;        // loads and asks the driver: true where usable
  };
  explicit DriverGate(Steps steps) : steps_(std::move(steps)) {}

  // The process may hold device memory: Active, or Dormant. Decided at the first call of
  // any of these; one acquire load after that.
  bool usable() {
    State s = state();
    if (__builtin_expect(s == State::Unknown, 0)) s = decide();
    return s == State::Active || s == State::Dormant;
  }
  // The driver is loaded and usable: device memory may exist now. Dormant: looks whether
  // the application has loaded libcuda meanwhile (LibraryWatch: cheap when nothing was
  // loaded), and probes the driver when it has.
  bool active() {
    State s = state();
    if (__builtin_expect(s == State::Active, 1)) return true;
    if (s == State::Unknown) s = decide();
    if (s == State::Dormant && steps_.loaded()) s = wake(false);
    return s == State::Active;
  }
  // Tools only (gcoll_info --topology, which asks for the machine's GPUs): probes the
  // driver now, whether or not the process has loaded it (not under GCOLL_CUDA=off, and
  // not again after a probe).
  bool load() {
    if (state() == State::Active) return true;
    if (state() == State::Unknown) decide();
    return wake(true) == State::Active;
  }
  State state() const { return static_cast<State>(state_.load(std::memory_order_acquire)); }
  int probes() const { return probes_; }

 private:
  State decide();
  State wake(bool force);
  void publish(State s) { state_.store(static_cast<int>(s), std::memory_order_release); }

  Steps steps_;
  std::atomic<int> state_{static_cast<int>(State::Unknown)};
  std::mutex mu_;        // decide() and wake()
  bool enabled_ = true;  // under mu_
  int probes_ = 0;       // under mu_ (read by tests after the fact)
};

}  // namespace cuda
}  // namespace gcoll
