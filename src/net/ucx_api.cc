// UCX loaded at run time (ucx_api.h).
#include "net/ucx_api.h"

#include "net/transport.h"

#include <dlfcn.h>

#include <mutex>

namespace gcoll::ucx {
namespace {

Api g_api;
bool g_loaded = false;
std::string g_why;

void load_once() {
  // RTLD_NOW: a missing symbol shows here, not at a first call deep in a collective.
  void *h = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char *e = dlerror();
    g_why = std::string("cannot load libucp.so.0: ") + (e ? e : "unknown error");
    return;
  }
  Api a;
  bool ok = true;
  // A handle's lookup also searches the object's dependencies (libucs for ucs_*).
#define GCOLL_UCX_LOOKUP(f)                                                     \
  a.f = reinterpret_cast<decltype(a.f)>(dlsym(h, #f));                          \
  if (a.f == nullptr && ok) {                                                   \
    ok = false;                                                                 \
    g_why = "the UCX loaded (libucp.so.0) lacks " #f;                           \
  }
  GCOLL_UCX_FUNCTIONS(GCOLL_UCX_LOOKUP)
#undef GCOLL_UCX_LOOKUP
  if (!ok) return;  // the handle stays open: UCX may be the MPI's, in use
  g_api = a;
  g_loaded = true;
}

std::once_flag g_once;

}  // namespace

bool load_api(std::string *why) {
  std::call_once(g_once, load_once);
  if (!g_loaded && why) *why = g_why;
  return g_loaded;
}

const Api &api() { return g_api; }

std::string loaded_version() {
  std::string why;
  if (!load_api(&why)) return why;
  return g_api.ucp_get_version_string();
}

}  // namespace gcoll::ucx
