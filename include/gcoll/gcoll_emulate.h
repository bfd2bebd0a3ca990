/* gcoll's emulated GPU: a TESTING mode, never on by default.
 *
 * With GCOLL_CUDA=emulate in the environment of every rank, libgcoll.so does not use
 * CUDA at all: it classifies, copies, reduces and shares "device" memory through an
 * emulation that behaves like one GPU shared by every rank of the machine:
 *   - device memory that the CPU cannot touch (a stray CPU access faults, as it does on a
 *     GPU), backed by memfd so that peer processes map the same bytes through
 *     IPC handles; pool memory (like cudaMallocAsync) that has no legacy IPC handle;
 *     managed memory (the CPU can read it) and pinned host memory;
 *   - streams and events whose work runs later, on worker threads, after a random
 *     delay (GCOLL_EMU_DELAY): a missing wait gives wrong results;
 *   - reductions by the host kernels.
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
  GCOLL_EMU_ERR_INVALID = 3   /* a pointer the emulation did not allocate, a bad kind or size */
};

enum gcoll_emu_mem {
  GCOLL_EMU_MEM_DEVICE = 0,  /* cudaMalloc: device memory, IPC-capable */
  GCOLL_EMU_MEM_ASYNC = 1,   /* cudaMallocAsync from the default pool: device memory, no legacy IPC */
  GCOLL_EMU_MEM_MANAGED = 2, /* cudaMallocManaged: the CPU may read and write it */
  GCOLL_EMU_MEM_PINNED = 3   /* cudaMallocHost: host memory */
};

/* 1 when this process runs on the emulated GPU (GCOLL_CUDA=emulate), else 0. */
int gcoll_emu_active(void);

/* Number of emulated devices (1). */
int gcoll_emu_device_count(void);

/* Allocates `bytes` (0 allowed: a valid unique pointer) of memory kind `kind`. */
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

/* The kind (enum gcoll_emu_mem) of the allocation that contains p, or -1 for memory the
 * emulation did not allocate (plain host memory). */
int gcoll_emu_pointer_kind(const void *p);

/* Text for a return code. */
const char *gcoll_emu_error_string(int code);

#ifdef __cplusplus
}
#endif
#endif /* GCOLL_GCOLL_EMULATE_H */
