/* gpu_api: the CUDA runtime or gcoll's emulated GPU behind one interface. See gpu_api.h.
 *
 * Compiled with GPU_API_NO_CUDA (gcoll built without CUDA: mpi_tests/gpu/CMakeLists.txt),
 * the CUDA branch is left out and nothing needs cudart: the emulated GPU is the only one
 * (GCOLL_CUDA=emulate); otherwise there is no device (gpu_have_cuda() is 0,
 * gpu_device_count fails with GPU_API_ERR_NO_CUDA) and the programs skip, as they do
 * without a GPU. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include "gpu_api.h"

#ifndef GPU_API_NO_CUDA
#include <cuda_runtime.h>
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "gcoll/gcoll_emulate.h"

/* ---- the mode ------------------------------------------------------------------------ */

/* The emulation's functions, from libgcoll.so (linked or preloaded): dlsym rather than a
 * link-time reference, so that the plain MPI programs (gpu_stats, the OSU benchmarks),
 * which must not link gcoll, find them exactly when it is preloaded. */
static struct {
  int (*active)(void);
  int (*device_count)(void);
  int (*set_device)(int);
  int (*get_device)(int *);
  const char *(*device_pci_bus_id)(int);
  int (*pointer_device)(const void *);
  int (*malloc_)(void **, size_t, int);
  int (*free_)(void *);
  int (*memcpy_)(void *, const void *, size_t);
  int (*memset_)(void *, int, size_t);
  int (*device_synchronize)(void);
  int (*pointer_kind)(const void *);
  const char *(*error_string)(int);
  int (*stream_create)(void **);
  int (*stream_destroy)(void *);
  int (*stream_synchronize)(void *);
  int (*stream_query)(void *);
  int (*memcpy_async)(void *, const void *, size_t, void *);
  int (*memset_async)(void *, int, size_t, void *);
  int (*stream_sleep)(void *, unsigned int);
  int (*stream_begin_capture)(void *);
  int (*stream_end_capture)(void *, void **);
  int (*graph_launch)(void *, void *);
  int (*graph_destroy)(void *);
  int (*event_create)(void **);
  int (*event_destroy)(void *);
  int (*event_record)(void *, void *);
  int (*event_synchronize)(void *);
  int (*stream_wait_event)(void *, void *);
} emu;

static int g_emulated;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *emu_symbol(const char *name) {
  void *f = dlsym(RTLD_DEFAULT, name);
  if (!f) {
    fprintf(stderr,
            "gpu_api: GCOLL_CUDA=emulate, but %s is not in the process (%s): the program must "
            "link libgcoll.so or run with LD_PRELOAD=libgcoll.so\n",
            name, dlerror());
    fflush(stderr);
    exit(1);
  }
  return f;
}

static void decide_mode(void) {
  const char *v = getenv("GCOLL_CUDA");
  g_emulated = v && strcasecmp(v, "emulate") == 0;
  if (!g_emulated) return;
  /* Every symbol now: a library without the emulation fails here, not halfway through. */
  *(void **)&emu.active = emu_symbol("gcoll_emu_active");
  *(void **)&emu.device_count = emu_symbol("gcoll_emu_device_count");
  *(void **)&emu.set_device = emu_symbol("gcoll_emu_set_device");
  *(void **)&emu.get_device = emu_symbol("gcoll_emu_get_device");
  *(void **)&emu.device_pci_bus_id = emu_symbol("gcoll_emu_device_pci_bus_id");
  *(void **)&emu.pointer_device = emu_symbol("gcoll_emu_pointer_device");
  *(void **)&emu.malloc_ = emu_symbol("gcoll_emu_malloc");
  *(void **)&emu.free_ = emu_symbol("gcoll_emu_free");
  *(void **)&emu.memcpy_ = emu_symbol("gcoll_emu_memcpy");
  *(void **)&emu.memset_ = emu_symbol("gcoll_emu_memset");
  *(void **)&emu.device_synchronize = emu_symbol("gcoll_emu_device_synchronize");
  *(void **)&emu.pointer_kind = emu_symbol("gcoll_emu_pointer_kind");
  *(void **)&emu.error_string = emu_symbol("gcoll_emu_error_string");
  *(void **)&emu.stream_create = emu_symbol("gcoll_emu_stream_create");
  *(void **)&emu.stream_destroy = emu_symbol("gcoll_emu_stream_destroy");
  *(void **)&emu.stream_synchronize = emu_symbol("gcoll_emu_stream_synchronize");
  *(void **)&emu.stream_query = emu_symbol("gcoll_emu_stream_query");
  *(void **)&emu.memcpy_async = emu_symbol("gcoll_emu_memcpy_async");
  *(void **)&emu.memset_async = emu_symbol("gcoll_emu_memset_async");
  *(void **)&emu.stream_sleep = emu_symbol("gcoll_emu_stream_sleep");
  *(void **)&emu.stream_begin_capture = emu_symbol("gcoll_emu_stream_begin_capture");
  *(void **)&emu.stream_end_capture = emu_symbol("gcoll_emu_stream_end_capture");
  *(void **)&emu.graph_launch = emu_symbol("gcoll_emu_graph_launch");
  *(void **)&emu.graph_destroy = emu_symbol("gcoll_emu_graph_destroy");
  *(void **)&emu.event_create = emu_symbol("gcoll_emu_event_create");
  *(void **)&emu.event_destroy = emu_symbol("gcoll_emu_event_destroy");
  *(void **)&emu.event_record = emu_symbol("gcoll_emu_event_record");
  *(void **)&emu.event_synchronize = emu_symbol("gcoll_emu_event_synchronize");
  *(void **)&emu.stream_wait_event = emu_symbol("gcoll_emu_stream_wait_event");
  /* The library reads GCOLL_CUDA itself; if it disagrees, every call would fail with
   * "inactive" and the tests would report that instead of the cause. */
  if (!emu.active()) {
    fprintf(stderr, "gpu_api: GCOLL_CUDA=%s, but libgcoll.so says the emulated GPU is not active\n", v);
    fflush(stderr);
    exit(1);
  }
}

int gpu_emulated(void) {
  pthread_once(&g_once, decide_mode);
  return g_emulated;
}

#ifdef GPU_API_NO_CUDA
int gpu_have_cuda(void) { return 0; }

const char *gpu_mode_name(void) {
  return gpu_emulated() ? "emulated GPU (GCOLL_CUDA=emulate)" : "no CUDA (built without it)";
}

const char *gpu_error_string(int err) {
  if (err == GPU_API_ERR_UNSUPPORTED) return "not supported in this mode (gpu_api)";
  if (err == GPU_API_ERR_QUERY_INVALID) return "stream query: invalid value (error code 1 of the mode)";
  if (gpu_emulated()) return emu.error_string(err);
  if (err == GPU_API_ERR_NO_CUDA)
    return "built without CUDA: the only GPU is the emulated one (GCOLL_CUDA=emulate)";
  return err == 0 ? "success" : "unknown gpu_api error code";
}
#else
int gpu_have_cuda(void) { return 1; }

const char *gpu_mode_name(void) { return gpu_emulated() ? "emulated GPU (GCOLL_CUDA=emulate)" : "CUDA"; }

const char *gpu_error_string(int err) {
  if (err == GPU_API_ERR_UNSUPPORTED) return "not supported in this mode (gpu_api)";
  if (err == GPU_API_ERR_QUERY_INVALID) return "stream query: invalid value (error code 1 of the mode)";
  return gpu_emulated() ? emu.error_string(err) : cudaGetErrorString((cudaError_t)err);
}
#endif

/* ---- devices -------------------------------------------------------------------------- */
/* Each function: the emulated GPU's call, else the CUDA runtime's, else (built without
 * CUDA) GPU_API_ERR_NO_CUDA. */

int gpu_device_count(int *n) {
  if (gpu_emulated()) {
    *n = emu.device_count();
    return GCOLL_EMU_OK;
  }
#ifdef GPU_API_NO_CUDA
  *n = 0;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaGetDeviceCount(n);
#endif
}

int gpu_set_device(int dev) {
  if (gpu_emulated()) return emu.set_device(dev);
#ifdef GPU_API_NO_CUDA
  (void)dev;
  return GPU_API_ERR_NO_CUDA;
#else
  cudaError_t e = cudaSetDevice(dev);
  if (e == cudaSuccess) e = cudaFree(NULL); /* the primary context, now */
  return (int)e;
#endif
}

int gpu_get_device(int *dev) {
  if (gpu_emulated()) return emu.get_device(dev); /* per thread, as cudaGetDevice */
#ifdef GPU_API_NO_CUDA
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaGetDevice(dev);
#endif
}

int gpu_device_name(int dev, char *buf, size_t len) {
  if (gpu_emulated()) {
    /* One device: the mode's name, as before; several (a topology file): with the bus id. */
    const char *bus = emu.device_pci_bus_id(dev);
    if (emu.device_count() > 1 && bus)
      snprintf(buf, len, "%s %d (%s)", gpu_mode_name(), dev, bus);
    else
      snprintf(buf, len, "%s", gpu_mode_name());
    return bus ? GCOLL_EMU_OK : GCOLL_EMU_ERR_INVALID;
  }
#ifdef GPU_API_NO_CUDA
  snprintf(buf, len, "%s", gpu_mode_name());
  return GPU_API_ERR_NO_CUDA;
#else
  struct cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, dev);
  if (e == cudaSuccess) snprintf(buf, len, "%s", p.name);
  return (int)e;
#endif
}

#ifndef GPU_API_NO_CUDA
static const char *compute_mode_name(int m) {
  switch (m) {
    case cudaComputeModeDefault: return "default";
    case cudaComputeModeProhibited: return "prohibited";
    case cudaComputeModeExclusiveProcess: return "exclusive-process";
    default: return "?";
  }
}
#endif

int gpu_device_describe(int dev, char *buf, size_t len) {
  if (gpu_emulated()) return gpu_device_name(dev, buf, len);
#ifdef GPU_API_NO_CUDA
  return gpu_device_name(dev, buf, len);
#else
  struct cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, dev);
  if (e != cudaSuccess) return (int)e;
  int mode = -1;
  cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, dev);
  snprintf(buf, len, "%s, sm_%d%d, %.1f GiB, compute mode %s", p.name, p.major, p.minor,
           (double)p.totalGlobalMem / (1024.0 * 1024 * 1024), compute_mode_name(mode));
  return 0;
#endif
}

/* ---- memory ---------------------------------------------------------------------------- */

#ifndef GPU_API_NO_CUDA
/* The stream of the pool allocations: non-blocking, so that allocating and freeing
 * never wait on the legacy stream. Created at the first use; the programs allocate from
 * one thread. */
static cudaError_t async_stream(cudaStream_t *s) {
  static cudaStream_t stream;
  cudaError_t e = cudaSuccess;
  if (!stream) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  *s = stream;
  return e;
}
#endif

int gpu_malloc(void **p, size_t bytes, enum gpu_mem kind) {
  if (gpu_emulated()) return emu.malloc_(p, bytes, (int)kind);
#ifdef GPU_API_NO_CUDA
  (void)p, (void)bytes, (void)kind;
  return GPU_API_ERR_NO_CUDA;
#else
  cudaError_t e = cudaErrorInvalidValue;
  cudaStream_t s;
  switch (kind) {
    case GPU_MEM_DEVICE: e = cudaMalloc(p, bytes); break;
    case GPU_MEM_ASYNC:
      e = async_stream(&s);
      if (e == cudaSuccess) e = cudaMallocAsync(p, bytes, s);
      if (e == cudaSuccess) e = cudaStreamSynchronize(s);
      break;
    case GPU_MEM_MANAGED: e = cudaMallocManaged(p, bytes, cudaMemAttachGlobal); break;
    case GPU_MEM_PINNED: e = cudaMallocHost(p, bytes); break;
  }
  return (int)e;
#endif
}

int gpu_free(void *p, enum gpu_mem kind) {
  if (gpu_emulated()) return emu.free_(p);
#ifdef GPU_API_NO_CUDA
  (void)p, (void)kind;
  return GPU_API_ERR_NO_CUDA;
#else
  cudaError_t e = cudaErrorInvalidValue;
  cudaStream_t s;
  switch (kind) {
    case GPU_MEM_DEVICE:
    case GPU_MEM_MANAGED: e = cudaFree(p); break;
    case GPU_MEM_ASYNC:
      e = async_stream(&s);
      if (e == cudaSuccess) e = cudaFreeAsync(p, s);
      if (e == cudaSuccess) e = cudaStreamSynchronize(s);
      break;
    case GPU_MEM_PINNED: e = cudaFreeHost(p); break;
  }
  return (int)e;
#endif
}

int gpu_memcpy(void *dst, const void *src, size_t bytes) {
  if (gpu_emulated()) return emu.memcpy_(dst, src, bytes);
#ifdef GPU_API_NO_CUDA
  (void)dst, (void)src, (void)bytes;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
#endif
}

int gpu_memset(void *p, int value, size_t bytes) {
  if (gpu_emulated()) return emu.memset_(p, value, bytes);
#ifdef GPU_API_NO_CUDA
  (void)p, (void)value, (void)bytes;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaMemset(p, value, bytes);
#endif
}

int gpu_device_synchronize(void) {
  if (gpu_emulated()) return emu.device_synchronize();
#ifdef GPU_API_NO_CUDA
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaDeviceSynchronize();
#endif
}

int gpu_device_reset(void) {
  if (gpu_emulated()) return GCOLL_EMU_OK;
#ifdef GPU_API_NO_CUDA
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaDeviceReset();
#endif
}

/* ---- streams ---------------------------------------------------------------------------- */

int gpu_stream_create(void **s) {
  if (gpu_emulated()) return emu.stream_create(s);
#ifdef GPU_API_NO_CUDA
  *s = NULL;
  return GPU_API_ERR_NO_CUDA;
#else
  cudaStream_t st = NULL;
  cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  *s = st;
  return (int)e;
#endif
}

int gpu_stream_destroy(void *s) {
  if (gpu_emulated()) return emu.stream_destroy(s);
#ifdef GPU_API_NO_CUDA
  (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaStreamDestroy((cudaStream_t)s);
#endif
}

int gpu_stream_synchronize(void *s) {
  if (gpu_emulated()) return emu.stream_synchronize(s);
#ifdef GPU_API_NO_CUDA
  (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaStreamSynchronize((cudaStream_t)s);
#endif
}

int gpu_stream_query(void *s) {
  if (gpu_emulated()) {
    int e = emu.stream_query(s);
    if (e == GCOLL_EMU_ERR_NOT_READY) return 1;
    return e == 1 ? GPU_API_ERR_QUERY_INVALID : e;
  }
#ifdef GPU_API_NO_CUDA
  (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  cudaError_t e = cudaStreamQuery((cudaStream_t)s);
  if (e == cudaErrorNotReady) {
    cudaGetLastError(); /* not an error: leave none behind */
    return 1;
  }
  return e == 1 ? GPU_API_ERR_QUERY_INVALID : (int)e; /* 1: cudaErrorInvalidValue */
#endif
}

int gpu_memcpy_async(void *dst, const void *src, size_t bytes, void *s) {
  if (gpu_emulated()) return emu.memcpy_async(dst, src, bytes, s);
#ifdef GPU_API_NO_CUDA
  (void)dst, (void)src, (void)bytes, (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)s);
#endif
}

int gpu_memset_async(void *p, int value, size_t bytes, void *s) {
  if (gpu_emulated()) return emu.memset_async(p, value, bytes, s);
#ifdef GPU_API_NO_CUDA
  (void)p, (void)value, (void)bytes, (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaMemsetAsync(p, value, bytes, (cudaStream_t)s);
#endif
}

int gpu_stream_sleep(void *s, unsigned int us) {
  if (gpu_emulated()) return emu.stream_sleep(s, us);
  /* No kernel in this file (it is plain C, compiled without nvcc): the tests skip what
   * needs a busy stream on a real GPU. */
  (void)s, (void)us;
  return GPU_API_ERR_UNSUPPORTED;
}

/* ---- graphs ------------------------------------------------------------------------------ */

int gpu_stream_begin_capture(void *s) {
  if (gpu_emulated()) return emu.stream_begin_capture(s);
#ifdef GPU_API_NO_CUDA
  (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaStreamBeginCapture((cudaStream_t)s, cudaStreamCaptureModeRelaxed);
#endif
}

int gpu_stream_end_capture(void *s, void **graph) {
  *graph = NULL;
  if (gpu_emulated()) return emu.stream_end_capture(s, graph);
#ifdef GPU_API_NO_CUDA
  (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  cudaGraph_t g = NULL;
  cudaGraphExec_t exec = NULL;
  cudaError_t e = cudaStreamEndCapture((cudaStream_t)s, &g);
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, g, 0);
  /* The executable graph does not need its template: one handle for the caller. */
  if (g) {
    cudaError_t d = cudaGraphDestroy(g);
    if (e == cudaSuccess && d != cudaSuccess) {
      cudaGraphExecDestroy(exec);
      exec = NULL;
      e = d;
    }
  }
  *graph = exec;
  return (int)e;
#endif
}

int gpu_event_create(void **e) {
  if (gpu_emulated()) return emu.event_create(e);
#ifdef GPU_API_NO_CUDA
  (void)e;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaEventCreateWithFlags((cudaEvent_t *)e, cudaEventDisableTiming);
#endif
}

int gpu_event_destroy(void *e) {
  if (gpu_emulated()) return emu.event_destroy(e);
#ifdef GPU_API_NO_CUDA
  (void)e;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaEventDestroy((cudaEvent_t)e);
#endif
}

int gpu_event_record(void *e, void *s) {
  if (gpu_emulated()) return emu.event_record(e, s);
#ifdef GPU_API_NO_CUDA
  (void)e, (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s);
#endif
}

int gpu_event_synchronize(void *e) {
  if (gpu_emulated()) return emu.event_synchronize(e);
#ifdef GPU_API_NO_CUDA
  (void)e;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaEventSynchronize((cudaEvent_t)e);
#endif
}

int gpu_stream_wait_event(void *s, void *e) {
  if (gpu_emulated()) return emu.stream_wait_event(s, e);
#ifdef GPU_API_NO_CUDA
  (void)s, (void)e;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaStreamWaitEvent((cudaStream_t)s, (cudaEvent_t)e, 0);
#endif
}

int gpu_graph_launch(void *graph, void *s) {
  if (gpu_emulated()) return emu.graph_launch(graph, s);
#ifdef GPU_API_NO_CUDA
  (void)graph, (void)s;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaGraphLaunch((cudaGraphExec_t)graph, (cudaStream_t)s);
#endif
}

int gpu_graph_destroy(void *graph) {
  if (gpu_emulated()) return emu.graph_destroy(graph);
#ifdef GPU_API_NO_CUDA
  (void)graph;
  return GPU_API_ERR_NO_CUDA;
#else
  return (int)cudaGraphExecDestroy((cudaGraphExec_t)graph);
#endif
}

/* ---- pointers ---------------------------------------------------------------------------- */

int gpu_pointer_device(const void *p, int *device) {
  *device = -1;
  if (gpu_emulated()) {
    *device = emu.pointer_device(p); /* -1 unless DEVICE or ASYNC memory */
    return GCOLL_EMU_OK;
  }
#ifdef GPU_API_NO_CUDA
  return GPU_API_ERR_NO_CUDA;
#else
  struct cudaPointerAttributes a;
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e == cudaSuccess && a.type == cudaMemoryTypeDevice) *device = a.device;
  return (int)e;
#endif
}
