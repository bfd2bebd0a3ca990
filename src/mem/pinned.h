// Pinned host memory and the staging streams: what the staged path (coll/staged.h) copies
// device buffers through; and device scratch per GPU (the deviators', coll/deviate.h).
// Kept across calls in pools (mem/pool.h): cudaHostAlloc, cudaMalloc and stream creation
// cost milliseconds.
#pragma once

#include <cstddef>

#include "base/status.h"

#include "cuda/runtime.h"

namespace gcoll::pinned {

// Host memory to stage device data through: pinned (the runtime's malloc_host) where it
// can be had, else pageable memory, which the runtime's copies accept too, more slowly (the
// driver stages them itself): a memlock limit (containers) or exhausted pinned memory must
// cost speed, not the call. Pinned memory is placed on the NUMA node of the current
// device's GPU (mem/numa_place.h). The first fallback of the process is warned, once. *pinned
// tells which it is; give it back with free_host(rt, p, *pinned). ErrNoMem when neither
// can be had.
Status alloc_host(cuda::Runtime &rt, std::size_t bytes, void **p, bool *pinned);
void free_host(cuda::Runtime &rt, void *p, bool pinned);

// A staging buffer of at least `bytes` (a pooled one when one fits; from alloc_host, so
// pinned where it can be had), or nullptr when none can be allocated (warned). Thread-safe.
void *get(std::size_t bytes);
// Returns a buffer from get() to the pool (at most 1 GiB stays idle; the smallest idle
// buffers are freed first).
void put(void *p);

// Device memory of GPU `gpu`, at least `bytes` (*got: its size), pooled the same way, or
// nullptr when none can be allocated. Thread-safe.
void *get_device(int gpu, std::size_t bytes, std::size_t *got);
void put_device(void *p);

// The staging stream of GPU `device` (one non-blocking stream per GPU, created at its
// first use; the device must be current), or nullptr when it cannot be created.
cuda::Stream stream(int device);
// An event on `device` for one call in flight (the per-thread default stream is the
// calling thread's, so two threads must not share one), or nullptr; give it back after.
cuda::Event take_event(int device);
void give_event(int device, cuda::Event e);

// Inside MPI_Finalize: frees the pooled buffers (both kinds), the streams and the events
// (before the application may reset its devices). Touches no device when nothing was
// staged or deviated.
void release();

}  // namespace gcoll::pinned
