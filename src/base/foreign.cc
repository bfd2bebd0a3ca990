#include "base/foreign.h"

#include <dlfcn.h>
#include <fenv.h>
#include <pthread.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "base/config.h"
#include "base/log.h"

namespace gcoll {

namespace {

thread_local int t_depth = 0;

// Two dispositions are the same when the handler, its flags (SA_RESTORER, which libc sets
// on its own, aside) and its mask are. (The mask signal by signal: the kernel fills only
// its own part of a sigset_t, the rest is whatever the caller's memory held.)
bool same_mask(const sigset_t &a, const sigset_t &b) {
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&a, sig) != sigismember(&b, sig)) return false;
  return true;
}

bool same_action(const struct sigaction &a, const struct sigaction &b) {
  const int keep = ~0x04000000;  // SA_RESTORER
  return a.sa_handler == b.sa_handler && (a.sa_flags & keep) == (b.sa_flags & keep) && same_mask(a.sa_mask, b.sa_mask);
}

bool same_stack(const stack_t &a, const stack_t &b) {
  if ((a.ss_flags & SS_DISABLE) && (b.ss_flags & SS_DISABLE)) return true;
  return a.ss_sp == b.ss_sp && a.ss_size == b.ss_size && (a.ss_flags & SS_DISABLE) == (b.ss_flags & SS_DISABLE);
}

}  // namespace

struct ForeignScope::Snapshot {
  struct sigaction actions[NSIG];
  bool have[NSIG];
  stack_t altstack;
  bool have_altstack = false;
  sigset_t mask;
  fenv_t fenv;
  bool have_fenv = false;
};

ForeignScope::ForeignScope(Signals signals) : signals_(signals), errno_(errno) {
  ++t_depth;
  s_.reset(new (std::nothrow) Snapshot);
  if (!s_) return;  // nothing to restore with: the foreign call runs as it would have
  for (int sig = 1; sig < NSIG; ++sig) s_->have[sig] = sigaction(sig, nullptr, &s_->actions[sig]) == 0;
  s_->have_altstack = sigaltstack(nullptr, &s_->altstack) == 0;
  pthread_sigmask(SIG_BLOCK, nullptr, &s_->mask);
  s_->have_fenv = fegetenv(&s_->fenv) == 0;
}

void ForeignScope::changed_signals(sigset_t *out) const {
  sigemptyset(out);
  if (!s_) return;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction now;
    if (s_->have[sig] && sigaction(sig, nullptr, &now) == 0 && !same_action(now, s_->actions[sig]))
      sigaddset(out, sig);
  }
}

ForeignScope::~ForeignScope() {
  if (s_) {
    if (signals_ == Signals::Restore) {
      for (int sig = 1; sig < NSIG; ++sig) {
        struct sigaction now;
        if (!s_->have[sig] || sigaction(sig, nullptr, &now) != 0 || same_action(now, s_->actions[sig])) continue;
        sigaction(sig, &s_->actions[sig], nullptr);
        GCOLL_INFO("signal %d: the handler set by a library gcoll loaded was removed (the application's is back)",
                   sig);
      }
      stack_t now;
      if (s_->have_altstack && sigaltstack(nullptr, &now) == 0 && !same_stack(now, s_->altstack)) {
        stack_t put = s_->altstack;
        if (put.ss_flags & SS_DISABLE) put = stack_t{nullptr, SS_DISABLE, 0};
        // (Fails only while running on the alternate stack, which a library's load is not.)
        sigaltstack(&put, nullptr);
      }
    }
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    if (!same_mask(mask, s_->mask)) pthread_sigmask(SIG_SETMASK, &s_->mask, nullptr);
    fenv_t env;
    if (s_->have_fenv && fegetenv(&env) == 0 && std::memcmp(&env, &s_->fenv, sizeof env) != 0)
      fesetenv(&s_->fenv);  // the modes and the sticky flags, as the application had them
  }
  --t_depth;
  errno = errno_;
}

bool in_foreign_scope() { return t_depth > 0; }

bool ucx_signals_requested() {
  for (const char *v : {"UCX_HANDLE_ERRORS", "UCX_ERROR_SIGNALS", "UCX_DEBUG_SIGNO", "UCX_ASYNC_MODE"})
    if (foreign_env(v) != nullptr) return true;
  return false;
}

ForeignScope::Signals ucx_scope_signals() {
  return ucx_signals_requested() ? ForeignScope::Signals::Keep : ForeignScope::Signals::Restore;
}

namespace {

// UCX's log handler (ucs/debug/log_def.h: ucs_log_func_t, stable since UCX 1.10), declared
// here so that base needs no UCX header: its level is an enum (0 fatal, 1 error, 2 warn,
// ...), its return 0 (UCS_LOG_FUNC_RC_STOP) ends the handler chain.
int ucx_log_to_stderr(const char *file, unsigned line, const char *, int level, const void *, const char *fmt,
                      va_list ap) {
  static const char *const names[] = {"FATAL", "ERROR", "WARN", "DIAG", "INFO", "DEBUG", "TRACE"};
  char msg[900];
  vsnprintf(msg, sizeof msg, fmt, ap);
  const char *base = std::strrchr(file, '/');
  // (UCX filtered by its own level, UCX_LOG_LEVEL, before calling.)
  log_write(level <= 2 ? LogLevel::Warn : LogLevel::Info, "UCX %s: %s (%s:%u)",
            level >= 0 && level <= 6 ? names[level] : "TRACE", msg, base ? base + 1 : file, line);
  return 0;
}

// Whether libucs.so.0 is loaded in the process (a reference taken by the test is dropped).
bool ucs_loaded() {
  void *h = dlopen("libucs.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}
}  // namespace

void *dlopen_foreign(const char *file, int flags) {
  const bool ucs_there = ucs_loaded();
  const ForeignScope::Signals signals = ucx_scope_signals();
  const bool keep = signals == ForeignScope::Signals::Keep;
  ForeignScope scope(signals);
  void *h = dlopen(file, flags);
  if (h == nullptr) return nullptr;
  void *ucs = ucs_there ? nullptr : dlopen("libucs.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (ucs != nullptr && foreign_env("UCX_LOG_FILE") == nullptr) {
    // UCX prints its messages on stdout by default; this UCX is gcoll's alone (the load
    // brought it in): its messages go to stderr, with gcoll's, unless the user chose
    // where (UCX_LOG_FILE). Nothing of gcoll's reaches the application's stdout.
    using Push = void (*)(int (*)(const char *, unsigned, const char *, int, const void *, const char *, va_list));
    if (auto push = reinterpret_cast<Push>(dlsym(ucs, "ucs_log_push_handler"))) push(ucx_log_to_stderr);
  }
  using Disable = void (*)();
  if (ucs != nullptr && !keep) {
    if (auto disable = reinterpret_cast<Disable>(dlsym(ucs, "ucs_debug_disable_signals"))) {
      sigset_t changed;
      scope.changed_signals(&changed);
      bool any = false;
      for (int sig = 1; sig < NSIG && !any; ++sig) any = sigismember(&changed, sig) == 1;
      if (any) {
        disable();
        GCOLL_INFO("UCX's error and debug signal handlers handed back (UCX_HANDLE_ERRORS, UCX_ERROR_SIGNALS or "
                   "UCX_DEBUG_SIGNO keeps them)");
      }
    }
  }
  if (ucs != nullptr) dlclose(ucs);  // (the reference NOLOAD took; libucp's stays)
  return h;
}

}  // namespace gcoll
