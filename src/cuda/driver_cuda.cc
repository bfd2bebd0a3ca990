// The real Driver: the CUDA driver reached through the static runtime's entry-point
// lookup. libcuda is never linked (the runtime dlopens it), so on a machine without a
// driver every lookup fails, usable() is false, and nothing is printed. And it is looked
// up only once the application's process has loaded libcuda.so.1 itself (driver_gate.h):
// a process that never uses CUDA keeps no trace of the driver (its threads, descriptors on
// /dev/nvidia*, eventfds, pipes, sockets).
#include <cuda.h>  // types and enums only: every driver function comes through an entry point
#include <cuda_runtime_api.h>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "base/config.h"
#include "base/foreign.h"
#include "base/log.h"
#include "cuda/device.h"
#include "cuda/driver_gate.h"
#include "cuda/vm_hooks.h"

namespace gcoll {
namespace cuda {

// device.cc's default driver when built with CUDA.
Driver *make_real_driver();

namespace {

static_assert(sizeof(CUipcMemHandle) == sizeof(IpcHandle), "IpcHandle must hold a CUipcMemHandle");

// The driver ABI (the version each symbol has at CUDA 12.0; see cudaTypedefs.h). Declared
// here rather than taken from cudaTypedefs.h so that the version we ask for and the
// signature we call are side by side.
using CuInit = CUresult(CUDAAPI *)(unsigned int flags);
using CuDeviceGetCount = CUresult(CUDAAPI *)(int *count);
using CuPointerGetAttributes = CUresult(CUDAAPI *)(unsigned int n, CUpointer_attribute *attrs, void **data,
                                                  CUdeviceptr p);
using CuIpcGetMemHandle = CUresult(CUDAAPI *)(CUipcMemHandle *h, CUdeviceptr p);
using CuIpcOpenMemHandle = CUresult(CUDAAPI *)(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags);  // _v2
using CuIpcCloseMemHandle = CUresult(CUDAAPI *)(CUdeviceptr p);

// ---- the memory-kind cache on the real driver (device.h: KindCache) --------------------
// What the real driver can vouch for, and what it relies on: only memory CUDA does not
// know (CU_POINTER_ATTRIBUTE_MEMORY_TYPE 0: pageable memory of malloc, mmap, the stack)
// is ever answered `cacheable`, and only while UCX's memory hooks (vm_hooks.h) report
// every map and unmap in the process: such memory can only become device
// memory after its owner unmaps its range (munmap, mremap, brk, shmdt, or an mmap with
// MAP_FIXED over it), which the hooks see before it happens (UCM patches libc's own
// functions, so glibc's internal munmap in free() is seen too; they are checked with
// ucm_test_events when installed). Each event moves the epoch on, which forgets every
// answer. Device, pinned and managed memory is queried at every call: the driver frees
// and reuses those ranges without unmapping them (Debian's UCX has no CUDA hooks). What
// is not covered: an unmap made by a raw system call, bypassing libc.

// The ABI version we ask for: a driver older than this has no such entry points (and the
// CUDA 13 runtime refuses it anyway).
constexpr unsigned int kDriverAbi = 12000;

template <class Fn>
bool lookup(const char *symbol, Fn *fn) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, kDriverAbi, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p) {
    // No driver (cudaErrorInsufficientDriver), no device, too old a driver: all mean "no
    // GPU here", which is not worth a line at the default level. The runtime keeps the
    // error as its sticky last error; clear it so the application does not find it.
    cudaGetLastError();
    GCOLL_INFO("CUDA: no driver entry point %s (cuda error %d, query result %d): every buffer is host memory",
               symbol, static_cast<int>(e), static_cast<int>(q));
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

class RealDriver final : public Driver {
 public:
  RealDriver()
      : gate_(DriverGate::Steps{[] { return config().cuda; },
                                [] { return config().cuda_assume_gpu || nvidia_gpu_visible(); },
                                [this] { return libcuda_.loaded(); }, [this] { install_hooks(); },
                                [this] { return probe(); }}) {}

  // Decided once, on first use; after that one acquire load (classify calls it per buffer).
  bool usable() override { return gate_.usable(); }
  bool active() override { return gate_.active(); }
  bool load() override { return gate_.load(); }

  Status query(const void *p, PtrInfo *out) override {
    *out = PtrInfo{};
    if (__builtin_expect(gate_.state() != DriverGate::State::Active, 0) && !gate_.active()) {
      // No driver in the process: no device, pinned or managed memory can exist, so this
      // is host memory for sure. Dormant (the application has not loaded libcuda.so.1
      // yet), it stays so until its range is unmapped (the hooks' epoch moves then, as for
      // memory the driver answers type 0 for, below). Absent (off, no GPU, or the probe
      // that the application's libcuda.so.1 woke found no usable driver, perhaps between
      // two buffers of one call): host, and nothing to keep.
      if (hooks_ && gate_.state() == DriverGate::State::Dormant) {
        out->cacheable = true;
        out->lo = reinterpret_cast<std::uintptr_t>(p);
        out->hi = out->lo + 1;
      }
      return Status::Ok;
    }
    // The booleans are documented as "a boolean" without a width: zero-filled 8 bytes
    // read as "nonzero" are right whether the driver writes 1, 4 or 8 of them.
    CUmemorytype type = static_cast<CUmemorytype>(0);
    unsigned long long managed = 0, ipc = 0;
    int ordinal = -1;
    unsigned long long id = 0;
    CUdeviceptr start = 0;
    std::size_t size = 0;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                   CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[] = {&type, &managed, &ordinal, &id, &ipc, &start, &size};
    static_assert(sizeof attrs / sizeof attrs[0] == sizeof data / sizeof data[0], "one slot per attribute");
    // Host and unknown pointers are not an error here: the attributes keep their defaults
    // (memory type 0).
    const CUresult r = get_attributes_(sizeof attrs / sizeof attrs[0], attrs, data,
                                       static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)));
    if (r != CUDA_SUCCESS) return Status::ErrInternal;
    if (type == 0 && hooks_) {  // memory CUDA does not know: see g_vm_epoch
      out->cacheable = true;
      out->lo = reinterpret_cast<std::uintptr_t>(p);
      out->hi = out->lo + 1;
    }
    // Managed memory reports the device type but the CPU may read it: host for gcoll.
    if (type != CU_MEMORYTYPE_DEVICE || managed) return Status::Ok;
    out->device = true;
    out->ordinal = ordinal;
    out->base = static_cast<std::uintptr_t>(start);
    out->size = size;
    out->buffer_id = id;
    out->ipc_capable = ipc != 0;
    return Status::Ok;
  }

  Status ipc_export(std::uintptr_t base, IpcHandle *out) override {
    if (!active()) return Status::NotSupported;  // Dormant: no device memory to share
    CUipcMemHandle h;
    const CUresult r = ipc_get_(&h, static_cast<CUdeviceptr>(base));
    if (r != CUDA_SUCCESS) {
      GCOLL_WARN("CUDA: cuIpcGetMemHandle(0x%llx) failed (CUresult %d)", static_cast<unsigned long long>(base),
                 static_cast<int>(r));
      return Status::ErrInternal;
    }
    std::memcpy(out->bytes, &h, sizeof out->bytes);
    return Status::Ok;
  }

  // Maps into the calling thread's current context: the caller makes its device current
  // first (without one the driver answers CUDA_ERROR_INVALID_CONTEXT).
  Status ipc_open(const IpcHandle &h, void **out) override {
    *out = nullptr;
    if (!active()) return Status::NotSupported;
    CUipcMemHandle ch;
    std::memcpy(&ch, h.bytes, sizeof ch);
    CUdeviceptr p = 0;
    const CUresult r = ipc_open_(&p, ch, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != CUDA_SUCCESS) {
      // Already mapped: IpcOpenCache closes unused mappings of that peer and tries again
      // (and warns if that fails too).
      if (r == CUDA_ERROR_ALREADY_MAPPED)
        GCOLL_INFO("CUDA: cuIpcOpenMemHandle: CUDA_ERROR_ALREADY_MAPPED (%d)", static_cast<int>(r));
      else
        GCOLL_WARN("CUDA: cuIpcOpenMemHandle failed (CUresult %d)", static_cast<int>(r));
      return Status::ErrInternal;
    }
    *out = reinterpret_cast<void *>(static_cast<std::uintptr_t>(p));
    return Status::Ok;
  }

  Status ipc_close(void *p) override {
    if (!active()) return Status::NotSupported;  // nothing was opened
    const CUresult r = ipc_close_(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)));
    if (r != CUDA_SUCCESS) {
      // Late in MPI_Finalize the context may already be gone; the mapping went with it.
      GCOLL_INFO("CUDA: cuIpcCloseMemHandle(%p) failed (CUresult %d)", p, static_cast<int>(r));
      return Status::ErrInternal;
    }
    return Status::Ok;
  }

 private:
  // The memory hooks (vm_hooks.h) that let host answers be reused: installed where the
  // process may hold device memory (Dormant, or after a probe that found the driver
  // usable), once. Called by the gate under its lock, before it publishes that state.
  void install_hooks() {
    if (hooks_tried_ || !config().memory_cache) return;
    hooks_tried_ = true;
    ForeignScope scope;
    std::string why;
    if (install_vm_hooks(&why)) {
      GCOLL_INFO("CUDA: UCX memory hooks installed: host buffers are classified once until the process unmaps memory");
      hooks_ = true;
      epoch_ = &vm_epoch();
    } else {
      GCOLL_INFO("CUDA: %s: every buffer is queried at every call", why.c_str());
    }
  }

  // Creates no context: entry-point lookups, cuInit and cuDeviceGetCount only. Called by
  // the gate (once) where libcuda.so.1 is in the process, or for a tool that asks.
  bool probe() {
    // Loading and initialising the driver leaves the process as it found it (base/foreign.h;
    // the driver's own threads excepted: they are the driver's, and end with the process).
    ForeignScope scope;
    CuInit init = nullptr;
    CuDeviceGetCount count = nullptr;
    if (!lookup("cuInit", &init) || !lookup("cuDeviceGetCount", &count) ||
        !lookup("cuPointerGetAttributes", &get_attributes_) || !lookup("cuIpcGetMemHandle", &ipc_get_) ||
        !lookup("cuIpcOpenMemHandle", &ipc_open_) || !lookup("cuIpcCloseMemHandle", &ipc_close_))
      return false;
    int n = 0;
    CUresult r = count(&n);
    // The runtime initialises the driver when it loads it; should it not have, cuInit
    // (which creates no context either) and ask again.
    if (r == CUDA_ERROR_NOT_INITIALIZED) {
      r = init(0);
      if (r == CUDA_SUCCESS) r = count(&n);
    }
    if (r != CUDA_SUCCESS || n <= 0) {
      GCOLL_INFO("CUDA: no device (CUresult %d, %d devices): every buffer is host memory", static_cast<int>(r), n);
      return false;
    }
    GCOLL_INFO("CUDA: driver loaded, %d devices", n);
    install_hooks();
    return true;
  }

  // libcuda.so.1 in the process (the application's doing, or a tool's load()): what wakes
  // the gate. The file name: libcuda.so.1, or libcuda.so / libcuda.so.<version> where the
  // application loaded those.
  LibraryWatch libcuda_{"libcuda.so"};
  DriverGate gate_;
  // Set before the gate publishes Dormant or Active, never after; read only then.
  bool hooks_tried_ = false;
  bool hooks_ = false;  // UCX reports maps and unmaps: memory type 0 answers are cacheable
  CuPointerGetAttributes get_attributes_ = nullptr;
  CuIpcGetMemHandle ipc_get_ = nullptr;
  CuIpcOpenMemHandle ipc_open_ = nullptr;
  CuIpcCloseMemHandle ipc_close_ = nullptr;
};

}  // namespace

Driver *make_real_driver() { return new RealDriver; }

}  // namespace cuda
}  // namespace gcoll
