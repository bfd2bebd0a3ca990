// The CUDA runtime as gcoll uses it: streams, events, allocations, copies, the
// reduction kernel and the fused one-shot collectives (kernels/fused.h). Everything in
// gcoll that moves device memory (the staged path, src/coll/staged.cc; the device memory
// space, src/mem/cuda_space.cc; the pipelined channel, src/net) goes through
// this interface, never through cudart directly, so that the same code runs on:
//   - the real GPU (runtime_cuda.cc: the static CUDA runtime and the kernels of
//     src/kernels/cuda_reduce*.cu), and
//   - the emulated GPU of GCOLL_CUDA=emulate (emulate.cc, a testing mode): device memory
//     the CPU cannot touch, IPC between processes, and streams whose work really runs
//     later, on worker threads, so that a missing wait gives a wrong result in CI; one
//     device, or the GPUs of a topology file (GCOLL_TOPO_FILE) with its peer access.
// Pointer classification and IPC handles are the Driver's (device.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "kernels/compress.h"
#include "kernels/fused.h"
#include "kernels/types.h"

namespace gcoll {
namespace cuda {

// Opaque handles: cudaStream_t / cudaEvent_t on a GPU, the emulation's own objects else.
using Stream = void *;
using Event = void *;

// What decides whether ranks sharing a GPU may spin on it (the fused one-shot), and where
// the GPU sits in the node's topology (topo/node_topo.h keys GPUs by PCI bus id).
struct DeviceInfo {
  unsigned char uuid[16] = {};  // the physical GPU (the same in every process, whatever
                                // CUDA_VISIBLE_DEVICES maps it to)
  char pci_bus_id[16] = {};     // "0000:07:00.0": lower case, domain included
                                // (topo::pci_bus_id_normalise); empty when unknown
  int sm_count = 0;
  int mps = -1;  // 1: this process's work on it runs under MPS (cudaDevAttrMpsEnabled);
                 // 0: it does not; -1: cannot tell (a driver older than the attribute)
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  // "CUDA" or "emulated GPU" (logs, gcoll_info).
  virtual const char *name() const = 0;

  // The calling thread's current device (-1 when it cannot be had) / makes `dev` current
  // for the calling thread (a thread that never set one uses the process's: CUDA's
  // device 0; the emulation's local_rank % device_count(), emulate.h).
  virtual int current_device() = 0;
  virtual Status set_device(int dev) = 0;
  // Devices this process sees (cudaGetDeviceCount; 0 when it cannot be had).
  virtual int device_count() = 0;
  // Whether device `dev` can map memory of device `peer` (cudaDeviceCanAccessPeer); a
  // device always reaches itself; false for devices that are not there. What the
  // hardware says, before gcoll's own policy (GCOLL_P2P_LEVEL) and data probe.
  virtual bool can_access_peer(int dev, int peer) = 0;

  // Streams that do not synchronise implicitly with the legacy default stream
  // (cudaStreamNonBlocking). Work queued on one runs in order, asynchronously.
  virtual Status stream_create(Stream *s) = 0;
  virtual void stream_destroy(Stream s) = 0;
  virtual Status stream_synchronize(Stream s) = 0;

  virtual Status event_create(Event *e) = 0;  // no timing
  virtual void event_destroy(Event e) = 0;
  virtual Status event_record(Event e, Stream s) = 0;
  // *done: everything queued on the stream before the last record has completed.
  virtual Status event_query(Event e, bool *done) = 0;
  virtual Status stream_wait_event(Stream s, Event e) = 0;
  // Work queued on `s` from now on starts only after everything the application has
  // already queued on the calling thread's default streams (the legacy stream and the
  // per-thread stream) has completed. cudaMemcpy from pageable host memory to the device
  // returns before the copy lands and cudaMemset returns at once: an application that
  // wrote its send buffer that way and calls MPI next expects MPI to see the data.
  // `scratch` is an event of the caller's, used for the ordering.
  virtual Status order_after_default_streams(Stream s, Event scratch) = 0;

  // Device memory (cudaMalloc) of the current device, and pinned host memory
  // (cudaHostAlloc, portable). free_* wait for the device as cudaFree does.
  virtual Status malloc_device(void **p, std::size_t bytes) = 0;
  virtual void free_device(void *p) = 0;
  virtual Status malloc_host(void **p, std::size_t bytes) = 0;
  virtual void free_host(void *p) = 0;

  // cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s): any pointers the device
  // can reach (device, IPC-mapped, pinned or pageable host memory).
  virtual Status memcpy_async(void *dst, const void *src, std::size_t bytes, Stream s) = 0;

  // dst = op(srcs[0], ..., srcs[m-1]) elementwise on the device, queued on `s`; m is at
  // most max_sources(); dst may be any of the sources itself (the same elements), never
  // a partial overlap.
  virtual bool reduce_supported(ROp op, DType t) const = 0;
  virtual int max_sources() const = 0;
  virtual Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count,
                        Stream s) = 0;

  // The compressed allreduce's formats (kernels/compress.h, docs/compression.md) on device
  // memory, queued on `s`: n elements of t (Float or Double) at src encoded into dst
  // (compressed_bytes(c, n)); decoded into dst; decoded and added into dst in dst's
  // precision. The same bytes and values as the host functions of compress.h (CUDA:
  // kernels/cuda_compress.cu; the emulated GPU runs those host functions). src and dst do
  // not overlap. An error (nothing queued) for Compress::Off, another type or a buffer
  // the runtime cannot reach; NotSupported without a runtime.
  virtual Status compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) = 0;
  virtual Status compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) = 0;
  virtual Status compress_decode_add(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) = 0;

  // Identity (uuid, PCI bus id), SM count and MPS state of device `dev`.
  virtual Status device_info(int dev, DeviceInfo *out) = 0;

  // The fused one-shot collectives (kernels/fused.h): queues the kernel of one op on `s`
  // (an allreduce needs reduce_supported(p.op, p.dtype)); what each block did is in
  // p.status once the stream has reached that point.
  virtual Status fused(const FusedParams &p, Stream s) = 0;

  // Stream-ordered work with the host (MPIX_*_enqueue, issue 30). `s` may be a stream of
  // the application's: one it created, nullptr (the legacy default stream, as
  // cudaStreamLegacy) or cudaStreamPerThread.
  //
  // Pinned host memory mapped into the device's address space (cudaHostAlloc with
  // cudaHostAllocPortable | cudaHostAllocMapped): the words stream_wait_value32 and
  // stream_write_value32 take live there. Freed with free_host.
  virtual Status malloc_host_mapped(void **p, std::size_t bytes) = 0;
  // cudaLaunchHostFunc: fn(arg) runs on a thread of the runtime's once the work queued on
  // `s` before it has completed; work queued after it waits until fn returns. fn must not
  // call the runtime.
  virtual Status launch_host_func(Stream s, void (*fn)(void *), void *arg) = 0;
  // Stream memory operations (cuStreamWaitValue32 with CU_STREAM_WAIT_VALUE_EQ,
  // cuStreamWriteValue32 with CU_STREAM_WRITE_VALUE_DEFAULT) on a 32-bit word of
  // malloc_host_mapped memory: work queued on `s` after the wait starts only once the word
  // equals `value` (written by any thread of the host); the write stores `value` in stream
  // order. Neither occupies the GPU's SMs while it waits. Only where
  // stream_memops_supported().
  virtual Status stream_wait_value32(Stream s, const volatile std::uint32_t *word, std::uint32_t value) = 0;
  virtual Status stream_write_value32(Stream s, volatile std::uint32_t *word, std::uint32_t value) = 0;
  // Whether the stream memory operations above are available on the current device: on a
  // GPU, whether the driver's entry points (cuStreamWaitValue32_v2, cuStreamWriteValue32_v2)
  // could be had; CUDA 12 and later support the 32-bit operations on every device (the
  // attribute that said so, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, went with the
  // v1 API). False until the driver is active.
  virtual bool stream_memops_supported() = 0;
  // cudaStreamIsCapturing(s) != cudaStreamCaptureStatusNone: work queued on `s` now goes
  // into a graph, not to the device (false where it cannot tell).
  virtual bool stream_capturing(Stream s) = 0;
  // The device `s` belongs to (cudaStreamGetDevice; the legacy default stream: the calling
  // thread's current device). ErrArg (message) when `s` is not a stream of this process.
  virtual Status stream_device(Stream s, int *dev) = 0;

  // The text of the last failure of this thread (for messages); clears it.
  virtual const char *last_error() = 0;
};

// The process's runtime: the emulation under GCOLL_CUDA=emulate, else the CUDA runtime
// (built with CUDA), else one whose every call answers NotSupported. Only meaningful
// where driver().usable().
Runtime &runtime();

}  // namespace cuda
}  // namespace gcoll
