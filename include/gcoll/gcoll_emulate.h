/* gcoll's emulated GPU: a TESTING mode, never on by default.
 *
 * With GCOLL_CUDA=emulate in the environment of every rank, libgcoll.so does not use
 * CUDA at all: it classifies, copies, reduces and shares "device" memory through an
 * emulation that behaves like one GPU shared by every rank of the machine, or, with
 * GCOLL_TOPO_FILE naming a topology file (NCCL's XML dialect), like the file's GPUs:
 *   - device memory that the CPU cannot touch (a stray CPU access faults, as it does on a
 *     GPU), backed by memfd so that peer processes map the same bytes through
 *     IPC handles; pool memory (like cudaMallocAsync) that has no legacy IPC handle;
 *     managed memory (the CPU can read it) and pinned host memory;
 *   - streams and events whose work runs later, on worker threads, after a random
 *     delay (GCOLL_EMU_DELAY): a missing wait gives wrong results;
 *   - reductions by the host kernels;
 *   - with a topology file: its N GPUs (device i is the file's i-th GPU), each process
 *     on device local_rank % N by default (the launcher's local rank:
 *     OMPI_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
 *     SLURM_LOCALID or PMI_LOCAL_RANK, the first set; 0 when none is), a current device
 *     per thread as in CUDA, and the file's peer access: an IPC handle opened into a
 *     device that cannot reach the exporter's fails (counted by
 *     gcoll_emu_denied_ipc_opens), and one opened across a pair the file marks broken
 *     maps a private copy of the bytes as they were at the open, so the importer's
 *     writes never reach the owner (counted by gcoll_emu_broken_ipc_opens). A file that
 *     cannot be read gives a warning and one device.
 * The test programs allocate and copy through these functions when
 * gcoll_emu_active() is 1, and through the CUDA runtime otherwise, so the same tests
 * run on both. Every function returns 0 on success, else a GCOLL_EMU_ERR_* code.
 *
 * The functions are exported by libgcoll.so; test programs preloaded with it look them
 * up with dlsym(RTLD_DEFAULT, "gcoll_emu_...").
 */
#ifndef GCOLL_GCOLL_EMULATE_H
#define GCOLL_GCOLL_EMULATE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gcoll_emu_error {
  GCOLL_EMU_OK = 0,
  GCOLL_EMU_ERR_INACTIVE = 1, /* GCOLL_CUDA is not "emulate" in this process */
  GCOLL_EMU_ERR_NOMEM = 2,    /* allocation failed */
  GCOLL_EMU_ERR_INVALID = 3,  /* a pointer the emulation did not allocate, a bad kind, size, device
                                 or stream */
  GCOLL_EMU_ERR_NOT_READY = 4, /* gcoll_emu_stream_query: work queued on the stream has not completed
                                  (cudaErrorNotReady); not a failure */
  GCOLL_EMU_ERR_CAPTURE = 5    /* not permitted in the stream's capture state: an operation a capturing
                                  stream refuses (cudaErrorStreamCaptureUnsupported), the end of a
                                  capture it invalidated (cudaErrorStreamCaptureInvalidated), a capture
                                  begun twice or ended when none is open (cudaErrorIllegalState) */,
  GCOLL_EMU_ERR_TRAPPED = 6    /* gcoll_emu_stream_synchronize: a kernel on the stream trapped (a
                                  stream-ordered collective that failed or timed out: on a GPU
                                  cudaErrorLaunchFailure, sticky for the whole context; here for the
                                  stream, at every synchronization until it is destroyed) */
};

enum gcoll_emu_mem {
  GCOLL_EMU_MEM_DEVICE = 0,  /* cudaMalloc: device memory, IPC-capable */
  GCOLL_EMU_MEM_ASYNC = 1,   /* cudaMallocAsync from the default pool: device memory, no legacy IPC */
  GCOLL_EMU_MEM_MANAGED = 2, /* cudaMallocManaged: the CPU may read and write it */
  GCOLL_EMU_MEM_PINNED = 3   /* cudaMallocHost: host memory */
};

/* 1 when this process runs on the emulated GPU (GCOLL_CUDA=emulate), else 0. */
int gcoll_emu_active(void);

/* Number of emulated devices: the topology file's GPUs, else 1 (0 when not active). */
int gcoll_emu_device_count(void);

/* cudaSetDevice: makes `dev` (0 to gcoll_emu_device_count() - 1) the calling thread's
 * current device. */
int gcoll_emu_set_device(int dev);

/* cudaGetDevice: the calling thread's current device (the one it set, else the
 * process's default, local_rank % gcoll_emu_device_count()). */
int gcoll_emu_get_device(int *dev);

/* cudaDeviceCanAccessPeer as the topology file's machine answers it: 1 or 0 (a device
 * reaches itself; 0 for devices that are not there). */
int gcoll_emu_can_access_peer(int dev, int peer);

/* The PCI bus id of device `dev` ("0000:07:00.0", the file's), or NULL. */
const char *gcoll_emu_device_pci_bus_id(int dev);

/* IPC handles this process failed to open for want of peer access between the
 * importing and the exporting device, and opened across a broken pair (as private
 * copies), since it started. */
int gcoll_emu_denied_ipc_opens(void);
int gcoll_emu_broken_ipc_opens(void);

/* Waits for the whole device (cudaFree, cudaDeviceSynchronize, an IPC close) made by gcoll
 * on the thread of a stream-ordered call (MPIX_*_enqueue) since the process started: on a
 * GPU each could hang (the application's stream waits for that call). 0 is right. */
int gcoll_emu_stream_ordered_device_waits(void);

/* Allocates `bytes` (0 allowed: a valid unique pointer) of memory kind `kind`, device
 * kinds on the calling thread's current device. */
int gcoll_emu_malloc(void **p, size_t bytes, int kind);

/* Frees what gcoll_emu_malloc returned; waits for all queued device work first, as
 * cudaFree does. */
int gcoll_emu_free(void *p);

/* cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), with the asynchrony that CUDA
 * documents: the copy is queued on the legacy default stream; a copy from pageable host
 * memory to device memory returns once the source has been staged, before the data
 * lands on the device; a copy to pageable host memory returns when it is complete. */
int gcoll_emu_memcpy(void *dst, const void *src, size_t bytes);

/* cudaMemset(p, value, bytes) on the legacy stream: returns at once. */
int gcoll_emu_memset(void *p, int value, size_t bytes);

/* cudaDeviceSynchronize: waits until all queued work of this process is complete. */
int gcoll_emu_device_synchronize(void);

/* Streams. A stream argument of NULL is the legacy default stream (the one
 * gcoll_emu_memcpy and gcoll_emu_memset use); any other must come from
 * gcoll_emu_stream_create (GCOLL_EMU_ERR_INVALID otherwise). The streams run their work
 * in order, later, after a random delay each (GCOLL_EMU_DELAY).
 *
 * cudaStreamCreateWithFlags(cudaStreamNonBlocking): a stream that never synchronises
 * with the legacy one. */
int gcoll_emu_stream_create(void **stream);
/* cudaStreamDestroy; unlike CUDA, it returns only once the stream's queued work has run. */
int gcoll_emu_stream_destroy(void *stream);
/* cudaStreamSynchronize. */
int gcoll_emu_stream_synchronize(void *stream);
/* cudaStreamQuery: GCOLL_EMU_OK when everything queued on the stream has completed,
 * GCOLL_EMU_ERR_NOT_READY when some has not. */
int gcoll_emu_stream_query(void *stream);
/* cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), with CUDA's asynchrony:
 * between device, pinned and managed memory it returns at once and the bytes move when
 * the stream gets there; from pageable host memory to the device the source is staged
 * first (reusable at once); into pageable host memory it returns once the copy is done. */
int gcoll_emu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream);
/* cudaMemsetAsync(p, value, bytes, stream): returns at once. */
int gcoll_emu_memset_async(void *p, int value, size_t bytes, void *stream);
/* Test-only: keeps the stream busy for `microseconds` once it gets there (what a long
 * kernel is on a GPU); returns at once. */
int gcoll_emu_stream_sleep(void *stream, unsigned int microseconds);

/* Events (no timing: cudaEventCreateWithFlags(cudaEventDisableTiming)). record: queued
 * on the stream (NULL: the legacy one); synchronize: waits on the host until the work
 * queued before the last record has run (cudaEventSynchronize); stream_wait_event: work
 * queued on `stream` from now on waits for it (cudaStreamWaitEvent). Refused on a
 * capturing stream (GCOLL_EMU_ERR_CAPTURE). */
int gcoll_emu_event_create(void **event);
int gcoll_emu_event_destroy(void *event);
int gcoll_emu_event_record(void *event, void *stream);
int gcoll_emu_event_synchronize(void *event);
int gcoll_emu_stream_wait_event(void *stream, void *event);

/* Graph capture, enough for stream-ordered work captured once and replayed (issue 30).
 * While a stream captures, what is queued on it (copies, memsets, sleeps, and gcoll's own
 * work: kernels, host functions, stream memory operations) is recorded instead of run; the
 * graph runs it, in order, at every launch, reading and writing the same addresses: a
 * copy from pinned memory reads the bytes there at each launch. A capturing stream
 * refuses, with GCOLL_EMU_ERR_CAPTURE, a message, and the capture invalidated (its end
 * then fails): gcoll_emu_stream_synchronize and gcoll_emu_stream_query on it (as CUDA
 * does), event records and waits on it in gcoll (not emulated under capture), and copies
 * to or from pageable host memory on it (the emulation stages those when they are queued,
 * which a graph cannot replay).
 *
 * cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed). The default stream
 * cannot be captured (GCOLL_EMU_ERR_INVALID: CUDA refuses cudaStreamLegacy, and the
 * emulation's one default stream stands for cudaStreamPerThread too); a stream capturing
 * already: GCOLL_EMU_ERR_CAPTURE. Destroying a capturing stream discards its capture. */
int gcoll_emu_stream_begin_capture(void *stream);
/* cudaStreamEndCapture, then cudaGraphInstantiate: *graph is an executable graph of every
 * operation queued on the stream since gcoll_emu_stream_begin_capture, in order (NULL on
 * failure: GCOLL_EMU_ERR_CAPTURE when the stream is not capturing or the capture was
 * invalidated). */
int gcoll_emu_stream_end_capture(void *stream, void **graph);
/* cudaStreamIsCapturing: *capturing is 1 while a capture is open on the stream, else 0. */
int gcoll_emu_stream_is_capturing(void *stream, int *capturing);
/* cudaGraphLaunch: queues the graph's operations on `stream` (any stream, NULL included),
 * in order, each with a random delay of its own, and returns at once. A graph may be
 * launched any number of times; launched into a capturing stream, it is captured. */
int gcoll_emu_graph_launch(void *graph, void *stream);
/* cudaGraphExecDestroy (with cudaGraphDestroy): launches already queued still run. */
int gcoll_emu_graph_destroy(void *graph);

/* The kind (enum gcoll_emu_mem) of the allocation that contains p, or -1 for memory the
 * emulation did not allocate (plain host memory). */
int gcoll_emu_pointer_kind(const void *p);

/* The device of the device memory (DEVICE or ASYNC) that contains p, or -1. */
int gcoll_emu_pointer_device(const void *p);

/* Text for a return code. */
const char *gcoll_emu_error_string(int code);

#ifdef __cplusplus
}
#endif
#endif /* GCOLL_GCOLL_EMULATE_H */
