// The progress thread of one communicator (GCOLL_PROGRESS_THREAD): it runs the engine
// calls of the nonblocking forms (coll/engine_op.h) in the order the application started
// them, one at a time, while the application computes or waits in any call. Started at the
// communicator's first such call; ended (after its last op has run) with the communicator.
//
// Why a thread per communicator and not one per process: collectives on different
// communicators may be started in different orders on different ranks (MPI orders them per
// communicator only); one thread running every op in its own start order would wait for
// an op a peer runs after one it cannot finish without us. Why a thread at all: an engine
// algorithm waits for its peers, and a peer may sit in another MPI call (a receive that
// depends on this rank) and never enter a completion call of ours; the MPI would progress
// its own nonblocking collective there, and only a thread of ours can do the same.
//
// The thread calls the MPI only where every rank's MPI granted MPI_THREAD_MULTIPLE
// (Team::thread_mpi): then it also runs calls across nodes, whose closing agreements go
// over the MPI on gcoll's own communicators (the rails', Engine::agree_comm), and keeps the
// MPI progressing in the engine's waits. Otherwise the engine takes a nonblocking call
// only where its run needs no MPI call (one node). Either way the engine and its memory
// space were set up before, by a blocking call or a persistent call's _init (team_call.h:
// team_async_call), and the application's thread completes the request
// (pmpi/requests.h). Every signal is blocked in it, so that the application's handlers run
// on the application's threads as before.
//
// Waiting for work (a hand-off costs a wake-up only after a quiet spell): after its last op
// the thread watches the queue without sleeping on the condition variable, so that
// starting an op costs no system call: with a core to spare per rank
// (base/wait.h: wait_spare_core_per_rank) it polls with the WaitPolicy (spinning, then
// yielding; an op started while it spins is taken within a microsecond), otherwise it
// polls between sleeps of 16 to 128 us (a completion call that waits meanwhile runs the op
// itself: run_here). After kWatchMs without work it sleeps on the condition variable, and
// the next submit wakes it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "base/status.h"

namespace gcoll {

struct Team;
struct EngineOp;

class AsyncQueue {
 public:
  AsyncQueue() = default;
  // Waits for the ops still queued (their peers run them too), then ends the thread.
  ~AsyncQueue();
  AsyncQueue(const AsyncQueue &) = delete;
  AsyncQueue &operator=(const AsyncQueue &) = delete;

  // Queues `op` for `team`'s engine; starts the thread at the first op. ErrNoMem (nothing
  // queued) when no thread can be had.
  Status submit(Team *team, std::shared_ptr<EngineOp> op);
  // Waits until every queued op has run (a blocking engine call on the communicator runs
  // after them: one engine call at a time). Free when nothing was ever queued.
  void drain();
  bool busy() const { return pending_.load(std::memory_order_acquire) != 0; }
  // A completion call that is about to wait for `op` runs it on the application's thread
  // when it is next in line and the thread has not taken it (the MPI progressing in the
  // engine's waits, as in a blocking call): a nonblocking call completed at once costs
  // what the blocking one does, without the thread's wake-up. False: not next in line, or
  // taken (the caller waits for it).
  bool run_here(Team *team, EngineOp *op);

 private:
  static constexpr int kWatchMs = 10;  // the thread watches the queue this long after its last op

 private:
  void loop(Team *team);
  void watch();  // until an op is queued or the queue stops, at most kWatchMs
  void ran(EngineOp *op, Status st);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<EngineOp>> q_;
  std::thread thread_;
  bool stop_ = false;
  bool running_ = false;  // an op is running (on the thread, or on a completion call's)
  bool asleep_ = false;   // the thread waits on cv_ (a submit or the end of a run wakes it)
  std::atomic<int> pending_{0};
  std::atomic<int> queued_{0};          // q_.size(), for watch()
  std::atomic<bool> stopping_{false};   // stop_, for watch()
};

// Threads started so far (stats, tests).
int async_threads_started();

}  // namespace gcoll
