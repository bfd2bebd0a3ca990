#include "coll/stream_queue.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <new>
#include <system_error>

#include "base/log.h"
#include "cuda/device.h"
#include "cuda/stream_order.h"

namespace gcoll {

namespace {
cuda::Runtime &rt() { return cuda::runtime(); }
}  // namespace

std::unique_ptr<StreamQueue> StreamQueue::create(cuda::Stream stream, std::string *why) {
  if (!cuda::usable()) {
    *why = "no usable CUDA driver in this process";
    return nullptr;
  }
  if (!rt().stream_memops_supported()) {
    *why = "the CUDA driver offers no stream memory operations (cuStreamWaitValue32)";
    return nullptr;
  }
  std::unique_ptr<StreamQueue> q(new (std::nothrow) StreamQueue);
  if (!q) {
    *why = "out of memory";
    return nullptr;
  }
  q->stream_ = stream;
  q->device_ = rt().current_device();
  q->staging_.reset(new (std::nothrow) pinned::StreamStaging(q->device_));
  if (!q->staging_) {
    *why = "out of memory";
    return nullptr;
  }
  void *word = nullptr;
  if (!ok(rt().malloc_host_mapped(&word, 64))) {
    *why = std::string("cannot allocate mapped host memory: ") + rt().last_error();
    return nullptr;
  }
  q->word_ = static_cast<volatile std::uint32_t *>(word);
  *q->word_ = 0;
  // Every signal blocked in the new thread (it inherits the mask), the caller's put back.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    StreamQueue *self = q.get();
    q->thread_ = std::thread([self] { self->loop(); });
  } catch (const std::system_error &) {
  } catch (const std::bad_alloc &) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!q->thread_.joinable()) {
    rt().free_host(word);
    q->word_ = nullptr;
    *why = "cannot start the proxy thread";
    return nullptr;
  }
  return q;
}

Status StreamQueue::synchronize(cuda::Stream stream, std::string *why) {
  if (!cuda::usable()) {
    *why = "no usable CUDA driver in this process";
    return Status::ErrArg;
  }
  if (rt().stream_capturing(stream)) {
    *why = "the stream is being captured into a CUDA graph, which needs gcoll's proxy thread "
           "(MPI_THREAD_MULTIPLE)";
    return Status::ErrArg;
  }
  const Status st = rt().stream_synchronize(stream);
  if (!ok(st)) *why = std::string("cudaStreamSynchronize failed: ") + rt().last_error();
  return st;
}

void *StreamQueue::device_word() {
  void *dev = nullptr;
  if (!cuda::usable() || !ok(rt().malloc_device(&dev, 4))) return nullptr;
  const std::uint32_t zero = 0;
  if (ok(rt().memcpy_async(dev, &zero, sizeof zero, nullptr)) && ok(rt().stream_synchronize(nullptr))) return dev;
  rt().free_device(dev);
  return nullptr;
}

bool StreamQueue::foreign_device(cuda::Stream stream, std::string *why) {
  if (!cuda::usable()) return false;
  int dev = -1;
  const int current = rt().current_device();
  const Status q = rt().stream_device(stream, &dev);
  if (q == Status::ErrArg) {
    *why = "the stream is not a CUDA stream of this process";
    return true;
  }
  if (!ok(q) || dev == current) return false;
  *why = "the stream belongs to device " + std::to_string(dev) + ", the current device is " + std::to_string(current) +
         " (make the stream's device current first)";
  return true;
}

void StreamQueue::free_device_word(void *dev) {
  if (dev) rt().free_device(dev);
}

StreamQueue::~StreamQueue() {
  if (thread_.joinable()) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      // Calls queued outside a capture must run before the word goes: the stream waits on it.
      int waited_s = 0;
      while (done_ < queued_) {
        if (cv_.wait_for(lk, std::chrono::seconds(10)) == std::cv_status::timeout)
          GCOLL_WARN("a stream communicator is being freed while %llu of its enqueued calls have not run: "
                     "waiting for its CUDA stream to reach them (%d s so far)",
                     static_cast<unsigned long long>(queued_ - done_), waited_s += 10);
      }
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  if (word_) rt().free_host(const_cast<std::uint32_t *>(word_));
}

void StreamQueue::handed_over(void *arg) {
  Call *c = static_cast<Call *>(arg);
  StreamQueue *q = c->q;
  {
    std::lock_guard<std::mutex> lk(q->mu_);
    q->ready_.push_back(c);
  }
  q->cv_.notify_all();
}

Status StreamQueue::enqueue(std::function<void()> run, std::size_t stage_a, std::size_t stage_b, std::string *why) {
  std::unique_ptr<Call> c(new (std::nothrow) Call);
  if (!c) {
    *why = "out of memory";
    return Status::ErrNoMem;
  }
  // Every set stays with staging_ until the queue goes (after the thread): the proxy never
  // drops the last reference, so it never frees.
  std::shared_ptr<pinned::ReservedStaging> set = staging_->reserve(stage_a, stage_b);
  if (!set) {
    *why = "no pinned host memory (or CUDA event) to reserve for the call's staged copies on the proxy thread";
    return Status::ErrNoMem;
  }
  c->q = this;
  c->run = [set, run = std::move(run)] {
    pinned::ReservedScope reserved(set.get());
    run();
  };
  c->kept = rt().stream_capturing(stream_);
  Call *raw = c.get();
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (c->kept) kept_.push_back(std::move(c));
    else ++queued_;
  }
  Status st = rt().launch_host_func(stream_, &StreamQueue::handed_over, raw);
  if (!ok(st)) {
    *why = std::string("cannot queue the call's host function on the stream: ") + rt().last_error();
    std::lock_guard<std::mutex> lk(mu_);
    if (raw->kept) kept_.pop_back();
    else --queued_;  // never handed over: `c` still owns it and frees it here
    return st;
  }
  if (!raw->kept) c.release();  // the proxy frees it once run
  // The host function is queued: from here the call will run. If the wait cannot be
  // queued, the stream's later work is not ordered after it: reported as a failure of the
  // call (its results may be read too early), never silently.
  st = rt().stream_wait_value32(stream_, word_, 1);
  if (ok(st)) st = rt().stream_write_value32(stream_, word_, 0);
  if (!ok(st)) *why = std::string("cannot queue the wait for the call on the stream: ") + rt().last_error();
  return st;
}

void StreamQueue::loop() {
  if (device_ >= 0) rt().set_device(device_);
  for (;;) {
    Call *c = nullptr;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !ready_.empty(); });
      if (ready_.empty()) return;  // stop_, nothing handed over
      c = ready_.front();
      ready_.pop_front();
    }
    {
      cuda::StreamOrderedScope ordered;
      c->run();
    }
    const bool kept = c->kept;
    if (!kept) delete c;
    run_.fetch_add(1, std::memory_order_acq_rel);
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!kept) ++done_;
      // The stream may go on: the call's results are in place.
      __atomic_store_n(word_, 1u, __ATOMIC_RELEASE);
    }
    cv_.notify_all();
  }
}

}  // namespace gcoll
