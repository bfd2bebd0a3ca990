// The device topology of a communicator (device_topo.h): verdicts, the data probe, islands.
#include "coll/device_topo.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "boot/bootstrap.h"
#include "cuda/device.h"
#include "coll/tune.h"
#include "cuda/runtime.h"
#include "mem/device_scope.h"
#include "topo/detect.h"

namespace gcoll {

namespace {

constexpr std::size_t kBusBytes = 16;  // a bus id as exchanged ("0000:07:00.0" + NUL)
constexpr std::size_t kSlot = 64;      // the probe's bytes per writer

using Matrix = std::vector<std::vector<bool>>;

// What this process knows of a pair of GPUs (its own, a peer's: bus ids), for the
// process's life: a communicator created later over the same GPUs neither asks CUDA nor
// probes again. Guarded: communicators may be created from several threads.
struct PairFacts {
  signed char verdict = -1;  // may_p2p: -1 not asked yet
  signed char probe = -1;    // the data probe: -1 not run, 0 failed (for good), 1 passed
};
std::mutex g_pairs_mu;
std::map<std::pair<std::string, std::string>, PairFacts> g_pairs;

PairFacts pair_facts(const std::string &mine, const std::string &peer) {
  std::lock_guard<std::mutex> lk(g_pairs_mu);
  const auto it = g_pairs.find({mine, peer});
  return it == g_pairs.end() ? PairFacts{} : it->second;
}

// Records what a discovery found (a failure is never overwritten by a later pass).
void remember_pair(const std::string &mine, const std::string &peer, int verdict, int probe) {
  std::lock_guard<std::mutex> lk(g_pairs_mu);
  PairFacts &f = g_pairs[{mine, peer}];
  if (verdict >= 0) f.verdict = static_cast<signed char>(verdict);
  if (probe >= 0 && f.probe != 0) f.probe = static_cast<signed char>(probe);
}

// A rank's row of the verdict gather, per peer: its verdict and what it knows of the
// pair's probe.
constexpr unsigned char kMay = 1, kProbeKnown = 2, kProbePassed = 4;

// The probe's pattern written by local rank w into owner o's slot for w.
void pattern(int w, int o, unsigned char *out) {
  for (std::size_t k = 0; k < kSlot; ++k)
    out[k] = static_cast<unsigned char>(0xa5 ^ (w * 31 + o * 17 + static_cast<int>(k) * 7));
}

// My GPU's ordinal for a bus id in this process (-1: not visible here).
int ordinal_of(const std::string &bus) {
  cuda::Runtime &rt = cuda::runtime();
  const int n = rt.device_count();
  for (int d = 0; d < n; ++d) {
    cuda::DeviceInfo di;
    if (ok(rt.device_info(d, &di)) && topo::pci_bus_id_normalise(di.pci_bus_id) == bus) return d;
  }
  return -1;
}

// Whether this rank (GPU `mine`, ordinal `gpu`) may use P2P to a peer's GPU `peer`, before
// the probe: the node topology under the settings, then CUDA.
bool may_p2p(const std::string &mine, int gpu, const std::string &peer) {
  if (mine.empty() || peer.empty()) return false;
  if (mine == peer) return true;
  const Config &c = config();
  if (c.p2p_disable) return false;
  const topo::NodeTopo &t = topo::node_topology();
  const int a = t.gpu_index(mine), b = t.gpu_index(peer);
  if (a >= 0 && b >= 0 && !topo::p2p_allowed(t, a, b, c.p2p_level, c.p2p_disable)) return false;
  if (c.p2p_level == P2pLevel::Loc) return false;  // never between different GPUs
  // CUDA must see the peer's GPU (IPC maps it there) and allow peer access to it.
  const int peer_dev = ordinal_of(peer);
  return peer_dev >= 0 && cuda::runtime().can_access_peer(gpu, peer_dev);
}

bool nvlink_pair(const std::string &x, const std::string &y) {
  // Ranks on one GPU never ask: node_topology() detects (hwloc, NVML) at its first use,
  // which a node whose ranks share a GPU does not need.
  if (x.empty() || y.empty() || x == y) return false;
  const topo::NodeTopo &t = topo::node_topology();
  const int a = t.gpu_index(x), b = t.gpu_index(y);
  return a >= 0 && b >= 0 && a != b && topo::gpu_path(t, a, b) == topo::PathClass::Nv;
}

// Waits for `s` with a deadline (a probe's write through a broken mapping must not hang
// setup): false when it did not finish in time or failed.
bool wait_stream(cuda::Runtime &rt, cuda::Stream s, cuda::Event e, double timeout_s) {
  if (!ok(rt.event_record(e, s))) return false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    bool done = false;
    if (!ok(rt.event_query(e, &done))) return false;
    if (done) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// The data probe over the node (collective over `boot`, the node's ranks): for the pairs
// marked in `p2p` with distinct GPUs, each rank writes its pattern into its peer's probe
// buffer through the peer's IPC mapping; the owner checks what arrived. Returns, per
// local rank, the row "the owner verified my write" as a matrix over the node (gathered):
// verified[o][w]: w's write reached o.
Status probe(Bootstrap &boot, int gpu, const Matrix &p2p, const Matrix &same, double timeout_s, Matrix *verified) {
  const int n = boot.size(), me = boot.rank();
  cuda::Runtime &rt = cuda::runtime();
  cuda::Driver &drv = cuda::driver();
  DeviceScope scope(gpu);
  void *buf = nullptr;
  cuda::Stream s = nullptr;
  cuda::Event e = nullptr;
  struct Rec {
    int valid;
    cuda::IpcHandle h;
  } rec{};
  std::vector<unsigned char> zero(kSlot * n, 0);
  bool ready = ok(scope.status()) && ok(rt.stream_create(&s)) && ok(rt.event_create(&e)) &&
               ok(rt.malloc_device(&buf, kSlot * n)) && ok(rt.memcpy_async(buf, zero.data(), zero.size(), s)) &&
               wait_stream(rt, s, e, timeout_s) && ok(drv.ipc_export(reinterpret_cast<std::uintptr_t>(buf), &rec.h));
  rec.valid = ready ? 1 : 0;
  std::vector<Rec> all(n);
  Status st = boot.allgather(&rec, sizeof rec, all.data());
  // My writes into my peers' buffers (a failed open or copy: the owner finds no pattern).
  if (ok(st) && ready) {
    unsigned char pat[kSlot];
    for (int q = 0; q < n; ++q) {
      if (q == me || same[me][q] || !p2p[me][q] || !all[q].valid) continue;
      void *peer = nullptr;
      if (!ok(drv.ipc_open(all[q].h, &peer))) continue;  // counts as not verified
      pattern(me, q, pat);
      const bool done = ok(rt.memcpy_async(static_cast<char *>(peer) + kSlot * me, pat, kSlot, s)) &&
                        wait_stream(rt, s, e, timeout_s);
      drv.ipc_close(peer);
      if (!done) GCOLL_INFO("P2P probe: my write to local rank %d did not complete", q);
    }
  }
  // Everyone has written (or given up) before the owners look.
  if (ok(st)) st = boot.barrier();
  std::vector<unsigned char> got(kSlot * n, 0), mine(n, 0);
  if (ok(st) && ready && ok(rt.memcpy_async(got.data(), buf, got.size(), s)) && wait_stream(rt, s, e, timeout_s)) {
    unsigned char pat[kSlot];
    for (int w = 0; w < n; ++w) {
      if (w == me) continue;
      pattern(w, me, pat);
      mine[w] = std::memcmp(got.data() + kSlot * w, pat, kSlot) == 0 ? 1 : 0;
    }
  }
  std::vector<unsigned char> rows(static_cast<std::size_t>(n) * n);
  if (ok(st)) st = boot.allgather(mine.data(), n, rows.data());
  // Nobody frees its buffer before every peer has closed its mapping (closed above).
  if (buf) rt.free_device(buf);
  if (e) rt.event_destroy(e);
  if (s) rt.stream_destroy(s);
  if (!ok(st)) return st;
  verified->assign(n, std::vector<bool>(n, false));
  for (int o = 0; o < n; ++o)
    for (int w = 0; w < n; ++w) (*verified)[o][w] = rows[static_cast<std::size_t>(o) * n + w] != 0;
  return Status::Ok;
}

}  // namespace

NodeIslands node_islands(const Matrix &same_gpu, const Matrix &p2p, const Matrix &nvlink) {
  const int n = static_cast<int>(p2p.size());
  NodeIslands r;
  Matrix adj(n, std::vector<bool>(n, false));
  bool distinct = false, any_p2p = false, all_p2p = true, all_nv = true;
  for (int p = 0; p < n; ++p)
    for (int q = 0; q < n; ++q) {
      adj[p][q] = p == q || same_gpu[p][q] || p2p[p][q];
      if (p == q || same_gpu[p][q]) continue;
      distinct = true;
      any_p2p = any_p2p || p2p[p][q];
      all_p2p = all_p2p && p2p[p][q];
      all_nv = all_nv && p2p[p][q] && nvlink[p][q];
    }
  const std::vector<int> part = topo::clique_partition(adj);
  r.island.assign(n, 0);
  std::vector<int> first(n, -1);
  r.count = 0;
  for (int p = 0; p < n; ++p) {
    if (first[part[p]] < 0) {
      first[part[p]] = p;
      ++r.count;
    }
    r.island[p] = first[part[p]];
  }
  // Not one clique: a ring along NVLink, over the GPUs (a GPU's ranks consecutive).
  if (r.count > 1) {
    std::vector<int> gpu_of(n, -1), rep;  // rank -> GPU index; GPU -> its first rank
    for (int p = 0; p < n; ++p) {
      for (int g = 0; g < static_cast<int>(rep.size()) && gpu_of[p] < 0; ++g)
        if (same_gpu[p][rep[g]]) gpu_of[p] = g;
      if (gpu_of[p] < 0) {
        gpu_of[p] = static_cast<int>(rep.size());
        rep.push_back(p);
      }
    }
    const int g = static_cast<int>(rep.size());
    Matrix link(g, std::vector<bool>(g, false));
    std::vector<int> all(g);
    for (int x = 0; x < g; ++x) {
      all[x] = x;
      for (int y = 0; y < g; ++y) link[x][y] = x != y && nvlink[rep[x]][rep[y]] && p2p[rep[x]][rep[y]];
    }
    const std::vector<int> cycle = g >= 3 ? topo::find_ring(link, all) : std::vector<int>{};
    for (int x : cycle)
      for (int p = 0; p < n; ++p)
        if (gpu_of[p] == x) r.ring.push_back(p);
  }
  if (!distinct)
    r.cls = topo::TopoClass::OneGpu;
  else if (all_p2p)
    r.cls = all_nv ? topo::TopoClass::NvlinkAll : topo::TopoClass::PcieAll;
  else
    r.cls = any_p2p ? topo::TopoClass::Islands : topo::TopoClass::NoP2p;
  return r;
}

Status discover_device_topology(MPI_Comm comm, const Topology &host, int gpu, double timeout_s, DeviceTopology *out) {
  const Config &c = config();
  const int n = host.local_size, me = host.local_rank;
  MpiBootstrap node(host.node_comm);
  // Asked for a dump (GCOLL_TOPO_DUMP_FILE): detect now, even where the ranks share one
  // GPU and nothing below needs the node topology (found on an H100: no dump was written).
  // Given a file (GCOLL_TOPO_FILE): read it now too, so that a file that cannot be used
  // is reported once for the job at the device engine's setup agreement (base/log.h:
  // warn_shared), not by every rank when staging memory is placed later.
  if (!c.topo_dump_file.empty() || !c.topo_file.empty()) (void)topo::node_topology();
  // 1. The ranks' GPUs, and (across nodes) each one's distance to a NIC (step 6).
  struct Gpu {
    char bus[kBusBytes];
    int nic;
  } mine{};
  {
    cuda::DeviceInfo di;
    if (ok(cuda::runtime().device_info(gpu, &di))) {
      const std::string b = topo::pci_bus_id_normalise(di.pci_bus_id);
      std::snprintf(mine.bus, sizeof mine.bus, "%s", b.c_str());
    }
  }
  out->gpu_bus_id = mine.bus;
  // (One node has no network: no order to choose, and no detection to start for it.)
  mine.nic = host.num_nodes > 1 ? nic_distance(topo::node_topology(), out->gpu_bus_id) : 0;
  std::vector<Gpu> gpus(n);
  if (!ok(node.allgather(&mine, sizeof mine, gpus.data()))) return Status::ErrComm;
  std::vector<std::string> of(n);
  std::vector<int> nic(n);
  for (int p = 0; p < n; ++p) {
    of[p].assign(gpus[p].bus, strnlen(gpus[p].bus, kBusBytes));
    nic[p] = gpus[p].nic;
  }
  // 2. Each rank's verdicts, gathered: a pair is P2P where both say so. With them, what
  // each rank's process knows of the pair's probe (kept from earlier communicators).
  std::vector<unsigned char> row(n, 0), rows(static_cast<std::size_t>(n) * n);
  for (int q = 0; q < n; ++q) {
    if (q == me) {
      row[q] = kMay;
      continue;
    }
    if (of[me].empty() || of[q].empty() || of[me] == of[q]) {
      row[q] = may_p2p(of[me], gpu, of[q]) ? kMay : 0;
      continue;
    }
    PairFacts f = pair_facts(of[me], of[q]);
    if (f.verdict < 0) {
      f.verdict = may_p2p(of[me], gpu, of[q]) ? 1 : 0;
      remember_pair(of[me], of[q], f.verdict, -1);
    }
    row[q] = static_cast<unsigned char>((f.verdict ? kMay : 0) | (f.probe >= 0 ? kProbeKnown : 0) |
                                        (f.probe == 1 ? kProbePassed : 0));
  }
  if (!ok(node.allgather(row.data(), n, rows.data()))) return Status::ErrComm;
  const auto said = [&](int p, int q) { return rows[static_cast<std::size_t>(p) * n + q]; };
  Matrix same(n, std::vector<bool>(n, false)), p2p(n, std::vector<bool>(n, false)), nv(n, std::vector<bool>(n, false));
  // to_probe: P2P pairs of distinct GPUs that one of the two processes has not probed;
  // failed_before: pairs that one of them saw fail. Both from the gathered rows alone.
  Matrix to_probe = same, failed_before = same;
  bool probe_needed = false;
  for (int p = 0; p < n; ++p)
    for (int q = 0; q < n; ++q) {
      same[p][q] = !of[p].empty() && of[p] == of[q];
      p2p[p][q] = (said(p, q) & kMay) && (said(q, p) & kMay);
      nv[p][q] = nvlink_pair(of[p], of[q]);
      if (p == q || same[p][q] || !p2p[p][q]) continue;
      const bool known = (said(p, q) & kProbeKnown) && (said(q, p) & kProbeKnown);
      failed_before[p][q] = ((said(p, q) & kProbeKnown) && !(said(p, q) & kProbePassed)) ||
                            ((said(q, p) & kProbeKnown) && !(said(q, p) & kProbePassed));
      to_probe[p][q] = c.p2p_check && !known;
      probe_needed = probe_needed || to_probe[p][q];
    }
  // 3. The data probe of the pairs not known yet (rank-uniform: every rank saw the same
  // gathered rows).
  Matrix verified(n, std::vector<bool>(n, true));
  if (probe_needed) {
    const Status st = probe(node, gpu, to_probe, same, timeout_s > 0 ? timeout_s : 10.0, &verified);
    if (!ok(st)) return Status::ErrComm;
  }
  out->probe_failures = 0;
  std::string failed;
  bool failed_now = false;
  for (int p = 0; p < n; ++p)
    for (int q = p + 1; q < n; ++q) {
      if (same[p][q] || !p2p[p][q]) continue;
      const bool probed_bad = to_probe[p][q] && !(verified[p][q] && verified[q][p]);
      if (!probed_bad && !failed_before[p][q]) continue;
      p2p[p][q] = p2p[q][p] = false;
      // Count each GPU pair once (ranks sharing GPUs repeat pairs).
      bool seen = false;
      for (int a = 0; a <= p && !seen; ++a)
        for (int b = a + 1; b < n && !seen; ++b)
          if ((a < p || b < q) && of[a] == of[p] && of[b] == of[q]) seen = true;
      if (seen) continue;
      ++out->probe_failures;
      failed_now = failed_now || probed_bad;
      failed += (failed.empty() ? "" : ", ") + of[p] + " <-> " + of[q];
    }
  // What my process learned of its pairs: the outcome of each probed pair (and a failure
  // another process saw). Counted per peer GPU: probed now, or known to both processes.
  {
    std::vector<std::string> probed, hits;
    for (int q = 0; q < n; ++q) {
      if (q == me || same[me][q] || !(said(me, q) & kMay) || !(said(q, me) & kMay)) continue;
      if (to_probe[me][q] || failed_before[me][q]) remember_pair(of[me], of[q], -1, p2p[me][q] ? 1 : 0);
      if (!c.p2p_check) continue;
      auto &list = to_probe[me][q] ? probed : hits;
      if (std::find(list.begin(), list.end(), of[q]) == list.end()) list.push_back(of[q]);
    }
    out->probes = static_cast<int>(probed.size());
    out->probe_cache_hits = static_cast<int>(hits.size());
    if (out->probes) process_stats().count(Counter::P2pProbes, static_cast<std::uint64_t>(out->probes));
    if (out->probe_cache_hits)
      process_stats().count(Counter::P2pProbeCacheHits, static_cast<std::uint64_t>(out->probe_cache_hits));
  }
  static std::atomic<bool> warned{false};
  if (failed_now && me == 0 && !warned.exchange(true))
    GCOLL_WARN("P2P between GPUs %s is reported but did not carry data (a write through the peer's mapping never "
               "arrived: ACS or IOMMU settings, or a VM without real peer-to-peer); those GPUs exchange through "
               "host memory. GCOLL_P2P_CHECK=0 turns this check off; GCOLL_P2P_LEVEL/GCOLL_P2P_DISABLE restrict "
               "P2P.",
               failed.c_str());
  // 4. Islands; whether any node of the communicator has several.
  out->node = node_islands(same, p2p, nv);
  // 5. One node on its NVLink ring: the node's ranks found the same ring, and a
  // communicator of one node has no other node to disagree with (host.num_nodes is the
  // same on every rank).
  if (host.num_nodes == 1 && !out->node.ring.empty()) {
    out->ring = true;
    out->topo = std::make_unique<Topology>();
    if (!ok(build_topology_islands(comm, host, 0, 0, out->topo.get()))) return Status::ErrInternal;
    out->topo->ring = out->node.ring;
    return Status::Ok;
  }
  // 6. Whether some island's ranks are not in the order of their distance to a NIC (every
  // rank of the node saw the same distances; nic[] is 0 everywhere on one node).
  bool reorder = false;
  for (int i = 0; i < n && !reorder; ++i) {
    if (out->node.island[i] != i) continue;  // i: an island's lowest local rank
    std::vector<int> d;
    for (int p = 0; p < n; ++p)
      if (out->node.island[p] == i) d.push_back(nic[p]);
    reorder = nic_order_differs(d);
  }
  // Across nodes, each node on its own NVLink ring (step 5 across nodes): whether some
  // node has no ring through all of its ranks, and whether some node's ranks, as a whole,
  // are out of NIC order (the ring keeps the whole node together).
  const bool node_reorder = nic_order_differs(nic);
  MpiBootstrap all(comm);
  long long several[4] = {out->node.count > 1 ? 1 : 0, reorder ? 1 : 0, out->node.ring.empty() ? 1 : 0,
                          node_reorder ? 1 : 0};
  if (!ok(all.max(several, 4))) return Status::ErrComm;
  // Every node has a ring through all of its ranks and the nodes are of one size (every
  // rank has a rail): the device engine's nodes are the host's, each along its ring, the
  // rails between them (host.uneven() and host.num_nodes are rank-uniform; the rest agreed
  // just now). Local ranks still go by distance to a NIC (step 6); the ring is a list of
  // local ranks, renumbered into that order.
  if (host.num_nodes > 1 && several[2] == 0 && !host.uneven()) {
    out->ring = true;
    out->split = true;
    out->nic_ordered = several[3] != 0;
    out->topo = std::make_unique<Topology>();
    if (!ok(build_topology_islands(comm, host, 0, out->nic_ordered ? nic[me] : 0, out->topo.get())))
      return Status::ErrInternal;
    Topology &t = *out->topo;
    for (int lr : out->node.ring) t.ring.push_back(t.local_of[host.members[host.node][lr]]);
    if (out->nic_ordered) process_stats().count(Counter::NicOrderedTopologies);
    if (t.local_rank == 0)
      GCOLL_INFO("device engine: node %d along its NVLink ring (%d ranks), %d rails between the nodes%s", t.node,
                 t.local_size, t.min_local, out->nic_ordered ? "; local ranks by distance to a NIC" : "");
    return Status::Ok;
  }
  out->nic_ordered = several[1] != 0;
  out->split = several[0] != 0 || out->nic_ordered;
  if (!out->split) return Status::Ok;
  out->topo = std::make_unique<Topology>();
  if (!ok(build_topology_islands(comm, host, out->node.island[me], nic[me], out->topo.get())))
    return Status::ErrInternal;
  if (out->nic_ordered) {
    process_stats().count(Counter::NicOrderedTopologies);
    const Topology &t = *out->topo;
    if (t.local_rank == 0)
      GCOLL_INFO("device engine: node %d's ranks go by distance to a NIC: it leads (communicator rank %d, %d of %d "
                 "in rank order on its host node, %s to its nearest NIC); %d rail%s",
                 t.node, t.rank, me, n,
                 nic[me] > static_cast<int>(topo::PathClass::Sys)
                     ? "no NIC"
                     : topo::path_name(static_cast<topo::PathClass>(nic[me])),
                 t.min_local, t.min_local == 1 ? "" : "s");
  }
  return Status::Ok;
}

int nic_distance(const topo::NodeTopo &t, const std::string &gpu_bus_id) {
  const int none = static_cast<int>(topo::PathClass::Sys) + 1;
  const int g = t.gpu_index(gpu_bus_id);
  if (g < 0) return none;
  int best = none;
  for (int k = 0; k < static_cast<int>(t.nics.size()); ++k)
    best = std::min(best, static_cast<int>(topo::nic_path(t, g, k)));
  return best;
}

bool nic_order_differs(const std::vector<int> &distance) {
  return !std::is_sorted(distance.begin(), distance.end());
}

std::string rail_net_device() {
  if (!cuda::usable()) return "";
  cuda::Runtime &rt = cuda::runtime();
  const int dev = rt.current_device();
  cuda::DeviceInfo di;
  if (dev < 0 || !ok(rt.device_info(dev, &di))) return "";
  const topo::NodeTopo &t = topo::node_topology();
  const int g = t.gpu_index(topo::pci_bus_id_normalise(di.pci_bus_id));
  if (g < 0 || t.nics.empty()) return "";
  std::vector<int> all(t.gpus.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  const int nic = topo::choose_nics(t, all)[g];
  if (nic < 0) return "";
  const std::string name = topo::ucx_device_name(t.nics[nic]);
  const bool sys = topo::nic_path(t, g, nic) == topo::PathClass::Sys;
  static std::atomic<bool> warned{false};
  // Where the NIC is given to UCX, a warning worth acting on (once per job: log.h); on the
  // emulated GPU, where it is not, information.
  if (sys && !config().cuda_emulate && !warned.exchange(true))
    warn_shared(SharedWarning::NicAcrossSocket,
                "GPU %s: its nearest NIC (%s) is across the socket (SYS): traffic between nodes crosses the CPUs' "
                "interconnect; UCX_NET_DEVICES chooses another",
                t.gpus[g].bus_id.c_str(), t.nics[nic].name.c_str());
  if (config().cuda_emulate) {
    if (sys) GCOLL_INFO("rail NIC of GPU %s: %s is across the socket (SYS)", t.gpus[g].bus_id.c_str(), name.c_str());
    GCOLL_INFO("rail NIC of GPU %s: %s (the emulated GPU's topology file: not applied to UCX)", t.gpus[g].bus_id.c_str(),
               name.c_str());
    return "";
  }
  return name;
}

NodeIslands model_node_islands(const topo::NodeTopo &t, int ranks, Topology *dt) {
  const Config &c = config();
  const int g = static_cast<int>(t.gpus.size());
  Matrix same(ranks, std::vector<bool>(ranks)), p2p(ranks, std::vector<bool>(ranks)), nv(ranks, std::vector<bool>(ranks));
  for (int p = 0; p < ranks; ++p)
    for (int q = 0; q < ranks; ++q) {
      const int a = p % g, b = q % g;
      same[p][q] = a == b;
      p2p[p][q] = a == b || (topo::p2p_allowed(t, a, b, c.p2p_level, c.p2p_disable) && topo::p2p_hardware(t, a, b) &&
                             !(c.p2p_check && topo::p2p_broken(t, a, b)));
      nv[p][q] = a != b && topo::gpu_path(t, a, b) == topo::PathClass::Nv;
    }
  NodeIslands isl = node_islands(same, p2p, nv);
  compute_layout(isl.ring.empty() ? isl.island : std::vector<int>(ranks, 0), 0, dt);
  dt->ring = isl.ring;
  return isl;
}

std::string device_paths_text(const topo::NodeTopo &t, int ranks) {
  const Config &c = config();
  const int g = static_cast<int>(t.gpus.size());
  if (g == 0 || ranks <= 0) return "device paths: no GPU in the topology\n";
  Topology dt;
  const NodeIslands isl = model_node_islands(t, ranks, &dt);
  const bool ring = !isl.ring.empty();
  std::string out = "device paths for " + std::to_string(ranks) + " ranks on this node: " +
                    topo::topo_class_name(isl.cls) + ", " + std::to_string(isl.count) + " P2P island" +
                    (isl.count == 1 ? "" : "s") +
                    (ring ? " (one node of the device engine along the NVLink ring)"
                          : isl.count > 1 ? " (each a node of the device engine; host memory between them)" : "") +
                    "\n";
  if (ring)
    out += "  across nodes, every node with such a ring (nodes of one size): each along its own ring, the rails "
           "between the nodes (@nvring_hier, all eight collectives)\n";
  // Step 6 across nodes: each island's ranks nearest a NIC first (the device engine's local
  // rank 0 and rail 0 first), where the node has a NIC.
  if (!t.nics.empty()) {
    std::vector<int> dist(ranks);
    for (int r = 0; r < ranks; ++r) dist[r] = nic_distance(t, t.gpus[r % g].bus_id);
    out += "  between nodes, ranks nearest a NIC first (local rank 0, rail 0, ...):";
    // (On the ring the whole node is one node of the device engine across nodes too.)
    const auto group_of = [&](int r) { return ring ? 0 : isl.island[r]; };
    for (int i = 0; i < ranks; ++i) {
      if (group_of(i) != i) continue;
      std::vector<int> order;
      for (int r = 0; r < ranks; ++r)
        if (group_of(r) == i) order.push_back(r);
      std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return dist[x] < dist[y]; });
      std::string line;
      for (int r : order)
        line += std::string(line.empty() ? "" : ", ") + "rank " + std::to_string(r) + " (" +
                (dist[r] > static_cast<int>(topo::PathClass::Sys) ? "no NIC"
                                                                   : topo::path_name(static_cast<topo::PathClass>(dist[r]))) +
                ")";
      out += (isl.count > 1 && !ring ? "\n    island " + std::to_string(i) + ": " : " ") + line;
    }
    out += "\n";
  }
  // As the engine selects: the cost model's pick where the node has links for it.
  CostLinks links;
  {
    Topology scratch;
    (void)model_device_topology(t, ranks, &scratch, &links);
  }
  const std::size_t sizes[] = {8, 64 << 10, 16 << 20};
  const char *size_names[] = {"8 B", "64 KiB", "16 MiB"};
  for (Coll coll : {Coll::Allreduce, Coll::Bcast, Coll::Allgather, Coll::Reduce_scatter_block}) {
    std::string line = std::string("  ") + coll_name(coll) + ":";
    for (int k = 0; k < 3; ++k) {
      CollArgs a;
      a.coll = coll;
      a.mem = MemKind::Device;
      a.zero_copy = true;
      a.dtype = DType::Float;
      a.elem = 4;
      a.count = sizes[k] / 4 ? sizes[k] / 4 : 1;
      a.fused = c.device_fused != FusedMode::Off && dt.num_nodes == 1;
      a.sendbuf = &a;  // not in place
      a.model = links.valid == 1 ? &links : nullptr;
      const Algorithm *al = select_algorithm(user_tune_rules(), a, dt);
      line += std::string(k ? ", " : " ") + size_names[k] + " @" + (al ? al->name : "staged");
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace gcoll
