// The emulated GPU's streams and events (emulate.h): one worker thread per stream runs
// queued operations in order, each after a random delay; graph capture (what a capturing
// stream is given is recorded, and a graph's launch queues copies of it); the process's
// streams and graphs.
// Internal to src/cuda/emulate*.cc.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/emulate_machine.h"
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

// The operations of a graph (emulate.h: stream_end_capture), in the order they were
// queued on the capturing stream. A launch queues copies of them: each must be copyable
// and may run any number of times, so it holds only addresses and values fixed at
// capture (a staged copy of host bytes would replay the bytes of the capture: those
// operations are refused under capture, pageable_copy_refused).
using GraphOps = std::vector<std::function<void()>>;

// A stream: a FIFO of operations run in order by one worker thread. Operations never
// throw and never take the process's stream list lock. An operation may block its worker
// for as long as it likes (stream_wait_value32, stream_wait_event): then only this stream
// stops, and whoever waits for its queue (synchronize, stop, park, and through them
// device_synchronize, free, stream_destroy, park_threads) waits until it passes, without
// holding the stream list lock.
//
// While a capture is open (begin_capture, cudaStreamBeginCapture in relaxed mode) what is
// queued goes into the capture instead and runs only when the graph is launched; the
// queue and the worker go on with what was queued before.
class EmuStream {
 public:
  EmuStream() = default;
  int device = 0;  // the device it belongs to (current at its creation; the legacy stream: none)
  EmuStream(const EmuStream &) = delete;
  EmuStream &operator=(const EmuStream &) = delete;

  // Starts the worker. False when no thread can be had.
  bool start() {
    std::lock_guard<std::mutex> lk(m_);
    return start_locked();
  }

  // Queues fn (which must not throw) to run after a random delay, or records it into the
  // open capture. False when out of memory.
  template <class F>
  bool enqueue(F &&fn) {
    try {
      std::function<void()> f(std::forward<F>(fn));
      return submit(&f, 1);
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory queueing an operation");
      return false;
    }
  }

  // cudaGraphLaunch: queues copies of a graph's operations, in order and as one
  // submission (nothing another thread queues comes between them), each with a delay of
  // its own drawn now; into the open capture when there is one (a graph launched into a
  // capture is part of it, as CUDA makes it a child graph). False when out of memory.
  bool enqueue_graph(const GraphOps &ops) {
    try {
      GraphOps copies(ops);
      return submit(copies.data(), copies.size());
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory launching a graph of %zu operations", ops.size());
      return false;
    }
  }

  // ---- capture ----
  // Opens a capture: false when one is open already.
  bool begin_capture() {
    std::lock_guard<std::mutex> lk(m_);
    if (capturing_) return false;
    capturing_ = true;
    invalidated_by_ = nullptr;
    captured_.clear();
    return true;
  }
  // Closes the open capture (false when there is none) and hands over what it recorded;
  // *invalidated_by: what invalidated it (then the operations are to be discarded), or
  // nullptr.
  bool end_capture(GraphOps *ops, const char **invalidated_by) {
    std::lock_guard<std::mutex> lk(m_);
    if (!capturing_) return false;
    capturing_ = false;
    ops->swap(captured_);
    captured_.clear();
    *invalidated_by = invalidated_by_;
    return true;
  }
  bool capturing() {
    std::lock_guard<std::mutex> lk(m_);
    return capturing_;
  }
  // An operation the capture cannot take was refused (refused_under_capture): as on CUDA,
  // the open capture is invalidated and end_capture gives no graph. `what` must be a
  // string literal (it is kept). False when no capture is open.
  bool invalidate_capture(const char *what) {
    std::lock_guard<std::mutex> lk(m_);
    if (!capturing_) return false;
    if (!invalidated_by_) invalidated_by_ = what;
    return true;
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
  // An open capture is discarded (a stream destroyed while capturing).
  void stop() {
    std::lock_guard<std::mutex> life(life_m_);
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
      capturing_ = false;
      GraphOps().swap(captured_);  // releases what the recorded operations hold
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
  // A kernel trapped (__trap() on a GPU: the context's sticky error). Every later
  // synchronization of the stream reports it (gcoll_emu_stream_synchronize,
  // Runtime::stream_synchronize); the emulation keeps it to the stream, so that a test
  // process goes on with other streams.
  void trap() {
    trapped_.store(true, std::memory_order_relaxed);
    fail();
  }
  bool trapped() const { return trapped_.load(std::memory_order_relaxed); }

  // The stream whose worker is the calling thread, or nullptr. An operation that fails
  // reports it to this stream rather than to the one it was queued on: a graph's copy of
  // it runs on whatever stream the graph was launched on.
  static EmuStream *running() { return t_running_; }

 private:
  struct Op {
    std::function<void()> fn;
    std::uint32_t delay_us;
  };

  // Moves fns[0, n) into the open capture, or into the queue (a worker again if the
  // stream was parked), as one submission. Throws std::bad_alloc with nothing submitted.
  bool submit(std::function<void()> *fns, std::size_t n) {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (capturing_) {
        const std::size_t before = captured_.size();
        try {
          for (std::size_t i = 0; i < n; ++i) captured_.push_back(std::move(fns[i]));
        } catch (const std::bad_alloc &) {
          captured_.resize(before);
          throw;
        }
        return true;
      }
      if (!running_ && !start_locked()) return false;  // parked (park()): a worker again
      const std::size_t before = queue_.size();
      try {
        for (std::size_t i = 0; i < n; ++i) queue_.push_back(Op{std::move(fns[i]), random_delay_us()});
      } catch (const std::bad_alloc &) {
        queue_.resize(before);
        throw;
      }
      queued_ += n;
    }
    work_cv_.notify_one();
    return true;
  }

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
    t_running_ = this;
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
  bool capturing_ = false;  // a capture is open: submit records into captured_
  const char *invalidated_by_ = nullptr;  // the first operation the open capture refused
  GraphOps captured_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> trapped_{false};
  std::thread worker_;
  static thread_local EmuStream *t_running_;
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
// Whether s is one of the handles of the default stream (nullptr, 0x1, 0x2).
bool default_stream_handle(void *s);

// ---- what a capture refuses ----------------------------------------------------------
// Both return true, with the message in last_error and the capture invalidated
// (EmuStream::invalidate_capture), when es is capturing and the operation cannot go into
// the graph; false when it may be queued as usual.

// `what` (a CUDA call's name, a string literal), which CUDA refuses on a capturing stream
// (cudaErrorStreamCaptureUnsupported: a synchronize, a query), or which the emulation
// cannot put into a graph (unsupported: event records and waits).
bool refused_under_capture(EmuStream *es, const char *what, bool unsupported = false);
// A copy between memory of kinds dst_kind and src_kind (Translated::kind) when either is
// pageable host memory: such a copy is staged or waited for when it is queued (CUDA's
// way, and emu::memcpy_async's), which a graph cannot replay (it would copy the bytes of
// the capture at every launch, or return before the bytes are there).
bool pageable_copy_refused(EmuStream *es, int dst_kind, int src_kind);

// ---- process state ---------------------------------------------------------------

// Never destroyed: worker threads of streams the application did not destroy may run (or
// wait) until the process ends, and static destructors may still free memory.
// Counts (and reports once) a wait for every stream made on a stream-ordered call's
// thread (g_stream_ordered_device_waits).
void note_device_wait();
// The same count for a call that, on a GPU, takes the CUDA driver's lock exclusively
// (allocating or freeing memory, making or destroying a stream or an event, opening or
// closing an IPC mapping), made on a stream-ordered call's thread. On an H200 (2026-11-29)
// the proxy's cudaHostAlloc waited for that lock while the application's thread held it
// in a cudaMemcpyAsync to pageable memory queued after the enqueued call, waiting for its
// stream, which waited for the proxy: every rank hung.
void note_exclusive(const char *what);

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

  // ---- executable graphs (gcoll_emu_graph_*) ----
  // A new graph of `ops`: its handle, or nullptr (with last_error) when out of memory.
  void *add_graph(GraphOps ops) {
    try {
      auto g = std::make_shared<const GraphOps>(std::move(ops));
      void *h = const_cast<GraphOps *>(g.get());
      std::lock_guard<std::mutex> lk(graphs_mu_);
      graphs_.emplace(h, std::move(g));
      return h;
    } catch (const std::bad_alloc &) {
      set_error("emulated GPU: out of memory instantiating a graph");
      return nullptr;
    }
  }
  // The live graph of handle h, held by a reference of the caller's (a destroy meanwhile
  // leaves it whole), or nullptr.
  std::shared_ptr<const GraphOps> graph(void *h) {
    std::lock_guard<std::mutex> lk(graphs_mu_);
    auto it = graphs_.find(h);
    return it == graphs_.end() ? nullptr : it->second;
  }
  // False when h is not a live graph. Launches already queued hold copies of its
  // operations, not the graph: they still run.
  bool remove_graph(void *h) {
    std::shared_ptr<const GraphOps> gone;  // released outside the lock
    std::lock_guard<std::mutex> lk(graphs_mu_);
    auto it = graphs_.find(h);
    if (it == graphs_.end()) return false;
    gone = std::move(it->second);
    graphs_.erase(it);
    return true;
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
      s->device = current_device();  // a stream belongs to the device current at its creation
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
  std::mutex graphs_mu_;
  std::map<void *, std::shared_ptr<const GraphOps>> graphs_;  // by handle
};

// The process's state, created on first use.
State &state();

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
