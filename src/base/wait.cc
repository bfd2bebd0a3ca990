#include "base/wait.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "base/config.h"
#include "base/hot.h"

namespace gcoll {

namespace {

// -1: not set by wait_set_mode(), GCOLL_WAIT decides.
std::atomic<int> g_mode{-1};
// The node communicator with the most ranks per CPU seen (ranks, cpus), and whether any
// had more ranks than CPUs.
std::mutex g_node_mu;
int g_node_ranks = 0, g_node_cpus = 0;
std::atomic<bool> g_node_oversubscribed{false};

// The machine's runnable threads, looked at by whichever wait needs it, at most every
// kLookNs: the number and when it was read (steady clock, ns; 0: never).
constexpr std::int64_t kLookNs = 10 * 1000 * 1000;
std::atomic<int> g_runnable{-1};
std::atomic<std::int64_t> g_looked_ns{0};
// When a yield last came back late (steady clock, ns; 0: never): WaitPolicy::slow_pause.
std::atomic<std::int64_t> g_slow_yield_ns{0};
// When a poke of the MPI's progress last came back late (WaitPolicy::progress_in_call):
// the ration only.
std::atomic<std::int64_t> g_slow_poke_ns{0};
// wait_machine_loaded(): a slow yield this recent says the cores are shared.
constexpr std::int64_t kLoadedMemoryNs = 1000 * 1000 * 1000;
// Until when the waits neither yield nor poke the MPI freely whatever the last slow yield
// (steady clock, ns; 0: never): a slow yield that came within kConfirmNs of the one before
// sets it kLoadedMemoryNs ahead (WaitPolicy's windows, wait.h).
std::atomic<std::int64_t> g_shared_until_ns{0};
constexpr std::int64_t kConfirmNs = 100 * 1000 * 1000;

struct StaticFacts {
  int cores = 1;    // CPUs this process may run on
  int online = 1;   // CPUs of the machine
  bool mpi_yield = false;
};

const StaticFacts &static_facts() {
  static const StaticFacts f = [] {
    StaticFacts s;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
      s.cores = CPU_COUNT(&set);
    } else {
      const long n = sysconf(_SC_NPROCESSORS_ONLN);
      s.cores = n > 0 ? static_cast<int>(n) : 1;
    }
    const long on = sysconf(_SC_NPROCESSORS_ONLN);
    s.online = on > 0 ? static_cast<int>(on) : s.cores;
    // Open MPI's own switch (an MPI setting, not a GCOLL_* one): set when the user (or a
    // batch system) says that ranks share cores.
    if (const char *y = foreign_env("OMPI_MCA_mpi_yield_when_idle")) {
      bool b = false;
      s.mpi_yield = parse_bool(y, &b) && b;
    }
    return s;
  }();
  return f;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Fourth field of /proc/loadavg: "runnable/total" scheduling entities, counted when read
// (the reader included). -1 when it cannot be read (some sandboxes).
int read_runnable() {
  const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  double a, b, c;
  int running = -1, total = -1;
  if (std::sscanf(buf, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) return -1;
  return running;
}

bool static_oversubscribed() {
  const StaticFacts &f = static_facts();
  return f.mpi_yield || g_node_oversubscribed.load(std::memory_order_relaxed);
}

// A yield that came back late (wait.h): the cores are shared from now (wait_machine_loaded),
// and the calls handed to the MPI look at that from now on (MpiSliceScope).
void note_slow_yield(std::int64_t t) {
  const std::int64_t prev = g_slow_yield_ns.exchange(t, std::memory_order_relaxed);
  if (prev != 0 && t - prev <= kConfirmNs) g_shared_until_ns.store(t + kLoadedMemoryNs, std::memory_order_relaxed);
  detail::g_slice_hint.store(true, std::memory_order_relaxed);
}

// Whether the waits' window after a slow yield (or a slow poke: `last`) is open at t.
bool in_shared_window(std::int64_t last, std::int64_t t) {
  return (last != 0 && t - last <= WaitPolicy::kSlowYieldMemoryNs) ||
         t < g_shared_until_ns.load(std::memory_order_relaxed);
}
// The waits do not yield while this is open (slow yields only).
bool yield_window_open(std::int64_t t) { return in_shared_window(g_slow_yield_ns.load(std::memory_order_relaxed), t); }
// The MPI's pokes are rationed while this is open (slow yields and slow pokes).
bool poke_window_open(std::int64_t t) {
  return in_shared_window(
      std::max(g_slow_yield_ns.load(std::memory_order_relaxed), g_slow_poke_ns.load(std::memory_order_relaxed)), t);
}

void sleep_us(int us) {
  timespec ts{0, static_cast<long>(us) * 1000};
  nanosleep(&ts, nullptr);
}

}  // namespace

WaitMode wait_mode() {
  const int m = g_mode.load(std::memory_order_relaxed);
  if (m >= 0) return static_cast<WaitMode>(m);
  return config().wait_mode;
}

void wait_set_mode(WaitMode m) { g_mode.store(static_cast<int>(m), std::memory_order_relaxed); }

const char *wait_mode_name(WaitMode m) {
  switch (m) {
    case WaitMode::Auto: return "auto";
    case WaitMode::Spin: return "spin";
    case WaitMode::Yield: return "yield";
    case WaitMode::Sleep: return "sleep";
  }
  return "?";
}

void wait_note_node(int ranks, int cpus) {
  if (ranks <= 0) return;
  if (cpus <= 0) cpus = static_facts().online;
  std::lock_guard<std::mutex> lk(g_node_mu);
  // Keep the most crowded: ranks / cpus largest.
  if (g_node_ranks == 0 || static_cast<long long>(ranks) * g_node_cpus > static_cast<long long>(g_node_ranks) * cpus) {
    g_node_ranks = ranks;
    g_node_cpus = cpus;
  }
  if (ranks > cpus) g_node_oversubscribed.store(true, std::memory_order_relaxed);
}

int wait_process_cpus() { return static_facts().cores; }

bool wait_spare_core_per_rank() {
  if (wait_mode() == WaitMode::Spin) return true;
  if (wait_mode() == WaitMode::Sleep) return false;
  {
    std::lock_guard<std::mutex> lk(g_node_mu);
    if (g_node_ranks == 0 || static_cast<long long>(g_node_cpus) < 2LL * g_node_ranks) return false;
  }
  return !wait_oversubscribed();
}

void wait_sleep_us(int us) { sleep_us(us); }

bool wait_oversubscribed() {
  if (static_oversubscribed()) return true;
  const std::int64_t t = now_ns();
  std::int64_t last = g_looked_ns.load(std::memory_order_relaxed);
  if (last == 0 || t - last > kLookNs) {
    // One looker at a time; the others use the last number.
    if (g_looked_ns.compare_exchange_strong(last, t, std::memory_order_relaxed))
      g_runnable.store(read_runnable(), std::memory_order_relaxed);
  }
  const int r = g_runnable.load(std::memory_order_relaxed);
  return r > static_facts().online;
}

bool wait_machine_loaded() {
  switch (config().shared_cores) {
    case 1: return true;   // GCOLL_SHARED_CORES=yes (process_config() set the hint)
    case 2: return false;  // no
    default: break;
  }
  const std::int64_t t = g_slow_yield_ns.load(std::memory_order_relaxed);
  return t != 0 && now_ns() - t <= kLoadedMemoryNs;
}

bool wait_probe_machine_loaded() {
  if (config().shared_cores != 0 || wait_machine_loaded()) return wait_machine_loaded();
  constexpr int kProbeYields = 3;
  for (int i = 0; i < kProbeYields; ++i) {
    const std::int64_t t0 = now_ns();
    sched_yield();
    const std::int64_t t1 = now_ns();
    if (t1 - t0 >= static_cast<std::int64_t>(WaitPolicy::kSlowYieldUs) * 1000) {
      note_slow_yield(t1);
      return true;
    }
  }
  return false;
}

WaitFacts wait_facts() {
  const StaticFacts &s = static_facts();
  WaitFacts f;
  f.cores = s.cores;
  f.online = s.online;
  {
    std::lock_guard<std::mutex> lk(g_node_mu);
    f.node_ranks = g_node_ranks;
    f.node_cpus = g_node_cpus;
  }
  f.mpi_yield = s.mpi_yield;
  f.runnable = read_runnable();
  f.oversubscribed = static_oversubscribed() || (f.runnable > s.online);
  f.shared_cores = wait_machine_loaded();
  return f;
}

// Past the spin phase (polls_ > kSpinPolls, mode not spin).
//
// The values: 64 polls of spinning cover a peer that is running elsewhere and about to
// arrive (a few microseconds); 32 yields let the ranks sharing my core run first, which
// is the cheapest hand-over when all of them are ours; after that a sleeping rank leaves
// the run queue altogether, which is what frees a core for a peer queued behind ranks
// that spin (another job's, or an MPI polling without yielding). Sleeps grow from 16 to
// 128 us (the kernel adds its timer slack, 50 us by default): short enough that a wait
// costs at most about one sleep more than the event, long enough that sleeping ranks
// cost the others nothing. Without oversubscription (auto) a wait yields, which costs
// nothing when no one else is runnable, and sleeps only past 1 ms (a peer that is late,
// e.g. load imbalance in the application), 50 us at a time as before.
//
// A yield hands the core to whoever is queued on it. Our own ranks hand it back as soon as
// they wait; another job's thread (a CPU-bound process sharing the cores) keeps it for its
// whole scheduler slice, milliseconds. So a yield that took kSlowYieldUs or more says the
// core is shared with other work: this wait goes to its sleeps at once, and no wait of the
// process yields for kSlowYieldMemoryNs after that (issue 32 item 2: with two CPU-bound
// loops on the 2-core VM, 32 yields per wait gave the loops whole slices, and a 1 KiB to
// 16 KiB allreduce took 6 to 9 ms instead of 4 to 7). The window is 20 ms after
// a slow yield, and a second (kLoadedMemoryNs) after one that came within kConfirmNs (100
// ms) of the one before. A second after every slow yield helped the busy machine much
// (2026-11-29: with the short slice, whose yields come back sooner, a 20 ms window lapsed
// between slow yields and the waits went back to yielding and to poking Open MPI's yielding
// Iprobe at every pause; reduce_scatter_block 256 KiB - 2 MiB, two loops: 1.2-2.2 ms a call
// with a second, 2.0-3.9 with 20 ms), but on a quiet machine whose ranks outnumber the
// cores this job's own ranks make a yield slow now and then too (one that computes for a
// millisecond; the first call, while peers finish their setup), and a second of waits that
// sleep instead of yielding cost quiet engine calls up to 2-4x (a 64 KiB allreduce 256 us
// against 67-84). Another process's CPU-bound thread makes the first yields after every
// window slow again, 20 ms later; this job's own ranks did so 1-4 times in a run of
// several seconds (the quiet 4-rank runs above): the second slow yield within 100 ms tells
// them apart.
namespace detail {
std::atomic<WaitProgressHook> g_wait_progress_hook{nullptr};
__thread int tl_wait_in_call __attribute__((tls_model("initial-exec"))) = 0;
__thread bool tl_slice_short __attribute__((tls_model("initial-exec"))) = false;
GCOLL_HOT_DATA std::atomic<bool> g_slice_hint{false};
}  // namespace detail

// The thread's time slice (wait.h). The kernel's struct sched_attr (uapi linux/sched/types.h,
// SCHED_ATTR_SIZE_VER1), spelt here: glibc 2.36 declares neither it nor the calls.
namespace {
struct KernelSchedAttr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
  std::uint32_t sched_util_min;
  std::uint32_t sched_util_max;
};
constexpr std::uint64_t kSchedFlagResetOnFork = 0x01;
// Set once the kernel refused (or the thread's policy is not ours to touch everywhere).
std::atomic<bool> g_slice_off{false};
// What the thread had before wait_shorten_slice (restored by wait_restore_slice).
__thread std::uint64_t tl_saved_slice_ns __attribute__((tls_model("initial-exec"))) = 0;

bool get_sched_attr(KernelSchedAttr *a) {
  std::memset(a, 0, sizeof *a);
  return syscall(SYS_sched_getattr, 0, a, static_cast<unsigned>(sizeof *a), 0u) == 0;
}

bool set_slice(const KernelSchedAttr &cur, std::uint64_t runtime_ns) {
  KernelSchedAttr a{};
  a.size = sizeof a;
  a.sched_policy = cur.sched_policy;
  a.sched_flags = cur.sched_flags & kSchedFlagResetOnFork;  // util clamps untouched (no flag for them)
  a.sched_nice = cur.sched_nice;
  a.sched_runtime = runtime_ns;
  return syscall(SYS_sched_setattr, 0, &a, 0u) == 0;
}

// Whether `ns` is the slice the kernel gives a thread that asked for none: its base slice
// (0.7 ms since Linux 6.16, 0.75 ms before) times 1 + log2 of the CPUs (at most 8), the
// kernel's default scaling. sched_getattr reports the slice either way; a thread that asked
// for none gets none back (sched_runtime 0), one that asked gets its value again.
bool default_slice(std::uint64_t ns) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned cpus = n > 0 ? static_cast<unsigned>(std::min(n, 8L)) : 1u;
  unsigned factor = 1;
  while (cpus > 1) {
    cpus >>= 1;
    ++factor;
  }
  return ns == 700000ull * factor || ns == 750000ull * factor;
}
}  // namespace

std::uint64_t detail::wait_thread_slice_ns() {
  KernelSchedAttr a;
  return get_sched_attr(&a) ? a.sched_runtime : 0;
}

bool detail::wait_shorten_slice() {
  const int us = config().wait_slice_us;
  if (us <= 0 || tl_slice_short || g_slice_off.load(std::memory_order_relaxed)) return false;
  KernelSchedAttr cur;
  if (!get_sched_attr(&cur)) {
    g_slice_off.store(true, std::memory_order_relaxed);
    return false;
  }
  const std::uint64_t want = static_cast<std::uint64_t>(us) * 1000;
  // SCHED_OTHER only (SCHED_BATCH never preempts on wakeup; real-time and deadline threads
  // are the application's business), and only a shorter slice than the thread's.
  if (cur.sched_policy != SCHED_OTHER || cur.sched_runtime == 0 || cur.sched_runtime <= want) return false;
  if (!set_slice(cur, want)) {
    g_slice_off.store(true, std::memory_order_relaxed);
    return false;
  }
  tl_saved_slice_ns = default_slice(cur.sched_runtime) ? 0 : cur.sched_runtime;
  tl_slice_short = true;
  return true;
}

void detail::wait_restore_slice() {
  tl_slice_short = false;
  KernelSchedAttr cur;
  // The policy and nice value as they are now (nothing in a call changes them), the slice
  // as it was.
  if (get_sched_attr(&cur)) set_slice(cur, tl_saved_slice_ns);
}

void wait_set_progress_hook(WaitProgressHook h) { detail::g_wait_progress_hook.store(h, std::memory_order_relaxed); }

void detail::wait_note_slow_yield() {
  note_slow_yield(now_ns());
}

bool detail::wait_shared_window_open() {
  return poke_window_open(now_ns());
}

void detail::wait_forget_slow_yields() {
  g_slow_yield_ns.store(0, std::memory_order_relaxed);
  g_slow_poke_ns.store(0, std::memory_order_relaxed);
  g_shared_until_ns.store(0, std::memory_order_relaxed);
}

bool WaitPolicy::mpi_turn() {
  if (g_slow_yield_ns.load(std::memory_order_relaxed) == 0 && g_slow_poke_ns.load(std::memory_order_relaxed) == 0)
    return true;  // never seen: no clock read
  const std::int64_t t = now_ns();
  if (!poke_window_open(t)) return true;
  // The cores are shared (wait.h): one turn every kSharedProgressUs of this wait, the
  // first that long after rationing began.
  if (poked_ns_ == 0) poked_ns_ = t;
  if (t - poked_ns_ < static_cast<std::int64_t>(kSharedProgressUs) * 1000) return false;
  poked_ns_ = t;
  return true;
}

void WaitPolicy::progress_in_call() {
  const WaitProgressHook h = detail::g_wait_progress_hook.load(std::memory_order_relaxed);
  if (!h || !mpi_turn()) return;
  ++pokes_;
  const std::int64_t t0 = now_ns();
  h();
  // A poke that came back late yielded the core to another process's thread (wait.h): it
  // keeps the ration on, as a slow yield of gcoll's own does, without counting as one for
  // wait_machine_loaded() (a poke may also wait for this job's own rank that computes).
  const std::int64_t t1 = now_ns();
  if (t1 - t0 >= static_cast<std::int64_t>(kSlowYieldUs) * 1000) g_slow_poke_ns.store(t1, std::memory_order_relaxed);
}

void WaitPolicy::slow_pause() {
  const std::uint64_t k = polls_ - kSpinPolls;
  if (mode_ == WaitMode::Yield) {
    sched_yield();
    return;
  }
  if (k <= kYieldPolls) {
    const std::int64_t t0 = now_ns();
    if (!yield_window_open(t0)) {
      sched_yield();
      const std::int64_t t1 = now_ns();
      if (t1 - t0 < static_cast<std::int64_t>(kSlowYieldUs) * 1000) return;
      note_slow_yield(t1);
    }
    polls_ = kSpinPolls + kYieldPolls + 1;  // to the sleeps
  }
  if (mode_ == WaitMode::Auto && sleep_us_ == 0 && !wait_oversubscribed() &&
      !yield_window_open(now_ns())) {
    const auto now = Clock::now();
    if (!started_) {
      start_ = now;
      started_ = true;
    }
    if (now - start_ < std::chrono::microseconds(kLongWaitUs)) {
      sched_yield();
      return;
    }
    cap_us_ = kLateSleepUs;
  }
  if (sleep_us_ == 0) sleep_us_ = kSleepMinUs < cap_us_ ? kSleepMinUs : cap_us_;
  // A sleep inside an engine call on shared cores: the thread's slice shortened until the
  // call returns (wait.h), so that it takes its core back when it wakes.
  if (detail::tl_wait_in_call > 0 && !detail::tl_slice_short && wait_machine_loaded()) detail::wait_shorten_slice();
  sleep_us(sleep_us_);
  ++sleeps_;
  if (sleep_us_ < cap_us_) sleep_us_ = sleep_us_ * 2 > cap_us_ ? cap_us_ : sleep_us_ * 2;
}

}  // namespace gcoll
