#include "topo/topo_print.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace gcoll {
namespace topo {

namespace {

const char *level_name(P2pLevel l) {
  switch (l) {
    case P2pLevel::Loc: return "LOC";
    case P2pLevel::Nvl: return "NVL";
    case P2pLevel::Pix: return "PIX";
    case P2pLevel::Pxb: return "PXB";
    case P2pLevel::Phb: return "PHB";
    case P2pLevel::Node: return "NODE";
    case P2pLevel::Sys: return "SYS";
  }
  return "?";
}

std::string gpu_name(int g) { return "GPU" + std::to_string(g); }
std::string nic_name(int n) { return "NIC" + std::to_string(n); }

// The cell nvidia-smi prints for a GPU pair: X, NV#, or the PCI level.
std::string gpu_cell(const NodeTopo &t, int a, int b) {
  const PathClass p = gpu_path(t, a, b);
  if (p == PathClass::Nv) return "NV" + std::to_string(gpu_nv_links(t, a, b));
  return path_name(p);
}

// NCCL's mask ("0000ffff,0000ffff": 32-bit words, the highest first) as nvidia-smi's CPU
// list ("0-15,32-47"); the mask itself where it is not one.
std::string cpu_list(const std::string &mask) {
  if (mask.empty()) return "N/A";
  std::vector<unsigned long> words;
  std::stringstream ss(mask);
  std::string w;
  while (std::getline(ss, w, ',')) {
    if (w.empty() || w.size() > 8) return mask;
    for (char c : w) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return mask;
    }
    words.push_back(std::strtoul(w.c_str(), nullptr, 16));
  }
  std::reverse(words.begin(), words.end());
  std::vector<int> cpus;
  for (size_t i = 0; i < words.size(); ++i) {
    for (int b = 0; b < 32; ++b) {
      if ((words[i] >> b) & 1ul) cpus.push_back(static_cast<int>(i) * 32 + b);
    }
  }
  if (cpus.empty()) return "N/A";
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

// Rows of cells, left-aligned in columns at least `min_width` wide and two spaces
// apart; no trailing blanks.
std::string table(const std::vector<std::vector<std::string>> &rows, size_t min_width) {
  std::vector<size_t> width;
  for (const auto &r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), min_width);
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size() + 2);
  }
  std::string out;
  for (const auto &r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size(), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string join(const std::vector<int> &gpus, const char *sep) {
  std::string s;
  for (size_t i = 0; i < gpus.size(); ++i) s += (i ? sep : "") + gpu_name(gpus[i]);
  return s;
}

}  // namespace

std::string format_topology(const NodeTopo &t, const PrintOptions &o) {
  const int n = static_cast<int>(t.gpus.size());
  const int m = static_cast<int>(t.nics.size());
  std::ostringstream out;

  // nvidia-smi topo -m.
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head{""};
  for (int g = 0; g < n; ++g) head.push_back(gpu_name(g));
  for (int i = 0; i < m; ++i) head.push_back(nic_name(i));
  head.push_back("CPU Affinity");
  head.push_back("NUMA Affinity");
  rows.push_back(head);
  for (int a = 0; a < n; ++a) {
    std::vector<std::string> r{gpu_name(a)};
    for (int b = 0; b < n; ++b) r.push_back(a == b ? " X" : gpu_cell(t, a, b));
    for (int i = 0; i < m; ++i) r.push_back(path_name(nic_path(t, a, i)));
    const int numa = t.gpus[a].numa;
    const bool known = numa >= 0 && numa < static_cast<int>(t.numa.size());
    r.push_back(known ? cpu_list(t.numa[numa].affinity) : "N/A");
    r.push_back(known && t.numa[numa].os_index >= 0 ? std::to_string(t.numa[numa].os_index) : "N/A");
    rows.push_back(r);
  }
  for (int i = 0; i < m; ++i) {
    std::vector<std::string> r{nic_name(i)};
    for (int g = 0; g < n; ++g) r.push_back(path_name(nic_path(t, g, i)));
    for (int j = 0; j < m; ++j) r.push_back(i == j ? " X" : path_name(pci_path(t, t.nics[i].pci, t.nics[j].pci)));
    rows.push_back(r);
  }
  out << table(rows, 8);
  out << "\n"
         "Legend:\n"
         "\n"
         "  X    = Self\n"
         "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
         "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA "
         "node\n"
         "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
         "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
         "  PIX  = Connection traversing at most a single PCIe bridge\n"
         "  NV#  = Connection traversing a bonded set of # NVLinks\n";
  if (m > 0) {
    out << "\nNIC Legend:\n\n";
    for (int i = 0; i < m; ++i) out << "  " << nic_name(i) << ": " << t.nics[i].name << "\n";
  }

  // gcoll's reading of it.
  const int per_gpu = std::max(o.ranks_per_gpu, 1);
  const int ranks = o.ranks > 0 ? o.ranks : per_gpu * n;
  std::vector<int> rank_gpu;
  for (int r = 0; n > 0 && r < ranks; ++r) rank_gpu.push_back(r % n);
  std::vector<int> in_use;
  for (int g = 0; g < n; ++g) {
    if (std::find(rank_gpu.begin(), rank_gpu.end(), g) != rank_gpu.end()) in_use.push_back(g);
  }
  out << "\ngcoll: P2P level " << level_name(o.level) << ", P2P " << (o.p2p_disable ? "disabled" : "enabled") << ", "
      << ranks << (ranks == 1 ? " rank" : " ranks") << " on " << in_use.size() << " of " << n
      << (n == 1 ? " GPU" : " GPUs") << "\n";

  // Every pair whose verdict is not plain "NVLink, allowed".
  std::vector<std::vector<bool>> p2p(n, std::vector<bool>(n, false));
  std::vector<std::vector<std::string>> pair_rows;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      p2p[a][b] = p2p_allowed(t, a, b, o.level, o.p2p_disable) && !p2p_broken(t, a, b);
    }
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const PathClass p = gpu_path(t, a, b);
      const bool allowed = p2p_allowed(t, a, b, o.level, o.p2p_disable);
      const bool denied = a < static_cast<int>(t.pair.size()) && b < static_cast<int>(t.pair[a].size()) &&
                          t.pair[a][b] == PairState::Denied;
      if (p == PathClass::Nv && allowed && !p2p_broken(t, a, b)) continue;
      std::string verdict;
      if (denied) {
        verdict = "denied (no P2P on this machine)";
      } else if (o.p2p_disable) {
        verdict = "disabled (GCOLL_P2P_DISABLE)";
      } else if (!allowed) {
        verdict = std::string("not allowed (") + path_name(p) + " above " + level_name(o.level) + ")";
      } else if (p2p_broken(t, a, b)) {
        verdict = "broken: caught by the data probe";
      } else {
        verdict = std::string("allowed (") + path_name(p) + " within " + level_name(o.level) + ")";
      }
      pair_rows.push_back({"    " + gpu_name(a) + "-" + gpu_name(b), gpu_cell(t, a, b), verdict});
    }
  }
  out << "  P2P between GPUs not on NVLink (or not usable):";
  if (pair_rows.empty()) {
    out << (n > 1 ? " none" : n == 1 ? " none (one GPU)" : " none (no GPU)") << "\n";
  } else {
    out << "\n" << table(pair_rows, 0);
  }

  // Islands over the GPUs in use: P2P cliques, each with its NVLink ring (over NVLinks
  // that P2P may use: not broken, not disabled).
  std::vector<std::vector<bool>> sub(in_use.size(), std::vector<bool>(in_use.size(), false));
  std::vector<std::vector<bool>> nv(n, std::vector<bool>(n, false));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) nv[a][b] = p2p[a][b] && gpu_nv_links(t, a, b) > 0;
  }
  for (size_t i = 0; i < in_use.size(); ++i) {
    for (size_t j = 0; j < in_use.size(); ++j) sub[i][j] = p2p[in_use[i]][in_use[j]];
  }
  const std::vector<int> part = clique_partition(sub);
  const int islands = part.empty() ? 0 : *std::max_element(part.begin(), part.end()) + 1;
  out << "  P2P islands: " << islands << "\n";
  for (int k = 0; k < islands; ++k) {
    std::vector<int> members;
    for (size_t i = 0; i < in_use.size(); ++i) {
      if (part[i] == k) members.push_back(in_use[i]);
    }
    out << "    island " << k << ": " << join(members, " ");
    if (members.size() >= 3) {
      const std::vector<int> ring = find_ring(nv, members);
      out << "; NVLink ring: " << (ring.empty() ? "none" : join(ring, " > ") + " > " + gpu_name(ring[0]));
    }
    out << "\n";
  }
  // Across islands a ring over NVLink may still exist (the 0-1-5-4 of a DGX-1): what a
  // ring algorithm could use although not every pair has P2P.
  if (islands > 1 && in_use.size() >= 3) {
    const std::vector<int> ring = find_ring(nv, in_use);
    out << "  NVLink ring over all GPUs in use: "
        << (ring.empty() ? "none" : join(ring, " > ") + " > " + gpu_name(ring[0])) << "\n";
  }
  out << "  class: " << topo_class_name(classify(t, rank_gpu, p2p)) << "\n";

  // Rail NICs.
  out << "  rail NIC per rank:";
  if (m == 0) {
    out << " none (no NIC)\n";
  } else if (rank_gpu.empty()) {
    out << " none (no GPU)\n";
  } else {
    out << "\n";
    const std::vector<int> nic = choose_nics(t, rank_gpu);
    std::vector<std::vector<std::string>> nic_rows;
    for (size_t r = 0; r < rank_gpu.size(); ++r) {
      const int g = rank_gpu[r], i = nic[r];
      nic_rows.push_back({"    rank " + std::to_string(r), gpu_name(g),
                          i < 0 ? "none"
                                : nic_name(i) + " " + t.nics[i].name + " (" + path_name(nic_path(t, g, i)) +
                                      (t.nics[i].gdr ? ", GDR)" : ", no GDR)")});
    }
    out << table(nic_rows, 0);
  }
  return out.str();
}

}  // namespace topo
}  // namespace gcoll
