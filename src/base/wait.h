// How gcoll waits: one policy for every loop that polls for something another process
// (or the GPU) will do, so that ranks that outnumber the cores give theirs away.
//
//   WaitPolicy w;                 // one per wait (cheap: no system call)
//   while (!done()) w.pause();    // between two polls
//
// or `wait_until([&] { return done(); });`. A wait that also has to make progress (UCX,
// PMPI_Test) calls that inside done(). pause() spins first (the awaited peer may be
// running on another core and arrive within a microsecond), then gives the CPU away:
//
//   GCOLL_WAIT=spin   never gives the CPU away (dedicated cores, lowest latency);
//   GCOLL_WAIT=yield  sched_yield() after the first polls (Open MPI's mpi_yield_when_idle);
//   GCOLL_WAIT=sleep  a few yields, then sleeps of growing length (16 us to 128 us);
//   GCOLL_WAIT=auto   (default) sleep where the node is oversubscribed, else yield, and
//                     sleep too once a wait has lasted 1 ms.
//
// Oversubscribed (auto) means: more ranks of this job on the node than CPUs they may run
// on together (the union of their sched_getaffinity masks, learned when the engine sets
// up a node), or Open MPI told to yield (OMPI_MCA_mpi_yield_when_idle=1: the user or batch
// system says that ranks share cores), or, looked at every 10 ms while some wait lasts,
// more runnable threads on the machine than CPUs (/proc/loadavg): that sees other jobs
// sharing the node, which no MPI can know of (each job alone fits, so Open MPI does not
// yield either; issue 12).
//
// Why: under oversubscription a rank that polls without giving the CPU away keeps the
// peer it waits for off the core for whole scheduler slices (milliseconds per step);
// issue 12 measured a 50x slowdown of 4 jobs on 16 cores from that alone.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include "base/config.h"  // WaitMode

namespace gcoll {

// The mode in effect: GCOLL_WAIT, or what wait_set_mode() set (tests).
WaitMode wait_mode();
void wait_set_mode(WaitMode m);
const char *wait_mode_name(WaitMode m);

// A node communicator of `ranks` ranks whose affinity masks cover `cpus` CPUs (the engine
// learns both when it sets up a node): ranks > cpus makes auto sleep from then on.
void wait_note_node(int ranks, int cpus);
// The CPUs this process may run on (sched_getaffinity; all online CPUs if unknown).
int wait_process_cpus();

// Whether a helper thread of each rank (the progress thread, coll/async_queue.h) may keep
// a CPU busy while it waits for work: GCOLL_WAIT=spin, or (auto, yield) every rank of the
// most crowded node communicator seen has a second CPU of its own (node CPUs >= 2 x node
// ranks) and auto sees no oversubscription (wait_oversubscribed). Never under sleep.
bool wait_spare_core_per_rank();
// nanosleep for `us` microseconds (the kernel's timer slack added).
void wait_sleep_us(int us);

// What auto decides from (for gcoll_info, logs and tests).
struct WaitFacts {
  int cores = 0;            // CPUs this process may run on
  int online = 0;           // CPUs of the machine
  int node_ranks = 0;       // ranks of the most crowded node communicator seen (0: none yet)
  int node_cpus = 0;        // the CPUs its ranks may run on together
  bool mpi_yield = false;   // OMPI_MCA_mpi_yield_when_idle set to a true value
  int runnable = -1;        // runnable threads on the machine at the last look (-1: unknown)
  bool oversubscribed = false;
  bool shared_cores = false;  // wait_machine_loaded(): GCOLL_SHARED_CORES, or a slow yield seen
};
WaitFacts wait_facts();

// True when auto should sleep: the static facts, or the last look at the machine's
// runnable threads (refreshed at most every 10 ms, by whichever wait asks).
bool wait_oversubscribed();
// Whether other processes share this rank's cores (GCOLL_SHARED_CORES; for
// GCOLL_HOST_BUSY_MPI, coll/team.h: Team::busy_says_mpi): auto = a wait's yield came back
// after kSlowYieldUs or more within the last second (another process's thread held the
// core for its time slice; this job's ranks hand it back at once, so ranks that merely
// outnumber the cores do not count), yes, no.
bool wait_machine_loaded();
// wait_machine_loaded(), looking first (auto, nothing seen within the last second): up to
// kProbeYields timed yields, the first slow one ends it. A process whose calls go to the
// MPI runs none of gcoll's waits, so it would otherwise stop seeing the load. Costs about
// a microsecond per yield on cores that are not shared.
bool wait_probe_machine_loaded();

// The MPI's own progress while gcoll waits inside an intercepted call. An MPI may need a
// rank that has already returned from a collective to keep calling into it (MPICH 5's
// shared-memory and UCX paths, seen with the MPI-5 ABI wheel: a peer still inside the
// reference PMPI_Allgather waited for a rank that had moved on into gcoll's engine and
// only polled gcoll's own transport: a hang). Without gcoll that rank's next MPI call
// would have made progress; so every wait inside an engine call pokes the MPI
// (pmpi/runtime.cc installs the hook: PMPI_Iprobe), every kProgressPolls polls while it
// spins and at every pause after that. Only on the thread that is inside the call
// (WaitCallScope), so that no helper thread ever calls the MPI.
//
// Rationed where the cores are shared with other processes: an MPI told that its ranks
// share cores (Open MPI's mpi_yield_when_idle, set by mpirun when it oversubscribes)
// yields in every progress call that finds nothing to do, and a yield on a core that
// another job's CPU-bound thread shares hands that thread its whole time slice
// (milliseconds). So within kSlowYieldMemoryNs of a slow yield (the window in which
// gcoll's own waits do not yield either, wait.cc), or of a poke that itself came back
// after kSlowYieldUs or more (the MPI's yield, which gcoll's own do not time), a wait pokes
// the MPI only once every kSharedProgressUs: the progress a peer inside the MPI needs still
// comes, a little later. (Issue 32 item 2: two CPU-bound loops on the 2-core VM, 4 ranks
// in 2 x 2 virtual nodes, reduce_scatter_block 256 KiB on the engine: 10.6 ms per call
// with a poke at every pause, 5.4 ms with none; Open MPI's own call 6.5 ms.)
using WaitProgressHook = void (*)();
void wait_set_progress_hook(WaitProgressHook h);
//
// The thread's time slice (GCOLL_WAIT_SLICE): on shared cores a rank woken from a wait
// (its peer has arrived) queued behind another process's CPU-bound thread until that
// thread's slice ended, about 1 ms on average with EEVDF (`perf sched latency`, the 2-core
// VM, two pinned loops, reduce_scatter_block 16 MiB on the engine). Linux 6.12 and later
// let a thread ask for a shorter slice (sched_setattr's sched_runtime) and let a woken
// thread with a shorter slice than the running one's take the core at once. So an engine
// call that begins while wait_machine_loaded() (and after a slow yield was first seen:
// g_slice_hint) asks for GCOLL_WAIT_SLICE microseconds for the calling thread as it
// begins (WaitCallScope), one that finds the cores shared during a wait at its first
// sleep, and the call's scope gives the thread its own slice back when it ends: nothing of
// it outlives the call. At the first sleep only, the change cost a call on shared cores
// about 1 ms more (2 x 2 virtual nodes, two loops, reduce_scatter_block 256 KiB - 2 MiB:
// 3.0-6.3 ms against 2.1-4.9): the thread, running on past its new slice, was preempted
// on its way to the sleep and waited in the run queue for the loop's whole slice, where
// a sleeping thread would have taken the core back at its timer. Only for a
// SCHED_OTHER thread whose slice is longer; never again in the process once the kernel
// refuses (no such system call, a seccomp filter, an older kernel ignoring it is harmless).
namespace detail {
extern std::atomic<WaitProgressHook> g_wait_progress_hook;
extern __thread int tl_wait_in_call __attribute__((tls_model("initial-exec")));
// Whether this thread's slice is the one wait_shorten_slice() set (to be given back).
extern __thread bool tl_slice_short __attribute__((tls_model("initial-exec")));
// Shortens it if GCOLL_WAIT_SLICE allows and it is not short already: true if it did now.
bool wait_shorten_slice();  // wait.cc
void wait_restore_slice();  // wait.cc
// Set once a slow yield was seen (or GCOLL_SHARED_CORES=yes was read), never cleared: the
// calls gcoll gives to the MPI look at wait_machine_loaded() only from then on (MpiSliceScope).
extern std::atomic<bool> g_slice_hint;
// Whether a call beginning now takes the short slice: a slow yield was ever seen (one load
// where none was) and the cores are shared now.
inline bool slice_wanted() {
  return __builtin_expect(g_slice_hint.load(std::memory_order_relaxed), 0) && wait_machine_loaded();
}
}  // namespace detail
// Marks the calling thread as inside an intercepted MPI call's engine run (coll/team.cc:
// Team::run_engine; not on the passthrough path, which waits for nothing of gcoll's).
class WaitCallScope {
 public:
  WaitCallScope() {
    if (++detail::tl_wait_in_call == 1 && detail::slice_wanted()) detail::wait_shorten_slice();
  }
  ~WaitCallScope() {
    if (--detail::tl_wait_in_call == 0 && detail::tl_slice_short) detail::wait_restore_slice();
  }
  WaitCallScope(const WaitCallScope &) = delete;
  WaitCallScope &operator=(const WaitCallScope &) = delete;
};
// The MPI's own call, where gcoll hands a call to it (coll/team_call.h: team_to_mpi), on
// shared cores: the MPI waits inside it too (Open MPI: polling and yielding), and its
// thread queued behind another process's as gcoll's did, so the call gets the short slice
// as well, given back when it returns (with the MPI's errno). Costs nothing on a machine
// where no slow yield was ever seen (one load); four system calls per call where the
// cores are shared (a call there takes milliseconds).
class MpiSliceScope {
 public:
  MpiSliceScope() {
    if (detail::slice_wanted()) mine_ = detail::wait_shorten_slice();
  }
  ~MpiSliceScope() {
    if (!mine_) return;
    const int e = errno;
    detail::wait_restore_slice();
    errno = e;
  }
  MpiSliceScope(const MpiSliceScope &) = delete;
  MpiSliceScope &operator=(const MpiSliceScope &) = delete;

 private:
  bool mine_ = false;
};

namespace detail {
// Records a slow yield now, as WaitPolicy does when one of its yields comes back late
// (tests: the shared-cores window without a CPU-bound thread on the test's CPU).
void wait_note_slow_yield();
// Forgets every slow yield and slow poke seen, and the widened window (tests).
void wait_forget_slow_yields();
// Whether the waits' shared-cores window is open now: no yields, the MPI's progress
// rationed (WaitPolicy; tests).
bool wait_shared_window_open();
// The calling thread's time slice in ns as the kernel reports it (sched_getattr's
// sched_runtime: EEVDF's slice of a SCHED_OTHER thread), 0 where it cannot be read (tests).
std::uint64_t wait_thread_slice_ns();
}  // namespace detail

class WaitPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  WaitPolicy() : mode_(wait_mode()) {}
  explicit WaitPolicy(WaitMode m) : mode_(m) {}

  // One step of waiting between two polls.
  void pause() {
    if (++polls_ <= kSpinPolls || mode_ == WaitMode::Spin) {
      if ((polls_ & (kProgressPolls - 1)) == 0) progress_mpi();
      cpu_relax();
      return;
    }
    progress_mpi();
    slow_pause();
  }

  // Something happened (a partial completion): spin again before giving the CPU away.
  void reset() {
    polls_ = 0;
    sleep_us_ = 0;
    cap_us_ = kSleepMaxUs;
    started_ = false;
  }
  // Pokes of the MPI's progress this wait made (tests).
  std::uint64_t mpi_pokes() const { return pokes_; }

  std::uint64_t polls() const { return polls_; }
  // Sleeps taken so far in this wait (tests, stats).
  std::uint64_t sleeps() const { return sleeps_; }

  // Tunables (see wait.cc for why these values).
  static constexpr std::uint64_t kSpinPolls = 64;     // polls before the first yield
  static constexpr std::uint64_t kProgressPolls = 64; // spinning: the MPI's progress every this many polls (power of 2)
  static constexpr std::uint64_t kYieldPolls = 32;    // yields before the first sleep (sleep, auto oversubscribed)
  static constexpr int kSlowYieldUs = 1000;           // a yield that took this long gave the core to another job
  static constexpr std::int64_t kSlowYieldMemoryNs = 20 * 1000 * 1000;  // ... and no wait yields for this long after
                                                                        // (a second after two within 100 ms: wait.cc)
  static constexpr int kSleepMinUs = 16;
  static constexpr int kSleepMaxUs = 128;
  static constexpr int kLongWaitUs = 1000;            // auto, not oversubscribed: sleep after this long,
  static constexpr int kLateSleepUs = 50;             // this long at a time
  static constexpr int kSharedProgressUs = 2000;      // cores shared: the MPI's progress at most this often

 private:
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
  }
  void slow_pause();  // wait.cc
  void progress_mpi() {
    if (detail::tl_wait_in_call > 0) progress_in_call();
  }
  void progress_in_call();  // wait.cc: the hook, rationed where the cores are shared
  bool mpi_turn();          // wait.cc: whether the ration allows a poke now

  WaitMode mode_;
  std::uint64_t polls_ = 0;
  std::uint64_t sleeps_ = 0;
  int sleep_us_ = 0;        // next sleep (0: none yet)
  int cap_us_ = kSleepMaxUs;  // longest sleep of this wait
  bool started_ = false;    // start_ valid
  Clock::time_point start_{};
  std::int64_t poked_ns_ = 0;  // cores shared: the last poke of the MPI, or when rationing began (0: not yet)
  std::uint64_t pokes_ = 0;
};

// Polls done() until it returns true, pausing between polls.
template <class Done>
void wait_until(Done &&done) {
  WaitPolicy w;
  while (!done()) w.pause();
}

}  // namespace gcoll
