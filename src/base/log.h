// Logging to stderr, prefixed with [gcoll host:rank]. The level comes from GCOLL_DEBUG.
#pragma once

#include <atomic>

#include "base/config.h"

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

}  // namespace gcoll

#define GCOLL_LOG(level, ...)                                        \
  do {                                                               \
    if (::gcoll::log_on(level)) ::gcoll::log_write(level, __VA_ARGS__); \
  } while (0)
#define GCOLL_WARN(...) GCOLL_LOG(::gcoll::LogLevel::Warn, __VA_ARGS__)
#define GCOLL_INFO(...) GCOLL_LOG(::gcoll::LogLevel::Info, __VA_ARGS__)
#define GCOLL_TRACE(...) GCOLL_LOG(::gcoll::LogLevel::Trace, __VA_ARGS__)
