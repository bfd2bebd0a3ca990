// Logging to stderr, prefixed with [gcoll host:rank]. The level comes from GCOLL_DEBUG.
#pragma once

#include <atomic>
#include <cstdint>
#include <new>

#include "base/config.h"
#include "base/status.h"

namespace gcoll {

namespace detail {
extern std::atomic<int> g_log_level;
}

inline bool log_on(LogLevel level) {
  return static_cast<int>(level) <= detail::g_log_level.load(std::memory_order_relaxed);
}
void log_set_level(LogLevel level);
void log_set_rank(int world_rank);

// printf-style; one line (a newline is added).
void log_write(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Warnings that many ranks would give alike: a fact of their nodes, a setting they share.
// Printed once per job instead of once per rank: each rank holds its text back until its
// communicator's next engine setup exchanges what the ranks hold (coll/engine.cc:
// agree_setup); then the lowest rank that holds a warning prints it, saying on how many
// ranks it holds, and every rank that held it forgets it. Held back only where such an
// exchange will come: in a process an MPI launcher started (its rank variables are set:
// OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK), until log_defer_shared says otherwise (the
// runtime: on when gcoll is active, off in MPI_Finalize); gcoll_info prints at once. What
// no exchange reported is printed by its own rank in MPI_Finalize (shared_warnings_flush).
// The first text of each kind is the one kept, and a kind once reported is not held again
// on that rank (a job whose every communicator fails alike says so once).
enum class SharedWarning : int {
  NicAcrossSocket,    // a GPU's nearest NIC is across the socket (coll/device_topo.cc)
  TopoFile,           // GCOLL_TOPO_FILE cannot be used (topo/detect.cc)
  EmuTopoFile,        // the same, for the emulated GPU's machine (cuda/emulate_machine.cc)
  UcxSetup,           // UCX cannot be loaded or set up (net/context.cc)
  EngineSetup,        // a communicator's engine setup failed (coll/engine.cc)
  DeviceEngineSetup,  // its device engine's setup failed (coll/engine.cc)
  Count
};
void warn_shared(SharedWarning w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_defer_shared(bool on);
std::uint32_t shared_warnings_pending();  // bit w: this rank holds warning w
// masks[r]: rank r's shared_warnings_pending() (n ranks; this rank is `me`).
void shared_warnings_report(const std::uint32_t *masks, int n, int me);
void shared_warnings_flush();

// From a catch block: logs "<what>: unexpected C++ exception (<its what()>)" as a warning.
// Never throws.
void log_exception(const char *what) noexcept;

// "<what>: out of memory" as a warning (the caller turns it into ErrNoMem).
void log_out_of_memory(const char *what) noexcept;

// Runs f (which returns a Status) so that no exception leaves it: std::bad_alloc becomes
// ErrNoMem, anything else ErrInternal, each logged with `what`. For code where a throw
// would skip an agreement or leave a request half made (collective setups, channels).
template <class F>
Status without_exceptions(const char *what, F &&f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    log_out_of_memory(what);
    return Status::ErrNoMem;
  } catch (...) {
    log_exception(what);
    return Status::ErrInternal;
  }
}

}  // namespace gcoll

#define GCOLL_LOG(level, ...)                                        \
  do {                                                               \
    if (::gcoll::log_on(level)) ::gcoll::log_write(level, __VA_ARGS__); \
  } while (0)
#define GCOLL_WARN(...) GCOLL_LOG(::gcoll::LogLevel::Warn, __VA_ARGS__)
#define GCOLL_INFO(...) GCOLL_LOG(::gcoll::LogLevel::Info, __VA_ARGS__)
#define GCOLL_TRACE(...) GCOLL_LOG(::gcoll::LogLevel::Trace, __VA_ARGS__)
