// The emulated GPU's memory (emulate.h): every allocation by address in one registry,
// with the shadow view through which the emulation (and only it) reads and writes device
// memory; allocation and release; the emulation's error messages (its last_error).
// Internal to src/cuda/emulate*.cc.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <utility>

#include "base/status.h"
#include "cuda/device.h"
#include "gcoll/gcoll_emulate.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

// ---- errors ------------------------------------------------------------------------

// Sets the calling thread's last failure (printf format).
void set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// The calling thread's last failure (valid until its next emulation call).
const char *error_text();
// Hands out the last failure and clears it (the runtime's last_error()).
const char *take_error();

// ---- memory registry -------------------------------------------------------------

inline bool is_device_kind(int kind) { return kind == GCOLL_EMU_MEM_DEVICE || kind == GCOLL_EMU_MEM_ASYNC; }

struct Range {
  std::size_t size = 0;              // requested bytes
  std::size_t map_len = 0;           // mapped bytes: whole pages, at least one
  int kind = -1;                     // gcoll_emu_mem (an IPC mapping is DEVICE)
  int dev = -1;                      // device kinds: the device it was allocated on (an IPC
                                     // mapping: the one it was opened into)
  std::uint64_t id = 0;              // buffer ID: process-unique, never reused
  unsigned char *shadow = nullptr;   // device memory: the read-write view; null for host kinds
  int fd = -1;                       // own device memory: the memfd, kept open for IPC importers
  bool imported = false;             // an IPC mapping of a peer's allocation
  int refs = 0;                      // imported: ipc_open calls not yet closed (as the driver counts)
  std::pair<int, std::uint64_t> origin{};  // imported: the exporter's (pid, buffer ID)
  int copy_of = -1;                  // imported across a broken pair: a private copy made for
                                     // this device (else -1: the exporter's bytes themselves)

  bool device() const { return is_device_kind(kind); }
  bool ipc_capable() const { return kind == GCOLL_EMU_MEM_DEVICE && !imported; }
};

// The handle's bytes: enough for a peer to find the memfd (/proc/<pid>/fd/<fd>) and to
// check that it is still the same allocation (its name carries pid and buffer ID).
struct IpcPayload {
  std::uint32_t magic;
  std::int32_t pid;
  std::int32_t fd;
  std::uint32_t device;  // the exporter's device: its ordinal, the index of its GPU in the
                         // topology file (0 without one)
  std::uint64_t size;
  std::uint64_t id;
};
static_assert(sizeof(IpcPayload) <= sizeof(IpcHandle::bytes), "the payload must fit an IPC handle");
constexpr std::uint32_t kHandleMagic = 0x756d6567;  // "gemu"

// Whole pages, at least one (so that a 0-byte allocation has an address of its own); 0
// when `bytes` cannot be rounded up.
std::size_t mapped_length(std::size_t bytes);

// The two views of device memory backed by `fd`: the address handed out, reserved
// PROT_NONE so that the CPU faults on it as on a GPU pointer, and the shadow the
// emulation uses. The reservation is anonymous (not the file) so that nothing, not even
// mprotect, can turn it into a readable view of the bytes.
bool map_device(int fd, std::size_t len, void **view, unsigned char **shadow);
// Unmaps both views of a range (and closes its memfd).
void unmap(std::uintptr_t base, const Range &r);

// Where the emulation's own code reads or writes a buffer.
struct Translated {
  void *addr = nullptr;  // the shadow inside device memory, the pointer itself elsewhere
  int kind = -1;         // of the containing allocation; -1: memory the emulation did not allocate
};

class Registry {
 public:
  // Registers an allocation at `base`. False (nothing registered) when out of memory.
  bool add(std::uintptr_t base, const Range &r) {
    try {
      std::unique_lock<std::shared_mutex> lk(mu_);
      ranges_.emplace(base, r);
      changed();
      return true;
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory registering an allocation");
      return false;
    }
  }

  // [p, p + bytes) as the emulation's copies see it. Bytes that run past the end of an
  // allocation are the caller's bug: false, with the message in last_error.
  bool translate(const void *p, std::size_t bytes, Translated *out) const {
    std::shared_lock<std::shared_mutex> lk(mu_);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = containing(a);
    if (it == ranges_.end()) {
      *out = Translated{const_cast<void *>(p), -1};
      return true;
    }
    const Range &r = it->second;
    const std::size_t off = a - it->first;
    if (off > r.size || bytes > r.size - off) {
      set_error("emulated GPU: %zu bytes at %p run past the end of the %zu-byte allocation at %p", bytes, p,
                r.size, reinterpret_cast<void *>(it->first));
      return false;
    }
    *out = Translated{r.shadow ? r.shadow + off : const_cast<void *>(p), r.kind};
    return true;
  }

  // The allocation containing p (not its padding; a 0-byte one owns its first byte).
  bool find(const void *p, std::uintptr_t *base, Range *out) const {
    std::shared_lock<std::shared_mutex> lk(mu_);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = containing(a);
    if (it == ranges_.end()) return false;
    const std::size_t extent = it->second.size ? it->second.size : 1;
    if (a - it->first >= extent) return false;
    *base = it->first;
    *out = it->second;
    return true;
  }

  // Removes an own allocation (not an IPC mapping) by its base; false when there is none.
  bool remove_own(std::uintptr_t base, Range *out) {
    std::unique_lock<std::shared_mutex> lk(mu_);
    auto it = ranges_.find(base);
    if (it == ranges_.end() || it->second.imported) return false;
    *out = it->second;
    ranges_.erase(it);
    changed();  // before the caller unmaps it: see epoch
    return true;
  }

  // An IPC mapping of (pid, id) already open here (the exporter's bytes when copy_of is
  // -1, else the private copy made for device copy_of): one more reference to it.
  bool reopen(std::pair<int, std::uint64_t> origin, int copy_of, void **out) {
    std::unique_lock<std::shared_mutex> lk(mu_);
    auto im = imports_.find(ImportKey{origin.first, origin.second, copy_of});
    if (im == imports_.end()) return false;
    ++ranges_.at(im->second).refs;
    *out = reinterpret_cast<void *>(im->second);
    return true;
  }

  // Registers a new IPC mapping, unless another thread opened the same handle meanwhile:
  // then that mapping gets the reference and *out is it (the caller unmaps its own).
  // Nothing registered and false when out of memory.
  bool add_import(std::uintptr_t base, const Range &r, void **out) {
    try {
      std::unique_lock<std::shared_mutex> lk(mu_);
      const ImportKey key = import_key(r);
      auto im = imports_.find(key);
      if (im != imports_.end()) {
        ++ranges_.at(im->second).refs;
        *out = reinterpret_cast<void *>(im->second);
        return true;
      }
      ranges_.emplace(base, r);
      try {
        imports_.emplace(key, base);
      } catch (const std::bad_alloc &) {
        ranges_.erase(base);
        throw;
      }
      changed();
      *out = reinterpret_cast<void *>(base);
      return true;
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory registering an IPC mapping");
      return false;
    }
  }

  // Drops one reference to the IPC mapping at `base`. Status::ErrArg when there is none;
  // *last is whether that was the last reference (then *out is the range to unmap).
  Status release_import(std::uintptr_t base, Range *out, bool *last) {
    std::unique_lock<std::shared_mutex> lk(mu_);
    auto it = ranges_.find(base);
    if (it == ranges_.end() || !it->second.imported) return Status::ErrArg;
    *last = --it->second.refs == 0;
    if (*last) {
      *out = it->second;
      imports_.erase(import_key(it->second));
      ranges_.erase(it);
      changed();  // before the caller unmaps it
    }
    return Status::Ok;
  }

  std::uint64_t next_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  // What the driver's query answers for p: the allocation containing it (true), or
  // (false) the gap between allocations around it, [*lo, *hi), where every address is
  // answered the same (memory the emulation did not allocate, or an allocation's padding).
  bool classify(const void *p, std::uintptr_t *base, Range *out, std::uintptr_t *lo, std::uintptr_t *hi) const {
    std::shared_lock<std::shared_mutex> lk(mu_);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto next = ranges_.upper_bound(a);
    *lo = 0;
    *hi = next == ranges_.end() ? UINTPTR_MAX : next->first;
    if (next != ranges_.begin()) {
      auto it = std::prev(next);
      const std::size_t extent = it->second.size ? it->second.size : 1;
      if (a - it->first < extent) {
        *base = it->first;
        *out = it->second;
        return true;
      }
      *lo = it->first + extent;
    }
    return false;
  }

  // Changes whenever an allocation or an IPC mapping comes or goes, inside the lock:
  // after a new range is registered (so a query that read the old value and missed the
  // range is stale), and after a range is removed but before it is unmapped (so no
  // answer read under the new value can say it is still there, and none read under the
  // old one outlives its address's reuse). The driver's kind_epoch().
  std::atomic<std::uint64_t> epoch{1};

 private:
  // An exporter's (pid, buffer ID) and the mapping's copy_of.
  using ImportKey = std::tuple<int, std::uint64_t, int>;
  static ImportKey import_key(const Range &r) { return ImportKey{r.origin.first, r.origin.second, r.copy_of}; }

  void changed() { epoch.fetch_add(1, std::memory_order_acq_rel); }

  // The range whose mapping contains address a, or end(). Caller holds mu_.
  std::map<std::uintptr_t, Range>::const_iterator containing(std::uintptr_t a) const {
    auto it = ranges_.upper_bound(a);
    if (it == ranges_.begin()) return ranges_.end();
    --it;
    return a - it->first < it->second.map_len ? it : ranges_.end();
  }

  mutable std::shared_mutex mu_;
  std::map<std::uintptr_t, Range> ranges_;                         // by base address
  std::map<ImportKey, std::uintptr_t> imports_;  // exporter (pid, id), copy_of -> base
  std::atomic<std::uint64_t> next_id_{1};
};

// ---- allocation --------------------------------------------------------------------

// The process's registry (never destroyed, emulate_streams.cc's State owns it).
Registry &registry();

// gcoll_emu_malloc / gcoll_emu_free: gcoll_emu_error codes.
int allocate(void **p, std::size_t bytes, int kind);
int release(void *p);
Status to_status(int code);

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
