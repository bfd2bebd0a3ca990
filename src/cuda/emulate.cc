// The emulated GPU (emulate.h), by concern:
//   - emulate_memory.*: the memory registry (every allocation by address, with the
//     shadow view through which the emulation, and only it, reads and writes device
//     memory), allocation, the error messages;
//   - emulate_streams.*: streams and events (one worker thread per stream runs queued
//     operations in order, each after a random delay), the process's state;
//   - emulate_machine.*: the devices (one, or a topology file's), current devices, peer
//     access between them;
//   - emulate_ipc.cc: the Driver (pointer queries, CUDA IPC between processes);
//   - emulate_runtime.cc: the Runtime; emulate_fused.*: the fused one-shot kernel;
//   - this file: the emu:: functions behind include/gcoll/gcoll_emulate.h.
// Nothing here throws out: allocation failures become Status / gcoll_emu_error codes.
#include "cuda/emulate.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "base/config.h"
#include "cuda/emulate_machine.h"
#include "cuda/emulate_streams.h"
#include "kernels/host_reduce.h"

namespace gcoll {
namespace cuda {
namespace emu {

using namespace emu_impl;

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

void park_threads() { state().park_all(); }

int pointer_kind(const void *p) {
  std::uintptr_t base = 0;
  Range r;
  return state().registry.find(p, &base, &r) ? r.kind : -1;
}

int pointer_device(const void *p) {
  std::uintptr_t base = 0;
  Range r;
  return state().registry.find(p, &base, &r) && r.device() ? r.dev : -1;
}

int device_count() { return machine().count(); }

int current_device() { return emu_impl::current_device(); }

int set_device(int dev) { return set_current_device(dev) ? GCOLL_EMU_OK : GCOLL_EMU_ERR_INVALID; }

bool can_access_peer(int dev, int peer) { return peer_hardware(dev, peer); }

const char *device_pci_bus_id(int dev) {
  return valid_device(dev) ? machine().bus_ids[static_cast<std::size_t>(dev)].c_str() : nullptr;
}

namespace {
int saturated(const std::atomic<std::uint64_t> &c) {
  const std::uint64_t v = c.load(std::memory_order_relaxed);
  return v > static_cast<std::uint64_t>(INT32_MAX) ? INT32_MAX : static_cast<int>(v);
}
}  // namespace

int denied_ipc_opens() { return saturated(g_denied_ipc_opens); }

int broken_ipc_opens() { return saturated(g_broken_ipc_opens); }

void set_delay_for_testing(int max_us) { g_delay_override.store(max_us < 0 ? -1 : max_us, std::memory_order_relaxed); }

void *transport_view(const void *p, std::size_t bytes) {
  Translated t;
  return state().registry.translate(p, bytes, &t) ? t.addr : nullptr;
}

}  // namespace emu
}  // namespace cuda
}  // namespace gcoll
