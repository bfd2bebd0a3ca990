#include "pmpi/runtime.h"

#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "base/build_info.h"
#include "base/config.h"
#include "base/hot.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/wait.h"
#include "coll/engine.h"
#include "coll/tune.h"
#include "pmpi/comm_state.h"
#include "coll/deviate.h"
#include "pmpi/errors.h"
#include "pmpi/requests.h"
#include "pmpi/stream.h"
#include "coll/pack.h"
#include "coll/staged.h"

namespace gcoll {

namespace detail {
GCOLL_HOT_DATA std::atomic<int> g_mode{static_cast<int>(Mode::Uninit)};
}

namespace {

std::mutex g_init_mu;
int g_self_keyval = MPI_KEYVAL_INVALID;

// The hook of base/wait.h: a probe that receives nothing and makes the MPI progress its
// pending communication (Open MPI: opal_progress; MPICH: a progress poke when nothing
// matched). On MPI_COMM_WORLD: MPICH 5 (the ABI wheel, ch4:ucx) answers a probe on
// MPI_COMM_SELF without touching its network module, and the hang it cures stayed (1 run
// in 3 of mpi.signature.vnodes2.np5; with MPI_COMM_WORLD, none in 30).
void mpi_progress() {
  int flag = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

bool mpi_usable() {
  int inited = 0, finalized = 0;
  PMPI_Initialized(&inited);
  PMPI_Finalized(&finalized);
  return inited && !finalized;
}

// Runs first inside MPI_Finalize (MPI deletes MPI_COMM_SELF's attributes before anything
// else), while MPI still works: release everything gcoll holds.
// MPI calls it: nothing may be thrown into it.
int teardown(MPI_Comm, int, void *, void *) {
  const int app_errno = errno;
  GCOLL_INFO("teardown in MPI_Finalize");
  const bool done = no_throw("teardown in MPI_Finalize", [] {
    release_stream_comms();  // first: their calls run on communicators released below
    release_all_comm_states();
    release_requests();  // what an erroneous program never completed (its host copies)
    release_staging();
    release_pack_comm();
    engine_shutdown();
    shared_warnings_flush();  // (base/log.h: what no engine setup reported)
  });
  detail::g_mode.store(static_cast<int>(Mode::Finalized), std::memory_order_release);
  errno = app_errno;
  return done ? MPI_SUCCESS : MPI_ERR_INTERN;
}

void apply_logging(const ParsedConfig &pc) {
  log_set_level(pc.config.debug);
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  log_set_rank(rank);
  // Setting problems: once per job (rank 0), or on every rank when asked for more output.
  if (rank == 0 || log_on(LogLevel::Info)) {
    for (const auto &m : pc.messages) log_write(LogLevel::Warn, "%s", m.c_str());
    if (!user_tune_error().empty()) log_write(LogLevel::Warn, "GCOLL_TUNE ignored: %s", user_tune_error().c_str());
    if (!host_tune_error().empty())
      log_write(LogLevel::Warn, "GCOLL_HOST_TUNE ignored (the built-in crossovers apply): %s", host_tune_error().c_str());
  }
}

}  // namespace

namespace detail {

bool init_slow() {
  std::lock_guard<std::mutex> lock(g_init_mu);
  const int m = g_mode.load(std::memory_order_acquire);
  if (m != static_cast<int>(Mode::Uninit)) return m == static_cast<int>(Mode::Active);
  // Before MPI_Init or after MPI_Finalize: leave everything (including the error) to MPI.
  if (!mpi_usable()) return false;

  const ParsedConfig &pc = process_config();
  apply_logging(pc);
  if (!pc.config.enable) {
    g_mode.store(static_cast<int>(Mode::Disabled), std::memory_order_release);
    return false;
  }
  if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, teardown, &g_self_keyval, nullptr) != MPI_SUCCESS ||
      PMPI_Comm_set_attr(MPI_COMM_SELF, g_self_keyval, nullptr) != MPI_SUCCESS) {
    GCOLL_WARN("could not register the finalize hook; gcoll disabled for this process");
    g_mode.store(static_cast<int>(Mode::Disabled), std::memory_order_release);
    return false;
  }
  // Only under MPI_THREAD_MULTIPLE may two threads be inside gcoll at once: below that the
  // engine takes no lock per call (coll/engine.h).
  int level = MPI_THREAD_SINGLE;
  if (PMPI_Query_thread(&level) != MPI_SUCCESS) level = MPI_THREAD_MULTIPLE;  // (unknown: assume the worst)
  engine_set_concurrent_threads(level == MPI_THREAD_MULTIPLE);
  wait_set_progress_hook(mpi_progress);
  log_defer_shared(true);  // warnings many ranks share: once per job (base/log.h)
  GCOLL_INFO("gcoll %s active", GCOLL_VERSION_STRING);
  g_mode.store(static_cast<int>(Mode::Active), std::memory_order_release);
  return true;
}

}  // namespace detail

void before_finalize() {
  wait_set_progress_hook(nullptr);  // no MPI progress from waits past this point
  if (!mpi_usable()) return;
  const ParsedConfig &pc = process_config();
  if (!pc.config.enable || pc.config.stats_file.empty()) return;
  if (detail::g_mode.load() == static_cast<int>(Mode::Uninit)) detail::init_slow();

  // Every rank takes part (MPI_Finalize is collective); ranks that never called a
  // collective contribute zeros.
  std::vector<std::uint64_t> mine = process_stats().snapshot(), sum(mine.size(), 0);
  std::vector<std::uint64_t> mine_max = process_stats().snapshot_max(), max(mine_max.size(), 0);
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (PMPI_Reduce(mine.data(), sum.data(), static_cast<int>(mine.size()), MPI_UINT64_T, MPI_SUM, 0,
                  MPI_COMM_WORLD) != MPI_SUCCESS ||
      PMPI_Reduce(mine_max.data(), max.data(), static_cast<int>(mine_max.size()), MPI_UINT64_T, MPI_MAX, 0,
                  MPI_COMM_WORLD) != MPI_SUCCESS) {
    GCOLL_WARN("stats: reduction over MPI_COMM_WORLD failed; no stats file written");
    return;
  }
  if (rank != 0) return;
  std::vector<AlgoName> names;
  for (const auto &a : algorithms()) names.push_back({a.coll, a.name});
  const std::string json = stats_to_json(sum, max, names);
  const std::string tmp = pc.config.stats_file + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "w");
  const bool written = f && std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (f && std::fclose(f) != 0) f = nullptr;
  if (!written || !f || std::rename(tmp.c_str(), pc.config.stats_file.c_str()) != 0) {
    std::remove(tmp.c_str());
    GCOLL_WARN("stats: could not write %s", pc.config.stats_file.c_str());
    return;
  }
  GCOLL_INFO("stats written to %s", pc.config.stats_file.c_str());
}

}  // namespace gcoll
