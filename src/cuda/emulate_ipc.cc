// The emulated GPU's driver (emulate.h): pointer queries from the registry, and CUDA IPC
// between processes as memfds that peers reopen through /proc/<pid>/fd/<fd>, with the
// peer access of the topology file's machine (emulate_machine.h): refused between GPUs
// without it, a private copy across a broken pair.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/log.h"
#include "cuda/emulate.h"
#include "cuda/emulate_machine.h"
#include "cuda/emulate_streams.h"

namespace gcoll {
namespace cuda {
namespace {

using namespace emu_impl;

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

// A new memfd holding the first `len` bytes of `fd` as they are now: what an importer
// across a broken pair maps, so that it reads the bytes of the moment of the open and its
// writes never reach the owner (as when peer writes land in a VM's private copy). -1
// (last_error set) on failure.
int private_copy(int fd, std::size_t len, int pid, std::uint64_t id) {
  char name[80];
  std::snprintf(name, sizeof name, "gcoll-emu-copy-%d-%llu", pid, static_cast<unsigned long long>(id));
  const int copy = memfd_create(name, MFD_CLOEXEC);
  if (copy < 0) {
    set_error("emulated GPU: memfd_create failed: %s", std::strerror(errno));
    return -1;
  }
  void *from = MAP_FAILED, *to = MAP_FAILED;
  if (ftruncate(copy, static_cast<off_t>(len)) == 0) {
    from = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    to = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, copy, 0);
  }
  const bool good = from != MAP_FAILED && to != MAP_FAILED;
  if (good) std::memcpy(to, from, len);
  else set_error("emulated GPU: copying %zu bytes of an IPC mapping failed: %s", len, std::strerror(errno));
  if (from != MAP_FAILED) munmap(from, len);
  if (to != MAP_FAILED) munmap(to, len);
  if (!good) {
    close(copy);
    return -1;
  }
  return copy;
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
    out->ordinal = r.dev;
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
    IpcPayload pl{kHandleMagic, static_cast<std::int32_t>(getpid()), r.fd, static_cast<std::uint32_t>(r.dev),
                  r.size, r.id};
    std::memset(out->bytes, 0, sizeof out->bytes);
    std::memcpy(out->bytes, &pl, sizeof pl);
    return Status::Ok;
  }

  Status ipc_open(const IpcHandle &h, void **out) override {
    note_exclusive("cuIpcOpenMemHandle");
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
    // Into the calling thread's current device, as cuIpcOpenMemHandle maps into the
    // current context: that device must reach the exporter's (a handle of a device this
    // machine does not have, from a process that read another file: as if the same).
    const int dev = current_device();
    const int from = static_cast<int>(pl.device);
    const bool other_device = valid_device(from) && from != dev;
    if (other_device && !peer_hardware(dev, from)) {
      g_denied_ipc_opens.fetch_add(1, std::memory_order_relaxed);
      const Machine &m = machine();
      set_error("emulated GPU: peer access is not supported between GPU %s and GPU %s (topology file)",
                m.bus_ids[static_cast<std::size_t>(dev)].c_str(), m.bus_ids[static_cast<std::size_t>(from)].c_str());
      GCOLL_WARN("%s", error_text());
      return Status::ErrInternal;
    }
    const bool broken = other_device && peer_broken(dev, from);
    const std::pair<int, std::uint64_t> origin{pl.pid, pl.id};
    Registry &reg = state().registry;
    if (reg.reopen(origin, broken ? dev : -1, out)) {
      if (broken) g_broken_ipc_opens.fetch_add(1, std::memory_order_relaxed);
      return Status::Ok;
    }

    Range r;
    r.size = static_cast<std::size_t>(pl.size);
    r.map_len = mapped_length(r.size);
    r.kind = GCOLL_EMU_MEM_DEVICE;
    r.dev = dev;
    r.id = reg.next_id();  // a buffer ID of this process, as the driver gives an IPC mapping
    r.imported = true;
    r.refs = 1;
    r.origin = origin;
    r.copy_of = broken ? dev : -1;
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
    int mfd = fd;
    if (broken) {
      // The pair's peer access is broken (topology file): the open succeeds, as it does on
      // such hardware, but what the importer reads and writes is not the owner's memory.
      mfd = private_copy(fd, r.map_len, static_cast<int>(pl.pid), pl.id);
      close(fd);
      if (mfd < 0) {
        GCOLL_WARN("%s", error_text());
        return Status::ErrNoMem;
      }
    }
    void *view = nullptr;
    const bool mapped = map_device(mfd, r.map_len, &view, &r.shadow);
    close(mfd);  // the mapping keeps the memory
    if (!mapped) {
      GCOLL_WARN("%s", error_text());
      return Status::ErrNoMem;
    }
    const auto b = reinterpret_cast<std::uintptr_t>(view);
    if (!reg.add_import(b, r, out)) {
      unmap(b, r);
      return Status::ErrNoMem;
    }
    if (*out != view) unmap(b, r);  // another thread mapped it first
    if (broken) g_broken_ipc_opens.fetch_add(1, std::memory_order_relaxed);
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

}  // namespace

Driver &emulated_driver() {
  static Driver *const d = new EmuDriver;
  return *d;
}

}  // namespace cuda
}  // namespace gcoll
