// Pinned host memory and the staging streams: what the staged path (coll/staged.h) copies
// device buffers through; and device scratch per GPU (the deviators', coll/deviate.h).
// Kept across calls in pools (mem/pool.h): cudaHostAlloc, cudaMalloc and stream creation
// cost milliseconds.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

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

// ---- a stream communicator's proxy thread (coll/stream_queue.h) -----------------------
// There gcoll must not allocate or free CUDA memory, nor make streams or events: on a GPU
// those take the driver's lock exclusively, and an application's thread may hold it while it
// waits for its stream (a cudaMemcpyAsync to pageable memory queued after the enqueued
// call), which waits for the proxy's call: every rank hung so on an H200 (2026-11-29,
// docs/gpu-validation.md). So each enqueue call reserves, on the application's thread, what
// its staged copies will use (StreamStaging::reserve), and the proxy's call takes only that
// (ReservedScope); on that thread get() never allocates and put() never frees (a buffer
// beyond the reservation comes from the pool's idle ones or not at all: the call fails
// with "out of pinned host memory", never hangs).

// Two pinned buffers and an event for one call at a time (the calls of one queue run one
// after another).
struct ReservedStaging {
  int device = -1;
  void *buf[2] = {nullptr, nullptr};
  std::size_t bytes[2] = {0, 0};
  bool busy[2] = {false, false};
  cuda::Event event = nullptr;
  bool event_busy = false;
  ReservedStaging() = default;
  ReservedStaging(const ReservedStaging &) = delete;
  ReservedStaging &operator=(const ReservedStaging &) = delete;
  ~ReservedStaging();  // back to the pool (the application's thread: see StreamStaging)
};

// A stream communicator's reservations. Grows, never shrinks: every set made is kept until
// the communicator goes (a call queued before a larger one still holds the smaller set, and
// a call captured into a CUDA graph holds its set for every launch), so the sets are given
// back on the application's thread, after the queue; by doubling, at most about twice the
// largest call's staging stays reserved.
class StreamStaging {
 public:
  explicit StreamStaging(int device) : device_(device) {}
  // On the application's thread, at an enqueue call: a set whose two buffers hold at least
  // `a` and `b` bytes (either order; 0: none needed), the staging stream and the event
  // made; nullptr when pinned memory or the event cannot be had.
  std::shared_ptr<ReservedStaging> reserve(std::size_t a, std::size_t b);

 private:
  int device_;
  std::vector<std::shared_ptr<ReservedStaging>> sets_;  // the last: the current one
};

// While it lives, the calling thread's staging buffers and event come from `set` (nullptr:
// none reserved; the no-allocation rule above holds all the same on a stream-ordered
// call's thread).
class ReservedScope {
 public:
  explicit ReservedScope(ReservedStaging *set);
  ~ReservedScope();
  ReservedScope(const ReservedScope &) = delete;
  ReservedScope &operator=(const ReservedScope &) = delete;

 private:
  ReservedStaging *saved_;
};

// Inside MPI_Finalize: frees the pooled buffers (both kinds), the streams and the events
// (before the application may reset its devices). Touches no device when nothing was
// staged or deviated.
void release();

}  // namespace gcoll::pinned
