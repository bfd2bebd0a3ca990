/* gpu_api: the one door through which gcoll's GPU test programs (gcoll_gpu_mpi_test,
 * gcoll_gpu_stats, gcoll_gpu_probe) and the OSU-style benchmarks (-d cuda) touch a GPU,
 * so that the same programs run on
 *   - a real GPU, through the CUDA runtime (the default), or
 *   - gcoll's emulated GPU when GCOLL_CUDA=emulate (case-insensitive) is in the
 *     environment: then no CUDA call is made at all; memory, copies and pointer queries
 *     go to libgcoll.so's gcoll_emu_* functions (include/gcoll/gcoll_emulate.h), looked
 *     up with dlsym(RTLD_DEFAULT, ...), since the programs either link libgcoll.so or
 *     run with it preloaded. A missing symbol ends the program (exit 1) with a message.
 *
 * The mode is decided once, at the first call. Every function that can fail returns 0
 * on success, else an error code of the mode (a cudaError_t, or a GCOLL_EMU_ERR_*):
 * gpu_error_string() gives its text. C and C++.
 *
 * Built without CUDA (gpu_api.c compiled with GPU_API_NO_CUDA, where gcoll is built
 * without it), only the emulated GPU exists: without GCOLL_CUDA=emulate there is no
 * device (gpu_device_count fails with GPU_API_ERR_NO_CUDA, and so does every call that
 * would need one), so that the programs skip as they do on a machine without a GPU.
 */
#ifndef GCOLL_MPI_TESTS_GPU_API_H
#define GCOLL_MPI_TESTS_GPU_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Memory kinds; the values are those of enum gcoll_emu_mem. */
enum gpu_mem {
  GPU_MEM_DEVICE = 0,  /* cudaMalloc */
  GPU_MEM_ASYNC = 1,   /* cudaMallocAsync from the device's default pool (no legacy IPC) */
  GPU_MEM_MANAGED = 2, /* cudaMallocManaged */
  GPU_MEM_PINNED = 3   /* cudaMallocHost */
};

/* The error of every call that needs CUDA in a build without it (not GCOLL_CUDA=emulate). */
#define GPU_API_ERR_NO_CUDA 1000
/* The error of a call the mode cannot do (gpu_stream_sleep on a real GPU: gpu_api.c has
 * no kernel). */
#define GPU_API_ERR_UNSUPPORTED 1001
/* gpu_stream_query's stand-in for the mode's error code 1 (cudaErrorInvalidValue,
 * GCOLL_EMU_ERR_INACTIVE), which would read as "not done". */
#define GPU_API_ERR_QUERY_INVALID 1002

/* 1 when built with the CUDA runtime, 0 when only the emulated GPU exists. */
int gpu_have_cuda(void);
/* 1 on the emulated GPU (GCOLL_CUDA=emulate), 0 with the CUDA runtime (or without CUDA). */
int gpu_emulated(void);
/* "CUDA", "emulated GPU (GCOLL_CUDA=emulate)" or (built without CUDA) "no CUDA (built
 * without it)", for messages. */
const char *gpu_mode_name(void);
/* Text of an error code of the current mode. */
const char *gpu_error_string(int err);

int gpu_device_count(int *n);
/* Makes `dev` this thread's device and creates its context now (cudaSetDevice, then
 * cudaFree(NULL)), so that the MPI and gcoll, initialized next, find it current. */
int gpu_set_device(int dev);
int gpu_get_device(int *dev);
/* The device's name (the emulated GPU's: gpu_mode_name(), with the device and its PCI bus id
 * when a topology file gives it several devices). */
int gpu_device_name(int dev, char *buf, size_t len);
/* One line about the device: name, compute capability, memory, compute mode. */
int gpu_device_describe(int dev, char *buf, size_t len);

/* Allocates `bytes` (0: a valid pointer all the same) of kind `kind`; gpu_free frees it
 * and must be given the same kind. A GPU_MEM_ASYNC allocation is ready (synchronized)
 * when gpu_malloc returns, and gone when gpu_free returns. */
int gpu_malloc(void **p, size_t bytes, enum gpu_mem kind);
int gpu_free(void *p, enum gpu_mem kind);
/* cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), with its asynchrony (see
 * gcoll_emulate.h): host memory is readable when a copy to it returns. */
int gpu_memcpy(void *dst, const void *src, size_t bytes);
/* cudaMemset: queued on the legacy stream, it may return before the bytes are set. */
int gpu_memset(void *p, int value, size_t bytes);
int gpu_device_synchronize(void);
/* cudaDeviceReset (after MPI_Finalize, as OMB does); nothing on the emulated GPU. */
int gpu_device_reset(void);

/* Streams (a stream argument of NULL: the legacy default stream). gpu_stream_create:
 * cudaStreamCreateWithFlags(cudaStreamNonBlocking). */
int gpu_stream_create(void **s);
int gpu_stream_destroy(void *s);
int gpu_stream_synchronize(void *s);
/* cudaStreamQuery: 0 when everything queued on the stream has completed, 1 when some has
 * not, else an error code (never 1: see GPU_API_ERR_QUERY_INVALID). */
int gpu_stream_query(void *s);
/* cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s) / cudaMemsetAsync. */
int gpu_memcpy_async(void *dst, const void *src, size_t bytes, void *s);
int gpu_memset_async(void *p, int value, size_t bytes, void *s);
/* Keeps the stream busy for `us` microseconds once it gets there (a long kernel), and
 * returns at once: on the emulated GPU only. With CUDA (and without it) it returns
 * GPU_API_ERR_UNSUPPORTED, there being no kernel here: the tests skip the checks that need
 * it on a real GPU. */
int gpu_stream_sleep(void *s, unsigned int us);

/* Events without timing (cudaEventCreateWithFlags(cudaEventDisableTiming)),
 * cudaEventRecord, cudaEventSynchronize, cudaStreamWaitEvent(s, e, 0). */
int gpu_event_create(void **e);
int gpu_event_destroy(void *e);
int gpu_event_record(void *e, void *s);
int gpu_event_synchronize(void *e);
int gpu_stream_wait_event(void *s, void *e);

/* Graph capture. gpu_stream_begin_capture: cudaStreamBeginCapture(s,
 * cudaStreamCaptureModeRelaxed) (not on the legacy stream); gpu_stream_end_capture:
 * cudaStreamEndCapture, then cudaGraphInstantiate: *graph is an executable graph
 * (cudaGraphExec_t) of what was queued on the stream meanwhile, NULL on failure;
 * gpu_graph_launch: cudaGraphLaunch on stream s (any number of times);
 * gpu_graph_destroy: cudaGraphExecDestroy. On the emulated GPU, what a capturing stream
 * refuses is in gcoll_emulate.h (a synchronize or query of it, pageable copies on it). */
int gpu_stream_begin_capture(void *s);
int gpu_stream_end_capture(void *s, void **graph);
int gpu_graph_launch(void *graph, void *s);
int gpu_graph_destroy(void *graph);

/* *device: the device whose device memory (cudaMalloc or pool) contains p, or -1 when
 * p is anything else (host, pinned, managed memory). */
int gpu_pointer_device(const void *p, int *device);

#ifdef __cplusplus
}
#endif
#endif /* GCOLL_MPI_TESTS_GPU_API_H */
