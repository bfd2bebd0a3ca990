// The emulated GPU's memory: see emulate_memory.h.
#include "cuda/emulate_memory.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>

#include "cuda/emulate_machine.h"
#include "cuda/emulate_streams.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

namespace {

thread_local std::string t_error;     // the calling thread's last failure
thread_local std::string t_reported;  // what last_error() handed out (valid until the next call)

std::size_t page_size() {
  static const std::size_t s = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return s;
}

}  // namespace

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

const char *error_text() { return t_error.c_str(); }

const char *take_error() {
  t_reported.swap(t_error);
  t_error.clear();
  return t_reported.c_str();
}

std::size_t mapped_length(std::size_t bytes) {
  const std::size_t pg = page_size();
  if (bytes == 0) return pg;
  if (bytes > SIZE_MAX - (pg - 1)) return 0;
  return (bytes + pg - 1) / pg * pg;
}

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

Registry &registry() { return state().registry; }

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
    r.dev = current_device();  // cudaMalloc allocates on the calling thread's device
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

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
