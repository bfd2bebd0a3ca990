#include "coll/async_queue.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdint>

#include "base/log.h"
#include "base/stats.h"
#include "base/wait.h"
#include "coll/engine_op.h"
#include "coll/team.h"

namespace gcoll {

namespace {
std::atomic<int> g_threads{0};
}

int async_threads_started() { return g_threads.load(std::memory_order_relaxed); }

AsyncQueue::~AsyncQueue() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  stopping_.store(true, std::memory_order_release);
  cv_.notify_all();
  thread_.join();
}

Status AsyncQueue::submit(Team *team, std::shared_ptr<EngineOp> op) {
  std::unique_lock<std::mutex> g(mu_);
  if (!thread_.joinable()) {
    // Every signal blocked in the new thread (it inherits the mask), the caller's put back.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      thread_ = std::thread([this, team] { loop(team); });
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      return Status::ErrNoMem;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    g_threads.fetch_add(1, std::memory_order_relaxed);
    process_stats().count(Counter::ProgressThreads);
  }
  pending_.fetch_add(1, std::memory_order_acq_rel);
  q_.push_back(std::move(op));
  queued_.fetch_add(1, std::memory_order_release);
  process_stats().count(Counter::AsyncEngineCalls);
  const bool wake = asleep_;  // (watching: it sees queued_ without a system call)
  g.unlock();
  if (wake) cv_.notify_one();
  return Status::Ok;
}

void AsyncQueue::drain() {
  if (!busy()) return;
  wait_until([&] { return !busy(); });
}

void AsyncQueue::ran(EngineOp *op, Status st) {
  op->run_status = st;
  bool wake = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    running_ = false;
    wake = asleep_ && !q_.empty();  // the thread waits for the next op to be free to run
  }
  op->done.store(true, std::memory_order_release);
  pending_.fetch_sub(1, std::memory_order_acq_rel);
  if (wake) cv_.notify_one();
}

namespace {
Status run_guarded(EngineOp *op, Team *team) {
  try {
    return op->run(team, false);
  } catch (...) {
    return Status::ErrInternal;
  }
}
}  // namespace

bool AsyncQueue::run_here(Team *team, EngineOp *op) {
  std::shared_ptr<EngineOp> mine;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (running_ || q_.empty() || q_.front().get() != op) return false;
    mine = std::move(q_.front());
    q_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    running_ = true;
  }
  WaitCallScope in_call;  // the MPI keeps progressing in the engine's waits (base/wait.h)
  ran(op, run_guarded(op, team));
  return true;
}

void AsyncQueue::watch() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWatchMs);
  auto ready = [&] {
    return queued_.load(std::memory_order_acquire) > 0 || stopping_.load(std::memory_order_acquire);
  };
  if (wait_spare_core_per_rank()) {
    WaitPolicy w;
    for (std::uint64_t n = 0; !ready(); ++n) {
      if ((n & 63) == 63 && std::chrono::steady_clock::now() >= until) return;
      w.pause();
    }
    return;
  }
  for (int us = 16; !ready(); us = us < 128 ? us * 2 : 128) {
    if (std::chrono::steady_clock::now() >= until) return;
    wait_sleep_us(us);
  }
}

void AsyncQueue::loop(Team *team) {
  for (;;) {
    std::shared_ptr<EngineOp> op;
    {
      std::unique_lock<std::mutex> g(mu_);
      auto runnable = [&] { return !q_.empty() && !running_; };
      if (!runnable()) {
        if (stop_ && q_.empty() && !running_) return;
        g.unlock();
        watch();
        g.lock();
        asleep_ = true;
        cv_.wait(g, [&] { return (stop_ && q_.empty() && !running_) || runnable(); });
        asleep_ = false;
        if (q_.empty()) return;  // stop_, and nothing left
      }
      op = std::move(q_.front());
      q_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
      running_ = true;
    }
    ran(op.get(), run_guarded(op.get(), team));
  }
}

}  // namespace gcoll
