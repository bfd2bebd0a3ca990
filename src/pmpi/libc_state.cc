// The libc functions libgcoll.so defines, so that the application's libc state survives
// gcoll's own calls into other software (base/foreign.h; exported: pmpi/exports.map).
//
// strtok: libc keeps one position for the whole process, and UCX's constructor tokenises
// with it when gcoll loads UCX inside the application's first collective call: a loop
// `for (t = strtok(line, " "); t; t = strtok(NULL, " ")) MPI_Allreduce(...)` then saw
// only its first token (issue 28). Preloaded (or linked before libc), this definition
// is the one every strtok call in the process reaches: it hands the call to libc's own
// strtok, libc's state untouched, except for calls made inside a ForeignScope on that
// thread, which get a position of their own.
#include <dlfcn.h>
#include <string.h>

#include <atomic>

#include "base/foreign.h"

namespace {

using Strtok = char *(*)(char *, const char *);

char *fallback_strtok(char *s, const char *delim) {
  static char *position;  // libc's cannot be reached: one of ours, as libc's is
  return strtok_r(s, delim, &position);
}

Strtok libc_strtok() {
  static std::atomic<Strtok> next{nullptr};
  Strtok f = next.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = reinterpret_cast<Strtok>(dlsym(RTLD_NEXT, "strtok"));
    if (f == nullptr || f == &strtok) f = fallback_strtok;
    next.store(f, std::memory_order_release);
  }
  return f;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) char *strtok(char *s, const char *delim) noexcept {
  if (gcoll::in_foreign_scope()) {
    thread_local char *position;
    return strtok_r(s, delim, &position);
  }
  return libc_strtok()(s, delim);
}
