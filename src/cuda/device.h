// CUDA without a hard dependency on the driver. Everything gcoll does with the driver or
// the runtime goes through this layer:
//   - Driver: the few driver calls gcoll needs (pointer attributes, IPC), reached through
//     cudaGetDriverEntryPointByVersion, so libgcoll.so never links libcuda and loads on a
//     machine with no driver or no GPU (every CI machine). There, usable() is false and
//     every buffer is host memory; nothing is printed and no context is created.
//   - Classifier: what kind of memory a buffer is, and its allocation (base, size, ID).
//   - IpcExportCache / IpcOpenCache: IPC handles of my allocations, and peers' opened
//     handles, validated by buffer ID (a freed and reallocated buffer at the same address
//     is a different buffer) and bounded, least recently used first out.
// The caches work on the Driver interface only, so tests drive them with a fake driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
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
};

// cudaIpcMemHandle_t / CUipcMemHandle: 64 opaque bytes.
struct IpcHandle {
  unsigned char bytes[64];
};

class Driver {
 public:
  virtual ~Driver() = default;
  // Driver loaded and at least one device. Decided once; creates no context.
  virtual bool usable() = 0;
  // Host, pinned host, managed and unknown pointers: device = false (the CPU may read
  // them, so the MPI may too). Errors only when the driver fails unexpectedly.
  virtual Status query(const void *p, PtrInfo *out) = 0;
  // Legacy IPC handle of an allocation base (cuIpcGetMemHandle).
  virtual Status ipc_export(std::uintptr_t base, IpcHandle *out) = 0;
  // Maps a peer's handle into this process (cuIpcOpenMemHandle, lazy peer access), into
  // the calling thread's current context: the caller makes the right device current.
  virtual Status ipc_open(const IpcHandle &h, void **out) = 0;
  virtual Status ipc_close(void *p) = 0;
};

// The process's driver: the real one (cudaGetDriverEntryPointByVersion), or one that is
// never usable when gcoll is built without CUDA, or GCOLL_CUDA=off.
Driver &driver();
// Tests only: replaces the process's driver (nullptr restores the real one).
void set_driver_for_testing(Driver *d);

// Whether this process can have device buffers at all (cheap after the first call).
inline bool usable() { return driver().usable(); }

// Classifies a buffer. Never fails: a driver error counts as host memory (and is logged
// once), so a broken driver cannot make gcoll hand a device pointer to the MPI... except
// that it cannot tell. Callers treat host as "give it to the MPI".
PtrInfo classify(const void *p);

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

// Peers' allocations opened in this process, by (peer, peer's base, peer's buffer ID).
// A new buffer ID at a known (peer, base) closes the stale mapping before opening the new
// one. Bounded by total mapped bytes and by entries; the least recently used mapping not
// pinned by the current call is closed first. Not thread-safe: callers hold their
// communicator's lock.
class IpcOpenCache {
 public:
  IpcOpenCache(Driver &d, std::size_t max_bytes, std::size_t max_entries = 1024)
      : d_(d), max_bytes_(max_bytes), max_entries_(max_entries) {}
  ~IpcOpenCache();
  // Owns driver mappings: a copy would close them twice.
  IpcOpenCache(const IpcOpenCache &) = delete;
  IpcOpenCache &operator=(const IpcOpenCache &) = delete;
  // Starts a collective: mappings used from here on are not evicted until the next call.
  void begin_call() { ++epoch_; }
  // The local address of the peer's allocation base.
  Status open(int peer, std::uintptr_t base, std::size_t size, std::uint64_t id, const IpcHandle &h, void **out);
  // Closes every mapping (before the context goes away: inside MPI_Finalize).
  void clear();
  std::size_t entries() const { return entries_.size(); }
  std::size_t mapped_bytes() const { return bytes_; }
  std::uint64_t opens() const { return opens_; }      // cuIpcOpenMemHandle calls
  std::uint64_t stale() const { return stale_; }      // mappings replaced after a buffer ID change
  std::uint64_t evictions() const { return evicted_; }

 private:
  struct Key {
    int peer;
    std::uintptr_t base;
    bool operator<(const Key &o) const { return peer != o.peer ? peer < o.peer : base < o.base; }
  };
  struct Entry {
    std::uint64_t id;
    std::size_t size;
    void *local;
    std::uint64_t epoch;  // last call that used it
    std::list<Key>::iterator pos;
  };
  void evict_until_fits(std::size_t incoming);
  Driver &d_;
  std::size_t max_bytes_, max_entries_;
  std::size_t bytes_ = 0;
  std::uint64_t opens_ = 0, stale_ = 0, evicted_ = 0, epoch_ = 1;
  std::list<Key> lru_;
  std::map<Key, Entry> entries_;
};

}  // namespace cuda
}  // namespace gcoll
