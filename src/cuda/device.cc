#include "cuda/device.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <new>
#include <random>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "cuda/stream_order.h"
#include "base/stats.h"
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
std::atomic<std::uint64_t> g_driver_generation{0};  // set_driver_for_testing calls
std::atomic<bool> g_query_warned{false};

std::atomic<Driver *> g_default{nullptr};  // default_driver(), once made

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
  g_default.store(d, std::memory_order_release);
  return *d;
}

// GCOLL_MEMORY_CACHE, read once (-1: not yet).
std::atomic<int> g_cache_setting{-1};
bool cache_setting() {
  int v = g_cache_setting.load(std::memory_order_relaxed);
  if (__builtin_expect(v < 0, 0)) {
    v = config().memory_cache ? 1 : 0;
    g_cache_setting.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

}  // namespace

Driver &driver() {
  Driver *o = g_override.load(std::memory_order_acquire);
  if (o) return *o;
  Driver *d = g_default.load(std::memory_order_acquire);
  return d ? *d : default_driver();
}

void set_driver_for_testing(Driver *d) {
  g_driver_generation.fetch_add(1, std::memory_order_acq_rel);
  g_override.store(d, std::memory_order_release);
}

namespace {

// Each thread's cache, created at its first classification (a pointer in initial-exec
// TLS: one %fs load on the hot path, and libgcoll.so's static TLS stays small); freed when
// the thread exits, after which that thread queries every buffer (exit handlers that
// still call MPI).
thread_local KindCache *t_cache __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_cache_gone __attribute__((tls_model("initial-exec"))) = false;

struct CacheOwner {
  ~CacheOwner() {
    KindCache *c = t_cache;
    t_cache = nullptr;
    t_cache_gone = true;
    delete c;
  }
};
thread_local CacheOwner t_cache_owner;

KindCache *thread_cache() {
  if (__builtin_expect(t_cache != nullptr, 1)) return t_cache;
  if (t_cache_gone) return nullptr;
  KindCache *c = new (std::nothrow) KindCache;
  if (!c) return nullptr;  // out of memory: no cache, every buffer is queried
  (void)&t_cache_owner;    // constructs it: its destructor frees the cache at thread exit
  t_cache = c;
  return c;
}

}  // namespace

// Per buffer argument of every collective: no lock; no allocation after the thread's first.
void classify(const void *const *ps, int n, PtrInfo *out) {
  for (int i = 0; i < n; ++i) out[i] = PtrInfo{};
  Driver &d = driver();
  if (!d.usable()) return;
  // The epoch is read before the query: a change while we ask makes the answer stale.
  const std::atomic<std::uint64_t> *epoch = d.kind_epoch();
  KindCache *cache = epoch && cache_setting() ? thread_cache() : nullptr;
  std::uint64_t e = 0;
  if (cache) {
    cache->bind(epoch, g_driver_generation.load(std::memory_order_relaxed));
    e = epoch->load(std::memory_order_acquire);
  }
  Stats &stats = process_stats();
  for (int i = 0; i < n; ++i) {
    const void *p = ps[i];
    if (!p) continue;
    if (cache && cache->lookup(p, e, &out[i])) {
      stats.count(Counter::KindCacheHits);
      continue;
    }
    stats.count(Counter::PointerQueries);
    PtrInfo info;
    const Status st = d.query(p, &info);
    if (!ok(st)) {
      if (!g_query_warned.exchange(true, std::memory_order_relaxed))
        GCOLL_WARN("CUDA: pointer query failed (%s); such buffers are treated as host memory (logged once)",
                   status_name(st));
      continue;  // host
    }
    if (cache) cache->insert(p, e, info);
    out[i] = info;
  }
}

const std::atomic<std::uint64_t> *reuse_epoch() {
  Driver &d = driver();
  if (!d.usable() || !cache_setting()) return nullptr;
  return d.kind_epoch();
}

std::uint64_t driver_generation() { return g_driver_generation.load(std::memory_order_acquire); }

PtrInfo classify(const void *p) {
  PtrInfo info;
  classify(&p, 1, &info);
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

std::uint64_t process_token() {
  static const std::uint64_t token = [] {
    std::uint64_t t = 0;
    std::random_device rd;
    t = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    t ^= static_cast<std::uint64_t>(getpid()) * 0x9E3779B97F4A7C15ull;
    t ^= static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return t ? t : 1;
  }();
  return token;
}

namespace {

// Every IpcOpenCache of the process, for the purge after a refused open.
std::mutex g_caches_mu;
std::vector<IpcOpenCache *> &all_caches() {
  static std::vector<IpcOpenCache *> v;
  return v;
}

}  // namespace

IpcOpenCache::IpcOpenCache(Driver &d, std::size_t max_bytes, std::size_t max_entries)
    : d_(d), max_bytes_(max_bytes), max_entries_(max_entries) {
  std::lock_guard<std::mutex> g(g_caches_mu);
  all_caches().push_back(this);
}

IpcOpenCache::~IpcOpenCache() {
  {
    std::lock_guard<std::mutex> g(g_caches_mu);
    auto &v = all_caches();
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
  clear();
}

void IpcOpenCache::begin_call() {
  std::lock_guard<std::mutex> g(mu_);
  ++epoch_;
  in_call_ = true;
  if (!deferred_.empty() && !in_stream_ordered_call()) {
    for (void *p : deferred_) d_.ipc_close(p);
    deferred_.clear();
  }
}

void IpcOpenCache::end_call() {
  std::lock_guard<std::mutex> g(mu_);
  in_call_ = false;
}

std::size_t IpcOpenCache::entries() const {
  std::lock_guard<std::mutex> g(mu_);
  return entries_.size();
}
std::size_t IpcOpenCache::mapped_bytes() const {
  std::lock_guard<std::mutex> g(mu_);
  return bytes_;
}
std::uint64_t IpcOpenCache::opens() const {
  std::lock_guard<std::mutex> g(mu_);
  return opens_;
}
std::uint64_t IpcOpenCache::stale() const {
  std::lock_guard<std::mutex> g(mu_);
  return stale_;
}
std::uint64_t IpcOpenCache::evictions() const {
  std::lock_guard<std::mutex> g(mu_);
  return evicted_;
}
std::uint64_t IpcOpenCache::purged() const {
  std::lock_guard<std::mutex> g(mu_);
  return purged_;
}
std::uint64_t IpcOpenCache::retries() const {
  std::lock_guard<std::mutex> g(mu_);
  return retries_;
}

IpcOpenCache::Map::iterator IpcOpenCache::close_entry(Map::iterator it) {
  // cuIpcCloseMemHandle may wait for the device (the emulated GPU's always does): inside a
  // stream-ordered call the application's stream waits for the call, so the mapping is
  // closed later (deferred_).
  if (in_stream_ordered_call()) deferred_.push_back(it->second.local);
  else d_.ipc_close(it->second.local);
  bytes_ -= it->second.size;
  lru_.erase(it->second.pos);
  return entries_.erase(it);
}

std::size_t IpcOpenCache::purge_locked(std::uint64_t exporter, bool whole_exporter, std::uintptr_t base,
                                       std::size_t size) {
  std::size_t n = 0;
  for (auto it = entries_.lower_bound(Key{exporter, 0}); it != entries_.end() && it->first.exporter == exporter;) {
    const bool overlaps = it->first.base < base + size && base < it->first.base + it->second.size;
    if (!pinned(it->second) && (whole_exporter || overlaps)) {
      it = close_entry(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

Status IpcOpenCache::open(std::uint64_t exporter, std::uintptr_t base, std::size_t size, std::uint64_t id,
                          const IpcHandle &h, void **out) {
  std::unique_lock<std::mutex> lk(mu_);
  const Key key{exporter, base};
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    Entry &e = it->second;
    if (e.id == id) {
      lru_.splice(lru_.begin(), lru_, e.pos);
      e.epoch = epoch_;
      *out = e.local;
      return Status::Ok;
    }
    // The exporter freed this allocation and has another at the same address: the old
    // mapping shows memory that is no longer the exporter's buffer.
    close_entry(it);
    ++stale_;
  }
  // Mappings of the exporter that overlap the new allocation are of freed memory too.
  stale_ += purge_locked(exporter, false, base, size);
  evict_until_fits(size);
  void *local = nullptr;
  Status st = d_.ipc_open(h, &local);
  if (!ok(st)) {
    // Close the exporter's mappings that no call uses, in every cache of the process,
    // and try once more (see the class comment).
    std::size_t n = purge_locked(exporter, true, 0, 0);
    purged_ += n;
    lk.unlock();
    {
      std::lock_guard<std::mutex> g(g_caches_mu);
      for (IpcOpenCache *c : all_caches()) {
        if (c == this || &c->d_ != &d_) continue;
        std::lock_guard<std::mutex> cg(c->mu_);
        const std::size_t k = c->purge_locked(exporter, true, 0, 0);
        c->purged_ += k;
        n += k;
      }
    }
    lk.lock();
    if (n > 0) {  // else nothing changed: no use trying again
      ++retries_;
      st = d_.ipc_open(h, &local);
    }
    if (!ok(st)) {
      std::size_t mine = 0;
      for (const auto &kv : entries_) mine += kv.first.exporter == exporter;
      GCOLL_WARN("CUDA IPC: cannot map a peer's allocation [0x%llx, +%zu) (buffer %llu), not even after closing %zu "
                 "unused mappings of that peer in this process (%zu still mapped here, in use by this call)",
                 static_cast<unsigned long long>(base), size, static_cast<unsigned long long>(id), n, mine);
      *out = nullptr;
      return st;
    }
    GCOLL_INFO("CUDA IPC: a peer's allocation mapped after closing %zu unused mappings of that peer", n);
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
    close_entry(it);
    ++evicted_;
  }
}

void IpcOpenCache::clear() {
  std::lock_guard<std::mutex> g(mu_);
  for (void *p : deferred_) d_.ipc_close(p);
  deferred_.clear();
  for (auto &kv : entries_) d_.ipc_close(kv.second.local);
  entries_.clear();
  lru_.clear();
  bytes_ = 0;
}

}  // namespace cuda
}  // namespace gcoll
