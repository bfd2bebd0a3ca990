#include "base/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <exception>

namespace gcoll {

namespace detail {
std::atomic<int> g_log_level{static_cast<int>(LogLevel::Warn)};
}

namespace {
std::atomic<int> g_rank{-1};

const char *level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Warn: return "WARN";
    case LogLevel::Info: return "INFO";
    case LogLevel::Trace: return "TRACE";
  }
  return "?";
}
}  // namespace

void log_set_level(LogLevel level) { detail::g_log_level.store(static_cast<int>(level)); }
void log_set_rank(int world_rank) { g_rank.store(world_rank); }

void log_write(LogLevel level, const char *fmt, ...) {
  char host[64] = "?";
  gethostname(host, sizeof host - 1);
  char rank[16] = "?";
  const int r = g_rank.load();
  if (r >= 0) snprintf(rank, sizeof rank, "%d", r);
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  // One fprintf per line so lines from threads do not interleave.
  fprintf(stderr, "[gcoll %s:%s] %s: %s\n", host, rank, level_name(level), msg);
}

void log_exception(const char *what) noexcept {
  // Called from a catch block: the exception in flight says what it was.
  const char *text = "not a std::exception";
  try {
    throw;
  } catch (const std::exception &e) {
    text = e.what();
  } catch (...) {
  }
  log_write(LogLevel::Warn, "%s: unexpected C++ exception (%s)", what, text);
}

void log_out_of_memory(const char *what) noexcept { log_write(LogLevel::Warn, "%s: out of memory", what); }

}  // namespace gcoll
