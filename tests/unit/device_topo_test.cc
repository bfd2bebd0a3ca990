// The device topology's islands from a node's verdicts (coll/device_topo.h: node_islands):
// which ranks the device engine puts in one node, and the topology class the stats name.
#include <gtest/gtest.h>

#include <vector>

#include "coll/device_topo.h"

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

}  // namespace
}  // namespace gcoll
