#include "topo/node_topo.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace gcoll {
namespace topo {

namespace {

// PCI class of a host bridge: the one PCI element whose crossing nvidia-smi calls PHB.
constexpr std::uint32_t kHostBridgeClass = 0x060000;

bool valid_gpu(const NodeTopo &t, int g) { return g >= 0 && g < static_cast<int>(t.gpus.size()); }

// The chain from PCI node `p` up to its top-level element, `p` first. Bounded by the node
// count so that a malformed model (a parent cycle) cannot loop forever.
std::vector<int> pci_chain(const NodeTopo &t, int p) {
  std::vector<int> chain;
  const int n = static_cast<int>(t.pci.size());
  while (p >= 0 && p < n && static_cast<int>(chain.size()) <= n) {
    chain.push_back(p);
    p = t.pci[p].parent;
  }
  return chain;
}

bool numa_known(const NodeTopo &t, int numa) {
  return numa >= 0 && numa < static_cast<int>(t.numa.size()) && t.numa[numa].os_index >= 0;
}

}  // namespace

const char *path_name(PathClass p) {
  switch (p) {
    case PathClass::Loc: return "X";
    case PathClass::Nv: return "NV";
    case PathClass::Pix: return "PIX";
    case PathClass::Pxb: return "PXB";
    case PathClass::Phb: return "PHB";
    case PathClass::Node: return "NODE";
    case PathClass::Sys: return "SYS";
  }
  return "?";
}

PathClass pci_path(const NodeTopo &t, int a, int b) {
  const int n = static_cast<int>(t.pci.size());
  if (a < 0 || b < 0 || a >= n || b >= n) return PathClass::Sys;
  if (a == b) return PathClass::Pix;  // two functions of one device (a GPU and a NIC port)
  const std::vector<int> ca = pci_chain(t, a), cb = pci_chain(t, b);
  // Lowest common ancestor: the first of a's chain that is in b's chain.
  int common = -1;
  size_t depth_a = 0, depth_b = 0;
  for (size_t i = 0; i < ca.size() && common < 0; ++i) {
    auto it = std::find(cb.begin(), cb.end(), ca[i]);
    if (it != cb.end()) {
      common = ca[i];
      depth_a = i;
      depth_b = static_cast<size_t>(it - cb.begin());
    }
  }
  if (common >= 0) {
    if (t.pci[common].class_code == kHostBridgeClass) return PathClass::Phb;
    // One switch between them when it is the immediate parent of both (or one of them
    // hangs directly below the other); any more is PXB.
    return depth_a <= 1 && depth_b <= 1 ? PathClass::Pix : PathClass::Pxb;
  }
  // Different top-level elements: different host bridges (root ports) of one CPU, or
  // different CPUs. An unknown NUMA node could be either: the far one is assumed.
  const int na = t.pci[ca.back()].numa, nb = t.pci[cb.back()].numa;
  if (na == nb && numa_known(t, na)) return PathClass::Node;
  return PathClass::Sys;
}

int NodeTopo::gpu_index(const std::string &bus_id) const {
  const std::string key = pci_bus_id_normalise(bus_id);
  if (key.empty()) return -1;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].bus_id == key) return static_cast<int>(i);
  }
  return -1;
}

void sort_gpus_by_bus_id(NodeTopo *t) {
  const size_t n = t->gpus.size();
  t->resize_pairs();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  // Normalised ids ("0000:07:00.0": fixed-width lower-case hex) sort as text.
  auto key = [&](size_t i) { return pci_bus_id_normalise(t->gpus[i].bus_id); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const std::string ka = key(a), kb = key(b);
    if (ka.empty() || kb.empty()) return !ka.empty() && kb.empty();
    return ka < kb;
  });
  bool same = true;
  for (size_t i = 0; i < n; ++i) same = same && order[i] == i;
  if (same) return;
  std::vector<Gpu> gpus;
  std::vector<std::vector<int>> nv(n, std::vector<int>(n, 0));
  std::vector<std::vector<PairState>> pair(n, std::vector<PairState>(n, PairState::Default));
  for (size_t i = 0; i < n; ++i) {
    gpus.push_back(std::move(t->gpus[order[i]]));
    for (size_t j = 0; j < n; ++j) {
      nv[i][j] = t->nvlinks[order[i]][order[j]];
      pair[i][j] = t->pair[order[i]][order[j]];
    }
  }
  t->gpus = std::move(gpus);
  t->nvlinks = std::move(nv);
  t->pair = std::move(pair);
}

int NodeTopo::nic_index(const std::string &name) const {
  for (size_t i = 0; i < nics.size(); ++i) {
    if (nics[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

void NodeTopo::resize_pairs() {
  const size_t n = gpus.size();
  nvlinks.resize(n);
  for (auto &row : nvlinks) row.resize(n, 0);
  pair.resize(n);
  for (auto &row : pair) row.resize(n, PairState::Default);
}

std::string pci_bus_id_normalise(const std::string &in) {
  // Trim blanks (NVML pads, files may too).
  size_t b = 0, e = in.size();
  while (b < e && std::isspace(static_cast<unsigned char>(in[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(in[e - 1]))) --e;
  const std::string s = in.substr(b, e - b);
  // Split into [domain:]bus:device[.function].
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t colon = s.find(':', start);
    parts.push_back(s.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() != 2 && parts.size() != 3) return {};
  std::string domain = parts.size() == 3 ? parts[0] : "0";
  std::string bus = parts[parts.size() - 2];
  std::string devfn = parts.back();
  std::string dev = devfn, fn = "0";
  const size_t dot = devfn.find('.');
  if (dot != std::string::npos) {
    dev = devfn.substr(0, dot);
    fn = devfn.substr(dot + 1);
  }
  auto hex = [](const std::string &x, size_t max_digits, unsigned long max_value, unsigned long *v) {
    if (x.empty() || x.size() > max_digits) return false;
    for (char c : x) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    }
    *v = std::strtoul(x.c_str(), nullptr, 16);
    return *v <= max_value;
  };
  unsigned long d = 0, bu = 0, de = 0, f = 0;
  if (!hex(domain, 8, 0xffffffffUL, &d) || !hex(bus, 2, 0xff, &bu) || !hex(dev, 2, 0x1f, &de) || !hex(fn, 1, 7, &f)) {
    return {};
  }
  char out[32];
  std::snprintf(out, sizeof out, "%04lx:%02lx:%02lx.%lx", d, bu, de, f);
  return out;
}

int gpu_nv_links(const NodeTopo &t, int a, int b) {
  if (!valid_gpu(t, a) || !valid_gpu(t, b) || a == b) return 0;
  int direct = 0;
  if (a < static_cast<int>(t.nvlinks.size()) && b < static_cast<int>(t.nvlinks[a].size())) direct = t.nvlinks[a][b];
  // Through NVSwitches the pair gets what the less connected GPU has; direct links (rare
  // next to switches) add to it.
  const int ga = t.gpus[a].nvswitch_links, gb = t.gpus[b].nvswitch_links;
  const int switched = ga > 0 && gb > 0 ? std::min(ga, gb) : 0;
  return std::max(direct, 0) + switched;
}

PathClass gpu_path(const NodeTopo &t, int a, int b) {
  if (!valid_gpu(t, a) || !valid_gpu(t, b)) return PathClass::Sys;
  if (a == b) return PathClass::Loc;
  if (gpu_nv_links(t, a, b) > 0) return PathClass::Nv;
  return pci_path(t, t.gpus[a].pci, t.gpus[b].pci);
}

PathClass nic_path(const NodeTopo &t, int gpu, int nic) {
  if (!valid_gpu(t, gpu) || nic < 0 || nic >= static_cast<int>(t.nics.size())) return PathClass::Sys;
  return pci_path(t, t.gpus[gpu].pci, t.nics[nic].pci);
}

namespace {
PairState pair_state(const NodeTopo &t, int a, int b) {
  if (a < 0 || b < 0 || a >= static_cast<int>(t.pair.size()) || b >= static_cast<int>(t.pair[a].size())) {
    return PairState::Default;
  }
  return t.pair[a][b];
}
}  // namespace

bool p2p_allowed(const NodeTopo &t, int a, int b, P2pLevel level, bool disable) {
  if (!valid_gpu(t, a) || !valid_gpu(t, b)) return false;
  if (a == b) return true;
  // LOC: never between different GPUs (as NCCL_P2P_LEVEL=LOC), NVLink included.
  if (disable || level == P2pLevel::Loc || pair_state(t, a, b) == PairState::Denied) return false;
  const PathClass p = gpu_path(t, a, b);
  if (p == PathClass::Nv) return true;
  return static_cast<int>(p) <= static_cast<int>(level);
}

bool p2p_hardware(const NodeTopo &t, int a, int b) {
  if (!valid_gpu(t, a) || !valid_gpu(t, b)) return false;
  if (a == b) return true;
  if (pair_state(t, a, b) == PairState::Denied) return false;
  return gpu_path(t, a, b) != PathClass::Sys;
}

bool p2p_broken(const NodeTopo &t, int a, int b) { return a != b && pair_state(t, a, b) == PairState::Broken; }

namespace {
bool edge(const std::vector<std::vector<bool>> &m, int a, int b) {
  return a >= 0 && b >= 0 && a < static_cast<int>(m.size()) && b < static_cast<int>(m[a].size()) && m[a][b];
}
}  // namespace

std::vector<int> components(const std::vector<std::vector<bool>> &m) {
  const int n = static_cast<int>(m.size());
  std::vector<int> id(n, -1);
  int next = 0;
  for (int s = 0; s < n; ++s) {
    if (id[s] >= 0) continue;
    std::vector<int> stack{s};
    id[s] = next;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (int u = 0; u < n; ++u) {
        if (u != v && id[u] < 0 && (edge(m, v, u) || edge(m, u, v))) {
          id[u] = next;
          stack.push_back(u);
        }
      }
    }
    ++next;
  }
  return id;
}

std::vector<int> clique_partition(const std::vector<std::vector<bool>> &m) {
  const int n = static_cast<int>(m.size());
  std::vector<int> id(n, -1);
  int next = 0;
  for (int s = 0; s < n; ++s) {
    if (id[s] >= 0) continue;
    std::vector<int> part{s};
    id[s] = next;
    for (int u = s + 1; u < n; ++u) {
      if (id[u] >= 0) continue;
      bool all = true;
      for (int v : part) all = all && edge(m, u, v) && edge(m, v, u);
      if (all) {
        part.push_back(u);
        id[u] = next;
      }
    }
    ++next;
  }
  return id;
}

std::vector<int> find_ring(const std::vector<std::vector<bool>> &m, const std::vector<int> &members) {
  const int k = static_cast<int>(members.size());
  if (k < 2 || k > 16) return {};
  auto adj = [&](int i, int j) { return edge(m, members[i], members[j]) && edge(m, members[j], members[i]); };
  if (k == 2) return adj(0, 1) ? members : std::vector<int>{};
  // Neighbours tried in increasing vertex order, so that the ring is the same every time.
  std::vector<int> order(k);
  for (int i = 0; i < k; ++i) order[i] = i;
  std::sort(order.begin() + 1, order.end(), [&](int x, int y) { return members[x] < members[y]; });
  // Depth-first search from members[0]; (visited set, last vertex) states that failed
  // once fail again, which bounds the search by 2^16 x 16 states.
  std::vector<std::vector<bool>> failed(std::size_t{1} << k, std::vector<bool>(k, false));
  std::vector<int> path{0};
  auto dfs = [&](auto &&self, unsigned mask, int last) -> bool {
    if (static_cast<int>(path.size()) == k) return adj(last, 0);
    if (failed[mask][last]) return false;
    for (int i = 1; i < k; ++i) {
      const int v = order[i];
      if ((mask >> v) & 1u || !adj(last, v)) continue;
      path.push_back(v);
      if (self(self, mask | (1u << v), v)) return true;
      path.pop_back();
    }
    failed[mask][last] = true;
    return false;
  };
  if (!dfs(dfs, 1u, 0)) return {};
  std::vector<int> ring;
  for (int i : path) ring.push_back(members[i]);
  return ring;
}

std::vector<int> choose_nics(const NodeTopo &t, const std::vector<int> &gpus) {
  std::vector<int> out;
  // One round-robin counter per set of equally near NICs: GPUs that see the same tie
  // take its NICs in turn.
  std::map<std::vector<int>, size_t> turn;
  for (int g : gpus) {
    std::vector<int> best;
    int best_path = 1 << 30;
    for (int n = 0; n < static_cast<int>(t.nics.size()); ++n) {
      const int p = static_cast<int>(nic_path(t, g, n));
      if (p < best_path) {
        best_path = p;
        best.clear();
      }
      if (p == best_path) best.push_back(n);
    }
    if (best.empty()) {
      out.push_back(-1);
      continue;
    }
    size_t &k = turn[best];
    out.push_back(best[k % best.size()]);
    ++k;
  }
  return out;
}

const char *topo_class_name(TopoClass c) {
  switch (c) {
    case TopoClass::OneGpu: return "one-gpu";
    case TopoClass::NvlinkAll: return "nvlink";
    case TopoClass::PcieAll: return "pcie";
    case TopoClass::Islands: return "islands";
    case TopoClass::NoP2p: return "no-p2p";
    case TopoClass::NoGpu: return "no-gpu";
  }
  return "?";
}

TopoClass classify(const NodeTopo &t, const std::vector<int> &gpus, const std::vector<std::vector<bool>> &p2p) {
  std::vector<int> distinct;
  for (int g : gpus) {
    if (std::find(distinct.begin(), distinct.end(), g) == distinct.end()) distinct.push_back(g);
  }
  if (distinct.empty()) return TopoClass::NoGpu;
  if (distinct.size() == 1) return TopoClass::OneGpu;
  size_t pairs = 0, p2p_pairs = 0, nv_pairs = 0;
  for (size_t i = 0; i < distinct.size(); ++i) {
    for (size_t j = i + 1; j < distinct.size(); ++j) {
      const int a = distinct[i], b = distinct[j];
      ++pairs;
      if (!edge(p2p, a, b)) continue;
      ++p2p_pairs;
      if (gpu_path(t, a, b) == PathClass::Nv) ++nv_pairs;
    }
  }
  if (p2p_pairs == 0) return TopoClass::NoP2p;
  if (p2p_pairs < pairs) return TopoClass::Islands;
  return nv_pairs == pairs ? TopoClass::NvlinkAll : TopoClass::PcieAll;
}

std::string ucx_device_name(const Nic &n) {
  for (const auto &kv : n.attrs)
    if (kv.first == "port" && !kv.second.empty()) return n.name + ":" + kv.second;
  return n.name;
}

}  // namespace topo
}  // namespace gcoll
