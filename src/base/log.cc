#include "base/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>

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

namespace {
constexpr int kShared = static_cast<int>(SharedWarning::Count);
std::mutex g_shared_mu;
int g_defer_shared = -1;  // -1: not said yet (log_defer_shared): whether a launcher started us
std::uint32_t g_shared_pending = 0;
std::uint32_t g_shared_done = 0;  // kinds reported (by this rank or a lower one): not again
std::string g_shared_text[kShared];
}  // namespace

void log_defer_shared(bool on) {
  std::lock_guard<std::mutex> lk(g_shared_mu);
  g_defer_shared = on;
}

void warn_shared(SharedWarning w, const char *fmt, ...) {
  if (!log_on(LogLevel::Warn)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const int i = static_cast<int>(w);
  {
    std::lock_guard<std::mutex> lk(g_shared_mu);
    if (g_shared_done & (1u << i)) return;
    if (g_defer_shared < 0)
      g_defer_shared = foreign_env("OMPI_COMM_WORLD_RANK") || foreign_env("PMI_RANK") || foreign_env("PMIX_RANK");
    if (g_defer_shared) {
      if (!(g_shared_pending & (1u << i))) g_shared_text[i] = msg;
      g_shared_pending |= 1u << i;
      return;
    }
  }
  log_write(LogLevel::Warn, "%s", msg);
}

std::uint32_t shared_warnings_pending() {
  std::lock_guard<std::mutex> lk(g_shared_mu);
  return g_shared_pending;
}

void shared_warnings_report(const std::uint32_t *masks, int n, int me) {
  std::string print[kShared];
  int holders[kShared] = {0};
  {
    std::lock_guard<std::mutex> lk(g_shared_mu);
    for (int i = 0; i < kShared; ++i) {
      const std::uint32_t bit = 1u << i;
      int first = -1;
      for (int r = 0; r < n; ++r)
        if (masks[r] & bit) {
          if (first < 0) first = r;
          ++holders[i];
        }
      if (first == me && (g_shared_pending & bit)) print[i] = g_shared_text[i];
      if (masks[me] & bit) {  // reported, by this rank or a lower one
        g_shared_pending &= ~bit;
        g_shared_done |= bit;
      }
    }
  }
  for (int i = 0; i < kShared; ++i)
    if (!print[i].empty())
      log_write(LogLevel::Warn, "%s (%d of %d ranks)", print[i].c_str(), holders[i], n);
}

void shared_warnings_flush() {
  std::string print[kShared];
  {
    std::lock_guard<std::mutex> lk(g_shared_mu);
    for (int i = 0; i < kShared; ++i)
      if (g_shared_pending & (1u << i)) print[i] = g_shared_text[i];
    g_shared_done |= g_shared_pending;
    g_shared_pending = 0;
    g_defer_shared = 0;
  }
  for (int i = 0; i < kShared; ++i)
    if (!print[i].empty()) log_write(LogLevel::Warn, "%s", print[i].c_str());
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
