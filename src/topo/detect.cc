#include "topo/detect.h"

#include <unistd.h>

#include <cstdio>
#include <cstdint>
#include <fstream>
#include <map>
#include <vector>

#include "base/foreign.h"
#include "base/log.h"
#include "cuda/device.h"
#include "cuda/runtime.h"
#include "topo/nvml.h"
#include "topo/topo_xml.h"

#if GCOLL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace gcoll {
namespace topo {

namespace {

#if GCOLL_HAVE_HWLOC

constexpr std::uint32_t kHostBridgeClass = 0x060000;

std::string bus_id_text(unsigned domain, unsigned bus, unsigned dev, unsigned fn) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return buf;
}

std::string hex4(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

// One hwloc topology (loaded with I/O discovery) into the model.
class HwlocReader {
 public:
  HwlocReader(hwloc_topology_t topo, NodeTopo *t) : topo_(topo), t_(t) {}

  void read() {
    read_numa_nodes();
    read_gpus();
    read_nics();
    t_->resize_pairs();
  }

 private:
  hwloc_topology_t topo_;
  NodeTopo *t_;
  std::map<unsigned, int> numa_by_os_;  // NUMA os index -> index in t_->numa
  std::map<hwloc_obj_t, int> pci_by_obj_;

  static const char *info(hwloc_obj_t o, const char *name) {
    return o != nullptr ? hwloc_obj_get_info_by_name(o, name) : nullptr;
  }

  void read_numa_nodes() {
    hwloc_const_cpuset_t all = hwloc_topology_get_complete_cpuset(topo_);
    const int last = all != nullptr ? hwloc_bitmap_last(all) : -1;
    const size_t words = last >= 0 ? static_cast<size_t>(last) / 32 + 1 : 1;
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    std::string arch = info(root, "Architecture") != nullptr ? info(root, "Architecture") : "";
    if (arch == "aarch64") arch = "arm64";  // NCCL's words
    if (arch == "ppc64le") arch = "ppc64";
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, nullptr); n != nullptr;
         n = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, n)) {
      // NUMA nodes without CPUs (GPU memory, CXL, HBM) are no CPU a PCI device hangs from.
      if (n->cpuset == nullptr || hwloc_bitmap_iszero(n->cpuset)) continue;
      Numa m;
      m.os_index = static_cast<int>(n->os_index);
      std::vector<std::uint32_t> mask(words, 0);
      for (int cpu = hwloc_bitmap_first(n->cpuset); cpu >= 0; cpu = hwloc_bitmap_next(n->cpuset, cpu)) {
        if (static_cast<size_t>(cpu) / 32 < words) mask[cpu / 32] |= 1u << (cpu % 32);
      }
      m.affinity = format_affinity(mask, words);
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, n);
      for (hwloc_obj_t p = nullptr; pkg == nullptr;) {
        p = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, p);
        if (p == nullptr) break;
        if (p->cpuset != nullptr && hwloc_bitmap_intersects(p->cpuset, n->cpuset)) pkg = p;
      }
      if (!arch.empty()) m.attrs.emplace_back("arch", arch);
      if (const char *v = info(pkg, "CPUVendor")) m.attrs.emplace_back("vendor", v);
      if (const char *v = info(pkg, "CPUFamilyNumber")) m.attrs.emplace_back("familyid", v);
      if (const char *v = info(pkg, "CPUModelNumber")) m.attrs.emplace_back("modelid", v);
      numa_by_os_[n->os_index] = static_cast<int>(t_->numa.size());
      t_->numa.push_back(std::move(m));
    }
  }

  // The NUMA node an I/O object hangs from: the first non-I/O ancestor's, where its
  // nodeset names exactly one NUMA node with CPUs (I/O attached higher up, e.g. to the
  // whole machine, has no known locality).
  int numa_of(hwloc_obj_t o) const {
    hwloc_obj_t p = o->parent;
    while (p != nullptr && hwloc_obj_type_is_io(p->type)) p = p->parent;
    if (p == nullptr || p->nodeset == nullptr) return -1;
    int found = -1;
    for (int i = hwloc_bitmap_first(p->nodeset); i >= 0; i = hwloc_bitmap_next(p->nodeset, i)) {
      auto it = numa_by_os_.find(static_cast<unsigned>(i));
      if (it == numa_by_os_.end()) continue;
      if (found >= 0) return -1;
      found = it->second;
    }
    return found;
  }

  int add_pci(hwloc_obj_t o, PciNode node) {
    auto it = pci_by_obj_.find(o);
    if (it != pci_by_obj_.end()) return it->second;
    const int idx = static_cast<int>(t_->pci.size());
    t_->pci.push_back(std::move(node));
    pci_by_obj_[o] = idx;
    return idx;
  }

  static PciNode pci_function(const hwloc_obj_attr_u::hwloc_pcidev_attr_s &a, int parent, int numa) {
    PciNode n;
    n.bus_id = bus_id_text(a.domain, a.bus, a.dev, a.func);
    n.parent = parent;
    n.numa = numa;
    n.class_code = static_cast<std::uint32_t>(a.class_id) << 8;  // hwloc has no prog-if
    n.attrs.emplace_back("vendor", hex4(a.vendor_id));
    n.attrs.emplace_back("device", hex4(a.device_id));
    n.attrs.emplace_back("subsystem_vendor", hex4(a.subvendor_id));
    n.attrs.emplace_back("subsystem_device", hex4(a.subdevice_id));
    return n;
  }

  // The PCI node of PCI function `dev`, with the nodes above it: walks the parents by hand
  // (hwloc's common-ancestor helper crashes on I/O objects of different subtrees).
  int pci_node(hwloc_obj_t dev) {
    auto it = pci_by_obj_.find(dev);
    if (it != pci_by_obj_.end()) return it->second;
    std::vector<hwloc_obj_t> bridges;  // PCI-PCI bridges, the nearest first
    hwloc_obj_t host = nullptr;
    for (hwloc_obj_t p = dev->parent; p != nullptr && hwloc_obj_type_is_io(p->type); p = p->parent) {
      if (p->type != HWLOC_OBJ_BRIDGE) continue;
      if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
        bridges.push_back(p);
      } else {
        host = p;
        break;
      }
    }
    const int numa = numa_of(dev);
    int parent = -1;
    if (host != nullptr) {
      PciNode h;
      h.bus_id = bus_id_text(host->attr->bridge.downstream.pci.domain, host->attr->bridge.downstream.pci.secondary_bus, 0, 0);
      h.numa = numa;
      h.class_code = kHostBridgeClass;
      parent = add_pci(host, std::move(h));
    }
    // As NCCL: every second bridge from the device up, i.e. a switch's upstream port stands
    // for the switch; its downstream ports and the root port are skipped.
    std::vector<hwloc_obj_t> kept;
    for (size_t i = 1; i < bridges.size(); i += 2) kept.push_back(bridges[i]);
    for (size_t i = kept.size(); i-- > 0;) {
      parent = add_pci(kept[i], pci_function(kept[i]->attr->bridge.upstream.pci, parent, numa));
    }
    return add_pci(dev, pci_function(dev->attr->pcidev, parent, numa));
  }

  void read_gpus() {
    for (hwloc_obj_t d = hwloc_get_next_pcidev(topo_, nullptr); d != nullptr; d = hwloc_get_next_pcidev(topo_, d)) {
      const hwloc_obj_attr_u::hwloc_pcidev_attr_s &a = d->attr->pcidev;
      if (a.vendor_id != 0x10de || (a.class_id != 0x0302 && a.class_id != 0x0300)) continue;
      Gpu g;
      g.pci = pci_node(d);
      g.bus_id = t_->pci[g.pci].bus_id;
      g.numa = t_->pci[g.pci].numa;
      if (t_->gpu_index(g.bus_id) < 0) t_->gpus.push_back(std::move(g));
    }
  }

  void read_nics() {
    // Per PCI function, its OpenFabrics devices (mlx5_0), else its network interfaces (eth0).
    std::vector<hwloc_obj_t> functions;
    std::map<hwloc_obj_t, std::vector<hwloc_obj_t>> fabric, network;
    for (hwloc_obj_t o = hwloc_get_next_osdev(topo_, nullptr); o != nullptr; o = hwloc_get_next_osdev(topo_, o)) {
      hwloc_obj_t p = o->parent;
      if (p == nullptr || p->type != HWLOC_OBJ_PCI_DEVICE || o->name == nullptr) continue;
      if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS && o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK) continue;
      if (fabric.count(p) == 0 && network.count(p) == 0) functions.push_back(p);
      (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS ? fabric[p] : network[p]).push_back(o);
    }
    for (hwloc_obj_t p : functions) {
      const std::vector<hwloc_obj_t> &devs = fabric.count(p) != 0 ? fabric[p] : network[p];
      for (hwloc_obj_t o : devs) {
        if (t_->nic_index(o->name) >= 0) continue;
        Nic n;
        n.name = o->name;
        n.pci = pci_node(p);
        n.bus_id = t_->pci[n.pci].bus_id;
        n.numa = t_->pci[n.pci].numa;
        // An RDMA device's first port, as UCX and NCCL name it (mlx5_0:1).
        if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) n.attrs.emplace_back("port", "1");
        t_->nics.push_back(std::move(n));
      }
    }
  }
};

bool load_hwloc(const std::string *xml, NodeTopo *out, std::string *error) {
  ForeignScope scope;  // hwloc's discovery leaves the process as it found it (base/foreign.h)
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    *error = "hwloc_topology_init failed";
    return false;
  }
  bool ok = false;
  // hwloc's GPU components (its plugins, where installed: CUDA, NVML, OpenCL, ROCm SMI,
  // Level Zero, and GL, which connects to X servers) would load GPU libraries and open
  // /dev/nvidia* on their own: gcoll needs only the PCI tree and the NICs from hwloc
  // (CUDA and NVML it asks itself, where the driver is active).
#if HWLOC_API_VERSION >= 0x00020100
  for (const char *c : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"})
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, c);
#endif
  // I/O discovery is off by default; it must be on before loading. The whole machine, not
  // just the CPUs this process may use: every rank of the node must see the same one.
  if (hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) {
    *error = "hwloc_topology_set_io_types_filter failed";
  } else if (hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
    *error = "hwloc_topology_set_flags failed";
  } else if (xml != nullptr && hwloc_topology_set_xml(topo, xml->c_str()) != 0) {
    *error = "cannot read hwloc XML " + *xml;
  } else if (hwloc_topology_load(topo) != 0) {
    *error = xml != nullptr ? "hwloc cannot load " + *xml : "hwloc_topology_load failed";
  } else {
    NodeTopo t;
    HwlocReader(topo, &t).read();
    *out = std::move(t);
    ok = true;
  }
  hwloc_topology_destroy(topo);
  return ok;
}

#endif  // GCOLL_HAVE_HWLOC

std::string uuid_text(const unsigned char (&u)[16]) {
  bool zero = true;
  for (unsigned char c : u) zero = zero && c == 0;
  if (zero) return {};
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return buf;
}

// The GPUs this process's CUDA shows: ordinals and uuids of those in the model, the others
// added outside the PCI tree. false where CUDA shows none.
bool add_cuda_gpus(NodeTopo *t) {
  cuda::Runtime &rt = cuda::runtime();
  const int n = rt.device_count();
  bool any = false;
  for (int i = 0; i < n; ++i) {
    cuda::DeviceInfo info;
    if (rt.device_info(i, &info) != Status::Ok) continue;
    info.pci_bus_id[sizeof info.pci_bus_id - 1] = '\0';
    const std::string bus_id = pci_bus_id_normalise(info.pci_bus_id);
    if (bus_id.empty()) continue;
    any = true;
    int g = t->gpu_index(bus_id);
    if (g < 0) {
      Gpu gpu;
      gpu.bus_id = bus_id;
      g = static_cast<int>(t->gpus.size());
      t->gpus.push_back(std::move(gpu));
    }
    t->gpus[g].dev = i;
    if (t->gpus[g].uuid.empty()) t->gpus[g].uuid = uuid_text(info.uuid);
  }
  t->resize_pairs();
  return any;
}

bool nvlink_facts(const NodeTopo &t, int g) {
  if (t.gpus[g].nvswitch_links > 0) return true;
  if (g < static_cast<int>(t.nvlinks.size())) {
    for (int v : t.nvlinks[g]) {
      if (v > 0) return true;
    }
  }
  return false;
}

std::string join(const std::vector<std::string> &have, const std::vector<std::string> &lack) {
  std::string s;
  for (const std::string &h : have) s += (s.empty() ? "" : ", ") + h;
  if (!lack.empty()) {
    std::string l;
    for (const std::string &x : lack) l += (l.empty() ? "no " : ", no ") + x;
    s += s.empty() ? "nothing (" + l + ")" : " (" + l + ")";
  }
  return s.empty() ? "nothing" : s;
}

struct Detected {
  NodeTopo topo;
  std::string source;
  std::string file_error;
};

const Detected &detected() {
  static const Detected d = [] {
    Detected r;
    const Config &c = config();
    r.topo = build_node_topology(c, &r.source, &r.file_error);
    GCOLL_INFO("node topology from %s: %zu GPUs, %zu NICs, %zu NUMA nodes", r.source.c_str(), r.topo.gpus.size(),
               r.topo.nics.size(), r.topo.numa.size());
    if (!c.topo_dump_file.empty()) {
      const std::string path = expand_dump_path(c.topo_dump_file);
      std::ofstream f(path);
      f << write_topo_xml(r.topo);
      f.close();
      if (!f) GCOLL_WARN("GCOLL_TOPO_DUMP_FILE: cannot write %s", path.c_str());
    }
    return r;
  }();
  return d;
}

}  // namespace

const NodeTopo &node_topology() { return detected().topo; }
const std::string &node_topology_source() { return detected().source; }
const std::string &node_topology_file_error() { return detected().file_error; }

bool hwloc_supported() {
#if GCOLL_HAVE_HWLOC
  return true;
#else
  return false;
#endif
}

bool topo_from_hwloc(NodeTopo *out, std::string *error) {
#if GCOLL_HAVE_HWLOC
  return load_hwloc(nullptr, out, error);
#else
  (void)out;
  *error = "gcoll was built without hwloc";
  return false;
#endif
}

bool topo_from_hwloc_xml(const std::string &path, NodeTopo *out, std::string *error) {
#if GCOLL_HAVE_HWLOC
  return load_hwloc(&path, out, error);
#else
  (void)path;
  (void)out;
  *error = "gcoll was built without hwloc";
  return false;
#endif
}

void merge_detected(NodeTopo *file, const NodeTopo &det) {
  file->resize_pairs();
  auto det_numa_to_file = [&](int dn) {
    if (dn < 0 || dn >= static_cast<int>(det.numa.size())) return -1;
    for (size_t m = 0; m < file->numa.size(); ++m) {
      if (file->numa[m].os_index == det.numa[dn].os_index) return static_cast<int>(m);
    }
    return -1;
  };
  for (Numa &m : file->numa) {
    if (!m.affinity.empty()) continue;
    for (const Numa &d : det.numa) {
      if (d.os_index == m.os_index && m.os_index >= 0) m.affinity = d.affinity;
    }
  }
  const int n = static_cast<int>(file->gpus.size());
  std::vector<int> map(n, -1);  // file GPU -> detected GPU
  std::vector<bool> facts(n);
  for (int g = 0; g < n; ++g) {
    map[g] = det.gpu_index(file->gpus[g].bus_id);
    facts[g] = nvlink_facts(*file, g);
  }
  for (int g = 0; g < n; ++g) {
    if (map[g] < 0) continue;
    Gpu &f = file->gpus[g];
    const Gpu &d = det.gpus[map[g]];
    if (f.uuid.empty()) f.uuid = d.uuid;
    if (f.sm == 0) f.sm = d.sm;
    if (f.dev < 0) f.dev = d.dev;
    if (f.numa < 0) f.numa = det_numa_to_file(d.numa);
    if (!facts[g] && f.nvswitch_links == 0) f.nvswitch_links = d.nvswitch_links;
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (map[a] < 0 || map[b] < 0) continue;
      const int da = map[a], db = map[b];
      if (!facts[a] && !facts[b] && da < static_cast<int>(det.nvlinks.size()) &&
          db < static_cast<int>(det.nvlinks[da].size()) && det.nvlinks[da][db] > 0) {
        file->nvlinks[a][b] = file->nvlinks[b][a] = det.nvlinks[da][db];
      }
      if (file->pair[a][b] == PairState::Default && da < static_cast<int>(det.pair.size()) &&
          db < static_cast<int>(det.pair[da].size()) && det.pair[da][db] != PairState::Default) {
        file->pair[a][b] = file->pair[b][a] = det.pair[da][db];
      }
    }
  }
}

std::string expand_dump_path(const std::string &pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char k = pattern[i + 1];
      if (k == 'h') {
        char host[256] = {};
        if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
        out += host;
        ++i;
        continue;
      }
      if (k == 'p') {
        out += std::to_string(static_cast<long>(getpid()));
        ++i;
        continue;
      }
      if (k == '%') {
        out += '%';
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

NodeTopo build_node_topology(const Config &c, std::string *source, std::string *file_error) {
  if (file_error) file_error->clear();
  NodeTopo file;
  bool from_file = false;
  if (!c.topo_file.empty()) {
    std::string error;
    if (read_topo_file(c.topo_file, &file, &error)) {
      from_file = true;
      file.resize_pairs();
    } else {
      warn_shared(SharedWarning::TopoFile, "GCOLL_TOPO_FILE %s: %s; detecting the topology instead",
                  c.topo_file.c_str(), error.c_str());
      if (file_error) *file_error = error;
      file = NodeTopo();
    }
  }

  // Under the emulated GPU the file IS the machine; the emulated NVML answers from it, so
  // that the NVML code runs, and adds nothing the file does not say.
  if (from_file && c.cuda && c.cuda_emulate) {
    const bool nvml_ok = fill_from_nvml(emulated_nvml(file), &file);
    *source = "file " + c.topo_file + (nvml_ok ? ", emulated NVML" : "");
    return file;
  }

  NodeTopo det;
  std::vector<std::string> have, lack;
  std::string error;
  bool cuda_ok = false;
  // CUDA and NVML only where the driver is active: loaded by the application (or by a
  // tool that asked, gcoll_info --topology); never loaded for the topology's sake
  // (cuda/driver_gate.h). Device calls, which are what needs the GPUs' facts, come only
  // after the application has loaded it.
  const bool cuda_active = c.cuda && cuda::driver().active();
  if (cuda_active) cuda_ok = add_cuda_gpus(&det);
  // hwloc first into its own model, then CUDA's GPUs over it (they need hwloc's tree).
  NodeTopo hw;
  const bool hwloc_ok = topo_from_hwloc(&hw, &error);
  if (!hwloc_ok && hwloc_supported()) GCOLL_INFO("topology: %s", error.c_str());
  if (hwloc_ok) {
    for (const Gpu &g : det.gpus) {
      const int h = hw.gpu_index(g.bus_id);
      if (h < 0) {
        hw.gpus.push_back(g);  // not in hwloc's tree: pci -1
      } else {
        hw.gpus[h].dev = g.dev;
        if (hw.gpus[h].uuid.empty()) hw.gpus[h].uuid = g.uuid;
      }
    }
    hw.resize_pairs();
    det = std::move(hw);
  }
  // CUDA's order (fastest first unless CUDA_DEVICE_ORDER says otherwise) and hwloc's tree
  // order both give way to the bus id order that nvidia-smi and topology files use.
  sort_gpus_by_bus_id(&det);
  bool nvml_ok = false;
  if (!det.gpus.empty() && !c.cuda_emulate && cuda_active) {
    if (const NvmlApi *api = real_nvml()) nvml_ok = fill_from_nvml(*api, &det);
  }
  (cuda_ok ? have : lack).push_back("CUDA");
  (hwloc_ok ? have : lack).push_back("hwloc");
  (nvml_ok ? have : lack).push_back("NVML");

  if (from_file) {
    merge_detected(&file, det);
    *source = "file " + c.topo_file + " + " + join(have, lack);
    return file;
  }
  *source = join(have, lack);
  return det;
}

}  // namespace topo
}  // namespace gcoll
