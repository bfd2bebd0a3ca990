// The cost model of the node (cost_model.h; formulas and constants: docs/cost-model.md).
#include "coll/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/config.h"
#include "coll/device_topo.h"
#include "coll/engine.h"
#include "coll/tune.h"

namespace gcoll {

// The one table of constants. Derived from docs/gpu-validation.md (one H100/H200 shared
// by 4 ranks under MPS, 2026-11-23 to 11-27) where a measurement exists, else estimates;
// untested on a multi-GPU node. A GPU run that measures them changes only this table.
const CostConstants kCostConstants = {
    5.0,     // launch_us: the fused kernel alone, 1 rank: 4.8 us
    9.0,     // device_sync_us: the fused kernel at 4 ranks 14.1 us, less the launch
    8.0,     // host_sync_us: the bank oneshot at 8 B, 27-29.5 us (GCOLL_DEVICE_FUSED=off): 2 x (launch + sync) + chunk
    2.0,     // chunk_us: estimate
    10.0,    // copy_us: the staged 8 B allreduce, 22.3-24.4 us: 2 copies + the MPI's 8 B host allreduce
    0.6,     // mpi_step_us: the MPI's 8 B host allreduce on 4 ranks, 1.15-1.24 us: 2 steps
    2800.0,  // mpi_host_mbps: the staged 4 MiB allreduce, 2613 us, less its copies (4 ranks)
    15.0,    // rail_step_us: estimate (a pipelined piece: D2H copy, UCX shared memory, H2D copy)
    10000.0, // host_copy_mbps: estimate (one rank's copies through host memory)
};

void CostLinks::to(std::int64_t *v) const {
  const std::int64_t f[kFields] = {valid,    cls,      nv_all_mbps, nv_pair_mbps, pcie_mbps,
                                   sys_mbps, net_mbps, bank_bytes,  net_hop};
  std::copy(f, f + kFields, v);
}

void CostLinks::from(const std::int64_t *v) {
  std::int64_t *f[kFields] = {&valid,    &cls,      &nv_all_mbps, &nv_pair_mbps, &pcie_mbps,
                              &sys_mbps, &net_mbps, &bank_bytes,  &net_hop};
  for (int i = 0; i < kFields; ++i) *f[i] = v[i];
}

namespace {

// NCCL's effective bandwidth of one NVLink by the GPU's compute capability (NVIDIA/nccl
// graph/topo.h: SM60 18, SM70 and SM80 20, SM86 12, SM90 20.6 GB/s); 40 for sm >= 100
// (NVLink 5, twice NVLink 4 per link: an assumption), 20 where unknown.
std::int64_t nvlink_mbps(int sm) {
  if (sm >= 100) return 40000;
  if (sm >= 90) return 20600;
  if (sm == 86 || sm == 87 || sm == 89) return 12000;
  if (sm >= 70) return 20000;
  if (sm >= 60) return 18000;
  return 20000;
}

const std::string *attr(const std::vector<std::pair<std::string, std::string>> &a, const char *key) {
  for (const auto &kv : a)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

// One PCIe link's bandwidth from NCCL's link_speed ("16.0 GT/s PCIe") and link_width
// ("16"): raw (8b/10b up to 5 GT/s, 128b/130b above) times 0.76, the share NCCL's PCI_BW
// (12 GB/s for Gen3 x16, 15.75 raw) takes. 0: not given.
std::int64_t pcie_link_mbps(const std::vector<std::pair<std::string, std::string>> &a) {
  const std::string *s = attr(a, "link_speed"), *w = attr(a, "link_width");
  if (!s || !w || s->empty() || w->empty()) return 0;
  const double gts = std::strtod(s->c_str(), nullptr);
  const long width = std::strtol(w->c_str(), nullptr, 10);
  if (!(gts > 0) || width <= 0) return 0;
  const double enc = gts <= 5.0 ? 0.8 : 128.0 / 130.0;
  return static_cast<std::int64_t>(gts * 125.0 * enc * static_cast<double>(width) * 0.76);
}

// NCCL's inter-socket bandwidths (NVIDIA/nccl graph/topo.h): Intel QPI 6, Skylake and later
// (model >= 85) 10, AMD 16 GB/s; others 6.
std::int64_t socket_mbps(const topo::Numa &n) {
  const std::string *vendor = attr(n.attrs, "vendor"), *model = attr(n.attrs, "modelid");
  if (vendor && *vendor == "AuthenticAMD") return 16000;
  if (vendor && *vendor == "GenuineIntel") return model && std::atoi(model->c_str()) >= 85 ? 10000 : 6000;
  return 6000;
}

double log2c(int n) { return n > 1 ? std::ceil(std::log2(static_cast<double>(n))) : 0.0; }
double chunks(double bytes, double bank) { return std::max(1.0, std::ceil(bytes / bank)); }
bool has(const char *name, const char *part) { return std::strstr(name, part) != nullptr; }

constexpr double kDefaultPcie = 12000;  // NCCL's PCI_BW (Gen3 x16) where the file gives none
constexpr double kDefaultNet = 12500;   // 100 Gb/s where no NIC speed is known

// The links the formulas read (MB/s = bytes per microsecond).
struct Bw {
  double all;   // to every peer of the island at once (fused, oneshot, twoshot, direct, banks)
  double pair;  // to one ring neighbour (nvring)
  double pcie;  // a GPU's copies to and from host memory (staged)
  double hop;   // between the device engine's nodes (islands: host memory; nodes: the NIC)
};

Bw bandwidths(const CostLinks &l) {
  Bw b;
  b.pcie = l.pcie_mbps > 0 ? static_cast<double>(l.pcie_mbps) : kDefaultPcie;
  const auto cls = static_cast<topo::TopoClass>(l.cls);
  const bool nv = cls == topo::TopoClass::NvlinkAll || cls == topo::TopoClass::Islands;
  b.all = nv && l.nv_all_mbps > 0 ? static_cast<double>(l.nv_all_mbps) : b.pcie;
  b.pair = l.nv_pair_mbps > 0 ? static_cast<double>(l.nv_pair_mbps) : b.pcie;
  // Between islands of one host: each piece goes device -> host -> device (the pipelined
  // channel), across the sockets where the node has several (conservative: the islands
  // may sit on one); between hosts also through the NIC.
  b.hop = std::min(b.pcie, kCostConstants.host_copy_mbps);
  if (l.sys_mbps > 0) b.hop = std::min(b.hop, static_cast<double>(l.sys_mbps));
  if (l.net_hop) b.hop = std::min(b.hop, l.net_mbps > 0 ? static_cast<double>(l.net_mbps) : kDefaultNet);
  return b;
}

}  // namespace

CostLinks gpu_cost_links(const topo::NodeTopo &t, int gpu, topo::TopoClass cls, std::uint64_t bank_bytes,
                         bool net_hop) {
  CostLinks l;
  const int n = static_cast<int>(t.gpus.size());
  if (gpu < 0 || gpu >= n || cls == topo::TopoClass::OneGpu || cls == topo::TopoClass::NoGpu) return l;
  const topo::Gpu &g = t.gpus[gpu];
  l.valid = 1;
  l.cls = static_cast<std::int64_t>(cls);
  l.bank_bytes = static_cast<std::int64_t>(bank_bytes);
  l.net_hop = net_hop ? 1 : 0;
  const std::int64_t link = nvlink_mbps(g.sm);
  if (g.nvswitch_links > 0) {
    // Through NVSwitches one peer can use all of a GPU's links, and so can all of them.
    l.nv_all_mbps = l.nv_pair_mbps = g.nvswitch_links * link;
  } else if (gpu < static_cast<int>(t.nvlinks.size())) {
    int sum = 0, narrowest = 0;
    for (int j = 0; j < n && j < static_cast<int>(t.nvlinks[gpu].size()); ++j) {
      const int k = j == gpu ? 0 : t.nvlinks[gpu][j];
      if (k <= 0) continue;
      sum += k;
      narrowest = narrowest ? std::min(narrowest, k) : k;
    }
    l.nv_all_mbps = sum * link;
    l.nv_pair_mbps = narrowest * link;
  }
  // The narrowest PCIe link from the GPU up to its CPU.
  std::int64_t pcie = 0;
  const int npci = static_cast<int>(t.pci.size());
  for (int p = g.pci, hops = 0; p >= 0 && p < npci && hops < 64; p = t.pci[p].parent, ++hops) {
    const std::int64_t m = pcie_link_mbps(t.pci[p].attrs);
    if (m > 0) pcie = pcie ? std::min(pcie, m) : m;
  }
  l.pcie_mbps = pcie > 0 ? pcie : static_cast<std::int64_t>(kDefaultPcie);
  if (t.numa.size() > 1) {
    const int numa = g.numa >= 0 && g.numa < static_cast<int>(t.numa.size()) ? g.numa : 0;
    l.sys_mbps = socket_mbps(t.numa[numa]);
  }
  if (!t.nics.empty()) {
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i) all[i] = i;
    const int nic = topo::choose_nics(t, all)[gpu];
    if (nic >= 0 && t.nics[nic].speed_mbps > 0) l.net_mbps = t.nics[nic].speed_mbps / 8;  // Mb/s -> MB/s
  }
  return l;
}

CostLinks agree_cost_links(const CostLinks &lo, const CostLinks &hi, const char **why) {
  CostLinks l = lo;  // the bottleneck of every bandwidth
  *why = nullptr;    // static text only: no allocation once the ranks have agreed
  if (lo.valid != 1 || hi.valid != 1)
    *why = "some rank's GPU is not in its node topology, its node has one GPU, or it sets GCOLL_COST_MODEL=0";
  else if (lo.cls != hi.cls)
    *why = "the nodes' GPUs differ in class (gcoll_info --topology: class)";
  else if (lo.bank_bytes != hi.bank_bytes)
    *why = "GCOLL_DEVICE_CHUNK_SIZE differs between the ranks";
  else if (lo.net_hop != hi.net_hop)
    *why = "the ranks differ on whether the network is between nodes (GCOLL_RANKS_PER_NODE)";
  l.valid = *why ? 0 : 1;
  return l;
}

std::uint64_t whole_bytes(const CollArgs &a, int ranks) {
  const std::uint64_t b = a.bytes(), n = static_cast<std::uint64_t>(std::max(ranks, 1));
  switch (a.coll) {
    case Coll::Allgather:
    case Coll::Alltoall:
    case Coll::Reduce_scatter_block: return b * n;
    default: return b;
  }
}

double bus_factor(Coll c, int ranks) {
  const double n = std::max(ranks, 1);
  switch (c) {
    case Coll::Allreduce: return 2.0 * (n - 1) / n;
    case Coll::Allgather:
    case Coll::Allgatherv:
    case Coll::Reduce_scatter:
    case Coll::Reduce_scatter_block:
    case Coll::Alltoall: return (n - 1) / n;
    default: return 1.0;  // bcast, reduce
  }
}

double predict_us(const Algorithm &algo, const CollArgs &a, const Topology &t, const CostLinks &l) {
  const CostConstants &K = kCostConstants;
  const Bw bw = bandwidths(l);
  // Rank-uniform sizes only: the communicator, its nodes, and the largest node (islands
  // may differ in size: a rank's own local_size would give its island's ranks another
  // pick than the others').
  int L = 1;
  for (const auto &m : t.members) L = std::max(L, static_cast<int>(m.size()));
  if (t.members.empty()) L = std::max(t.local_size, 1);
  const int P = std::max(t.size, 1), N = std::max(t.num_nodes, 1);
  const double W = static_cast<double>(whole_bytes(a, P));
  const double bank = l.bank_bytes > 0 ? static_cast<double>(l.bank_bytes) : 8.0 * 1024 * 1024;
  const double bus_all = bus_factor(a.coll, P) * W, bus_in = bus_factor(a.coll, L) * W;
  const Coll c = a.coll;
  const char *name = algo.name;
  // The engine declines; the caller copies to pinned host memory, the MPI runs its host
  // collective (log2 P steps, twice for an allreduce), the caller copies back.
  if (std::strcmp(name, "staged") == 0)
    return 2.0 * (K.copy_us + W / bw.pcie) + K.mpi_step_us * log2c(P) * (c == Coll::Allreduce ? 2.0 : 1.0) +
           bus_all / K.mpi_host_mbps;
  // One kernel per rank and bank-sized op: publish, wait for the peers' flags, read every
  // peer's bank (an allreduce reads (L-1) x W, a bcast's root serves L-1 readers).
  if (has(name, "fused")) {
    const double op = static_cast<double>(a.bytes());
    const double vol = c == Coll::Allreduce || c == Coll::Bcast ? (L - 1) * W
                       : c == Coll::Allgather                    ? (L - 1) * op
                                                                 : bus_in;
    return chunks(op, bank) * (K.launch_us + K.device_sync_us) + vol / bw.all;
  }
  // Reading peers' buffers in place: reduce-scatter (+ allgather), three host round trips
  // for the allreduce, two for its first half; no chunking.
  if (has(name, "twoshot")) {
    if (c == Coll::Allreduce) return 2.0 * K.launch_us + 3.0 * K.host_sync_us + bus_in / bw.all;
    return K.launch_us + 2.0 * K.host_sync_us + bus_in / bw.all;
  }
  // Each rank copies or reduces its part reading every peer in place (alltoall,
  // allgatherv: a copy per peer; the reductions: one kernel over all peers; reduce: the
  // root takes (L-1)/L of the message from its peers).
  if (has(name, "direct")) {
    const double vol = c == Coll::Reduce ? (L - 1.0) / L * W : bus_in;
    const double launches = is_reduction(c) ? 1.0 : std::max(L - 1, 1);
    return launches * K.launch_us + 2.0 * K.host_sync_us + vol / bw.all;
  }
  // Along the NVLink ring, a bank at a time, each step a host round trip: the slowest
  // link (the narrowest bundle) bounds it. Root-based collectives are a pipelined chain
  // (L - 1 + chunks - 1 steps of a bank); alltoall relays each block L/2 hops on average.
  // Across nodes (nvring_hier.cc): inside each node along the ring (the reductions a ring
  // reduce-scatter and allgather, the others as on one node), then the rails: each rank's
  // slice S = W / L (allreduce ring: 2 (N-1) steps, 2 (N-1)/N S; reduce binomial: log2 N
  // steps of S; reduce_scatter, allgather: N-1 steps, (N-1)/N S), bcast the whole message
  // binomial on one rail, alltoall pairwise (N-1)/N W per rank.
  if (has(name, "nvring") && N > 1) {
    const double step = K.launch_us + K.host_sync_us + K.chunk_us;
    const bool red = is_reduction(c);
    const double inner = c == Coll::Alltoall ? bus_factor(c, L) * W * L / 2.0 : red ? 2.0 * (L - 1.0) / L * W
                                                                                   : bus_factor(c, L) * W;
    double us = c == Coll::Bcast ? ((L - 1) + chunks(W, bank) - 1) * step + W / bw.pair
                                 : (red ? 2.0 : 1.0) * (L - 1) * chunks(W / L, bank) * step + inner / bw.pair;
    const double slice = W / L;
    if (c == Coll::Bcast)
      us += log2c(N) * (K.rail_step_us + W / bw.hop);
    else if (c == Coll::Allreduce)
      us += 2.0 * (N - 1) * K.rail_step_us + 2.0 * (N - 1.0) / N * slice / bw.hop;
    else if (c == Coll::Reduce)
      us += log2c(N) * K.rail_step_us + slice / bw.hop;
    else
      us += (N - 1) * K.rail_step_us + (N - 1.0) / N * (c == Coll::Alltoall ? W : slice) / bw.hop;
    return us;
  }
  if (has(name, "nvring")) {
    const double step = K.launch_us + K.host_sync_us + K.chunk_us;  // a copy or reduction, then a sync
    if (c == Coll::Bcast || c == Coll::Reduce) return ((L - 1) + chunks(W, bank) - 1) * step + W / bw.pair;
    const double steps = (c == Coll::Allreduce ? 2.0 : 1.0) * (L - 1);
    const double vol = c == Coll::Alltoall ? bus_in * L / 2.0 : bus_in;
    return steps * chunks(W / L, bank) * step + vol / bw.pair;
  }
  // The bank algorithms (oneshot, rd, ring, rabenseifner, binomial, scatter_ag, bruck,
  // node, hier, and any other name): inside the node (island) through the banks, a bank
  // at a time (each phase a device operation, a copy into the bank or a reduction or copy
  // out of the peers' banks, and a host round trip); between the device engine's nodes
  // along the rails.
  double us = K.launch_us;  // the input into my bank (or the root's), a bank at a time
  if (L > 1) {
    const bool one = has(name, "oneshot") || has(name, "binomial");  // every rank reads the whole message
    const double phases = one || has(name, "node") ? 2.0 : 3.0;
    const double vol = one ? (L - 1) * W : std::max(bus_in, (L - 1.0) / L * W);
    us += chunks(W, bank) * (phases * (K.launch_us + K.host_sync_us) + K.chunk_us) + vol / bw.all;
  }
  if (N > 1) {
    const double slice = W / L;  // each rail carries its slice
    double steps, vol;
    if (std::strcmp(name, "rd") == 0 || has(name, "oneshot")) {
      steps = log2c(N);
      vol = log2c(N) * slice;
    } else if (has(name, "rabenseifner")) {
      steps = 2.0 * log2c(N);
      vol = 2.0 * (N - 1.0) / N * slice;
    } else if (has(name, "binomial")) {  // along one rail, the whole message
      steps = log2c(N);
      vol = log2c(N) * W;
    } else if (has(name, "scatter_ag")) {
      steps = log2c(N);
      vol = log2c(N) * slice;
    } else if (has(name, "bruck")) {
      steps = log2c(N);
      vol = (N - 1.0) / N * slice;
    } else {  // ring, hier and unknown names: a ring along the rails
      const double twice = c == Coll::Allreduce || has(name, "allreduce") ? 2.0 : 1.0;
      steps = twice * (N - 1);
      vol = twice * (N - 1.0) / N * slice;
    }
    us += steps * K.rail_step_us + vol / bw.hop;
  }
  return us;
}

const Algorithm *model_pick(const CollArgs &a, const Topology &t, const CostLinks &l) {
  if (l.valid != 1) return nullptr;
  const Algorithm *best = nullptr;
  double best_us = 0;
  for (const Algorithm &algo : algorithms()) {
    // Among the engine's algorithms only: the model never stages a call the engine can
    // run (issue 31: no staged calls on any node shape). Its constants come from one GPU
    // shared by time-sliced ranks, where a small bank op lost to two copies and the MPI;
    // that it predicts @staged faster on a node of several GPUs is printed
    // (gcoll_info --topology) but not acted on until measured there.
    if (algo.coll != a.coll || !algo.run || !algo.supports(a, t)) continue;
    const double us = predict_us(algo, a, t, l);
    if (!best || us < best_us) {
      best = &algo;
      best_us = us;
    }
  }
  return best;
}

topo::TopoClass model_device_topology(const topo::NodeTopo &t, int ranks, Topology *dt, CostLinks *links) {
  const Config &c = config();
  const int g = static_cast<int>(t.gpus.size());
  *links = CostLinks{};
  if (g == 0 || ranks <= 0) {
    compute_layout(std::vector<int>(std::max(ranks, 1), 0), 0, dt);
    return topo::TopoClass::NoGpu;
  }
  const NodeIslands isl = model_node_islands(t, ranks, dt);  // as device_paths_text
  // What the ranks would agree on (each its GPU's view; min and max).
  std::int64_t lo[CostLinks::kFields], hi[CostLinks::kFields];
  for (int r = 0; r < ranks; ++r) {
    std::int64_t v[CostLinks::kFields];
    gpu_cost_links(t, r % g, isl.cls, c.device_chunk_size, false).to(v);
    for (int i = 0; i < CostLinks::kFields; ++i) {
      lo[i] = r ? std::min(lo[i], v[i]) : v[i];
      hi[i] = r ? std::max(hi[i], v[i]) : v[i];
    }
  }
  CostLinks l, h;
  l.from(lo);
  h.from(hi);
  const char *why = nullptr;
  *links = agree_cost_links(l, h, &why);
  return isl.cls;
}

namespace {

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string gbps(std::int64_t mbps) { return fixed(static_cast<double>(mbps) / 1000.0, 1) + " GB/s"; }

// Microseconds as nccl-tests prints them (one decimal), milliseconds from 10 ms.
std::string time_text(double us) { return us >= 10000 ? fixed(us / 1000.0, 1) + " ms" : fixed(us, 1) + " us"; }

}  // namespace

std::string cost_model_text(const topo::NodeTopo &t, int ranks) {
  const Config &c = config();
  Topology dt;
  CostLinks l;
  const topo::TopoClass cls = model_device_topology(t, ranks, &dt, &l);
  if (l.valid != 1)
    return std::string("cost model: not used (") + topo::topo_class_name(cls) + "): the default rules choose\n";
  const Bw bw = bandwidths(l);
  std::string out = "cost model (docs/cost-model.md; its constants are untested on a GPU): links ";
  out += "NVLink all peers " + gbps(l.nv_all_mbps) + ", one peer " + gbps(l.nv_pair_mbps) + ", PCIe " +
         gbps(l.pcie_mbps) + (l.sys_mbps ? ", between sockets " + gbps(l.sys_mbps) : std::string()) +
         (l.net_mbps ? ", NIC " + gbps(l.net_mbps) : std::string()) + "; between islands " +
         gbps(static_cast<std::int64_t>(bw.hop)) + "\n";
  out += "  selected on device buffers (GCOLL_TUNE, then the model), predicted time and bus bandwidth "
         "(nccl-tests' size and busbw):\n";
  const std::uint64_t sizes[] = {8, 64ull << 10, 16ull << 20, 1ull << 30};
  const char *size_names[] = {"8 B", "64 KiB", "16 MiB", "1 GiB"};
  const int P = dt.size;
  std::vector<int> counts(static_cast<std::size_t>(P));
  std::vector<std::size_t> block_bytes(static_cast<std::size_t>(P)), offsets(static_cast<std::size_t>(P));
  for (Coll coll : {Coll::Allreduce, Coll::Bcast, Coll::Allgather, Coll::Reduce_scatter_block, Coll::Reduce,
                    Coll::Reduce_scatter, Coll::Alltoall, Coll::Allgatherv}) {
    out += std::string("    ") + coll_name(coll) + ":";
    for (int k = 0; k < 4; ++k) {
      CollArgs a;
      a.coll = coll;
      a.mem = MemKind::Device;
      a.zero_copy = true;
      a.fused = c.device_fused != FusedMode::Off && dt.num_nodes == 1;
      a.sendbuf = &a;  // not in place
      const bool reduces = is_reduction(coll);
      a.dtype = reduces ? DType::Float : DType::Uint8;
      a.elem = reduces ? 4 : 1;
      const bool per_rank = coll == Coll::Allgather || coll == Coll::Alltoall || coll == Coll::Reduce_scatter_block;
      const std::uint64_t part = per_rank ? sizes[k] / static_cast<std::uint64_t>(P) : sizes[k];
      a.count = std::max<std::size_t>(1, static_cast<std::size_t>(part / a.elem));
      for (int r = 0; r < P; ++r) {
        const std::size_t per = a.count / static_cast<std::size_t>(P);
        counts[static_cast<std::size_t>(r)] = static_cast<int>(std::max<std::size_t>(1, per));
        block_bytes[static_cast<std::size_t>(r)] = a.count / static_cast<std::size_t>(P);
        offsets[static_cast<std::size_t>(r)] = block_bytes[static_cast<std::size_t>(r)] * static_cast<std::size_t>(r);
      }
      a.counts = counts.data();
      a.block_bytes = block_bytes.data();
      a.block_offsets = offsets.data();
      a.model = &l;
      const Algorithm *al = select_algorithm(user_tune_rules(), a, dt);
      out += std::string(k ? ", " : " ") + size_names[k] + " ";
      if (!al) {
        out += "-";
        continue;
      }
      const double us = predict_us(*al, a, dt, l);
      const double busbw = bus_factor(coll, P) * static_cast<double>(whole_bytes(a, P)) / us / 1000.0;
      out += std::string("@") + al->name + " " + time_text(us) + " " + fixed(busbw, busbw < 1 ? 3 : 1) + " GB/s";
      // Staging predicted faster: said, not chosen (model_pick runs the engine's algorithms).
      for (const Algorithm &st : algorithms())
        if (st.coll == coll && !st.run && st.supports(a, dt) && al->run) {
          const double sus = predict_us(st, a, dt, l);
          if (sus < us) out += " (@staged " + time_text(sus) + ")";
        }
    }
    out += "\n";
  }
  return out;
}

}  // namespace gcoll
