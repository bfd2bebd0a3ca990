// The device topology's islands from a node's verdicts (coll/device_topo.h: node_islands):
// which ranks the device engine puts in one node, and the topology class the stats name.
#include <gtest/gtest.h>

#include <vector>

#include "coll/device_topo.h"
#include "topo_files.h"

namespace gcoll {
namespace {

using Matrix = std::vector<std::vector<bool>>;

// Ranks on GPUs gpu_of[r]; GPUs a, b P2P where p2p_gpu(a, b); NVLink where nv_gpu(a, b).
struct Node {
  Matrix same, p2p, nv;
  template <typename P, typename N>
  Node(const std::vector<int> &gpu_of, P p2p_gpu, N nv_gpu) {
    const int n = static_cast<int>(gpu_of.size());
    same.assign(n, std::vector<bool>(n));
    p2p = nv = same;
    for (int p = 0; p < n; ++p)
      for (int q = 0; q < n; ++q) {
        const int a = gpu_of[p], b = gpu_of[q];
        same[p][q] = a == b;
        p2p[p][q] = a != b && p2p_gpu(a, b);
        nv[p][q] = a != b && nv_gpu(a, b);
      }
  }
};

TEST(DeviceTopo, RanksOnOneGpuAreOneIsland) {
  Node n({0, 0, 0, 0}, [](int, int) { return false; }, [](int, int) { return false; });
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(r.cls, topo::TopoClass::OneGpu);
  EXPECT_EQ(r.island, (std::vector<int>{0, 0, 0, 0}));
}

TEST(DeviceTopo, AllToAllNvlinkIsOneIsland) {
  Node n({0, 1, 2, 3, 0, 1, 2, 3}, [](int, int) { return true; }, [](int, int) { return true; });
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(r.cls, topo::TopoClass::NvlinkAll);
}

TEST(DeviceTopo, PcieP2pEverywhereIsOneIslandOfClassPcie) {
  Node n({0, 1}, [](int, int) { return true; }, [](int, int) { return false; });
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(r.cls, topo::TopoClass::PcieAll);
}

// Two sockets, P2P inside each switch pair only: ranks by GPU pair.
TEST(DeviceTopo, SwitchPairsAreIslands) {
  Node n({0, 1, 2, 3}, [](int a, int b) { return a / 2 == b / 2; }, [](int, int) { return false; });
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.cls, topo::TopoClass::Islands);
  EXPECT_EQ(r.island, (std::vector<int>{0, 0, 2, 2}));
}

// No P2P: each GPU with the ranks on it.
TEST(DeviceTopo, NoP2pGivesAnIslandPerGpu) {
  Node n({0, 1, 2, 0, 1, 2}, [](int, int) { return false; }, [](int, int) { return false; });
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.cls, topo::TopoClass::NoP2p);
  EXPECT_EQ(r.island, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

// A broken pair (the probe's verdict removed it): every rank of an island still reads
// every other's memory, so GPUs 1 and 2 never share one.
TEST(DeviceTopo, ABrokenPairIsNeverInsideAnIsland) {
  Node n({0, 1, 2, 3}, [](int a, int b) { return !((a == 1 && b == 2) || (a == 2 && b == 1)); },
         [](int, int) { return true; });
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  EXPECT_EQ(r.count, 2);
  EXPECT_NE(r.island[1], r.island[2]);
  for (int p = 0; p < 4; ++p)
    for (int q = 0; q < 4; ++q)
      if (p != q && r.island[p] == r.island[q]) EXPECT_TRUE(n.p2p[p][q]) << p << " " << q;
}

// DGX-1's hybrid cube mesh: NVLink inside each quad (0-3, 4-7) and between GPUs i and
// i + 4; P2P only along NVLink (the quads are on different sockets).
bool dgx1_nv(int a, int b) { return a != b && (a / 4 == b / 4 || a % 4 == b % 4); }

// Every consecutive pair of the ring (and the last with the first) on one GPU or joined
// by NVLink with P2P, every rank once.
void expect_ring_along_nvlink(const Node &n, const std::vector<int> &ring) {
  const int L = static_cast<int>(ring.size());
  ASSERT_EQ(L, static_cast<int>(n.same.size()));
  std::vector<int> seen(L, 0);
  for (int i = 0; i < L; ++i) {
    const int p = ring[i], q = ring[(i + 1) % L];
    ++seen[p];
    EXPECT_TRUE(n.same[p][q] || (n.nv[p][q] && n.p2p[p][q])) << "ranks " << p << " and " << q;
  }
  EXPECT_EQ(seen, std::vector<int>(L, 1));
}

TEST(DeviceTopo, HybridCubeMeshHasAnNvlinkRing) {
  Node n({0, 1, 2, 3, 4, 5, 6, 7}, dgx1_nv, dgx1_nv);
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.cls, topo::TopoClass::Islands);
  expect_ring_along_nvlink(n, r.ring);
  EXPECT_EQ(r.ring[0], 0);
}

TEST(DeviceTopo, RanksOfOneGpuAreNeighboursOnTheRing) {
  Node n({0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7}, dgx1_nv, dgx1_nv);
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  expect_ring_along_nvlink(n, r.ring);
}

// GPUs 0, 1, 2, 5 of the mesh: NVLink 0-1, 0-2, 1-2, 1-5; GPU 5 has one link: no ring.
TEST(DeviceTopo, NoRingWhereAGpuHasOneNvlink) {
  const std::vector<int> real = {0, 1, 2, 5};
  const auto nv = [&](int a, int b) { return dgx1_nv(real[a], real[b]); };
  Node n({0, 1, 2, 3}, nv, nv);
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  EXPECT_EQ(r.count, 2);
  EXPECT_TRUE(r.ring.empty());
}

// One island needs no ring; PCIe pairs never make one.
TEST(DeviceTopo, RingOnlyAlongNvlinkAndOnlyForSeveralIslands) {
  Node all({0, 1, 2, 3}, [](int, int) { return true; }, [](int, int) { return true; });
  EXPECT_TRUE(node_islands(all.same, all.p2p, all.nv).ring.empty());
  Node pcie({0, 1, 2, 3}, [](int a, int b) { return (a + 1) % 4 == b || (b + 1) % 4 == a; },
            [](int, int) { return false; });
  EXPECT_TRUE(node_islands(pcie.same, pcie.p2p, pcie.nv).ring.empty());
}

// A pair whose P2P failed the probe is never a ring edge, NVLink or not.
TEST(DeviceTopo, RingAvoidsABrokenPair) {
  Node n({0, 1, 2, 3}, [](int a, int b) { return !((a == 1 && b == 2) || (a == 2 && b == 1)); },
         [](int, int) { return true; });
  const NodeIslands r = node_islands(n.same, n.p2p, n.nv);
  expect_ring_along_nvlink(n, r.ring);
}

// Step 6: each GPU's distance to its nearest NIC (path class), from a topology file.
TEST(DeviceTopoNic, DistanceToTheNearestNic) {
  using topo::PathClass;
  const int pix = static_cast<int>(PathClass::Pix), node = static_cast<int>(PathClass::Node),
            sys = static_cast<int>(PathClass::Sys);
  const topo::NodeTopo vm = topo::load("vm_host_bridges.xml");  // NIC1 on socket 0 only
  ASSERT_EQ(vm.gpus.size(), 4u);
  EXPECT_EQ(nic_distance(vm, vm.gpus[0].bus_id), node);
  EXPECT_EQ(nic_distance(vm, vm.gpus[1].bus_id), node);
  EXPECT_EQ(nic_distance(vm, vm.gpus[2].bus_id), sys);
  EXPECT_EQ(nic_distance(vm, vm.gpus[3].bus_id), sys);
  const topo::NodeTopo far = topo::load("nic_far4.xml");
  ASSERT_EQ(far.gpus.size(), 4u);
  EXPECT_EQ(nic_distance(far, far.gpus[0].bus_id), node);
  EXPECT_EQ(nic_distance(far, far.gpus[1].bus_id), pix);
  EXPECT_EQ(nic_distance(far, far.gpus[3].bus_id), pix);
  const topo::NodeTopo hgx = topo::load("hgx_h100.xml");  // a NIC under every GPU's switch
  for (const auto &g : hgx.gpus) EXPECT_EQ(nic_distance(hgx, g.bus_id), pix) << g.bus_id;
  EXPECT_EQ(nic_distance(hgx, "0000:ff:00.0"), sys + 1);  // not in the topology
  topo::NodeTopo none = hgx;
  none.nics.clear();
  EXPECT_EQ(nic_distance(none, hgx.gpus[0].bus_id), sys + 1);
}

// Two nodes of vm_host_bridges' machine, 4 ranks each, whose lowest ranks sit on the GPUs
// across the socket from the NIC: the device engine's layout puts the NIC's side first, so
// local rank 0 (the single-rail steps' rank) is nearest the NIC on both nodes and rail j
// joins each node's j-th nearest, whatever the nodes' own orders.
TEST(DeviceTopoNic, LeadersAndRailsByNicDistance) {
  const topo::NodeTopo vm = topo::load("vm_host_bridges.xml");
  ASSERT_EQ(vm.gpus.size(), 4u);
  const std::vector<int> gpu_of = {3, 2, 1, 0, 2, 0, 3, 1};  // comm rank -> GPU
  const std::vector<int> node_key = {0, 0, 0, 0, 4, 4, 4, 4};
  std::vector<int> dist(8);
  for (int r = 0; r < 8; ++r) dist[r] = nic_distance(vm, vm.gpus[gpu_of[r]].bus_id);
  EXPECT_TRUE(nic_order_differs({dist[0], dist[1], dist[2], dist[3]}));
  EXPECT_TRUE(nic_order_differs({dist[4], dist[5], dist[6], dist[7]}));
  // Every rank computes the same layout from the same gathered keys.
  for (int me = 0; me < 8; ++me) {
    Topology t;
    compute_layout(node_key, me, &t, &dist);
    ASSERT_EQ(t.num_nodes, 2);
    EXPECT_EQ(t.members[0], (std::vector<int>{2, 3, 0, 1})) << me;  // GPUs 1, 0 (NODE) first
    EXPECT_EQ(t.members[1], (std::vector<int>{5, 7, 4, 6})) << me;  // GPUs 0, 1, then 2, 3
    EXPECT_EQ(t.members[t.node_of[me]][t.local_of[me]], me);
    EXPECT_EQ(t.local_rank, t.local_of[me]);
  }
  Topology t;
  compute_layout(node_key, 2, &t, &dist);
  EXPECT_EQ(t.local_rank, 0);  // node 0's leader: comm rank 2, not 0
  EXPECT_TRUE(t.has_rail());
  // Rail j: the j-th nearest of each node (rail rank = node index).
  for (int j = 0; j < t.min_local; ++j)
    EXPECT_EQ(dist[t.members[0][j]], dist[t.members[1][j]]) << "rail " << j;
  // Without order keys (the host engine's layout): comm rank order, rank 0 leads.
  Topology h;
  compute_layout(node_key, 0, &h);
  EXPECT_EQ(h.members[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(h.local_rank, 0);
}

// gcoll_info --topology's device paths say which ranks lead between nodes (nic_far4.xml:
// NICs by GPU1 and GPU3), per island where there are several.
TEST(DeviceTopoNic, InfoTextShowsTheOrder) {
  const std::string far = device_paths_text(topo::load("nic_far4.xml"), 4);
  EXPECT_NE(far.find("ranks nearest a NIC first (local rank 0, rail 0, ...): rank 1 (PIX), rank 3 (PIX), rank 0 "
                     "(NODE), rank 2 (NODE)\n"),
            std::string::npos)
      << far;
  const std::string vm = device_paths_text(topo::load("vm_host_bridges.xml"), 4);
  EXPECT_NE(vm.find("    island 3: rank 3 (SYS)\n"), std::string::npos) << vm;
}

// On an NVLink ring (dgx1_ring4.xml) the device paths say that nodes with such a ring run
// along it across nodes too (@nvring_hier), and the NIC order is the whole node's (the ring
// keeps the node together), not per island.
TEST(DeviceTopoNic, InfoTextOnTheRingAcrossNodes) {
  const std::string ring = device_paths_text(topo::load("dgx1_ring4.xml"), 4);
  EXPECT_NE(ring.find("(@nvring_hier, all eight collectives)\n"), std::string::npos) << ring;
  EXPECT_NE(ring.find("(local rank 0, rail 0, ...): rank 0 (PIX), rank 1 (PIX), rank 2 (PIX), rank 3 (PIX)\n"),
            std::string::npos)
      << ring;
  EXPECT_EQ(ring.find("island 2:"), std::string::npos) << ring;
  EXPECT_EQ(device_paths_text(topo::load("nic_far4.xml"), 4).find("nvring_hier"), std::string::npos);
}

// Uneven nodes: the ranks without a rail (local rank >= the smallest node's size) are
// each node's farthest from a NIC; ties keep communicator rank order, so a machine whose
// GPUs are all as near (hgx_h100: a NIC on every GPU's switch) keeps its ranks' order.
TEST(DeviceTopoNic, RanksWithoutARailAreTheFarthest) {
  const topo::NodeTopo vm = topo::load("vm_host_bridges.xml");
  const std::vector<int> gpu_of = {2, 3, 0, 3, 1};  // nodes {0, 1, 2} and {3, 4}
  const std::vector<int> node_key = {0, 0, 0, 3, 3};
  std::vector<int> dist(5);
  for (int r = 0; r < 5; ++r) dist[r] = nic_distance(vm, vm.gpus[gpu_of[r]].bus_id);
  Topology t;
  compute_layout(node_key, 0, &t, &dist);
  EXPECT_EQ(t.min_local, 2);
  EXPECT_EQ(t.members[0], (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(t.members[1], (std::vector<int>{4, 3}));
  EXPECT_TRUE(t.has_rail());  // comm rank 0 (GPU2, across the socket): rail 1
  Topology t1;
  compute_layout(node_key, 1, &t1, &dist);
  EXPECT_FALSE(t1.has_rail());  // comm rank 1 (GPU3, across the socket too, a higher rank)
  Topology t2;
  compute_layout(node_key, 2, &t2, &dist);
  EXPECT_EQ(t2.local_rank, 0);  // GPU0, the NIC's side
  const topo::NodeTopo hgx = topo::load("hgx_h100.xml");
  std::vector<int> same(8);
  for (int r = 0; r < 8; ++r) same[r] = nic_distance(hgx, hgx.gpus[7 - r].bus_id);
  EXPECT_FALSE(nic_order_differs(same));
  Topology u;
  compute_layout(std::vector<int>(8, 0), 5, &u, &same);
  EXPECT_EQ(u.members[0], (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace gcoll
