#include "cuda/driver_gate.h"

#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "base/log.h"

namespace gcoll {
namespace cuda {

namespace {

struct Counters {
  bool valid = false;
  unsigned long long adds = 0, subs = 0;
};

// The loader's counters, from the first object; stops there.
int first_object(dl_phdr_info *info, std::size_t size, void *data) {
  auto *c = static_cast<Counters *>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    c->valid = true;
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;
}

struct Search {
  const char *name;
  bool found = false;
};

int each_object(dl_phdr_info *info, std::size_t, void *data) {
  auto *s = static_cast<Search *>(data);
  if (info->dlpi_name && library_name_matches(info->dlpi_name, s->name)) {
    s->found = true;
    return 1;
  }
  return 0;
}

}  // namespace

bool library_name_matches(const char *path, const char *name) {
  if (!path || !name || !*name) return false;
  const char *slash = std::strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  const std::size_t n = std::strlen(name);
  return std::strncmp(base, name, n) == 0 && (base[n] == '\0' || base[n] == '.');
}

bool LibraryWatch::loaded() {
  if (found_.load(std::memory_order_acquire)) return true;
  Counters c;
  dl_iterate_phdr(first_object, &c);
  // Nothing loaded or unloaded since the last listing: the answer stands. (Counters read
  // before the listing: an object loaded meanwhile moves them again, and is looked for at
  // the next call.)
  if (c.valid && c.adds == adds_.load(std::memory_order_acquire) && c.subs == subs_.load(std::memory_order_acquire))
    return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (found_.load(std::memory_order_acquire)) return true;
  Search s{name_};
  dl_iterate_phdr(each_object, &s);
  scans_.fetch_add(1, std::memory_order_relaxed);
  if (s.found) {
    found_.store(true, std::memory_order_release);
    return true;
  }
  if (c.valid) {
    subs_.store(c.subs, std::memory_order_release);
    adds_.store(c.adds, std::memory_order_release);
  }
  return false;
}

bool nvidia_gpu_visible() {
  const int saved = errno;
  bool seen = false;
  for (const char *path : {"/dev/nvidiactl", "/proc/driver/nvidia/gpus", "/dev/dxg"})
    seen = seen || access(path, F_OK) == 0;
  errno = saved;
  return seen;
}

DriverGate::State DriverGate::decide() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state() != State::Unknown) return state();
  enabled_ = steps_.enabled();
  if (!enabled_) {
    GCOLL_INFO("CUDA: off (GCOLL_CUDA=off): every buffer is host memory");
    publish(State::Absent);
    return State::Absent;
  }
  if (steps_.loaded()) {
    GCOLL_INFO("CUDA: libcuda.so.1 is loaded in this process: probing the driver");
    ++probes_;
    const State s = steps_.probe() ? State::Active : State::Absent;
    publish(s);
    return s;
  }
  if (!steps_.gpu_visible()) {
    GCOLL_INFO("CUDA: no NVIDIA GPU visible (/dev/nvidiactl, /proc/driver/nvidia/gpus, /dev/dxg) and libcuda.so.1 "
               "not loaded: every buffer is host memory (GCOLL_CUDA_ASSUME_GPU=1: wait for the application to load it "
               "instead)");
    publish(State::Absent);
    return State::Absent;
  }
  GCOLL_INFO("CUDA: libcuda.so.1 is not loaded in this process: every buffer is host memory until the application "
             "loads it (gcoll does not load the driver itself)");
  if (steps_.dormant) steps_.dormant();
  publish(State::Dormant);
  return State::Dormant;
}

DriverGate::State DriverGate::wake(bool force) {
  std::lock_guard<std::mutex> lock(mu_);
  const State s = state();
  if (s == State::Active) return s;
  // Absent: off, or probed already; else (not visible) only for a tool that asks.
  if (!enabled_ || probes_ > 0) return s;
  if (s == State::Absent && !force) return s;
  if (force)
    GCOLL_INFO("CUDA: probing the driver (asked for the machine's GPUs)");
  else
    GCOLL_INFO("CUDA: the application has loaded libcuda.so.1: probing the driver");
  ++probes_;
  const State now = steps_.probe() ? State::Active : State::Absent;
  publish(now);
  return now;
}

}  // namespace cuda
}  // namespace gcoll
