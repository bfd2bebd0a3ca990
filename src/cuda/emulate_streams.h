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

// A stream: a FIFO of operations run in order by one worker thread. Operations never
// throw and never take the process's stream list lock (device_synchronize holds it while
// it waits on each stream).
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

  // Runs what is queued, then ends and joins the worker.
  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    work_cv_.notify_one();
    if (worker_.joinable()) worker_.join();
  }

  // Runs what is queued and ends the worker, as stop(); but the stream stays: the next
  // operation queued on it starts a worker again. (MPI_Finalize: no thread of gcoll's is
  // left, while the application may still use its default stream afterwards.)
  void park() {
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

// ---- process state ---------------------------------------------------------------

// Never destroyed: worker threads of streams the application did not destroy may run (or
// wait) until the process ends, and static destructors may still free memory.
class State {
 public:
  Registry registry;

  // A new stream, or nullptr (with last_error) when no thread or memory can be had.
  EmuStream *create_stream() {
    std::lock_guard<std::mutex> lk(streams_mu_);
    return create_locked();
  }

  // Waits for the stream's queue and ends it. Streams this emulation did not create
  // are ignored.
  void destroy_stream(EmuStream *s) {
    std::unique_ptr<EmuStream> owned;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      for (auto it = streams_.begin(); it != streams_.end(); ++it) {
        if (it->get() == s && s != legacy_) {
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
    std::lock_guard<std::mutex> lk(streams_mu_);
    if (!legacy_) legacy_ = create_locked();
    return legacy_;
  }

  // Every stream's worker ends once its queue has run (EmuStream::park); the streams stay.
  void park_all() {
    std::lock_guard<std::mutex> lk(streams_mu_);
    for (const auto &s : streams_) s->park();
  }

  // cudaDeviceSynchronize. Holds the stream list so that no stream goes away meanwhile:
  // queued operations never take that lock, so they all finish.
  void synchronize_all() {
    std::lock_guard<std::mutex> lk(streams_mu_);
    for (const auto &s : streams_) s->synchronize();
  }

 private:
  EmuStream *create_locked() {
    try {
      auto s = std::make_unique<EmuStream>();
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
  std::vector<std::unique_ptr<EmuStream>> streams_;  // the legacy stream among them
  EmuStream *legacy_ = nullptr;
};

// The process's state, created on first use.
State &state();

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
