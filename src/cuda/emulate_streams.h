// The emulated GPU's streams and events (emulate.h): one worker thread per stream runs
// queued operations in order, each after a random delay; the process's streams.
// Internal to src/cuda/emulate*.cc.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/emulate_memory.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

// gcoll::cuda::emu::set_delay_for_testing's override of GCOLL_EMU_DELAY (-1: none).
extern std::atomic<int> g_delay_override;

// The delay of an operation, drawn when it is queued (not when it runs) so that a test
// can queue slow work, lower the delay and check the state with fast work.
std::uint32_t random_delay_us();

// Blocks the calling thread (a stream's worker) until *word == value: a few hundred
// yields, then sleeps of 20 to 50 us (a wait may last as long as an MPI collective). Holds
// no lock: other streams, device_synchronize and free go on meanwhile (free and
// device_synchronize wait for it, as on a GPU). `word` is read with acquire order, so
// what the host wrote before setting it is visible to the work after the wait.
void wait_value32(const volatile std::uint32_t *word, std::uint32_t value);

// A stream: a FIFO of operations run in order by one worker thread. Operations never
// throw and never take the process's stream list lock. An operation may block its worker
// for as long as it likes (stream_wait_value32, stream_wait_event): then only this stream
// stops, and whoever waits for its queue (synchronize, stop, park, and through them
// device_synchronize, free, stream_destroy, park_threads) waits until it passes, without
// holding the stream list lock.
class EmuStream {
 public:
  EmuStream() = default;
  EmuStream(const EmuStream &) = delete;
  EmuStream &operator=(const EmuStream &) = delete;

  // Starts the worker. False when no thread can be had.
  bool start() {
    std::lock_guard<std::mutex> lk(m_);
    return start_locked();
  }

  // Queues fn (which must not throw) to run after a random delay. False when out of memory.
  template <class F>
  bool enqueue(F &&fn) {
    try {
      Op op{std::function<void()>(std::forward<F>(fn)), random_delay_us()};
      {
        std::lock_guard<std::mutex> lk(m_);
        if (!running_ && !start_locked()) return false;  // parked (park()): a worker again
        queue_.push_back(std::move(op));
        ++queued_;
      }
      work_cv_.notify_one();
      return true;
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory queueing an operation");
      return false;
    }
  }

  // Waits until everything queued before the call has run.
  void synchronize() {
    std::unique_lock<std::mutex> lk(m_);
    const std::uint64_t target = queued_;
    done_cv_.wait(lk, [&] { return done_ >= target; });
  }

  // Whether everything queued so far has run (cudaStreamQuery).
  bool idle() {
    std::lock_guard<std::mutex> lk(m_);
    return done_ >= queued_;
  }

  // Runs what is queued, then ends and joins the worker (a wait still blocked in the
  // queue keeps it: this returns once the wait has passed).
  void stop() {
    std::lock_guard<std::mutex> life(life_m_);
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    work_cv_.notify_one();
    if (worker_.joinable()) worker_.join();
    std::lock_guard<std::mutex> lk(m_);
    running_ = false;  // a later park() has nothing to end
  }

  // Runs what is queued and ends the worker, as stop(); but the stream stays: the next
  // operation queued on it starts a worker again. (MPI_Finalize: no thread of gcoll's is
  // left, while the application may still use its default stream afterwards.) Like
  // stop(), it returns only once every queued operation has run: a stream blocked in
  // stream_wait_value32 on a word nobody sets makes it hang (see State::park_all).
  void park() {
    std::lock_guard<std::mutex> life(life_m_);
    {
      std::lock_guard<std::mutex> lk(m_);
      if (!running_) return;
      stopping_ = true;
    }
    work_cv_.notify_one();
    worker_.join();
    std::lock_guard<std::mutex> lk(m_);
    stopping_ = false;
    running_ = false;
    if (!queue_.empty()) start_locked();  // queued after the worker saw an empty queue
  }

  // A queued operation failed (called on the worker); the next synchronize or event query
  // reports it.
  void fail() { failed_.store(true, std::memory_order_relaxed); }
  bool take_failure() { return failed_.exchange(false, std::memory_order_relaxed); }

 private:
  struct Op {
    std::function<void()> fn;
    std::uint32_t delay_us;
  };

  bool start_locked() {
    try {
      if (worker_.joinable()) worker_.join();  // a parked worker, ended
      worker_ = std::thread([this] { run(); });
      running_ = true;
      return true;
    } catch (const std::system_error &e) {
      set_error("emulated GPU: cannot start a stream's thread: %s", e.what());
      return false;
    }
  }

  void run() {
    pthread_setname_np(pthread_self(), "gcoll-emu-strm");  // (what a thread listing shows)
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> lk(m_);
        work_cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything has run
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      if (op.delay_us) std::this_thread::sleep_for(std::chrono::microseconds(op.delay_us));
      op.fn();
      op.fn = nullptr;  // release what it holds (staged copies) before it counts as done
      {
        std::lock_guard<std::mutex> lk(m_);
        ++done_;
      }
      done_cv_.notify_all();
    }
  }

  std::mutex life_m_;  // stop() and park(): one joins the worker at a time (park_all and
                       // destroy_stream may meet on one stream); taken before m_
  std::mutex m_;
  std::condition_variable work_cv_;  // the worker waits for work
  std::condition_variable done_cv_;  // synchronize() waits for progress
  std::deque<Op> queue_;
  std::uint64_t queued_ = 0, done_ = 0;
  bool stopping_ = false;
  bool running_ = false;  // a worker runs (start_locked) and has not been parked
  std::atomic<bool> failed_{false};
  std::thread worker_;
};

// An event's state outlives its handle: a record or a wait still queued when the
// application destroys the event (as CUDA allows) keeps it.
struct EventState {
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t recorded = 0;   // records queued so far
  std::uint64_t completed = 0;  // the latest record that has run
  bool failed = false;          // an operation before a completed record failed
};

struct EmuEvent {
  std::shared_ptr<EventState> st;
};

// The stream behind a Stream handle: nullptr is the legacy default stream, as in CUDA,
// and so are CUDA's own handles of the default streams, cudaStreamLegacy (0x1) and
// cudaStreamPerThread (0x2), which code written for CUDA may hand the emulation: it has
// one default stream (per-thread ones would only order less). nullptr when the legacy
// stream cannot be had.
EmuStream *resolve_stream(void *s);
// The same for the C API: also nullptr (nothing queued) for a handle that is not a live
// stream of the emulation (GCOLL_EMU_ERR_INVALID, with the message in last_error).
EmuStream *resolve_checked(void *s);

// ---- process state ---------------------------------------------------------------

// Never destroyed: worker threads of streams the application did not destroy may run (or
// wait) until the process ends, and static destructors may still free memory.
// Counts (and reports once) a wait for every stream made on a stream-ordered call's
// thread (g_stream_ordered_device_waits).
void note_device_wait();

class State {
 public:
  Registry registry;

  // A new stream, or nullptr (with last_error) when no thread or memory can be had.
  EmuStream *create_stream() {
    std::lock_guard<std::mutex> lk(streams_mu_);
    return create_locked();
  }

  // Waits for the stream's queue and ends it. Streams this emulation did not create
  // are ignored. Unlike cudaStreamDestroy, which returns at once, this returns once the
  // queue has run (a wait blocked in it included).
  void destroy_stream(EmuStream *s) {
    std::shared_ptr<EmuStream> owned;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      for (auto it = streams_.begin(); it != streams_.end(); ++it) {
        if (it->get() == s && s != legacy_.load(std::memory_order_relaxed)) {
          owned = std::move(*it);
          streams_.erase(it);
          break;
        }
      }
    }
    if (owned) owned->stop();
  }

  // The legacy default stream, created on first use; nullptr when it cannot be.
  EmuStream *legacy() {
    EmuStream *l = legacy_.load(std::memory_order_acquire);
    if (l) return l;
    std::lock_guard<std::mutex> lk(streams_mu_);
    l = legacy_.load(std::memory_order_relaxed);
    if (!l) {
      l = create_locked();
      legacy_.store(l, std::memory_order_release);
    }
    return l;
  }

  // Whether s is a live stream of this emulation (the legacy one included).
  bool known(const EmuStream *s) {
    std::lock_guard<std::mutex> lk(streams_mu_);
    for (const auto &x : streams_)
      if (x.get() == s) return true;
    return false;
  }

  // Every stream's worker ends once its queue has run (EmuStream::park); the streams stay.
  // A stream blocked in a wait (stream_wait_value32, or a wait on an event recorded
  // behind one) keeps this waiting until the wait passes, and forever if nobody ever sets
  // its word: as an application hangs on a GPU that waits for a word nobody sets (only it
  // hangs in cudaStreamSynchronize or cudaDeviceSynchronize there, here in MPI_Finalize,
  // coll/engine.cc). Who queues such waits (the stream-ordered collectives) must release
  // them before the engine parks the threads. The stream list lock is not held meanwhile:
  // other threads create, use and destroy streams, and set the word, as they like.
  void park_all() {
    for_each_stream([](EmuStream &s) { s.park(); });
  }

  // cudaDeviceSynchronize: waits for what every stream has queued before the call. A
  // stream blocked in a wait makes it wait until the wait passes, as on a GPU. The
  // streams are held by reference, not by the stream list lock: a stream destroyed
  // meanwhile lives until this is done with it, and the lock stays free for others.
  void synchronize_all() {
    note_device_wait();
    for_each_stream([](EmuStream &s) { s.synchronize(); });
  }

 private:
  // f(stream) for each stream of the list as it is now, outside the stream list lock
  // (each held by a reference of its own); out of memory for the copy, under the lock.
  template <class F>
  void for_each_stream(F f) {
    std::vector<std::shared_ptr<EmuStream>> now;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      try {
        now = streams_;
      } catch (const std::bad_alloc &) {
        for (const auto &s : streams_) f(*s);
        return;
      }
    }
    for (const auto &s : now) f(*s);
  }

  EmuStream *create_locked() {
    try {
      auto s = std::make_shared<EmuStream>();
      streams_.reserve(streams_.size() + 1);  // so that push_back cannot fail after start()
      if (!s->start()) return nullptr;
      streams_.push_back(std::move(s));
      return streams_.back().get();
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory creating a stream");
      return nullptr;
    }
  }

  std::mutex streams_mu_;
  std::vector<std::shared_ptr<EmuStream>> streams_;  // the legacy stream among them
  std::atomic<EmuStream *> legacy_{nullptr};
};

// The process's state, created on first use.
State &state();

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
