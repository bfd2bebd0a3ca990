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

void *get(std::size_t bytes) { return staging_pool().get(-1, bytes); }
void put(void *p) { staging_pool().put(p); }

void *get_device(int gpu, std::size_t bytes, std::size_t *got) { return device_pool().get(gpu, bytes, got); }
void put_device(void *p) { device_pool().put(p); }

cuda::Stream stream(int device) {
  std::lock_guard<std::mutex> lock(g_streams_mu);
  auto it = g_streams.find(device);
  if (it != g_streams.end()) return it->second;
  cuda::Stream s = nullptr;
  if (!ok(rt().stream_create(&s))) return nullptr;
  g_streams[device] = s;
  return s;
}

cuda::Event take_event(int device) {
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    for (auto it = g_free_events.begin(); it != g_free_events.end(); ++it)
      if (it->first == device) {
        cuda::Event e = it->second;
        g_free_events.erase(it);
        return e;
      }
  }
  cuda::Event e = nullptr;
  if (!ok(rt().event_create(&e))) return nullptr;
  return e;
}

void give_event(int device, cuda::Event e) {
  std::lock_guard<std::mutex> lock(g_streams_mu);
  g_free_events.emplace_back(device, e);
}

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
