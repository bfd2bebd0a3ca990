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

namespace gcoll::pinned {

namespace {

cuda::Runtime &rt() { return cuda::runtime(); }

std::atomic<bool> g_warned_pageable{false};

class Pool {
 public:
  void *get(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->second.bytes >= bytes && (best == free_.end() || it->second.bytes < best->second.bytes)) best = it;
      if (best != free_.end()) {
        void *p = best->first;
        used_[p] = best->second;
        cached_ -= best->second.bytes;
        free_.erase(best);
        return p;
      }
    }
    std::size_t want = std::size_t{1} << 16;
    while (want < bytes) want <<= 1;
    void *p = nullptr;
    Buf b{want, true};
    if (!ok(alloc_host(rt(), want, &p, &b.pinned))) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    used_[p] = b;
    return p;
  }

  void put(void *p) {
    std::lock_guard<std::mutex> lock(mu_);
    const Buf b = used_[p];
    used_.erase(p);
    free_.emplace_back(p, b);
    cached_ += b.bytes;
    // Keep at most kMaxCached bytes idle: free the smallest first (the largest serve all).
    while (cached_ > kMaxCached && free_.size() > 1) {
      auto small = std::min_element(free_.begin(), free_.end(),
                                    [](const auto &a, const auto &c) { return a.second.bytes < c.second.bytes; });
      free_host(rt(), small->first, small->second.pinned);
      cached_ -= small->second.bytes;
      free_.erase(small);
    }
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &f : free_) free_host(rt(), f.first, f.second.pinned);
    free_.clear();
    cached_ = 0;
  }

 private:
  struct Buf {
    std::size_t bytes = 0;
    bool pinned = true;
  };
  static constexpr std::size_t kMaxCached = std::size_t{1} << 30;
  std::mutex mu_;
  std::vector<std::pair<void *, Buf>> free_;
  std::map<void *, Buf> used_;  // buffers in use
  std::size_t cached_ = 0;
};

Pool &pool() {
  static Pool *p = new Pool;  // never destroyed: release() empties it
  return *p;
}

std::mutex g_streams_mu;
std::map<int, cuda::Stream> g_streams;
std::vector<std::pair<int, cuda::Event>> g_free_events;  // (device, event)

}  // namespace

Status alloc_host(cuda::Runtime &r, std::size_t bytes, void **p, bool *pinned) {
  *p = nullptr;
  if (ok(r.malloc_host(p, bytes))) {
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

void *get(std::size_t bytes) { return pool().get(bytes); }
void put(void *p) { pool().put(p); }

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
  pool().clear();  // empty unless something was staged
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
