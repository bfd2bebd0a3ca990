#include "topo/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "base/foreign.h"
#include "base/log.h"

namespace gcoll {
namespace topo {

namespace {

constexpr std::uint32_t kNvswitchClass = 0x068000;  // PCI "other bridge": what NVSwitches report
constexpr nvml::Return kErrorInsufficientSize = 7;   // NVML_ERROR_INSUFFICIENT_SIZE

// ---- the real library --------------------------------------------------------------

// Points `f` at symbol `sym` of `lib` when it is there (NVML's C signature, with enums as int).
template <class R, class... A>
void bind(void *lib, const char *sym, std::function<R(A...)> *f) {
  void *p = dlsym(lib, sym);
  if (p == nullptr) return;
  R (*fn)(A...) = nullptr;
  static_assert(sizeof fn == sizeof p, "function and object pointers differ in size");
  std::memcpy(&fn, &p, sizeof fn);
  *f = fn;
}

const NvmlApi *load_real_nvml() {
  void *lib = dlopen_foreign("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    GCOLL_INFO("topology: no NVML (%s)", dlerror());
    return nullptr;
  }
  auto api = std::make_unique<NvmlApi>();
  api->name = "NVML";
  bind(lib, "nvmlInit_v2", &api->init);
  bind(lib, "nvmlShutdown", &api->shutdown);
  bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &api->device_by_bus_id);
  bind(lib, "nvmlDeviceGetUUID", &api->uuid);
  bind(lib, "nvmlDeviceGetCudaComputeCapability", &api->compute_capability);
  bind(lib, "nvmlDeviceGetNvLinkState", &api->nvlink_state);
  bind(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api->nvlink_remote_pci);
  bind(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &api->nvlink_remote_type);
  bind(lib, "nvmlDeviceGetP2PStatus", &api->p2p_status);
  bind(lib, "nvmlDeviceGetCpuAffinity", &api->cpu_affinity);
  bind(lib, "nvmlDeviceGetNumaNodeId", &api->numa_node);
  if (!api->init || !api->device_by_bus_id) {
    GCOLL_INFO("topology: libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetHandleByPciBusId_v2");
    return nullptr;  // the library stays loaded: harmless, and its symbols may be in use elsewhere
  }
  return api.release();  // once per process, never freed
}

// ---- the emulation -----------------------------------------------------------------

struct Emulation {
  NodeTopo t;
  std::vector<int> handle;              // handle[g] = g; a Device is &handle[g]
  std::vector<std::vector<int>> links;  // per GPU, per link: the peer GPU, or -1 for an NVSwitch
  std::string switch_bus_id;

  int gpu(nvml::Device d) const {
    const auto p = reinterpret_cast<std::uintptr_t>(d);
    const auto lo = reinterpret_cast<std::uintptr_t>(handle.data());
    const auto hi = reinterpret_cast<std::uintptr_t>(handle.data() + handle.size());
    if (d == nullptr || p < lo || p >= hi || (p - lo) % sizeof(int) != 0) return -1;
    return static_cast<int>((p - lo) / sizeof(int));
  }
  nvml::Device device(int g) { return reinterpret_cast<nvml::Device>(&handle[g]); }
};

void set_pci_info(const std::string &bus_id, nvml::PciInfo *out) {
  std::memset(out, 0, sizeof *out);
  unsigned d = 0, b = 0, dev = 0, f = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &d, &b, &dev, &f) != 4) return;
  out->domain = d;
  out->bus = b;
  out->device = dev;
  std::snprintf(out->busIdLegacy, sizeof out->busIdLegacy, "%04X:%02X:%02X.%X", d, b, dev, f);
  std::snprintf(out->busId, sizeof out->busId, "%08X:%02X:%02X.%X", d, b, dev, f);
}

int popcount32(std::uint32_t x) { return __builtin_popcount(x); }

bool has_nvlink_facts(const NodeTopo &t, int g) {
  if (t.gpus[g].nvswitch_links > 0) return true;
  for (int v : t.nvlinks[g]) {
    if (v > 0) return true;
  }
  return false;
}

// Whether `bus_id` (normalised) is an NVSwitch: the model's PCI node of that bus id, else
// the class Linux reports for it.
bool is_nvswitch(const NodeTopo &t, const std::string &bus_id) {
  for (const PciNode &p : t.pci) {
    if (p.bus_id == bus_id) return p.class_code == kNvswitchClass;
  }
  std::ifstream f("/sys/bus/pci/devices/" + bus_id + "/class");
  std::string cls;
  if (!(f >> cls)) return false;
  return std::strtoul(cls.c_str(), nullptr, 16) == kNvswitchClass;
}

}  // namespace

const NvmlApi *real_nvml() {
  static const NvmlApi *api = load_real_nvml();
  return api;
}

NvmlApi emulated_nvml(const NodeTopo &model) {
  auto e = std::make_shared<Emulation>();
  e->t = model;
  e->t.resize_pairs();
  const int n = static_cast<int>(e->t.gpus.size());
  e->handle.resize(n);
  e->links.resize(n);
  for (int g = 0; g < n; ++g) {
    e->handle[g] = g;
    for (int j = 0; j < n; ++j) {
      if (j == g) continue;
      for (int k = 0; k < e->t.nvlinks[g][j]; ++k) e->links[g].push_back(j);
    }
    for (int k = 0; k < e->t.gpus[g].nvswitch_links; ++k) e->links[g].push_back(-1);
    if (e->links[g].size() > nvml::kNvlinkMaxLinks) e->links[g].resize(nvml::kNvlinkMaxLinks);
  }
  e->switch_bus_id = "0000:ff:00.0";
  for (const PciNode &p : e->t.pci) {
    if (p.class_code == kNvswitchClass) {
      e->switch_bus_id = p.bus_id;
      break;
    }
  }

  NvmlApi api;
  api.name = "emulated NVML";
  api.init = [] { return nvml::kSuccess; };
  api.shutdown = [] { return nvml::kSuccess; };
  api.device_by_bus_id = [e](const char *bus_id, nvml::Device *out) {
    if (bus_id == nullptr || out == nullptr) return nvml::kErrorInvalidArgument;
    const int g = e->t.gpu_index(bus_id);
    if (g < 0) return nvml::kErrorNotFound;
    *out = e->device(g);
    return nvml::kSuccess;
  };
  api.uuid = [e](nvml::Device d, char *out, unsigned length) {
    const int g = e->gpu(d);
    if (g < 0 || out == nullptr) return nvml::kErrorInvalidArgument;
    const std::string &u = e->t.gpus[g].uuid;
    if (u.empty()) return nvml::kErrorNotSupported;
    if (u.size() + 1 > length) return kErrorInsufficientSize;
    std::memcpy(out, u.c_str(), u.size() + 1);
    return nvml::kSuccess;
  };
  api.compute_capability = [e](nvml::Device d, int *major, int *minor) {
    const int g = e->gpu(d);
    if (g < 0 || major == nullptr || minor == nullptr) return nvml::kErrorInvalidArgument;
    const int sm = e->t.gpus[g].sm;
    if (sm <= 0) return nvml::kErrorNotSupported;
    *major = sm / 10;
    *minor = sm % 10;
    return nvml::kSuccess;
  };
  api.nvlink_state = [e](nvml::Device d, unsigned link, int *active) {
    const int g = e->gpu(d);
    if (g < 0 || active == nullptr || link >= nvml::kNvlinkMaxLinks) return nvml::kErrorInvalidArgument;
    *active = link < e->links[g].size() ? nvml::kFeatureEnabled : nvml::kFeatureDisabled;
    return nvml::kSuccess;
  };
  api.nvlink_remote_pci = [e](nvml::Device d, unsigned link, nvml::PciInfo *out) {
    const int g = e->gpu(d);
    if (g < 0 || out == nullptr || link >= nvml::kNvlinkMaxLinks) return nvml::kErrorInvalidArgument;
    if (link >= e->links[g].size()) return nvml::kErrorNotSupported;
    const int peer = e->links[g][link];
    set_pci_info(peer >= 0 ? e->t.gpus[peer].bus_id : e->switch_bus_id, out);
    return nvml::kSuccess;
  };
  api.nvlink_remote_type = [e](nvml::Device d, unsigned link, int *type) {
    const int g = e->gpu(d);
    if (g < 0 || type == nullptr || link >= nvml::kNvlinkMaxLinks) return nvml::kErrorInvalidArgument;
    if (link >= e->links[g].size()) return nvml::kErrorNotSupported;
    *type = e->links[g][link] >= 0 ? nvml::kNvlinkDeviceGpu : nvml::kNvlinkDeviceSwitch;
    return nvml::kSuccess;
  };
  api.p2p_status = [e](nvml::Device d1, nvml::Device d2, int index, int *status) {
    const int a = e->gpu(d1), b = e->gpu(d2);
    if (a < 0 || b < 0 || status == nullptr) return nvml::kErrorInvalidArgument;
    bool ok = false;
    if (index == nvml::kP2pCapsRead || index == nvml::kP2pCapsWrite) ok = p2p_hardware(e->t, a, b);
    else if (index == nvml::kP2pCapsNvlink) ok = gpu_nv_links(e->t, a, b) > 0;
    *status = ok ? nvml::kP2pStatusOk : nvml::kP2pStatusNotSupported;
    return nvml::kSuccess;
  };
  api.cpu_affinity = [e](nvml::Device d, unsigned words, unsigned long *set) {
    const int g = e->gpu(d);
    if (g < 0 || set == nullptr || words == 0) return nvml::kErrorInvalidArgument;
    const int numa = e->t.gpus[g].numa;
    if (numa < 0 || numa >= static_cast<int>(e->t.numa.size())) return nvml::kErrorNotSupported;
    const std::vector<std::uint32_t> mask = parse_affinity(e->t.numa[numa].affinity);
    if (mask.empty()) return nvml::kErrorNotSupported;
    constexpr unsigned kPer = sizeof(unsigned long) / sizeof(std::uint32_t);
    std::fill(set, set + words, 0UL);
    for (size_t i = 0; i < mask.size() && i / kPer < words; ++i) {
      set[i / kPer] |= static_cast<unsigned long>(mask[i]) << (32 * (i % kPer));
    }
    return nvml::kSuccess;
  };
  // numa_node stays empty: x86 machines answer NOT_SUPPORTED, and the table may lack it.
  return api;
}

bool fill_from_nvml(const NvmlApi &api, NodeTopo *t) {
  if (!api.device_by_bus_id) return false;
  ForeignScope scope;  // NVML's calls leave the process as they found it (base/foreign.h)
  if (api.init && api.init() != nvml::kSuccess) {
    GCOLL_INFO("topology: %s did not initialise", api.name.c_str());
    return false;
  }
  t->resize_pairs();
  const int n = static_cast<int>(t->gpus.size());
  std::vector<nvml::Device> dev(n, nullptr);
  int known = 0;
  for (int g = 0; g < n; ++g) {
    if (api.device_by_bus_id(t->gpus[g].bus_id.c_str(), &dev[g]) != nvml::kSuccess) dev[g] = nullptr;
    if (dev[g] != nullptr) ++known;
  }
  if (known == 0) {
    if (api.shutdown) api.shutdown();
    return false;
  }

  // Identity.
  for (int g = 0; g < n; ++g) {
    if (dev[g] == nullptr) continue;
    Gpu &gpu = t->gpus[g];
    char buf[nvml::kUuidBufferSize] = {};
    if (gpu.uuid.empty() && api.uuid && api.uuid(dev[g], buf, sizeof buf) == nvml::kSuccess) {
      buf[sizeof buf - 1] = '\0';
      gpu.uuid = buf;
    }
    int major = 0, minor = 0;
    if (gpu.sm == 0 && api.compute_capability &&
        api.compute_capability(dev[g], &major, &minor) == nvml::kSuccess && major > 0) {
      gpu.sm = major * 10 + minor;
    }
  }

  // NVLinks, for the GPUs the model knows none of.
  std::vector<bool> facts(n);
  for (int g = 0; g < n; ++g) facts[g] = has_nvlink_facts(*t, g);
  std::vector<std::vector<int>> links(n, std::vector<int>(n, 0));
  std::vector<int> switch_links(n, 0);
  if (api.nvlink_state && api.nvlink_remote_pci) {
    for (int g = 0; g < n; ++g) {
      if (dev[g] == nullptr || facts[g]) continue;
      for (unsigned link = 0; link < nvml::kNvlinkMaxLinks; ++link) {
        int active = nvml::kFeatureDisabled;
        if (api.nvlink_state(dev[g], link, &active) != nvml::kSuccess || active != nvml::kFeatureEnabled) continue;
        nvml::PciInfo remote;
        std::memset(&remote, 0, sizeof remote);
        if (api.nvlink_remote_pci(dev[g], link, &remote) != nvml::kSuccess) continue;
        remote.busId[sizeof remote.busId - 1] = '\0';
        remote.busIdLegacy[sizeof remote.busIdLegacy - 1] = '\0';
        std::string bus_id = pci_bus_id_normalise(remote.busId);
        if (bus_id.empty()) bus_id = pci_bus_id_normalise(remote.busIdLegacy);
        if (bus_id.empty()) continue;
        int type = nvml::kNvlinkDeviceUnknown;
        if (api.nvlink_remote_type && api.nvlink_remote_type(dev[g], link, &type) != nvml::kSuccess) {
          type = nvml::kNvlinkDeviceUnknown;
        }
        const int peer = t->gpu_index(bus_id);
        if (type == nvml::kNvlinkDeviceGpu || (type == nvml::kNvlinkDeviceUnknown && peer >= 0)) {
          if (peer >= 0 && peer != g) ++links[g][peer];  // a GPU outside the model: not ours to record
        } else if (type == nvml::kNvlinkDeviceSwitch ||
                   (type == nvml::kNvlinkDeviceUnknown && is_nvswitch(*t, bus_id))) {
          ++switch_links[g];
        }
        // kNvlinkDeviceIbmNpu: a link to a POWER CPU, not between GPUs.
      }
    }
    for (int a = 0; a < n; ++a) {
      if (facts[a]) continue;
      for (int b = a + 1; b < n; ++b) {
        if (facts[b]) continue;
        const int v = std::max(links[a][b], links[b][a]);
        if (v > 0) t->nvlinks[a][b] = t->nvlinks[b][a] = v;
      }
      if (switch_links[a] > 0) t->gpus[a].nvswitch_links = switch_links[a];
    }
  }

  // P2P status: a refusal the model's path does not explain.
  if (api.p2p_status) {
    auto refused = [&](int a, int b) {
      for (int index : {nvml::kP2pCapsRead, nvml::kP2pCapsWrite}) {
        int status = nvml::kP2pStatusOk;
        if (api.p2p_status(dev[a], dev[b], index, &status) == nvml::kSuccess && status != nvml::kP2pStatusOk) {
          return true;
        }
      }
      return false;
    };
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        if (dev[a] == nullptr || dev[b] == nullptr || t->pair[a][b] != PairState::Default) continue;
        if (!p2p_hardware(*t, a, b)) continue;
        if (refused(a, b) || refused(b, a)) t->pair[a][b] = t->pair[b][a] = PairState::Denied;
      }
    }
  }

  // NUMA node where unknown.
  std::vector<std::vector<std::uint32_t>> masks;
  for (const Numa &m : t->numa) masks.push_back(parse_affinity(m.affinity));
  for (int g = 0; g < n; ++g) {
    if (dev[g] == nullptr || t->gpus[g].numa >= 0) continue;
    int best = -1, best_shared = 0;
    if (api.cpu_affinity) {
      constexpr unsigned kWords = 64;  // 4096 CPUs
      unsigned long set[kWords] = {};
      if (api.cpu_affinity(dev[g], kWords, set) == nvml::kSuccess) {
        constexpr unsigned kPer = sizeof(unsigned long) / sizeof(std::uint32_t);
        for (size_t m = 0; m < masks.size(); ++m) {
          int shared = 0;
          for (size_t i = 0; i < masks[m].size() && i / kPer < kWords; ++i) {
            const auto w = static_cast<std::uint32_t>(set[i / kPer] >> (32 * (i % kPer)));
            shared += popcount32(w & masks[m][i]);
          }
          if (shared > best_shared) {
            best_shared = shared;
            best = static_cast<int>(m);
          }
        }
      }
    }
    unsigned node = 0;
    if (best < 0 && api.numa_node && api.numa_node(dev[g], &node) == nvml::kSuccess) {
      for (size_t m = 0; m < t->numa.size(); ++m) {
        if (t->numa[m].os_index == static_cast<int>(node)) best = static_cast<int>(m);
      }
    }
    if (best >= 0) t->gpus[g].numa = best;
  }

  if (api.shutdown) api.shutdown();
  return true;
}

std::vector<std::uint32_t> parse_affinity(const std::string &s) {
  std::vector<std::uint32_t> words;
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    std::string w = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!w.empty() && (w.front() == ' ' || w.front() == '\t')) w.erase(w.begin());
    while (!w.empty() && (w.back() == ' ' || w.back() == '\t' || w.back() == '\n')) w.pop_back();
    if (w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) w = w.substr(2);
    if (w.empty() || w.size() > 8) return {};
    for (char c : w) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return {};
    }
    words.push_back(static_cast<std::uint32_t>(std::strtoul(w.c_str(), nullptr, 16)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::reverse(words.begin(), words.end());
  return words;
}

std::string format_affinity(const std::vector<std::uint32_t> &mask, size_t words) {
  size_t needed = mask.size();
  while (needed > 0 && mask[needed - 1] == 0) --needed;
  const size_t count = std::max<size_t>({words, needed, 1});
  std::string out;
  for (size_t i = count; i-- > 0;) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", i < mask.size() ? mask[i] : 0u);
    out += buf;
    if (i > 0) out += ',';
  }
  return out;
}

}  // namespace topo
}  // namespace gcoll
