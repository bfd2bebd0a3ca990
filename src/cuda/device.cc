#include "cuda/device.h"

#include <atomic>

#include "base/config.h"
#include "base/log.h"
#include "cuda/emulate.h"

namespace gcoll {
namespace cuda {

#if GCOLL_HAVE_CUDA
// driver_cuda.cc: the driver reached through the CUDA runtime's entry points.
Driver *make_real_driver();
#endif

namespace {

// Built without CUDA: no buffer is ever device memory.
class NoDriver final : public Driver {
 public:
  bool usable() override { return false; }
  Status query(const void *, PtrInfo *out) override {
    *out = PtrInfo{};
    return Status::NotSupported;
  }
  Status ipc_export(std::uintptr_t, IpcHandle *) override { return Status::NotSupported; }
  Status ipc_open(const IpcHandle &, void **out) override {
    *out = nullptr;
    return Status::NotSupported;
  }
  Status ipc_close(void *) override { return Status::NotSupported; }
};

std::atomic<Driver *> g_override{nullptr};
std::atomic<bool> g_query_warned{false};

Driver &default_driver() {
  // Never destroyed: other static destructors and atexit handlers (MPI_Finalize called
  // from one) may still classify buffers or close mappings.
  // GCOLL_CUDA=emulate (testing only): the emulated GPU, and no CUDA call at all.
  static Driver *const d = [] () -> Driver * {
    if (config().cuda_emulate) return &emulated_driver();
#if GCOLL_HAVE_CUDA
    return make_real_driver();
#else
    return new NoDriver;
#endif
  }();
  return *d;
}

}  // namespace

Driver &driver() {
  Driver *o = g_override.load(std::memory_order_acquire);
  return o ? *o : default_driver();
}

void set_driver_for_testing(Driver *d) { g_override.store(d, std::memory_order_release); }

// Per buffer argument of every collective: no lock, no allocation.
PtrInfo classify(const void *p) {
  if (!p) return PtrInfo{};
  Driver &d = driver();
  if (!d.usable()) return PtrInfo{};
  PtrInfo info;
  const Status st = d.query(p, &info);
  if (!ok(st)) {
    if (!g_query_warned.exchange(true, std::memory_order_relaxed))
      GCOLL_WARN("CUDA: pointer query failed (%s); such buffers are treated as host memory (logged once)",
                 status_name(st));
    return PtrInfo{};
  }
  return info;
}

// ---- IpcExportCache ----------------------------------------------------------
// Not thread-safe: the caller holds its communicator's lock.

Status IpcExportCache::get(const PtrInfo &buf, IpcHandle *out) {
  // Decided before any byte moved: the caller falls back (pool and cuMemCreate
  // allocations have no legacy handle).
  if (!buf.device || !buf.ipc_capable) return Status::NotSupported;
  const Key key{buf.base, buf.buffer_id};
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.pos);
    *out = it->second.h;
    return Status::Ok;
  }
  // Another ID at this base: that allocation was freed (IDs are never reused), so its
  // handle is of no use any more.
  for (auto s = entries_.lower_bound(Key{buf.base, 0}); s != entries_.end() && s->first.base == buf.base;) {
    lru_.erase(s->second.pos);
    s = entries_.erase(s);
  }
  IpcHandle h;
  const Status st = d_.ipc_export(buf.base, &h);
  if (!ok(st)) return st;
  lru_.push_front(key);
  entries_.emplace(key, Entry{h, lru_.begin()});
  // An export holds nothing in the driver: dropping one needs no call.
  while (entries_.size() > max_ && !lru_.empty()) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  *out = h;
  return Status::Ok;
}

// ---- IpcOpenCache ------------------------------------------------------------
// Not thread-safe: the caller holds its communicator's lock.

IpcOpenCache::~IpcOpenCache() { clear(); }

Status IpcOpenCache::open(int peer, std::uintptr_t base, std::size_t size, std::uint64_t id, const IpcHandle &h,
                          void **out) {
  const Key key{peer, base};
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    Entry &e = it->second;
    if (e.id == id) {
      lru_.splice(lru_.begin(), lru_, e.pos);
      e.epoch = epoch_;
      *out = e.local;
      return Status::Ok;
    }
    // The peer freed this allocation and has another at the same address: the old
    // mapping shows memory that is no longer the peer's buffer.
    d_.ipc_close(e.local);
    bytes_ -= e.size;
    lru_.erase(e.pos);
    entries_.erase(it);
    ++stale_;
  }
  evict_until_fits(size);
  void *local = nullptr;
  const Status st = d_.ipc_open(h, &local);
  if (!ok(st)) {
    *out = nullptr;
    return st;
  }
  lru_.push_front(key);
  entries_.emplace(key, Entry{id, size, local, epoch_, lru_.begin()});
  bytes_ += size;
  ++opens_;
  *out = local;
  return Status::Ok;
}

void IpcOpenCache::evict_until_fits(std::size_t incoming) {
  while (!lru_.empty() && (bytes_ + incoming > max_bytes_ || entries_.size() + 1 > max_entries_)) {
    // Every use moves its entry to the front with the current epoch, so the entries the
    // current call holds pointers into form a prefix of the list: when the last one is
    // pinned, all are. Then the bound is exceeded until the next call.
    auto it = entries_.find(lru_.back());
    if (it->second.epoch == epoch_) break;
    d_.ipc_close(it->second.local);
    bytes_ -= it->second.size;
    entries_.erase(it);
    lru_.pop_back();
    ++evicted_;
  }
}

void IpcOpenCache::clear() {
  for (auto &kv : entries_) d_.ipc_close(kv.second.local);
  entries_.clear();
  lru_.clear();
  bytes_ = 0;
}

}  // namespace cuda
}  // namespace gcoll
