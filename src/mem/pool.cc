#include "mem/pool.h"

#include <algorithm>

namespace gcoll {

void *BufferPool::get(int key, std::size_t bytes, std::size_t *got, bool may_allocate) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it)
      if (it->key == key && it->bytes >= bytes && (best == idle_.end() || it->bytes < best->bytes)) best = it;
    if (best != idle_.end()) {
      const Buf b = *best;
      idle_.erase(best);
      idle_bytes_ -= b.bytes;
      used_[b.p] = b;
      if (got) *got = b.bytes;
      return b.p;
    }
  }
  if (!may_allocate) return nullptr;
  Buf b;
  b.key = key;
  b.bytes = std::size_t{1} << 16;
  while (b.bytes < bytes) b.bytes <<= 1;
  if (!alloc_(key, b.bytes, &b.p, &b.tag)) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  used_[b.p] = b;
  if (got) *got = b.bytes;
  return b.p;
}

void BufferPool::put(void *p, bool may_free) {
  std::vector<Buf> drop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = used_.find(p);
    if (it == used_.end()) return;  // not one of ours
    idle_.push_back(it->second);
    idle_bytes_ += it->second.bytes;
    used_.erase(it);
    while (may_free && idle_bytes_ > kMaxIdle && idle_.size() > 1) {
      auto small = std::min_element(idle_.begin(), idle_.end(), [](const Buf &a, const Buf &b) { return a.bytes < b.bytes; });
      drop.push_back(*small);
      idle_bytes_ -= small->bytes;
      idle_.erase(small);
    }
  }
  for (const Buf &b : drop) free_(b.key, b.p, b.tag);
}

void BufferPool::clear() {
  std::vector<Buf> drop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    drop.swap(idle_);
    idle_bytes_ = 0;
  }
  for (const Buf &b : drop) free_(b.key, b.p, b.tag);
}

}  // namespace gcoll
