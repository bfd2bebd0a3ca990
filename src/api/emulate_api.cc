// include/gcoll/gcoll_emulate.h: the emulated GPU's C API for test programs. It lives in
// libgcoll.so itself (not in gcoll_cuda) because symbols of the static archives are not
// exported (-Wl,--exclude-libs,ALL). Every call but the informational ones refuses to
// work unless GCOLL_CUDA=emulate: a test program must not mix emulated buffers into a
// process whose gcoll classifies buffers with the real driver.
#include "gcoll/gcoll_emulate.h"

#include "cuda/emulate.h"

#define GCOLL_EMU_EXPORT extern "C" __attribute__((visibility("default")))

namespace emu = gcoll::cuda::emu;

GCOLL_EMU_EXPORT int gcoll_emu_active(void) { return emu::active() ? 1 : 0; }

GCOLL_EMU_EXPORT int gcoll_emu_device_count(void) { return emu::active() ? emu::device_count() : 0; }

GCOLL_EMU_EXPORT int gcoll_emu_set_device(int dev) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::set_device(dev);
}

GCOLL_EMU_EXPORT int gcoll_emu_get_device(int *dev) {
  if (!dev) return GCOLL_EMU_ERR_INVALID;
  *dev = -1;
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  *dev = emu::current_device();
  return GCOLL_EMU_OK;
}

GCOLL_EMU_EXPORT int gcoll_emu_can_access_peer(int dev, int peer) {
  return emu::active() && emu::can_access_peer(dev, peer) ? 1 : 0;
}

GCOLL_EMU_EXPORT const char *gcoll_emu_device_pci_bus_id(int dev) {
  return emu::active() ? emu::device_pci_bus_id(dev) : nullptr;
}

GCOLL_EMU_EXPORT int gcoll_emu_pointer_device(const void *p) { return emu::active() ? emu::pointer_device(p) : -1; }

GCOLL_EMU_EXPORT int gcoll_emu_denied_ipc_opens(void) { return emu::active() ? emu::denied_ipc_opens() : 0; }
GCOLL_EMU_EXPORT int gcoll_emu_stream_ordered_device_waits(void) {
  return emu::active() ? emu::stream_ordered_device_waits() : 0;
}

GCOLL_EMU_EXPORT int gcoll_emu_broken_ipc_opens(void) { return emu::active() ? emu::broken_ipc_opens() : 0; }

GCOLL_EMU_EXPORT int gcoll_emu_malloc(void **p, size_t bytes, int kind) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::malloc(p, bytes, kind);
}

GCOLL_EMU_EXPORT int gcoll_emu_free(void *p) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::free(p);
}

GCOLL_EMU_EXPORT int gcoll_emu_memcpy(void *dst, const void *src, size_t bytes) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::memcpy(dst, src, bytes);
}

GCOLL_EMU_EXPORT int gcoll_emu_memset(void *p, int value, size_t bytes) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::memset(p, value, bytes);
}

GCOLL_EMU_EXPORT int gcoll_emu_device_synchronize(void) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::device_synchronize();
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_create(void **stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_create(stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_destroy(void *stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_destroy(stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_synchronize(void *stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_synchronize(stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_query(void *stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_query(stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::memcpy_async(dst, src, bytes, stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_memset_async(void *p, int value, size_t bytes, void *stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::memset_async(p, value, bytes, stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_sleep(void *stream, unsigned int microseconds) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_sleep(stream, microseconds);
}

GCOLL_EMU_EXPORT int gcoll_emu_event_create(void **event) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::event_create(event);
}

GCOLL_EMU_EXPORT int gcoll_emu_event_destroy(void *event) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::event_destroy(event);
}

GCOLL_EMU_EXPORT int gcoll_emu_event_record(void *event, void *stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::event_record(event, stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_event_synchronize(void *event) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::event_synchronize(event);
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_wait_event(void *stream, void *event) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_wait_event(stream, event);
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_begin_capture(void *stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_begin_capture(stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_end_capture(void *stream, void **graph) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_end_capture(stream, graph);
}

GCOLL_EMU_EXPORT int gcoll_emu_stream_is_capturing(void *stream, int *capturing) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::stream_is_capturing(stream, capturing);
}

GCOLL_EMU_EXPORT int gcoll_emu_graph_launch(void *graph, void *stream) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::graph_launch(graph, stream);
}

GCOLL_EMU_EXPORT int gcoll_emu_graph_destroy(void *graph) {
  if (!emu::active()) return GCOLL_EMU_ERR_INACTIVE;
  return emu::graph_destroy(graph);
}

GCOLL_EMU_EXPORT int gcoll_emu_pointer_kind(const void *p) { return emu::active() ? emu::pointer_kind(p) : -1; }

GCOLL_EMU_EXPORT const char *gcoll_emu_error_string(int code) {
  switch (code) {
    case GCOLL_EMU_OK: return "success";
    case GCOLL_EMU_ERR_INACTIVE: return "the emulated GPU is not active (GCOLL_CUDA is not \"emulate\")";
    case GCOLL_EMU_ERR_NOMEM: return "out of memory";
    case GCOLL_EMU_ERR_INVALID: return "invalid argument (pointer, memory kind, size, device or stream)";
    case GCOLL_EMU_ERR_NOT_READY: return "work queued on the stream has not completed (not ready)";
    case GCOLL_EMU_ERR_CAPTURE: return "not permitted in the stream's graph capture state";
    case GCOLL_EMU_ERR_TRAPPED: return "a kernel on the stream trapped";
  }
  return "unknown gcoll_emu error code";
}
