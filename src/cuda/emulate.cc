// The emulated GPU (emulate.h), by concern:
//   - emulate_memory.*: the memory registry (every allocation by address, with the
//     shadow view through which the emulation, and only it, reads and writes device
//     memory), allocation, the error messages;
//   - emulate_streams.*: streams and events (one worker thread per stream runs queued
//     operations in order, each after a random delay), graph capture, the process's state;
//   - emulate_machine.*: the devices (one, or a topology file's), current devices, peer
//     access between them;
//   - emulate_ipc.cc: the Driver (pointer queries, CUDA IPC between processes);
//   - emulate_runtime.cc: the Runtime; emulate_fused.*: the fused one-shot kernel;
//   - this file: the emu:: functions behind include/gcoll/gcoll_emulate.h.
// Nothing here throws out: allocation failures become Status / gcoll_emu_error codes.
#include "cuda/emulate.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <thread>

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

namespace {

// A copy queued on es: emu::memcpy (async false: cudaMemcpy) and emu::memcpy_async
// (cudaMemcpyAsync). A host source the caller may reuse once it returns is staged; a
// destination the caller reads once it returns is waited for.
int copy_on(EmuStream *es, void *dst, const void *src, std::size_t bytes, bool async) {
  if (bytes == 0) return GCOLL_EMU_OK;
  if (!dst || !src) return GCOLL_EMU_ERR_INVALID;
  Translated d, s;
  if (!state().registry.translate(dst, bytes, &d) || !state().registry.translate(src, bytes, &s))
    return GCOLL_EMU_ERR_INVALID;
  if (pageable_copy_refused(es, d.kind, s.kind)) return GCOLL_EMU_ERR_CAPTURE;
  void *dp = d.addr;
  if (is_device_kind(d.kind) && !is_device_kind(s.kind) && (!async || s.kind < 0)) {
    // Host to device returns once the source is staged, before the data lands (what CUDA
    // documents for pageable memory): the caller may reuse its buffer at once, and who
    // reads the device buffer must order itself after the stream.
    std::shared_ptr<unsigned char[]> staged;
    try {
      staged.reset(new unsigned char[bytes]);
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory staging a %zu-byte copy", bytes);
      return GCOLL_EMU_ERR_NOMEM;
    }
    std::memcpy(staged.get(), s.addr, bytes);
    return es->enqueue([dp, staged, bytes] { std::memcpy(dp, staged.get(), bytes); }) ? GCOLL_EMU_OK
                                                                                        : GCOLL_EMU_ERR_NOMEM;
  }
  const void *sp = s.addr;
  if (!es->enqueue([dp, sp, bytes] { host_copy(dp, sp, bytes); })) return GCOLL_EMU_ERR_NOMEM;
  // Device to device returns at once; into host memory (async: pageable), when the bytes
  // are there.
  if (!is_device_kind(d.kind) && (!async || d.kind < 0)) es->synchronize();
  return GCOLL_EMU_OK;
}

int set_on(EmuStream *es, void *p, int value, std::size_t bytes) {
  Translated d;
  if (!state().registry.translate(p, bytes, &d)) return GCOLL_EMU_ERR_INVALID;
  if (d.kind < 0) {
    // cudaMemset refuses pageable host memory.
    set_error("emulated GPU: memset of %p: not memory of the emulation", p);
    return GCOLL_EMU_ERR_INVALID;
  }
  void *dp = d.addr;
  return es->enqueue([dp, value, bytes] { std::memset(dp, value, bytes); }) ? GCOLL_EMU_OK : GCOLL_EMU_ERR_NOMEM;
}

// The stream of a C API call: GCOLL_EMU_OK and *es, or the error code.
int stream_of(void *stream, EmuStream **es) {
  *es = resolve_checked(stream);
  if (*es) return GCOLL_EMU_OK;
  return default_stream_handle(stream) ? GCOLL_EMU_ERR_NOMEM  // the legacy stream could not be had
                                       : GCOLL_EMU_ERR_INVALID;
}

}  // namespace

int memcpy(void *dst, const void *src, std::size_t bytes) {
  if (bytes == 0) return GCOLL_EMU_OK;
  EmuStream *ls = state().legacy();
  if (!ls) return GCOLL_EMU_ERR_NOMEM;
  return copy_on(ls, dst, src, bytes, false);
}

int memset(void *p, int value, std::size_t bytes) {
  EmuStream *ls = state().legacy();
  if (!ls) return GCOLL_EMU_ERR_NOMEM;
  return set_on(ls, p, value, bytes);
}

int stream_create(void **stream) {
  if (!stream) return GCOLL_EMU_ERR_INVALID;
  EmuStream *es = state().create_stream();
  *stream = es;
  return es ? GCOLL_EMU_OK : GCOLL_EMU_ERR_NOMEM;
}

int stream_destroy(void *stream) {
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  if (es == state().legacy()) {
    set_error("emulated GPU: the legacy default stream cannot be destroyed");
    return GCOLL_EMU_ERR_INVALID;
  }
  state().destroy_stream(es);
  return GCOLL_EMU_OK;
}

int stream_synchronize(void *stream) {
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  if (refused_under_capture(es, "cudaStreamSynchronize")) return GCOLL_EMU_ERR_CAPTURE;
  es->synchronize();  // (a failed reduction stays for gcoll's own check: take_failure)
  if (es->trapped()) {
    set_error("emulated GPU: a kernel on stream %p trapped (a stream-ordered collective failed or timed out)",
              static_cast<void *>(es));
    return GCOLL_EMU_ERR_TRAPPED;
  }
  return GCOLL_EMU_OK;
}

int stream_query(void *stream) {
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  if (refused_under_capture(es, "cudaStreamQuery")) return GCOLL_EMU_ERR_CAPTURE;
  return es->idle() ? GCOLL_EMU_OK : GCOLL_EMU_ERR_NOT_READY;
}

int memcpy_async(void *dst, const void *src, std::size_t bytes, void *stream) {
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  return copy_on(es, dst, src, bytes, true);
}

int memset_async(void *p, int value, std::size_t bytes, void *stream) {
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  return set_on(es, p, value, bytes);
}

int stream_sleep(void *stream, unsigned int microseconds) {
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  return es->enqueue([microseconds] { std::this_thread::sleep_for(std::chrono::microseconds(microseconds)); })
             ? GCOLL_EMU_OK
             : GCOLL_EMU_ERR_NOMEM;
}

namespace {
// A Runtime event call's outcome as the C API's code (ErrArg: refused under capture).
int event_code(Status st) {
  return ok(st) ? GCOLL_EMU_OK : st == Status::ErrArg ? GCOLL_EMU_ERR_CAPTURE : GCOLL_EMU_ERR_INVALID;
}
}  // namespace

int event_create(void **event) {
  if (!event) return GCOLL_EMU_ERR_INVALID;
  return ok(emulated_runtime().event_create(event)) ? GCOLL_EMU_OK : GCOLL_EMU_ERR_NOMEM;
}

int event_destroy(void *event) {
  if (!event) return GCOLL_EMU_ERR_INVALID;
  emulated_runtime().event_destroy(event);
  return GCOLL_EMU_OK;
}

int event_record(void *event, void *stream) {
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  if (!event) return GCOLL_EMU_ERR_INVALID;
  return event_code(emulated_runtime().event_record(event, stream));
}

int event_synchronize(void *event) {
  if (!event) return GCOLL_EMU_ERR_INVALID;
  for (;;) {
    bool done = false;
    const Status st = emulated_runtime().event_query(event, &done);
    if (!ok(st)) return event_code(st);
    if (done) return GCOLL_EMU_OK;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

int stream_wait_event(void *stream, void *event) {
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  if (!event) return GCOLL_EMU_ERR_INVALID;
  return event_code(emulated_runtime().stream_wait_event(stream, event));
}

int stream_begin_capture(void *stream) {
  if (default_stream_handle(stream)) {
    // CUDA refuses cudaStreamLegacy; the emulation's one default stream also stands for
    // cudaStreamPerThread, which it would capture with every thread's legacy work.
    set_error("emulated GPU: the default stream cannot be captured (use a stream of gcoll_emu_stream_create)");
    return GCOLL_EMU_ERR_INVALID;
  }
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  if (es->begin_capture()) return GCOLL_EMU_OK;
  set_error("emulated GPU: stream %p is capturing already", stream);
  return GCOLL_EMU_ERR_CAPTURE;
}

int stream_end_capture(void *stream, void **graph) {
  if (!graph) return GCOLL_EMU_ERR_INVALID;
  *graph = nullptr;
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  GraphOps ops;
  const char *invalidated_by = nullptr;
  if (!es->end_capture(&ops, &invalidated_by)) {
    set_error("emulated GPU: stream %p is not capturing", stream);
    return GCOLL_EMU_ERR_CAPTURE;
  }
  if (invalidated_by) {
    set_error("emulated GPU: the capture on stream %p was invalidated by %s, which it refused: no graph "
              "(CUDA: cudaErrorStreamCaptureInvalidated)",
              stream, invalidated_by);
    return GCOLL_EMU_ERR_CAPTURE;
  }
  *graph = state().add_graph(std::move(ops));
  return *graph ? GCOLL_EMU_OK : GCOLL_EMU_ERR_NOMEM;
}

int stream_is_capturing(void *stream, int *capturing) {
  if (!capturing) return GCOLL_EMU_ERR_INVALID;
  *capturing = 0;
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  *capturing = es->capturing() ? 1 : 0;
  return GCOLL_EMU_OK;
}

int graph_launch(void *graph, void *stream) {
  const std::shared_ptr<const GraphOps> ops = state().graph(graph);
  if (!ops) {
    set_error("emulated GPU: %p is not a graph of the emulation", graph);
    return GCOLL_EMU_ERR_INVALID;
  }
  EmuStream *es = nullptr;
  const int rc = stream_of(stream, &es);
  if (rc != GCOLL_EMU_OK) return rc;
  return es->enqueue_graph(*ops) ? GCOLL_EMU_OK : GCOLL_EMU_ERR_NOMEM;
}

int graph_destroy(void *graph) {
  if (state().remove_graph(graph)) return GCOLL_EMU_OK;
  set_error("emulated GPU: %p is not a graph of the emulation", graph);
  return GCOLL_EMU_ERR_INVALID;
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

int stream_ordered_device_waits() { return saturated(g_stream_ordered_device_waits); }

int broken_ipc_opens() { return saturated(g_broken_ipc_opens); }

void set_delay_for_testing(int max_us) { g_delay_override.store(max_us < 0 ? -1 : max_us, std::memory_order_relaxed); }

void *transport_view(const void *p, std::size_t bytes) {
  Translated t;
  return state().registry.translate(p, bytes, &t) ? t.addr : nullptr;
}

}  // namespace emu
}  // namespace cuda
}  // namespace gcoll
