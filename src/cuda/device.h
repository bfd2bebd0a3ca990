// CUDA without a hard dependency on the driver. Everything gcoll does with the driver or
// the runtime goes through this layer:
//   - Driver: the few driver calls gcoll needs (pointer attributes, IPC), reached through
//     cudaGetDriverEntryPointByVersion, so libgcoll.so never links libcuda and loads on a
//     machine with no driver or no GPU (every CI machine). There, usable() is false and
//     every buffer is host memory; nothing is printed and no context is created. The
//     driver is loaded only once the application's process has loaded libcuda.so.1
//     itself (driver_gate.h): before, every buffer is host memory without asking.
//   - Classifier: what kind of memory a buffer is, and its allocation (base, size, ID),
//     through a per-thread memory-kind cache (KindCache) where the driver can say when an
//     answer stops holding (Driver::kind_epoch).
//   - IpcExportCache / IpcOpenCache: IPC handles of my allocations, and peers' opened
//     handles, validated by buffer ID (a freed and reallocated buffer at the same address
//     is a different buffer) and bounded, least recently used first out; a refused open
//     first closes the exporter's unused (stale) mappings process-wide and tries again.
// The caches work on the Driver interface only, so tests drive them with a fake driver.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <vector>
#include <map>
#include <mutex>

#include "base/status.h"

namespace gcoll {
namespace cuda {

// One buffer as the driver sees it.
struct PtrInfo {
  bool device = false;         // device memory the CPU cannot read (cudaMalloc, pools, cuMemCreate)
  int ordinal = -1;            // its GPU (device only)
  std::uintptr_t base = 0;     // its allocation (device only)
  std::size_t size = 0;
  std::uint64_t buffer_id = 0; // process-wide unique per allocation (CU_POINTER_ATTRIBUTE_BUFFER_ID)
  bool ipc_capable = false;    // a legacy IPC handle can export it (not cudaMallocAsync pools, cuMemCreate)
  // The driver vouches that this answer holds for every address of [lo, hi) until its
  // kind_epoch() changes (KindCache). false: ask again next time.
  bool cacheable = false;
  std::uintptr_t lo = 0, hi = 0;
};

// cudaIpcMemHandle_t / CUipcMemHandle: 64 opaque bytes.
struct IpcHandle {
  unsigned char bytes[64];
};

class Driver {
 public:
  virtual ~Driver() = default;
  // This process may hold device memory: the driver is loaded and has at least one device,
  // or (the real driver) a GPU is visible and the application has not loaded libcuda.so.1
  // yet (driver_gate.h: Dormant; every buffer is host memory until it does). Decided once;
  // creates no context.
  virtual bool usable() = 0;
  // Device memory may exist now: the driver is loaded and usable. The real driver, while
  // Dormant, looks (cheaply) whether the application has loaded libcuda.so.1 since, and then
  // loads and asks the driver. What asks CUDA about devices (the runtime's device_count,
  // current_device, device_info; topology detection) asks this first.
  virtual bool active() { return usable(); }
  // Tools only (gcoll_info --topology): load the driver now even where the application has
  // not loaded it. Not under GCOLL_CUDA=off.
  virtual bool load() { return usable(); }
  // Host, pinned host, managed and unknown pointers: device = false (the CPU may read
  // them, so the MPI may too). Errors only when the driver fails unexpectedly.
  virtual Status query(const void *p, PtrInfo *out) = 0;
  // Legacy IPC handle of an allocation base (cuIpcGetMemHandle).
  virtual Status ipc_export(std::uintptr_t base, IpcHandle *out) = 0;
  // Maps a peer's handle into this process (cuIpcOpenMemHandle, lazy peer access), into
  // the calling thread's current context: the caller makes the right device current.
  virtual Status ipc_open(const IpcHandle &h, void **out) = 0;
  virtual Status ipc_close(void *p) = 0;

  // A counter that changes BEFORE any memory the driver answered `cacheable` for can
  // change kind (its virtual range unmapped, or a device allocation freed) and AFTER any
  // new device memory appears: answers are reused while it holds still (KindCache).
  // nullptr: the driver cannot tell, and no answer is reused. Never 0 when set.
  const std::atomic<std::uint64_t> *kind_epoch() const { return epoch_; }

 protected:
  const std::atomic<std::uint64_t> *epoch_ = nullptr;
};

// A small per-thread cache of classifications, keyed by address: an answer the driver
// marked `cacheable` is reused for an address in its [lo, hi) while the driver's
// kind_epoch() is what it was when the driver was asked. Two-way set-associative by the
// address (the send and the receive buffer of a call never evict each other), most
// recent first; no lock: each thread has its own. Tests use it directly.
class KindCache {
 public:
  static constexpr int kSets = 16;
  // The answer for p under `epoch`, when one is held (valid until the next insert).
  const PtrInfo *find(const void *p, std::uint64_t epoch) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    for (const Slot &s : sets_[set(a)].way)
      if (s.epoch == epoch && a >= s.info.lo && a < s.info.hi) return &s.info;
    return nullptr;
  }
  bool lookup(const void *p, std::uint64_t epoch, PtrInfo *out) const {
    const PtrInfo *i = find(p, epoch);
    if (i) *out = *i;
    return i != nullptr;
  }
  // Remembers `info` (cacheable, with lo <= p < hi) as read under `epoch` (read BEFORE
  // the driver was asked, so that a change meanwhile makes it stale at once).
  void insert(const void *p, std::uint64_t epoch, const PtrInfo &info) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (!info.cacheable || epoch == 0 || a < info.lo || a >= info.hi) return;
    Set &st = sets_[set(a)];
    st.way[1] = st.way[0];
    st.way[0] = Slot{epoch, info};
  }
  void clear() {
    for (Set &st : sets_) st = Set{};
  }
  // Answers are only comparable under one epoch counter of one driver: a cache that
  // served another (a driver replaced for a test: `generation` counts replacements)
  // starts empty.
  void bind(const void *source, std::uint64_t generation) {
    if (source_ != source || generation_ != generation) {
      clear();
      source_ = source;
      generation_ = generation;
    }
  }

 private:
  struct Slot {
    std::uint64_t epoch = 0;  // 0: empty
    PtrInfo info;
  };
  struct Set {
    Slot way[2];
  };
  static int set(std::uintptr_t a) {
    static_assert(kSets == 16, "the hash takes 4 bits");
    return static_cast<int>(((a >> 4) * 0x9E3779B97F4A7C15ull) >> 60);
  }
  Set sets_[kSets];
  const void *source_ = nullptr;
  std::uint64_t generation_ = 0;
};

// The process's driver: the real one (cudaGetDriverEntryPointByVersion; loaded only once
// the application has loaded libcuda.so.1, driver_gate.h), or one that is never usable
// when gcoll is built without CUDA, or GCOLL_CUDA=off.
Driver &driver();
// Tests only: replaces the process's driver (nullptr restores the real one).
void set_driver_for_testing(Driver *d);

// Whether this process can have device buffers at all (cheap after the first call).
inline bool usable() { return driver().usable(); }

// Classifies a buffer. Never fails: a driver error counts as host memory (and is logged
// once), so a broken driver cannot make gcoll hand a device pointer to the MPI... except
// that it cannot tell. Callers treat host as "give it to the MPI".
// A buffer classified before, with the driver's kind_epoch() unchanged since, is answered
// from the calling thread's KindCache without a driver query (GCOLL_MEMORY_CACHE=0: never).
// Counts driver queries and cache hits in the stats (Counter::PointerQueries, KindCacheHits).
PtrInfo classify(const void *p);
// The same for n buffers at once (nullptr entries: host, not asked), with one look at the
// driver and the cache for all: what the collectives' hot path uses.
void classify(const void *const *ps, int n, PtrInfo *out);

// For callers that keep classifications of their own (src/pmpi: the last call's buffers
// per communicator): the epoch under which answers marked `cacheable` may be reused, or
// nullptr (no usable driver, no epoch, GCOLL_MEMORY_CACHE=0); and a number that changes
// whenever the process's driver is replaced (tests), so that kept answers are dropped.
const std::atomic<std::uint64_t> *reuse_epoch();
std::uint64_t driver_generation();

// My allocations' IPC handles, by (base, buffer ID): cuIpcGetMemHandle costs
// microseconds, a lookup nanoseconds. A freed and reallocated buffer at the same base has
// another buffer ID, so it gets a new handle. Not thread-safe: callers hold their
// communicator's lock. get() answers NotSupported for a buffer that is not IPC-capable
// device memory, without calling the driver.
class IpcExportCache {
 public:
  explicit IpcExportCache(Driver &d, std::size_t max_entries = 256) : d_(d), max_(max_entries) {}
  Status get(const PtrInfo &buf, IpcHandle *out);
  std::size_t size() const { return entries_.size(); }

 private:
  struct Key {
    std::uintptr_t base;
    std::uint64_t id;
    bool operator<(const Key &o) const { return base != o.base ? base < o.base : id < o.id; }
  };
  Driver &d_;
  std::size_t max_;
  std::list<Key> lru_;  // front = most recent
  struct Entry {
    IpcHandle h;
    std::list<Key>::iterator pos;
  };
  std::map<Key, Entry> entries_;
};

// A number that identifies this process among the processes that map each other's
// memory (random, drawn once; pids may repeat across containers).
std::uint64_t process_token();

// Peers' allocations opened in this process, by (exporter, exporter's base), validated by
// the exporter's buffer ID: a new buffer ID at a known (exporter, base) closes the stale
// mapping before opening the new one. `exporter` is the exporting process's
// process_token() (any number that tells processes apart, in tests). Bounded by total
// mapped bytes and by entries; the least recently used mapping not pinned by the current
// call is closed first.
//
// Mappings of memory the exporter has freed (stale) stay until evicted, in this cache and
// in the other caches of the process (one per communicator). On a real driver (H200,
// driver 580, 2026-11-26) a later cuIpcOpenMemHandle of the exporter's new memory was
// then refused (CUDA_ERROR_ALREADY_MAPPED, 208) while such mappings were open. So a
// refused open closes every mapping of that exporter that no call is using, in every
// cache of this process on the same driver, and tries once more. Mappings of the
// exporter overlapping the new allocation's range are stale for sure (live allocations
// do not overlap): they are closed before the first try.
//
// Thread-safe: each cache has a lock (uncontended: its communicator's calls come one at
// a time), and another cache's purge takes it.
class IpcOpenCache {
 public:
  IpcOpenCache(Driver &d, std::size_t max_bytes, std::size_t max_entries = 1024);
  ~IpcOpenCache();
  // Owns driver mappings: a copy would close them twice.
  IpcOpenCache(const IpcOpenCache &) = delete;
  IpcOpenCache &operator=(const IpcOpenCache &) = delete;
  // Starts a collective: mappings used from here on are not evicted (nor purged by other
  // caches) until end_call() or the next begin_call().
  void begin_call();
  // The collective's work that reads through the mappings has completed.
  void end_call();
  // The local address of the exporter's allocation base.
  Status open(std::uint64_t exporter, std::uintptr_t base, std::size_t size, std::uint64_t id, const IpcHandle &h,
              void **out);
  // Closes every mapping (before the context goes away: inside MPI_Finalize).
  void clear();
  std::size_t entries() const;
  std::size_t mapped_bytes() const;
  std::uint64_t opens() const;    // cuIpcOpenMemHandle calls
  std::uint64_t stale() const;    // mappings replaced after a buffer ID change, or overlapped
  std::uint64_t evictions() const;
  std::uint64_t purged() const;   // mappings closed after a refused open (here or by another cache)
  std::uint64_t retries() const;  // opens tried again after a purge

 private:
  struct Key {
    std::uint64_t exporter;
    std::uintptr_t base;
    bool operator<(const Key &o) const { return exporter != o.exporter ? exporter < o.exporter : base < o.base; }
  };
  struct Entry {
    std::uint64_t id;
    std::size_t size;
    void *local;
    std::uint64_t epoch;  // last call that used it
    std::list<Key>::iterator pos;
  };
  using Map = std::map<Key, Entry>;
  void evict_until_fits(std::size_t incoming);
  Map::iterator close_entry(Map::iterator it);
  bool pinned(const Entry &e) const { return in_call_ && e.epoch == epoch_; }
  // Closes the exporter's mappings that no call uses (all: whole_exporter; else those
  // overlapping [base, base + size)); returns how many. Caller holds mu_.
  std::size_t purge_locked(std::uint64_t exporter, bool whole_exporter, std::uintptr_t base, std::size_t size);
  Driver &d_;
  std::size_t max_bytes_, max_entries_;
  mutable std::mutex mu_;
  std::size_t bytes_ = 0;
  std::uint64_t opens_ = 0, stale_ = 0, evicted_ = 0, purged_ = 0, retries_ = 0, epoch_ = 1;
  bool in_call_ = false;
  // Mappings closed inside a stream-ordered call (cuda/stream_order.h), really closed at
  // the next call that is not one, or at clear(): closing may wait for the device, whose
  // stream waits for that call.
  std::vector<void *> deferred_;
  std::list<Key> lru_;
  Map entries_;
};

}  // namespace cuda
}  // namespace gcoll
