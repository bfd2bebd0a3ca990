#include "cuda/vm_hooks.h"

#include <dlfcn.h>

#include <mutex>

#include "base/foreign.h"

#if GCOLL_HAVE_UCM
#include <ucm/api/ucm.h>
#endif

namespace gcoll {
namespace cuda {

namespace {

std::atomic<std::uint64_t> g_vm_epoch{1};

#if GCOLL_HAVE_UCM
void on_vm_event(ucm_event_type_t, ucm_event_t *, void *) { g_vm_epoch.fetch_add(1, std::memory_order_acq_rel); }

struct UcmApi {
  decltype(&::ucm_set_event_handler) set_event_handler = nullptr;
  decltype(&::ucm_unset_event_handler) unset_event_handler = nullptr;
  decltype(&::ucm_test_events) test_events = nullptr;
};

// dlsym through libucs's handle finds libucm's symbols too (its dependency). The handle
// is kept: the hooks stay installed for the life of the process.
bool load_ucm(UcmApi *u, std::string *why) {
  void *h = dlopen_foreign("libucs.so.0", RTLD_NOW | RTLD_LOCAL);  // (base/foreign.h: UCX's constructor)
  if (h == nullptr) {
    const char *e = dlerror();
    *why = std::string("libucs.so.0 cannot be loaded: ") + (e ? e : "?");
    return false;
  }
  u->set_event_handler = reinterpret_cast<decltype(u->set_event_handler)>(dlsym(h, "ucm_set_event_handler"));
  u->unset_event_handler = reinterpret_cast<decltype(u->unset_event_handler)>(dlsym(h, "ucm_unset_event_handler"));
  u->test_events = reinterpret_cast<decltype(u->test_events)>(dlsym(h, "ucm_test_events"));
  if (!u->set_event_handler || !u->unset_event_handler || !u->test_events) {
    *why = "UCX's libucm has no ucm_set_event_handler, ucm_unset_event_handler or ucm_test_events";
    return false;
  }
  return true;
}

bool install(std::string *why) {
  UcmApi ucm;
  if (!load_ucm(&ucm, why)) return false;
  const int events = UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED;
  ucs_status_t st = ucm.set_event_handler(events, -1, on_vm_event, nullptr);
  if (st != UCS_OK) {
    *why = "UCX memory hooks unavailable (ucs_status " + std::to_string(static_cast<int>(st)) + ")";
    return false;
  }
  st = ucm.test_events(events);
  if (st != UCS_OK) {
    ucm.unset_event_handler(events, on_vm_event, nullptr);
    *why = "UCX memory hooks do not report events (ucs_status " + std::to_string(static_cast<int>(st)) + ")";
    return false;
  }
  return true;
}
#else
bool install(std::string *why) {
  *why = "built without UCX's ucm.h";
  return false;
}
#endif

}  // namespace

bool install_vm_hooks(std::string *why) {
  static std::once_flag once;
  static bool installed = false;
  static std::string reason;
  std::call_once(once, [] { installed = install(&reason); });
  if (why) *why = reason;
  return installed;
}

const std::atomic<std::uint64_t> &vm_epoch() { return g_vm_epoch; }

}  // namespace cuda
}  // namespace gcoll
