// The Runtime on a real GPU: the static CUDA runtime and the reduction kernels of
// src/kernels/cuda_reduce*.cu. Every failure is kept as this thread's last error text
// (the runtime's sticky error is cleared, so the application never finds ours).
// What only asks about devices (current_device, device_count, can_access_peer,
// device_info: asked on host paths too, e.g. for the rail NIC nearest this rank's GPU)
// answers "none" until the driver is active (device.h: Driver::active, driver_gate.h):
// the runtime's first call would load libcuda.so.1 into a process that never loaded it.
// The rest (streams, memory, copies) runs only for device buffers, or for a program that
// uses this runtime as its CUDA (fused_test.cc): the runtime loads the driver then.
#include <cuda.h>  // types and enums only: the driver's functions come through entry points
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "cuda/device.h"
#include "cuda/runtime.h"
#include "kernels/cuda_compress.cuh"
#include "kernels/cuda_reduce.cuh"
#include "topo/node_topo.h"

namespace gcoll {
namespace cuda {

Runtime *make_cuda_runtime();

namespace {

thread_local char t_error[160] = "";

Status check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return Status::Ok;
  std::snprintf(t_error, sizeof t_error, "%s: %s (CUDA error %d)", what, cudaGetErrorString(e),
                static_cast<int>(e));
  cudaGetLastError();
  return e == cudaErrorMemoryAllocation ? Status::ErrNoMem : Status::ErrInternal;
}

cudaStream_t S(Stream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t E(Event e) { return static_cast<cudaEvent_t>(e); }

// ---- stream memory operations: the driver's, without linking libcuda ------------------
// cuStreamWaitValue32 / cuStreamWriteValue32 have no runtime counterpart: they come
// through cudaGetDriverEntryPointByVersion (as driver_cuda.cc's functions do), asked for
// once, by the first caller that finds the driver active (the lookup initialises the
// runtime, which loads libcuda.so.1: never before the application has loaded it).
// The ABI is CUDA 12.0's: the _v2 operations (the v1 ones and their attribute
// CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1 are gone; since CUDA 12 the 32-bit
// operations are supported on every device, so finding the entry points is the test).
// Looked up with cudaEnableLegacyStream: stream 0 is the legacy default stream whatever
// this file is compiled with; CU_STREAM_PER_THREAD (cudaStreamPerThread) is understood by
// every entry point.
using CuStreamWaitValue32 = CUresult(CUDAAPI *)(CUstream s, CUdeviceptr addr, cuuint32_t value,
                                                unsigned int flags);  // _v2
using CuStreamWriteValue32 = CUresult(CUDAAPI *)(CUstream s, CUdeviceptr addr, cuuint32_t value,
                                                 unsigned int flags);  // _v2
using CuGetErrorString = CUresult(CUDAAPI *)(CUresult e, const char **text);

constexpr unsigned int kMemOpsAbi = 12000;

struct MemOps {
  CuStreamWaitValue32 wait = nullptr;
  CuStreamWriteValue32 write = nullptr;
  CuGetErrorString error_string = nullptr;  // for messages only (may stay null)
  bool usable() const { return wait && write; }
};

template <class Fn>
void memops_lookup(const char *symbol, Fn *fn) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, kMemOpsAbi, cudaEnableLegacyStream, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p) {
    cudaGetLastError();  // not the application's error to find
    *fn = nullptr;
    return;
  }
  *fn = reinterpret_cast<Fn>(p);
}

// The entry points, looked up by the first caller (thread-safe static); only called once
// the driver is active.
const MemOps &memops() {
  static const MemOps m = [] {
    MemOps o;
    memops_lookup("cuStreamWaitValue32", &o.wait);
    memops_lookup("cuStreamWriteValue32", &o.write);
    memops_lookup("cuGetErrorString", &o.error_string);
    return o;
  }();
  return m;
}

Status check_driver(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return Status::Ok;
  const char *text = nullptr;
  if (memops().error_string && memops().error_string(r, &text) != CUDA_SUCCESS) text = nullptr;
  std::snprintf(t_error, sizeof t_error, "%s: %s (CUDA driver error %d)", what, text ? text : "unknown error",
                static_cast<int>(r));
  return r == CUDA_ERROR_OUT_OF_MEMORY ? Status::ErrNoMem : Status::ErrInternal;
}

// The device address of a host word of malloc_host_mapped memory (under UVA, which every
// 64-bit Linux platform of CUDA 12 has, the host address itself; asked all the same, as
// the stream memory operations require a device pointer). Memory the call does not know
// as mapped host memory (device memory: its address is the device's, under UVA) is taken
// as it is.
CUdeviceptr device_address(const volatile void *word) {
  void *host = const_cast<void *>(word);
  void *dev = nullptr;
  if (cudaHostGetDevicePointer(&dev, host, 0) != cudaSuccess) {
    cudaGetLastError();
    dev = host;
  }
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(dev));
}

class CudaRuntime final : public Runtime {
 public:
  const char *name() const override { return "CUDA"; }

  int current_device() override {
    if (!driver().active()) return -1;
    int d = -1;
    if (cudaGetDevice(&d) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return d;
  }
  Status set_device(int dev) override { return check(cudaSetDevice(dev), "cudaSetDevice"); }
  int device_count() override {
    if (!driver().active()) return 0;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }
  bool can_access_peer(int dev, int peer) override {
    const int n = device_count();
    if (dev < 0 || peer < 0 || dev >= n || peer >= n) return false;
    if (dev == peer) return true;  // cudaDeviceCanAccessPeer answers 0 for a device and itself
    int can = 0;
    if (!ok(check(cudaDeviceCanAccessPeer(&can, dev, peer), "cudaDeviceCanAccessPeer"))) return false;
    return can != 0;
  }

  Status stream_create(Stream *s) override {
    cudaStream_t st = nullptr;
    const Status r = check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    *s = st;
    return r;
  }
  void stream_destroy(Stream s) override {
    if (s) check(cudaStreamDestroy(S(s)), "cudaStreamDestroy");
  }
  Status stream_synchronize(Stream s) override { return check(cudaStreamSynchronize(S(s)), "cudaStreamSynchronize"); }

  Status event_create(Event *e) override {
    cudaEvent_t ev = nullptr;
    const Status r = check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    *e = ev;
    return r;
  }
  void event_destroy(Event e) override {
    if (e) check(cudaEventDestroy(E(e)), "cudaEventDestroy");
  }
  Status event_record(Event e, Stream s) override { return check(cudaEventRecord(E(e), S(s)), "cudaEventRecord"); }
  Status event_query(Event e, bool *done) override {
    const cudaError_t r = cudaEventQuery(E(e));
    *done = r == cudaSuccess;
    if (r == cudaErrorNotReady) {
      cudaGetLastError();
      return Status::Ok;
    }
    return check(r, "device work of a collective (cudaEventQuery)");
  }
  Status stream_wait_event(Stream s, Event e) override {
    return check(cudaStreamWaitEvent(S(s), E(e), 0), "cudaStreamWaitEvent");
  }
  // The legacy stream is the context's (shared with the application's own runtime, which
  // uses the same primary context); cudaStreamPerThread is the calling thread's.
  // cudaStreamWaitEvent waits for the record made just before it, so one event serves both.
  Status order_after_default_streams(Stream s, Event scratch) override {
    Status r = check(cudaEventRecord(E(scratch), cudaStreamLegacy), "cudaEventRecord (legacy stream)");
    if (ok(r)) r = stream_wait_event(s, scratch);
    if (ok(r)) r = check(cudaEventRecord(E(scratch), cudaStreamPerThread), "cudaEventRecord (per-thread stream)");
    if (ok(r)) r = stream_wait_event(s, scratch);
    return r;
  }

  Status malloc_device(void **p, std::size_t bytes) override {
    *p = nullptr;
    return check(cudaMalloc(p, bytes), "cudaMalloc");
  }
  void free_device(void *p) override {
    if (p) check(cudaFree(p), "cudaFree");
  }
  Status malloc_host(void **p, std::size_t bytes) override {
    *p = nullptr;
    return check(cudaHostAlloc(p, bytes, cudaHostAllocPortable), "cudaHostAlloc");
  }
  void free_host(void *p) override {
    if (p) check(cudaFreeHost(p), "cudaFreeHost");
  }

  Status memcpy_async(void *dst, const void *src, std::size_t bytes, Stream s) override {
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, S(s)), "cudaMemcpyAsync");
  }

  bool reduce_supported(ROp op, DType t) const override { return cuda_op_supported(op, t); }
  int max_sources() const override { return kCudaMaxSources; }
  Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count, Stream s) override {
    return check(cuda_reduce(t, op, dst, srcs, m, count, S(s)), "reduce kernel");
  }

  Status compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) override {
    return check(cuda_compress_encode(c, t, src, n, dst, S(s)), "compression kernel (encode)");
  }
  Status compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) override {
    return check(cuda_compress_decode(c, t, src, n, dst, false, S(s)), "compression kernel (decode)");
  }
  Status compress_decode_add(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) override {
    return check(cuda_compress_decode(c, t, src, n, dst, true, S(s)), "compression kernel (decode and add)");
  }

  Status device_info(int dev, DeviceInfo *out) override {
    *out = DeviceInfo{};
    if (!driver().active()) {
      std::snprintf(t_error, sizeof t_error, "the CUDA driver is not loaded in this process");
      return Status::NotSupported;
    }
    cudaDeviceProp prop{};
    Status r = check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    if (!ok(r)) return r;
    static_assert(sizeof prop.uuid.bytes == sizeof out->uuid, "a CUDA UUID is 16 bytes");
    std::memcpy(out->uuid, prop.uuid.bytes, sizeof out->uuid);
    out->sm_count = prop.multiProcessorCount;
    // cudaDeviceGetPCIBusId writes "0000:07:00.0" in upper case (and 8-digit domains on
    // some drivers): the model's form is lower case, 4 digits (topo/node_topo.h).
    char bus[32] = "";
    if (ok(check(cudaDeviceGetPCIBusId(bus, static_cast<int>(sizeof bus), dev), "cudaDeviceGetPCIBusId"))) {
      const std::string norm = topo::pci_bus_id_normalise(bus);
      if (norm.size() < sizeof out->pci_bus_id) std::memcpy(out->pci_bus_id, norm.c_str(), norm.size() + 1);
    }
    // "Contexts created on this device will be shared via MPS" (driver_types.h); a driver
    // too old for the attribute rejects it: unknown.
    int mps = 0;
    if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, dev) == cudaSuccess) {
      out->mps = mps ? 1 : 0;
    } else {
      cudaGetLastError();
      out->mps = -1;
    }
    return Status::Ok;
  }

  Status fused(const FusedParams &p, Stream s) override { return check(cuda_fused(p, S(s)), "fused collective kernel"); }

  Status malloc_host_mapped(void **p, std::size_t bytes) override {
    *p = nullptr;
    return check(cudaHostAlloc(p, bytes, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc (mapped)");
  }
  Status launch_host_func(Stream s, void (*fn)(void *), void *arg) override {
    return check(cudaLaunchHostFunc(S(s), fn, arg), "cudaLaunchHostFunc");
  }
  Status stream_wait_value32(Stream s, const volatile std::uint32_t *word, std::uint32_t value) override {
    if (!memops_ready()) return Status::NotSupported;
    return check_driver(memops().wait(static_cast<CUstream>(s), device_address(word), value,
                                      CU_STREAM_WAIT_VALUE_EQ),
                        "cuStreamWaitValue32");
  }
  Status stream_write_value32(Stream s, volatile std::uint32_t *word, std::uint32_t value) override {
    if (!memops_ready()) return Status::NotSupported;
    return check_driver(memops().write(static_cast<CUstream>(s), device_address(word), value,
                                       CU_STREAM_WRITE_VALUE_DEFAULT),
                        "cuStreamWriteValue32");
  }
  bool stream_memops_supported() override { return driver().active() && memops().usable(); }
  Status stream_device(Stream s, int *dev) override {
    if (!driver().active()) return Status::NotSupported;
    if (!s) return check(cudaGetDevice(dev), "cudaGetDevice");
    return check(cudaStreamGetDevice(S(s), dev), "cudaStreamGetDevice");
  }

  bool stream_capturing(Stream s) override {
    if (!driver().active()) return false;  // no driver: no stream of the application's either
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(S(s), &st) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return st != cudaStreamCaptureStatusNone;
  }

  const char *last_error() override { return t_error; }

 private:
  // The stream memory operations' entry points, or the reason there are none (t_error).
  static bool memops_ready() {
    if (driver().active() && memops().usable()) return true;
    std::snprintf(t_error, sizeof t_error,
                  "stream memory operations: the CUDA driver is not loaded or has no cuStreamWaitValue32_v2");
    return false;
  }
};

}  // namespace

Runtime *make_cuda_runtime() { return new CudaRuntime; }

}  // namespace cuda
}  // namespace gcoll
