// The emulated GPU (emulate.h). Three parts:
//   - the memory registry: every allocation by address, with the shadow view through
//     which the emulation (and only it) reads and writes device memory;
//   - streams and events: one worker thread per stream runs queued operations in order,
//     each after a random delay;
//   - the Driver and Runtime interfaces and the emu:: functions on top of them.
// Nothing here throws out: allocation failures become Status / gcoll_emu_error codes.
#include "cuda/emulate.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <shared_mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "gcoll/gcoll_emulate.h"
#include "kernels/fused.h"
#include "kernels/host_reduce.h"
#include "kernels/types.h"

namespace gcoll {
namespace cuda {
namespace {

constexpr int kMaxSources = 16;

// ---- errors ------------------------------------------------------------------------

thread_local std::string t_error;     // the calling thread's last failure
thread_local std::string t_reported;  // what last_error() handed out (valid until the next call)

void set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void set_error(const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  try {
    t_error = buf;
  } catch (const std::bad_alloc &) {
    t_error.clear();  // the message is a courtesy; the error code still says what happened
  }
}

// ---- memory registry -------------------------------------------------------------

bool is_device_kind(int kind) { return kind == GCOLL_EMU_MEM_DEVICE || kind == GCOLL_EMU_MEM_ASYNC; }

struct Range {
  std::size_t size = 0;              // requested bytes
  std::size_t map_len = 0;           // mapped bytes: whole pages, at least one
  int kind = -1;                     // gcoll_emu_mem (an IPC mapping is DEVICE)
  std::uint64_t id = 0;              // buffer ID: process-unique, never reused
  unsigned char *shadow = nullptr;   // device memory: the read-write view; null for host kinds
  int fd = -1;                       // own device memory: the memfd, kept open for IPC importers
  bool imported = false;             // an IPC mapping of a peer's allocation
  int refs = 0;                      // imported: ipc_open calls not yet closed (as the driver counts)
  std::pair<int, std::uint64_t> origin{};  // imported: the exporter's (pid, buffer ID)

  bool device() const { return is_device_kind(kind); }
  bool ipc_capable() const { return kind == GCOLL_EMU_MEM_DEVICE && !imported; }
};

// The handle's bytes: enough for a peer to find the memfd (/proc/<pid>/fd/<fd>) and to
// check that it is still the same allocation (its name carries pid and buffer ID).
struct IpcPayload {
  std::uint32_t magic;
  std::int32_t pid;
  std::int32_t fd;
  std::uint32_t reserved;
  std::uint64_t size;
  std::uint64_t id;
};
static_assert(sizeof(IpcPayload) <= sizeof(IpcHandle::bytes), "the payload must fit an IPC handle");
constexpr std::uint32_t kHandleMagic = 0x756d6567;  // "gemu"

std::size_t page_size() {
  static const std::size_t s = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return s;
}

// Whole pages, at least one (so that a 0-byte allocation has an address of its own); 0
// when `bytes` cannot be rounded up.
std::size_t mapped_length(std::size_t bytes) {
  const std::size_t pg = page_size();
  if (bytes == 0) return pg;
  if (bytes > SIZE_MAX - (pg - 1)) return 0;
  return (bytes + pg - 1) / pg * pg;
}

// The two views of device memory backed by `fd`: the address handed out, reserved
// PROT_NONE so that the CPU faults on it as on a GPU pointer, and the shadow the
// emulation uses. The reservation is anonymous (not the file) so that nothing, not even
// mprotect, can turn it into a readable view of the bytes.
bool map_device(int fd, std::size_t len, void **view, unsigned char **shadow) {
  void *v = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (v == MAP_FAILED) {
    set_error("emulated GPU: reserving %zu bytes failed: %s", len, std::strerror(errno));
    return false;
  }
  void *s = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (s == MAP_FAILED) {
    set_error("emulated GPU: mapping %zu bytes of device memory failed: %s", len, std::strerror(errno));
    munmap(v, len);
    return false;
  }
  *view = v;
  *shadow = static_cast<unsigned char *>(s);
  return true;
}

void unmap(std::uintptr_t base, const Range &r) {
  munmap(reinterpret_cast<void *>(base), r.map_len);
  if (r.shadow) munmap(r.shadow, r.map_len);
  if (r.fd >= 0) close(r.fd);
}

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

  // An IPC mapping of (pid, id) already open here: one more reference to it.
  bool reopen(std::pair<int, std::uint64_t> origin, void **out) {
    std::unique_lock<std::shared_mutex> lk(mu_);
    auto im = imports_.find(origin);
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
      auto im = imports_.find(r.origin);
      if (im != imports_.end()) {
        ++ranges_.at(im->second).refs;
        *out = reinterpret_cast<void *>(im->second);
        return true;
      }
      ranges_.emplace(base, r);
      try {
        imports_.emplace(r.origin, base);
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
      imports_.erase(it->second.origin);
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
  std::map<std::pair<int, std::uint64_t>, std::uintptr_t> imports_;  // exporter (pid, id) -> base
  std::atomic<std::uint64_t> next_id_{1};
};

// ---- streams and events ----------------------------------------------------------

std::atomic<int> g_delay_override{-1};

// The delay of an operation, drawn when it is queued (not when it runs) so that a test
// can queue slow work, lower the delay and check the state with fast work.
std::uint32_t random_delay_us() {
  const int o = g_delay_override.load(std::memory_order_relaxed);
  const int max = o >= 0 ? o : config().emu_delay_us;
  if (max <= 0) return 0;
  thread_local std::minstd_rand rng(static_cast<std::uint32_t>(
      static_cast<std::uint64_t>(getpid()) * 2654435761u ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      std::hash<std::thread::id>{}(std::this_thread::get_id())));
  return std::uniform_int_distribution<std::uint32_t>(0, static_cast<std::uint32_t>(max))(rng);
}

// A stream: a FIFO of operations run in order by one worker thread. Operations never
// throw and never take the process's stream list lock (device_synchronize holds it while
// it waits on each stream).
class EmuStream {
 public:
  EmuStream() = default;
  EmuStream(const EmuStream &) = delete;
  EmuStream &operator=(const EmuStream &) = delete;

  // Starts the worker. False when no thread can be had.
  bool start() {
    try {
      worker_ = std::thread([this] { run(); });
      return true;
    } catch (const std::system_error &e) {
      set_error("emulated GPU: cannot start a stream's thread: %s", e.what());
      return false;
    }
  }

  // Queues fn (which must not throw) to run after a random delay. False when out of memory.
  template <class F>
  bool enqueue(F &&fn) {
    try {
      Op op{std::function<void()>(std::forward<F>(fn)), random_delay_us()};
      {
        std::lock_guard<std::mutex> lk(m_);
        queue_.push_back(std::move(op));
        ++queued_;
      }
      work_cv_.notify_one();
      return true;
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory queueing an operation");
      return false;
    }
  }

  // Waits until everything queued before the call has run.
  void synchronize() {
    std::unique_lock<std::mutex> lk(m_);
    const std::uint64_t target = queued_;
    done_cv_.wait(lk, [&] { return done_ >= target; });
  }

  // Runs what is queued, then ends and joins the worker.
  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    work_cv_.notify_one();
    worker_.join();
  }

  // A queued operation failed (called on the worker); the next synchronize or event query
  // reports it.
  void fail() { failed_.store(true, std::memory_order_relaxed); }
  bool take_failure() { return failed_.exchange(false, std::memory_order_relaxed); }

 private:
  struct Op {
    std::function<void()> fn;
    std::uint32_t delay_us;
  };

  void run() {
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> lk(m_);
        work_cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything has run
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      if (op.delay_us) std::this_thread::sleep_for(std::chrono::microseconds(op.delay_us));
      op.fn();
      op.fn = nullptr;  // release what it holds (staged copies) before it counts as done
      {
        std::lock_guard<std::mutex> lk(m_);
        ++done_;
      }
      done_cv_.notify_all();
    }
  }

  std::mutex m_;
  std::condition_variable work_cv_;  // the worker waits for work
  std::condition_variable done_cv_;  // synchronize() waits for progress
  std::deque<Op> queue_;
  std::uint64_t queued_ = 0, done_ = 0;
  bool stopping_ = false;
  std::atomic<bool> failed_{false};
  std::thread worker_;
};

// An event's state outlives its handle: a record or a wait still queued when the
// application destroys the event (as CUDA allows) keeps it.
struct EventState {
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t recorded = 0;   // records queued so far
  std::uint64_t completed = 0;  // the latest record that has run
  bool failed = false;          // an operation before a completed record failed
};

struct EmuEvent {
  std::shared_ptr<EventState> st;
};

// ---- process state ---------------------------------------------------------------

// Never destroyed: worker threads of streams the application did not destroy may run (or
// wait) until the process ends, and static destructors may still free memory.
class State {
 public:
  Registry registry;

  // A new stream, or nullptr (with last_error) when no thread or memory can be had.
  EmuStream *create_stream() {
    std::lock_guard<std::mutex> lk(streams_mu_);
    return create_locked();
  }

  // Waits for the stream's queue and ends it. Streams this emulation did not create
  // are ignored.
  void destroy_stream(EmuStream *s) {
    std::unique_ptr<EmuStream> owned;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      for (auto it = streams_.begin(); it != streams_.end(); ++it) {
        if (it->get() == s && s != legacy_) {
          owned = std::move(*it);
          streams_.erase(it);
          break;
        }
      }
    }
    if (owned) owned->stop();
  }

  // The legacy default stream, created on first use; nullptr when it cannot be.
  EmuStream *legacy() {
    std::lock_guard<std::mutex> lk(streams_mu_);
    if (!legacy_) legacy_ = create_locked();
    return legacy_;
  }

  // cudaDeviceSynchronize. Holds the stream list so that no stream goes away meanwhile:
  // queued operations never take that lock, so they all finish.
  void synchronize_all() {
    std::lock_guard<std::mutex> lk(streams_mu_);
    for (const auto &s : streams_) s->synchronize();
  }

 private:
  EmuStream *create_locked() {
    try {
      auto s = std::make_unique<EmuStream>();
      streams_.reserve(streams_.size() + 1);  // so that push_back cannot fail after start()
      if (!s->start()) return nullptr;
      streams_.push_back(std::move(s));
      return streams_.back().get();
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory creating a stream");
      return nullptr;
    }
  }

  std::mutex streams_mu_;
  std::vector<std::unique_ptr<EmuStream>> streams_;  // the legacy stream among them
  EmuStream *legacy_ = nullptr;
};

State &state() {
  static State *const s = new State;
  return *s;
}

// ---- allocation --------------------------------------------------------------------

int allocate(void **p, std::size_t bytes, int kind) {
  if (!p) return GCOLL_EMU_ERR_INVALID;
  *p = nullptr;
  if (kind < GCOLL_EMU_MEM_DEVICE || kind > GCOLL_EMU_MEM_PINNED) {
    set_error("emulated GPU: no memory kind %d", kind);
    return GCOLL_EMU_ERR_INVALID;
  }
  Range r;
  r.size = bytes;
  r.map_len = mapped_length(bytes);
  r.kind = kind;
  if (r.map_len == 0) {
    set_error("emulated GPU: cannot allocate %zu bytes", bytes);
    return GCOLL_EMU_ERR_NOMEM;
  }
  Registry &reg = state().registry;
  r.id = reg.next_id();
  void *base = nullptr;
  if (r.device()) {
    // The name is what an importer checks (ipc_open): pid and buffer ID together are
    // never reused while the exporter lives.
    char name[64];
    std::snprintf(name, sizeof name, "gcoll-emu-%d-%llu", static_cast<int>(getpid()),
                  static_cast<unsigned long long>(r.id));
    r.fd = memfd_create(name, MFD_CLOEXEC);
    if (r.fd < 0) {
      set_error("emulated GPU: memfd_create failed: %s", std::strerror(errno));
      return GCOLL_EMU_ERR_NOMEM;
    }
    if (ftruncate(r.fd, static_cast<off_t>(r.map_len)) != 0) {
      set_error("emulated GPU: sizing %zu bytes of device memory failed: %s", r.map_len, std::strerror(errno));
      close(r.fd);
      return GCOLL_EMU_ERR_NOMEM;
    }
    if (!map_device(r.fd, r.map_len, &base, &r.shadow)) {
      close(r.fd);
      return GCOLL_EMU_ERR_NOMEM;
    }
  } else {
    // Managed and pinned memory: the CPU may touch them, so plain memory will do.
    base = mmap(nullptr, r.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
      set_error("emulated GPU: allocating %zu bytes failed: %s", bytes, std::strerror(errno));
      return GCOLL_EMU_ERR_NOMEM;
    }
    // Pinned memory is page-locked, as cudaHostAlloc's is: under a memlock limit
    // (RLIMIT_MEMLOCK without CAP_IPC_LOCK, as in containers) it cannot be had.
    if (kind == GCOLL_EMU_MEM_PINNED && mlock(base, r.map_len) != 0) {
      const int err = errno;
      rlimit lim{};
      getrlimit(RLIMIT_MEMLOCK, &lim);
      set_error("emulated GPU: pinning %zu bytes failed: %s (RLIMIT_MEMLOCK %llu bytes)", bytes, std::strerror(err),
                static_cast<unsigned long long>(lim.rlim_cur));
      munmap(base, r.map_len);
      return GCOLL_EMU_ERR_NOMEM;
    }
  }
  const auto b = reinterpret_cast<std::uintptr_t>(base);
  if (!reg.add(b, r)) {
    unmap(b, r);
    return GCOLL_EMU_ERR_NOMEM;
  }
  *p = base;
  return GCOLL_EMU_OK;
}

int release(void *p) {
  if (!p) return GCOLL_EMU_OK;  // cudaFree(nullptr)
  // Queued operations hold translated pointers into this memory: cudaFree synchronises.
  state().synchronize_all();
  Range r;
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  if (!state().registry.remove_own(b, &r)) {
    set_error("emulated GPU: %p is not the start of an allocation of this process", p);
    return GCOLL_EMU_ERR_INVALID;
  }
  unmap(b, r);
  return GCOLL_EMU_OK;
}

Status to_status(int code) {
  switch (code) {
    case GCOLL_EMU_OK: return Status::Ok;
    case GCOLL_EMU_ERR_NOMEM: return Status::ErrNoMem;
    default: return Status::ErrArg;
  }
}

// ---- IPC -------------------------------------------------------------------------

// Whether the open file `fd` is the exporter's allocation: its memfd's name. The fd
// number in a handle may meanwhile name another file, or another allocation.
bool names_allocation(int fd, int pid, std::uint64_t id) {
  char link[64], target[256], want[96];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 0) return false;
  target[n] = '\0';
  const int w = std::snprintf(want, sizeof want, "/memfd:gcoll-emu-%d-%llu", pid, static_cast<unsigned long long>(id));
  // A memfd reads as "/memfd:<name> (deleted)": it never had a directory entry.
  return std::strncmp(target, want, static_cast<std::size_t>(w)) == 0 &&
         (target[w] == '\0' || std::strcmp(target + w, " (deleted)") == 0);
}

class EmuDriver final : public Driver {
 public:
  EmuDriver() { epoch_ = &state().registry.epoch; }

  // Per buffer classification: one relaxed load after the first call (std::call_once
  // costs a TLS lookup every time).
  bool usable() override {
    if (__builtin_expect(!said_flag_.load(std::memory_order_acquire), 0)) {
      std::call_once(said_, [this] {
        GCOLL_INFO("CUDA: emulated GPU (GCOLL_CUDA=emulate, a testing mode): CUDA is not used; device buffers "
                   "are the emulation's");
        said_flag_.store(true, std::memory_order_release);
      });
    }
    return true;
  }

  // Exact answers, all cacheable: every change of kind goes through the registry, whose
  // epoch is this driver's kind_epoch().
  Status query(const void *p, PtrInfo *out) override {
    *out = PtrInfo{};
    std::uintptr_t base = 0, lo = 0, hi = 0;
    Range r;
    out->cacheable = true;
    if (!state().registry.classify(p, &base, &r, &lo, &hi)) {
      out->lo = lo;
      out->hi = hi;
      return Status::Ok;  // memory the emulation did not allocate: host
    }
    out->lo = base;
    out->hi = base + (r.size ? r.size : 1);
    if (!r.device()) return Status::Ok;  // managed, pinned: host memory to gcoll
    out->device = true;
    out->ordinal = 0;
    out->base = base;
    out->size = r.size;
    out->buffer_id = r.id;
    out->ipc_capable = r.ipc_capable();
    return Status::Ok;
  }

  Status ipc_export(std::uintptr_t base, IpcHandle *out) override {
    std::uintptr_t found = 0;
    Range r;
    if (!state().registry.find(reinterpret_cast<const void *>(base), &found, &r) || found != base ||
        !r.ipc_capable()) {
      // cuIpcGetMemHandle fails the same way on pool memory and on non-base pointers.
      GCOLL_WARN("emulated GPU: no IPC handle for %p: not the base of an IPC-capable device allocation",
                 reinterpret_cast<void *>(base));
      return Status::ErrInternal;
    }
    IpcPayload pl{kHandleMagic, static_cast<std::int32_t>(getpid()), r.fd, 0, r.size, r.id};
    std::memset(out->bytes, 0, sizeof out->bytes);
    std::memcpy(out->bytes, &pl, sizeof pl);
    return Status::Ok;
  }

  Status ipc_open(const IpcHandle &h, void **out) override {
    *out = nullptr;
    IpcPayload pl;
    std::memcpy(&pl, h.bytes, sizeof pl);
    if (pl.magic != kHandleMagic) {
      GCOLL_WARN("emulated GPU: not an IPC handle of the emulation");
      return Status::ErrInternal;
    }
    if (pl.pid == static_cast<std::int32_t>(getpid())) {
      // cuIpcOpenMemHandle refuses handles of its own process (CUDA_ERROR_INVALID_CONTEXT).
      GCOLL_WARN("emulated GPU: IPC handle exported by this very process: CUDA IPC works between processes only");
      return Status::ErrInternal;
    }
    const std::pair<int, std::uint64_t> origin{pl.pid, pl.id};
    Registry &reg = state().registry;
    if (reg.reopen(origin, out)) return Status::Ok;

    Range r;
    r.size = static_cast<std::size_t>(pl.size);
    r.map_len = mapped_length(r.size);
    r.kind = GCOLL_EMU_MEM_DEVICE;
    r.id = reg.next_id();  // a buffer ID of this process, as the driver gives an IPC mapping
    r.imported = true;
    r.refs = 1;
    r.origin = origin;
    // Opening /proc/<pid>/fd/<fd> reopens the exporter's memfd (same-user processes may;
    // ptrace read access is what the kernel checks).
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(pl.pid), static_cast<int>(pl.fd));
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      GCOLL_WARN("emulated GPU: cannot open IPC handle %s: %s (exporter gone, or no access to it)", path,
                 std::strerror(errno));
      return Status::ErrInternal;
    }
    struct stat sb;
    if (!names_allocation(fd, pl.pid, pl.id) || fstat(fd, &sb) != 0 ||
        static_cast<std::uint64_t>(sb.st_size) < r.map_len) {
      // As with a real handle whose allocation was freed: cuIpcOpenMemHandle fails.
      GCOLL_WARN("emulated GPU: stale IPC handle: allocation %llu of process %d was freed",
                 static_cast<unsigned long long>(pl.id), static_cast<int>(pl.pid));
      close(fd);
      return Status::ErrInternal;
    }
    void *view = nullptr;
    const bool mapped = map_device(fd, r.map_len, &view, &r.shadow);
    close(fd);  // the mapping keeps the memory
    if (!mapped) {
      GCOLL_WARN("%s", t_error.c_str());
      return Status::ErrNoMem;
    }
    const auto b = reinterpret_cast<std::uintptr_t>(view);
    if (!reg.add_import(b, r, out)) {
      unmap(b, r);
      return Status::ErrNoMem;
    }
    if (*out != view) unmap(b, r);  // another thread mapped it first
    return Status::Ok;
  }

  Status ipc_close(void *p) override {
    // Queued operations may still use the mapping.
    state().synchronize_all();
    Range r;
    bool last = false;
    const auto b = reinterpret_cast<std::uintptr_t>(p);
    const Status st = state().registry.release_import(b, &r, &last);
    if (!ok(st)) {
      GCOLL_WARN("emulated GPU: ipc_close(%p): not an open IPC mapping", p);
      return st;
    }
    if (last) unmap(b, r);
    return Status::Ok;
  }

 private:
  std::once_flag said_;
  std::atomic<bool> said_flag_{false};
};

// ---- runtime -----------------------------------------------------------------------

EmuEvent *as_event(Event e) { return static_cast<EmuEvent *>(e); }

// ---- the fused one-shot collectives ---------------------------------------------------

constexpr int kEmuSms = 16;  // the emulated GPU's SM count (the fused kernels' blocks, all ranks together)

// One op of kernels/fused.h with every pointer translated to the emulation's views.
struct FusedEmuJob {
  FusedParams p;
  unsigned char *bank[kFusedMaxRanks] = {};
  FusedControl *ctl[kFusedMaxRanks] = {};
  unsigned char *dst[kFusedMaxRanks] = {};
  const unsigned char *in = nullptr;
  unsigned char *out = nullptr;
  std::uint64_t *status = nullptr;
};

// Steps 1 to 5 of kernels/fused.h, block after block (a valid schedule of the GPU's
// concurrent blocks: every block publishes and posts before any waits). Waiting yields
// the CPU (the emulation shares a few cores with all the ranks), within p.spin_ns. A
// random delay (GCOLL_EMU_DELAY, now and then 8 times as long) before each block's
// result, as on a slow or busy SM, keeps readers of a bank late enough for an early
// overwrite to show.
void run_fused(const FusedEmuJob &j) {
  const FusedParams &p = j.p;
  const std::uint64_t s = p.seq;
  if (!p.resume) {
    const bool publish = !p.failed && (p.kind != FusedKind::Bcast || p.me == p.root);
    for (int b = 0; b < p.blocks; ++b) {
      std::size_t lo, hi;
      fused_range(p.bytes, p.blocks, b, &lo, &hi);
      if (publish && hi > lo) std::memcpy(j.bank[p.me] + lo, j.in + lo, hi - lo);
      if (p.failed) __atomic_store_n(&j.ctl[p.me]->failed[s & 1], s, __ATOMIC_RELEASE);
      __atomic_store_n(&j.ctl[p.me]->flag[b], s, __ATOMIC_RELEASE);
    }
  }
  const std::uint64_t budget_ns = p.spin_ns;
  for (int b = 0; b < p.blocks; ++b) {
    std::uint64_t code = p.failed ? kFusedFailed : kFusedDone;
    for (int q = 0; q < p.nranks; ++q) {
      if (q == p.me) continue;
      const std::uint64_t *flag = &j.ctl[q]->flag[b];
      const auto t0 = std::chrono::steady_clock::now();
      bool arrived = false;
      for (unsigned spin = 0;; ++spin) {
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) >= s) {
          arrived = true;
          break;
        }
        const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
        if (static_cast<std::uint64_t>(waited.count()) > budget_ns) break;
        if (spin < 16)
          sched_yield();
        else
          std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      if (!arrived)
        code = std::max<std::uint64_t>(code, kFusedTimedOut);
      else if (__atomic_load_n(&j.ctl[q]->failed[s & 1], __ATOMIC_ACQUIRE) == s)
        code = std::max<std::uint64_t>(code, kFusedFailed);
    }
    std::size_t lo, hi;
    fused_range(p.bytes, p.blocks, b, &lo, &hi);
    if (code == kFusedDone && hi > lo) {
      std::uint32_t us = random_delay_us();
      if (us % 8 == 1) us *= 8;  // now and then a much slower block
      if (us) std::this_thread::sleep_for(std::chrono::microseconds(us));
      switch (p.kind) {
        case FusedKind::Allreduce: {
          const void *srcs[kFusedMaxRanks];
          for (int q = 0; q < p.nranks; ++q) srcs[q] = j.bank[q] + lo;
          if (!ok(host_reduce(p.dtype, p.op, j.out + lo, srcs, p.nranks, (hi - lo) / p.elem))) code = kFusedFailed;
          break;
        }
        case FusedKind::Bcast:
          if (p.me != p.root) std::memcpy(j.out + lo, j.bank[p.root] + lo, hi - lo);
          break;
        case FusedKind::Allgather:
          for (int q = 0; q < p.nranks; ++q)
            if (j.dst[q]) std::memcpy(j.dst[q] + lo, j.bank[q] + lo, hi - lo);
          break;
      }
    }
    __atomic_store_n(&j.status[b], (s << 2) | code, __ATOMIC_RELEASE);
  }
}

class EmuRuntime final : public Runtime {
 public:
  const char *name() const override { return "emulated GPU"; }

  int current_device() override { return 0; }
  Status set_device(int dev) override {
    if (dev == 0) return Status::Ok;
    set_error("emulated GPU: no device %d (there is one, 0)", dev);
    return Status::ErrArg;
  }

  Status stream_create(Stream *s) override {
    EmuStream *es = state().create_stream();
    *s = es;
    return es ? Status::Ok : Status::ErrNoMem;
  }
  void stream_destroy(Stream s) override {
    if (s) state().destroy_stream(static_cast<EmuStream *>(s));
  }
  Status stream_synchronize(Stream s) override {
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    es->synchronize();
    return failure_check(es);
  }

  Status event_create(Event *e) override {
    try {
      *e = new EmuEvent{std::make_shared<EventState>()};
      return Status::Ok;
    } catch (const std::bad_alloc &) {
      *e = nullptr;
      set_error("emulated GPU: out of memory creating an event");
      return Status::ErrNoMem;
    }
  }
  void event_destroy(Event e) override { delete as_event(e); }

  Status event_record(Event e, Stream s) override {
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    std::shared_ptr<EventState> st = as_event(e)->st;
    std::uint64_t v;
    {
      std::lock_guard<std::mutex> lk(st->m);
      v = ++st->recorded;
    }
    const bool queued = es->enqueue([st, v, es] {
      const bool failed = es->take_failure();
      {
        std::lock_guard<std::mutex> lk(st->m);
        if (v > st->completed) st->completed = v;
        st->failed = st->failed || failed;
      }
      st->cv.notify_all();
    });
    if (!queued) {
      // As if never recorded: nothing will ever complete record v.
      std::lock_guard<std::mutex> lk(st->m);
      if (v > st->completed) st->completed = v;
      return Status::ErrNoMem;
    }
    return Status::Ok;
  }

  Status event_query(Event e, bool *done) override {
    EventState &st = *as_event(e)->st;
    std::lock_guard<std::mutex> lk(st.m);
    *done = st.completed >= st.recorded;
    if (*done && st.failed) {
      st.failed = false;
      set_error("emulated GPU: a reduction queued before the event failed");
      return Status::ErrInternal;
    }
    return Status::Ok;
  }

  Status stream_wait_event(Stream s, Event e) override {
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    std::shared_ptr<EventState> st = as_event(e)->st;
    std::uint64_t v;
    {
      std::lock_guard<std::mutex> lk(st->m);
      v = st->recorded;
      if (st->completed >= v) return Status::Ok;  // nothing pending (or never recorded)
    }
    const bool queued = es->enqueue([st, v] {
      std::unique_lock<std::mutex> lk(st->m);
      st->cv.wait(lk, [&] { return st->completed >= v; });
    });
    return queued ? Status::Ok : Status::ErrNoMem;
  }

  Status order_after_default_streams(Stream s, Event scratch) override {
    // The emulation has one default stream, the legacy one (emu::memcpy/memset use it).
    const Status st = event_record(scratch, nullptr);
    return ok(st) ? stream_wait_event(s, scratch) : st;
  }

  Status malloc_device(void **p, std::size_t bytes) override {
    return to_status(allocate(p, bytes, GCOLL_EMU_MEM_DEVICE));
  }
  void free_device(void *p) override { warn_on_free_failure(release(p), p); }
  Status malloc_host(void **p, std::size_t bytes) override {
    return to_status(allocate(p, bytes, GCOLL_EMU_MEM_PINNED));
  }
  void free_host(void *p) override { warn_on_free_failure(release(p), p); }

  Status memcpy_async(void *dst, const void *src, std::size_t bytes, Stream s) override {
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    Translated d, from;
    if (!state().registry.translate(dst, bytes, &d) || !state().registry.translate(src, bytes, &from))
      return Status::ErrArg;
    void *dp = d.addr;
    const void *sp = from.addr;
    return es->enqueue([dp, sp, bytes] { host_copy(dp, sp, bytes); }) ? Status::Ok : Status::ErrNoMem;
  }

  bool reduce_supported(ROp op, DType t) const override { return op_supported(op, t); }
  int max_sources() const override { return kMaxSources; }

  Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count,
                Stream s) override {
    if (m < 1 || m > kMaxSources) {
      set_error("emulated GPU: reduction of %d sources (1 to %d)", m, kMaxSources);
      return Status::ErrArg;
    }
    if (!op_supported(op, t)) {
      set_error("emulated GPU: no reduction %s on %s", rop_name(op), dtype_name(t));
      return Status::NotSupported;
    }
    const std::size_t esize = dtype_size(t);
    if (count > SIZE_MAX / esize) {
      set_error("emulated GPU: reduction of %zu elements overflows", count);
      return Status::ErrArg;
    }
    const std::size_t bytes = count * esize;
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    Registry &reg = state().registry;
    Translated d;
    if (!reg.translate(dst, bytes, &d)) return Status::ErrArg;
    std::array<const void *, kMaxSources> from{};
    for (int i = 0; i < m; ++i) {
      Translated x;
      if (!reg.translate(srcs[i], bytes, &x)) return Status::ErrArg;
      from[static_cast<std::size_t>(i)] = x.addr;
    }
    void *dp = d.addr;
    const bool queued = es->enqueue([t, op, dp, from, m, count, es] {
      if (!ok(host_reduce(t, op, dp, from.data(), m, count))) es->fail();
    });
    return queued ? Status::Ok : Status::ErrNoMem;
  }

  Status device_info(int dev, DeviceInfo *out) override {
    *out = DeviceInfo{};
    if (dev != 0) {
      set_error("emulated GPU: no device %d (there is one, 0)", dev);
      return Status::ErrArg;
    }
    static const char kUuid[16] = "gcoll-emu-gpu-0";
    std::memcpy(out->uuid, kUuid, sizeof out->uuid);
    out->sm_count = kEmuSms;
    out->mps = 1;  // every process's stream work runs at once, as under MPS
    return Status::Ok;
  }

  // The kernel of kernels/fused.h on the stream's worker thread, block after block, with
  // the flags as atomics in the shared memory of the banks' memfds (device memory here is
  // shared between the processes, as IPC-mapped memory is on a GPU).
  Status fused(const FusedParams &p, Stream s) override {
    if (p.nranks < 1 || p.nranks > kFusedMaxRanks || p.me < 0 || p.me >= p.nranks || p.blocks < 1 ||
        p.blocks > kFusedMaxBlocks || p.root < 0 || p.root >= p.nranks || p.seq == 0 || !p.status) {
      set_error("emulated GPU: inconsistent fused-collective parameters");
      return Status::ErrArg;
    }
    if (p.kind == FusedKind::Allreduce) {
      if (!op_supported(p.op, p.dtype)) {
        set_error("emulated GPU: no reduction %s on %s", rop_name(p.op), dtype_name(p.dtype));
        return Status::NotSupported;
      }
      if (p.elem != dtype_size(p.dtype) || kFusedAlign % p.elem != 0) {
        set_error("emulated GPU: fused allreduce of %zu-byte elements of %s", p.elem, dtype_name(p.dtype));
        return Status::ErrArg;
      }
    }
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    FusedEmuJob j;
    j.p = p;
    Registry &reg = state().registry;
    const auto shadow = [&](const void *ptr, std::size_t bytes, void **out) {
      Translated t;
      if (!reg.translate(ptr, bytes, &t)) return false;
      *out = t.addr;
      return true;
    };
    bool good = true;
    for (int q = 0; q < p.nranks && good; ++q) {
      void *b = nullptr, *c = nullptr;
      good = shadow(p.bank[q], p.bytes, &b) && shadow(p.ctl[q], sizeof(FusedControl), &c);
      j.bank[q] = static_cast<unsigned char *>(b);
      j.ctl[q] = static_cast<FusedControl *>(c);
      if (good && p.kind == FusedKind::Allgather && p.dst[q]) {
        void *d = nullptr;
        good = shadow(p.dst[q], p.bytes, &d);
        j.dst[q] = static_cast<unsigned char *>(d);
      }
    }
    void *in = nullptr, *out = nullptr, *status = nullptr;
    const bool publishes = !p.failed && (p.kind != FusedKind::Bcast || p.me == p.root);
    if (good && publishes && !p.resume) good = shadow(p.in, p.bytes, &in);
    if (good && p.kind != FusedKind::Allgather) good = shadow(p.out, p.bytes, &out);
    if (good) good = shadow(p.status, sizeof(std::uint64_t) * static_cast<std::size_t>(p.blocks), &status);
    if (!good) return Status::ErrArg;
    j.in = static_cast<const unsigned char *>(in);
    j.out = static_cast<unsigned char *>(out);
    j.status = static_cast<std::uint64_t *>(status);
    return es->enqueue([j] { run_fused(j); }) ? Status::Ok : Status::ErrNoMem;
  }

  const char *last_error() override {
    t_reported.swap(t_error);
    t_error.clear();
    return t_reported.c_str();
  }

 private:
  // Stream 0 is the legacy default stream, as in CUDA.
  static EmuStream *resolve(Stream s) { return s ? static_cast<EmuStream *>(s) : state().legacy(); }

  static Status failure_check(EmuStream *es) {
    if (!es->take_failure()) return Status::Ok;
    set_error("emulated GPU: a reduction queued on stream %p failed", static_cast<void *>(es));
    return Status::ErrInternal;
  }

  static void warn_on_free_failure(int code, void *p) {
    if (code != GCOLL_EMU_OK) GCOLL_WARN("emulated GPU: cannot free %p: %s", p, t_error.c_str());
  }
};

}  // namespace

Driver &emulated_driver() {
  static Driver *const d = new EmuDriver;
  return *d;
}

Runtime &emulated_runtime() {
  static Runtime *const r = new EmuRuntime;
  return *r;
}

namespace emu {

bool active() { return config().cuda_emulate; }

int malloc(void **p, std::size_t bytes, int kind) { return allocate(p, bytes, kind); }

int free(void *p) { return release(p); }

int memcpy(void *dst, const void *src, std::size_t bytes) {
  if (bytes == 0) return GCOLL_EMU_OK;
  if (!dst || !src) return GCOLL_EMU_ERR_INVALID;
  EmuStream *ls = state().legacy();
  if (!ls) return GCOLL_EMU_ERR_NOMEM;
  Translated d, s;
  if (!state().registry.translate(dst, bytes, &d) || !state().registry.translate(src, bytes, &s))
    return GCOLL_EMU_ERR_INVALID;
  void *dp = d.addr;
  if (is_device_kind(d.kind) && !is_device_kind(s.kind)) {
    // Host to device returns once the source is staged, before the data lands (what CUDA
    // documents for pageable memory): the caller may reuse its buffer at once, and who
    // reads the device buffer must order itself after the legacy stream.
    std::shared_ptr<unsigned char[]> staged;
    try {
      staged.reset(new unsigned char[bytes]);
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory staging a %zu-byte copy", bytes);
      return GCOLL_EMU_ERR_NOMEM;
    }
    std::memcpy(staged.get(), s.addr, bytes);
    return ls->enqueue([dp, staged, bytes] { std::memcpy(dp, staged.get(), bytes); }) ? GCOLL_EMU_OK
                                                                                        : GCOLL_EMU_ERR_NOMEM;
  }
  const void *sp = s.addr;
  if (!ls->enqueue([dp, sp, bytes] { host_copy(dp, sp, bytes); })) return GCOLL_EMU_ERR_NOMEM;
  // Device to device returns at once; into host memory, when the bytes are there.
  if (!is_device_kind(d.kind)) ls->synchronize();
  return GCOLL_EMU_OK;
}

int memset(void *p, int value, std::size_t bytes) {
  Translated d;
  if (!state().registry.translate(p, bytes, &d)) return GCOLL_EMU_ERR_INVALID;
  if (d.kind < 0) {
    // cudaMemset refuses pageable host memory.
    set_error("emulated GPU: memset of %p: not memory of the emulation", p);
    return GCOLL_EMU_ERR_INVALID;
  }
  EmuStream *ls = state().legacy();
  if (!ls) return GCOLL_EMU_ERR_NOMEM;
  void *dp = d.addr;
  return ls->enqueue([dp, value, bytes] { std::memset(dp, value, bytes); }) ? GCOLL_EMU_OK : GCOLL_EMU_ERR_NOMEM;
}

int device_synchronize() {
  state().synchronize_all();
  return GCOLL_EMU_OK;
}

int pointer_kind(const void *p) {
  std::uintptr_t base = 0;
  Range r;
  return state().registry.find(p, &base, &r) ? r.kind : -1;
}

void set_delay_for_testing(int max_us) { g_delay_override.store(max_us < 0 ? -1 : max_us, std::memory_order_relaxed); }

void *transport_view(const void *p, std::size_t bytes) {
  Translated t;
  return state().registry.translate(p, bytes, &t) ? t.addr : nullptr;
}

}  // namespace emu
}  // namespace cuda
}  // namespace gcoll
