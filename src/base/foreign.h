// Calls into other software that gcoll makes on its own account (loading UCX and setting
// up its context, NVML, hwloc, the CUDA driver): whatever they change of the process that
// the application can see is put back when they return (issue 28: gcoll is preloaded
// under applications it has never seen, and must leave their process as it found it).
//
//   {
//     ForeignScope scope;                       // a snapshot of the process state below
//     void *h = dlopen("libucp.so.0", ...);     // UCX's constructor runs here
//   }                                           // what it changed is restored
//
// What a scope keeps for the application:
//   - every signal's disposition (handler, flags, mask) and the calling thread's signal
//     mask and alternate signal stack: UCX's libucs installs handlers for SIGILL, SIGSEGV,
//     SIGBUS, SIGFPE and SIGHUP and an alternate stack when it loads;
//   - the calling thread's floating-point environment (rounding, exceptions, MXCSR's
//     flush-to-zero and denormals-are-zero, the x87 control word);
//   - errno;
//   - strtok()'s position: libgcoll.so defines strtok (pmpi/libc_state.cc), which keeps
//     libc's own state for every caller except those inside a scope (on its thread), whose
//     calls get a private position (UCX's constructor tokenises the host name and the
//     CPU flags).
// What it cannot keep is avoided instead: gcoll sets no environment variable (UCX's
// settings go on its own configuration object), changes no umask, working directory or
// locale, and starts no thread of its own (UCX's async thread and the CUDA driver's
// threads end with them; nothing of gcoll's is left after MPI_Finalize).
//
// The user who wants UCX's own error handling (its backtraces on a crash, UCX_DEBUG_SIGNO)
// asks UCX for it as usual (UCX_HANDLE_ERRORS, UCX_ERROR_SIGNALS, UCX_DEBUG_SIGNO or
// UCX_ASYNC_MODE set in the environment): then gcoll leaves every signal disposition that
// UCX sets as UCX set it (ucx_signals_requested()).
#pragma once

#include <csignal>
#include <memory>

namespace gcoll {

class ForeignScope {
 public:
  enum class Signals { Restore, Keep };
  explicit ForeignScope(Signals signals = Signals::Restore);
  ~ForeignScope();
  ForeignScope(const ForeignScope &) = delete;
  ForeignScope &operator=(const ForeignScope &) = delete;

  // Signals whose disposition differs from the snapshot (1 <= sig < NSIG), in a mask:
  // what the foreign code installed so far.
  void changed_signals(sigset_t *out) const;

 private:
  struct Snapshot;
  std::unique_ptr<Snapshot> s_;
  Signals signals_;
  int errno_;
};

// Whether the calling thread is inside a ForeignScope (strtok's private position).
bool in_foreign_scope();

// The user asked UCX to handle signals (UCX_HANDLE_ERRORS, UCX_ERROR_SIGNALS,
// UCX_DEBUG_SIGNO or UCX_ASYNC_MODE set): gcoll then keeps what UCX installs.
bool ucx_signals_requested();
// The scope for a call into UCX: Keep where ucx_signals_requested(), else Restore.
ForeignScope::Signals ucx_scope_signals();

// dlopen inside a ForeignScope. When the call loaded UCX's libucs into the process (it was
// not there before: the MPI did not bring UCX), the signal handlers its constructor
// installed are handed back through UCX's own ucs_debug_disable_signals() (UCX then
// forgets them too, and does not reinstall its "original" ones at exit), unless
// ucx_signals_requested(); and UCX's messages, which it prints on stdout by default, go
// to stderr through a log handler of gcoll's, unless UCX_LOG_FILE is set. nullptr and
// dlerror() as dlopen.
void *dlopen_foreign(const char *file, int flags);

}  // namespace gcoll
