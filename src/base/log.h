// Logging to stderr, prefixed with [gcoll host:rank]. The level comes from GCOLL_DEBUG.
#pragma once

#include <atomic>
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
