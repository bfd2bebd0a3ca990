// A stream communicator's queue (issue 30: MPIX_<Name>_enqueue, pmpi/stream.cc): calls
// run in the order of the application's CUDA stream, by a proxy thread of gcoll's, and
// the stream waits for them, without the application's thread ever waiting for the GPU.
//
// Each call puts three operations on the application's stream:
//   1. a host function (Runtime::launch_host_func), which the runtime runs once the work
//      queued before it has completed: it hands the call to the proxy thread (a lock and a
//      notify; no CUDA call, as the runtime requires);
//   2. a wait until the queue's word (pinned host memory mapped into the device,
//      malloc_host_mapped) equals 1 (stream_wait_value32: the GPU's front end waits, no SM
//      is held, so it is safe on a time-sliced GPU without MPS);
//   3. a write of 0 to the word (stream_write_value32), so that the next call waits again.
// The proxy runs the call (the blocking collective, gcoll's whole path: engine, staged or
// the MPI) and stores 1 in the word. One word per queue is enough: the proxy takes call
// i + 1 only after the stream ran its host function, which comes after call i's wait and
// write. Calls queued while the stream is being captured into a CUDA graph are kept by
// the queue (until it goes) and run at every launch of the graph: the host function of a
// replay hands the same call over again, and the wait and write are the same every time,
// so nothing of a replay depends on a count kept on the host.
//
// The proxy thread calls the MPI: a queue is made only where the MPI granted
// MPI_THREAD_MULTIPLE on every rank (pmpi/stream.cc decides, for the whole communicator).
// Every signal is blocked in it. Its current device is the one current where the queue
// was made. While it runs a call, cuda::StreamOrderedScope tells the device path that the
// inputs are ready (cuda/stream_order.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "cuda/runtime.h"
#include "mem/pinned.h"

namespace gcoll {

class StreamQueue {
 public:
  // The queue of the application's stream `stream` (a cudaStream_t; nullptr: the legacy
  // default stream). nullptr and *why when it cannot be had (no usable driver, no stream
  // memory operations, no mapped host memory, no thread).
  static std::unique_ptr<StreamQueue> create(cuda::Stream stream, std::string *why);
  // Waits until every call handed to the proxy and every call queued outside a capture has
  // run (the application must let its stream reach them, as before MPI_Comm_free of a
  // communicator with pending calls), then ends the thread and frees the word.
  ~StreamQueue();
  StreamQueue(const StreamQueue &) = delete;
  StreamQueue &operator=(const StreamQueue &) = delete;

  // Queues `run` in the stream's order (above). `run` returns nothing: what fails inside is
  // reported by it. `stage_a`, `stage_b`: the bytes of the (at most two) host copies its
  // staged device buffers take, reserved here, on the caller's thread (mem/pinned.h: the
  // proxy never allocates); `run` runs with that reservation. Status::Ok, or the failure
  // with *why (ErrNoMem: no pinned memory for the reservation, nothing queued; else the
  // runtime's: nothing was queued then unless the host function was, see the .cc).
  Status enqueue(std::function<void()> run, std::size_t stage_a, std::size_t stage_b, std::string *why);

  cuda::Stream stream() const { return stream_; }
  // Without a queue (the MPI did not grant MPI_THREAD_MULTIPLE): waits on the host until
  // `stream` has run everything queued on it (cudaStreamSynchronize). Status::Ok, or the
  // failure with *why (no usable driver; a stream being captured cannot be waited for).
  static Status synchronize(cuda::Stream stream, std::string *why);
  // 4 zeroed bytes of device memory of the current device (nullptr where there is no usable
  // driver or no memory), and their release: for a stream communicator's first device
  // call, made at its creation (pmpi/stream.cc), so that the device path's setup (the
  // engine's device space: allocations, IPC exports, the topology's data probes) never
  // happens on the proxy thread while an application's stream waits for it.
  static void *device_word();
  // Whether `stream` (a cudaStream_t) belongs to another device than the calling thread's
  // current one, or is not a CUDA stream of this process: true with *why. False where it
  // cannot tell (no usable driver).
  static bool foreign_device(cuda::Stream stream, std::string *why);
  static void free_device_word(void *dev);
  // Calls run so far (tests, stats).
  std::uint64_t calls_run() const { return run_.load(std::memory_order_acquire); }

 private:
  struct Call {
    StreamQueue *q = nullptr;
    std::function<void()> run;
    bool kept = false;  // queued under a capture: runs at every launch, freed with the queue
  };
  StreamQueue() = default;
  static void handed_over(void *call);  // the host function
  void loop();

  cuda::Stream stream_ = nullptr;
  int device_ = -1;
  std::unique_ptr<pinned::StreamStaging> staging_;  // the calls' reservations (enqueue)
  volatile std::uint32_t *word_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Call *> ready_;                 // handed over by the stream, in its order
  std::vector<std::unique_ptr<Call>> kept_;  // captured calls
  bool stop_ = false;
  std::uint64_t queued_ = 0;                 // calls queued outside a capture (mu_)
  std::uint64_t done_ = 0;                   // of those, run (mu_)
  std::atomic<std::uint64_t> run_{0};
  std::thread thread_;
};

}  // namespace gcoll
