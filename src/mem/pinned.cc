#include "mem/pinned.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "base/log.h"
#include "cuda/stream_order.h"
#include "mem/device_scope.h"
#include "mem/numa_place.h"
#include "mem/pool.h"

namespace gcoll::pinned {

namespace {

cuda::Runtime &rt() { return cuda::runtime(); }

std::atomic<bool> g_warned_pageable{false};

bool alloc_staging(int, std::size_t bytes, void **p, bool *pinned) { return ok(alloc_host(rt(), bytes, p, pinned)); }
void free_staging(int, void *p, bool pinned) { free_host(rt(), p, pinned); }

bool alloc_device(int gpu, std::size_t bytes, void **p, bool *) {
  DeviceScope scope(gpu);
  return ok(scope.status()) && ok(rt().malloc_device(p, bytes));
}
void free_device(int gpu, void *p, bool) {
  DeviceScope scope(gpu);
  rt().free_device(p);
}

// Never destroyed (exit handlers may still call MPI): release() empties them.
BufferPool &staging_pool() {
  static BufferPool *const p = new BufferPool(alloc_staging, free_staging);
  return *p;
}
BufferPool &device_pool() {
  static BufferPool *const p = new BufferPool(alloc_device, free_device);
  return *p;
}

std::mutex g_streams_mu;
std::map<int, cuda::Stream> g_streams;
std::vector<std::pair<int, cuda::Event>> g_free_events;  // (device, event)

// The reservation of the stream-ordered call this thread runs (ReservedScope).
thread_local ReservedStaging *t_reserved = nullptr;

// On a stream-ordered call's thread: no allocation, no free (pinned.h).
bool may_allocate() { return !cuda::in_stream_ordered_call(); }

}  // namespace

Status alloc_host(cuda::Runtime &r, std::size_t bytes, void **p, bool *pinned) {
  *p = nullptr;
  bool got;
  {
    // On the NUMA node of the GPU whose data it stages (the current device's).
    numa_place::PreferNode near(numa_place::gpu_numa_node(r.current_device()));
    got = ok(r.malloc_host(p, bytes));
  }
  if (got) {
    *pinned = true;
    return Status::Ok;
  }
  const std::string why = r.last_error();
  constexpr std::size_t kPage = 4096;
  const std::size_t len = bytes ? (bytes + kPage - 1) / kPage * kPage : kPage;
  *p = std::aligned_alloc(kPage, len);
  if (*p == nullptr) {
    GCOLL_WARN("host memory (%zu bytes) to stage device data through: pinned memory cannot be had (%s), nor "
               "pageable memory",
               bytes, why.c_str());
    return Status::ErrNoMem;
  }
  *pinned = false;
  if (!g_warned_pageable.exchange(true))
    GCOLL_WARN("pinned host memory (%zu bytes) cannot be had (%s; a memlock limit, `ulimit -l`, in a container?): "
               "device data is staged through pageable host memory instead, more slowly",
               bytes, why.c_str());
  return Status::Ok;
}

void free_host(cuda::Runtime &r, void *p, bool pinned) {
  if (pinned) r.free_host(p);
  else std::free(p);
}

void *get(std::size_t bytes) {
  if (ReservedStaging *r = t_reserved) {
    int best = -1;
    for (int i = 0; i < 2; ++i)
      if (r->buf[i] && !r->busy[i] && r->bytes[i] >= bytes && (best < 0 || r->bytes[i] < r->bytes[best])) best = i;
    if (best >= 0) {
      r->busy[best] = true;
      return r->buf[best];
    }
  }
  return staging_pool().get(-1, bytes, nullptr, may_allocate());
}
void put(void *p) {
  if (ReservedStaging *r = t_reserved)
    for (int i = 0; i < 2; ++i)
      if (r->buf[i] == p && r->busy[i]) {
        r->busy[i] = false;
        return;
      }
  staging_pool().put(p, may_allocate());
}

void *get_device(int gpu, std::size_t bytes, std::size_t *got) { return device_pool().get(gpu, bytes, got); }
void put_device(void *p) { device_pool().put(p); }

cuda::Stream stream(int device) {
  std::lock_guard<std::mutex> lock(g_streams_mu);
  auto it = g_streams.find(device);
  if (it != g_streams.end()) return it->second;
  if (!may_allocate()) return nullptr;  // (made by StreamStaging::reserve)
  cuda::Stream s = nullptr;
  if (!ok(rt().stream_create(&s))) return nullptr;
  g_streams[device] = s;
  return s;
}

cuda::Event take_event(int device) {
  if (ReservedStaging *r = t_reserved) {
    if (r->event && !r->event_busy && r->device == device) {
      r->event_busy = true;
      return r->event;
    }
  }
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    for (auto it = g_free_events.begin(); it != g_free_events.end(); ++it)
      if (it->first == device) {
        cuda::Event e = it->second;
        g_free_events.erase(it);
        return e;
      }
  }
  if (!may_allocate()) return nullptr;
  cuda::Event e = nullptr;
  if (!ok(rt().event_create(&e))) return nullptr;
  return e;
}

void give_event(int device, cuda::Event e) {
  if (ReservedStaging *r = t_reserved) {
    if (r->event == e && r->event_busy) {
      r->event_busy = false;
      return;
    }
  }
  std::lock_guard<std::mutex> lock(g_streams_mu);
  g_free_events.emplace_back(device, e);
}

ReservedStaging::~ReservedStaging() {
  for (void *p : buf)
    if (p) staging_pool().put(p);
  if (event) give_event(device, event);
}

std::shared_ptr<ReservedStaging> StreamStaging::reserve(std::size_t a, std::size_t b) {
  if (a > b) std::swap(a, b);
  const ReservedStaging *cur = sets_.empty() ? nullptr : sets_.back().get();
  if (cur && cur->bytes[0] >= a && cur->bytes[1] >= b) return sets_.back();
  DeviceScope scope(device_);
  if (!ok(scope.status()) || !stream(device_)) return nullptr;
  auto set = std::make_shared<ReservedStaging>();
  set->device = device_;
  const std::size_t want[2] = {a, b};
  for (int i = 0; i < 2; ++i) {
    const std::size_t had = cur ? cur->bytes[i] : 0;
    const std::size_t n = want[i] <= had ? had : std::max(want[i], 2 * had);
    if (!n) continue;
    set->buf[i] = staging_pool().get(-1, n, &set->bytes[i]);
    if (!set->buf[i]) return nullptr;  // (what it got goes back with `set`)
  }
  set->event = take_event(device_);
  if (!set->event) return nullptr;
  sets_.push_back(set);
  return set;
}

ReservedScope::ReservedScope(ReservedStaging *set) : saved_(t_reserved) { t_reserved = set; }
ReservedScope::~ReservedScope() { t_reserved = saved_; }

void release() {
  staging_pool().clear();  // empty unless something was staged
  device_pool().clear();   // or deviated
  std::lock_guard<std::mutex> lock(g_streams_mu);
  if (g_streams.empty() && g_free_events.empty()) return;  // never staged: touch nothing
  const int prev = rt().current_device();
  for (auto &kv : g_streams) {
    rt().set_device(kv.first);
    rt().stream_destroy(kv.second);
  }
  g_streams.clear();
  for (auto &de : g_free_events) {
    rt().set_device(de.first);
    rt().event_destroy(de.second);
  }
  g_free_events.clear();
  if (prev >= 0) rt().set_device(prev);
}

}  // namespace gcoll::pinned
