// UCX loaded at run time (ucx_api.h).
#include "net/ucx_api.h"

#include "net/transport.h"

#include "base/foreign.h"

#include <dlfcn.h>

#include <mutex>

namespace gcoll::ucx {
namespace {

Api g_api;
bool g_loaded = false;
void *g_handle = nullptr;
std::string g_why;

void load_once() {
  // RTLD_NOW: a missing symbol shows here, not at a first call deep in a collective.
  // Loaded inside a ForeignScope (base/foreign.h): UCX's constructor installs signal
  // handlers and an alternate signal stack, and tokenises with strtok, in the middle of the
  // application's collective call; none of that may reach the application.
  void *h = dlopen_foreign("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
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
  g_handle = h;
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

bool has_component(const char *name) {
  if (!load_api(nullptr)) return false;
  using Query = decltype(&::uct_query_components);
  using CompQuery = decltype(&::uct_component_query);
  using Release = decltype(&::uct_release_component_list);
  const auto query = reinterpret_cast<Query>(dlsym(g_handle, "uct_query_components"));
  const auto comp_query = reinterpret_cast<CompQuery>(dlsym(g_handle, "uct_component_query"));
  const auto release = reinterpret_cast<Release>(dlsym(g_handle, "uct_release_component_list"));
  if (query == nullptr || comp_query == nullptr || release == nullptr) return false;
  uct_component_h *comps = nullptr;
  unsigned n = 0;
  if (query(&comps, &n) != UCS_OK) return false;
  bool found = false;
  for (unsigned i = 0; i < n && !found; ++i) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (comp_query(comps[i], &attr) == UCS_OK)
      found = std::string(attr.name) == name && attr.md_resource_count > 0;
  }
  release(comps);
  return found;
}

std::string loaded_version() {
  std::string why;
  if (!load_api(&why)) return why;
  return g_api.ucp_get_version_string();
}

}  // namespace gcoll::ucx
