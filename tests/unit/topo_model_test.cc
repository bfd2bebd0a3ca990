// The node topology model (topo/node_topo.h) on the machines of tests/topo: path classes,
// P2P verdicts, the graph helpers, rail NICs, the whole-node class.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "topo/node_topo.h"
#include "topo/topo_xml.h"
#include "topo_files.h"

namespace gcoll {
namespace topo {
namespace {

using Matrix = std::vector<std::vector<bool>>;

// The P2P graph gcoll works with: allowed at `level` and not broken.
Matrix p2p_graph(const NodeTopo &t, P2pLevel level = P2pLevel::Pxb) {
  const int n = static_cast<int>(t.gpus.size());
  Matrix m(n, std::vector<bool>(n, false));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) m[a][b] = p2p_allowed(t, a, b, level, false) && !p2p_broken(t, a, b);
  }
  return m;
}

Matrix nv_graph(const NodeTopo &t) {
  const int n = static_cast<int>(t.gpus.size());
  Matrix m(n, std::vector<bool>(n, false));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) m[a][b] = a != b && gpu_nv_links(t, a, b) > 0;
  }
  return m;
}

std::vector<int> all_gpus(const NodeTopo &t) {
  std::vector<int> v;
  for (size_t i = 0; i < t.gpus.size(); ++i) v.push_back(static_cast<int>(i));
  return v;
}

// A ring is a cycle through exactly the members, along edges of m.
void expect_ring(const Matrix &m, const std::vector<int> &members, const std::vector<int> &ring) {
  ASSERT_EQ(ring.size(), members.size());
  EXPECT_EQ(ring[0], members[0]);
  std::vector<int> sorted_ring = ring, sorted_members = members;
  std::sort(sorted_ring.begin(), sorted_ring.end());
  std::sort(sorted_members.begin(), sorted_members.end());
  EXPECT_EQ(sorted_ring, sorted_members);
  for (size_t i = 0; i < ring.size(); ++i) {
    EXPECT_TRUE(m[ring[i]][ring[(i + 1) % ring.size()]]) << ring[i] << "-" << ring[(i + 1) % ring.size()];
  }
}

TEST(TopoModel, BusIdNormalise) {
  EXPECT_EQ(pci_bus_id_normalise("0000:07:00.0"), "0000:07:00.0");
  EXPECT_EQ(pci_bus_id_normalise("7:0.0"), "0000:07:00.0");
  EXPECT_EQ(pci_bus_id_normalise("00000000:07:00.0"), "0000:07:00.0");
  EXPECT_EQ(pci_bus_id_normalise("0000:07:00"), "0000:07:00.0");
  EXPECT_EQ(pci_bus_id_normalise("0000:B3:1F.7"), "0000:b3:1f.7");
  EXPECT_EQ(pci_bus_id_normalise("00000001:C1:00.0"), "0001:c1:00.0");
  EXPECT_EQ(pci_bus_id_normalise(" 0000:07:00.0\n"), "0000:07:00.0");
  EXPECT_EQ(pci_bus_id_normalise("12345:00:00.0"), "12345:00:00.0");  // wide domains (Hyper-V) kept
  for (const char *bad : {"", "mlx5_0", "0000:07", "0000:107:00.0", "0000:07:20.0", "0000:07:00.8", "0000:07:0g.0",
                          "0:0:0:0.0", "fffffff:ffff:ff", "0000:07:00.", ":07:00.0"}) {
    EXPECT_EQ(pci_bus_id_normalise(bad), "") << bad;
  }
}

TEST(TopoModel, Names) {
  EXPECT_STREQ(path_name(PathClass::Loc), "X");
  EXPECT_STREQ(path_name(PathClass::Nv), "NV");
  EXPECT_STREQ(path_name(PathClass::Pix), "PIX");
  EXPECT_STREQ(path_name(PathClass::Pxb), "PXB");
  EXPECT_STREQ(path_name(PathClass::Phb), "PHB");
  EXPECT_STREQ(path_name(PathClass::Node), "NODE");
  EXPECT_STREQ(path_name(PathClass::Sys), "SYS");
  EXPECT_STREQ(topo_class_name(TopoClass::OneGpu), "one-gpu");
  EXPECT_STREQ(topo_class_name(TopoClass::NvlinkAll), "nvlink");
  EXPECT_STREQ(topo_class_name(TopoClass::PcieAll), "pcie");
  EXPECT_STREQ(topo_class_name(TopoClass::Islands), "islands");
  EXPECT_STREQ(topo_class_name(TopoClass::NoP2p), "no-p2p");
  // The first path classes are the P2P levels of the same names.
  EXPECT_EQ(static_cast<int>(PathClass::Pxb), static_cast<int>(P2pLevel::Pxb));
  EXPECT_EQ(static_cast<int>(PathClass::Sys), static_cast<int>(P2pLevel::Sys));
}

TEST(TopoModel, Lookups) {
  NodeTopo t = load("hgx_h100.xml");
  EXPECT_EQ(t.gpu_index("0000:43:00.0"), 1);
  EXPECT_EQ(t.gpu_index("00000000:43:00.0"), 1);  // NVML's spelling
  EXPECT_EQ(t.gpu_index("0000:18:00.0"), -1);      // a NIC
  EXPECT_EQ(t.gpu_index("nonsense"), -1);
  EXPECT_EQ(t.nic_index("mlx5_7"), 7);
  EXPECT_EQ(t.nic_index("mlx5_8"), -1);
  // resize_pairs keeps what is there and grows with the GPUs.
  t.gpus.push_back(Gpu{});
  t.resize_pairs();
  ASSERT_EQ(t.nvlinks.size(), 9u);
  ASSERT_EQ(t.pair[8].size(), 9u);
  EXPECT_EQ(t.nvlinks[8][0], 0);
  EXPECT_EQ(t.pair[0][8], PairState::Default);
  EXPECT_EQ(gpu_nv_links(t, 0, 1), 18);
}

TEST(TopoPaths, HgxH100) {
  const NodeTopo t = load("hgx_h100.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  for (int a = 0; a < 8; ++a) {
    EXPECT_EQ(gpu_path(t, a, a), PathClass::Loc);
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      EXPECT_EQ(gpu_path(t, a, b), PathClass::Nv) << a << "-" << b;
      EXPECT_EQ(gpu_nv_links(t, a, b), 18) << a << "-" << b;
    }
    EXPECT_EQ(nic_path(t, a, a), PathClass::Pix) << a;
  }
  EXPECT_EQ(nic_path(t, 0, 1), PathClass::Pxb);   // the other switch under the same root port
  EXPECT_EQ(nic_path(t, 0, 2), PathClass::Node);  // another root port of socket 0
  EXPECT_EQ(nic_path(t, 0, 4), PathClass::Sys);   // socket 1
  EXPECT_EQ(nic_path(t, 7, 0), PathClass::Sys);
  EXPECT_EQ(nic_path(t, 5, 4), PathClass::Pxb);
  EXPECT_EQ(pci_path(t, t.nics[0].pci, t.nics[1].pci), PathClass::Pxb);
  EXPECT_EQ(pci_path(t, t.nics[0].pci, t.nics[0].pci), PathClass::Pix);
}

TEST(TopoPaths, Dgx1) {
  const NodeTopo t = load("dgx1_v100.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  EXPECT_EQ(gpu_path(t, 0, 5), PathClass::Sys);
  EXPECT_EQ(gpu_path(t, 3, 4), PathClass::Sys);
  EXPECT_EQ(gpu_path(t, 0, 1), PathClass::Nv);  // also PIX: NVLink wins
  EXPECT_EQ(gpu_nv_links(t, 0, 1), 1);
  EXPECT_EQ(gpu_nv_links(t, 0, 3), 2);
  EXPECT_EQ(gpu_nv_links(t, 0, 5), 0);
  EXPECT_EQ(gpu_path(t, 0, 4), PathClass::Nv);  // across sockets, over NVLink
  EXPECT_EQ(gpu_nv_links(t, 4, 0), 2);
  EXPECT_EQ(nic_path(t, 0, 0), PathClass::Pix);
  EXPECT_EQ(nic_path(t, 2, 1), PathClass::Pix);
  EXPECT_EQ(nic_path(t, 0, 1), PathClass::Node);
  EXPECT_EQ(nic_path(t, 0, 2), PathClass::Sys);
  // Without NVLink the PCI tree shows through.
  NodeTopo pci_only = t;
  for (auto &row : pci_only.nvlinks) std::fill(row.begin(), row.end(), 0);
  EXPECT_EQ(gpu_path(pci_only, 0, 1), PathClass::Pix);
  EXPECT_EQ(gpu_path(pci_only, 0, 2), PathClass::Node);
  EXPECT_EQ(gpu_path(pci_only, 0, 4), PathClass::Sys);
}

TEST(TopoPaths, OtherFiles) {
  const NodeTopo one = load("one_gpu.xml");
  EXPECT_EQ(gpu_path(one, 0, 0), PathClass::Loc);
  EXPECT_EQ(nic_path(one, 0, 0), PathClass::Node);

  const NodeTopo pcie = load("pcie_2socket.xml");
  EXPECT_EQ(gpu_path(pcie, 0, 1), PathClass::Pix);
  EXPECT_EQ(gpu_path(pcie, 2, 3), PathClass::Pix);
  EXPECT_EQ(gpu_path(pcie, 1, 2), PathClass::Sys);
  EXPECT_EQ(gpu_nv_links(pcie, 0, 1), 0);
  EXPECT_EQ(nic_path(pcie, 1, 0), PathClass::Pix);
  EXPECT_EQ(nic_path(pcie, 1, 1), PathClass::Sys);

  // NUMA unknown: everything is assumed far.
  const NodeTopo vm = load("cloud_vm_nop2p.xml");
  EXPECT_EQ(gpu_path(vm, 0, 1), PathClass::Sys);
  EXPECT_EQ(nic_path(vm, 3, 0), PathClass::Sys);

  const NodeTopo b4 = load("broken4.xml");
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      EXPECT_EQ(gpu_nv_links(b4, a, b), a == b ? 0 : 4);
    }
    EXPECT_EQ(nic_path(b4, a, 0), PathClass::Node);
    EXPECT_EQ(nic_path(b4, a, 1), PathClass::Node);
  }
}

// A tree that has every level: socket 0 with a host bridge over two switch levels, socket 1.
NodeTopo synthetic() {
  NodeTopo t;
  t.numa = {Numa{}, Numa{}};
  t.numa[0].os_index = 0;
  t.numa[1].os_index = 1;
  auto add = [&](int parent, int numa, std::uint32_t cls) {
    PciNode p;
    p.parent = parent;
    p.numa = numa;
    p.class_code = cls;
    p.bus_id = pci_bus_id_normalise(std::to_string(t.pci.size() + 1) + ":00.0");
    t.pci.push_back(p);
    return static_cast<int>(t.pci.size()) - 1;
  };
  const int hb = add(-1, 0, 0x060000);   // 0: host bridge
  const int up = add(hb, 0, 0x060400);   // 1: switch
  const int sa = add(up, 0, 0x060400);   // 2: switch below it
  const int sb = add(up, 0, 0x060400);   // 3: another
  const int rp = add(hb, 0, 0x060400);   // 4: a root port beside the switch
  const int other = add(-1, 0, 0x060400);  // 5: a second top-level element of socket 0
  const int far = add(-1, 1, 0x060400);  // 6: socket 1
  std::vector<int> at = {add(sa, 0, 0x030200), add(sa, 0, 0x030200), add(sb, 0, 0x030200), add(rp, 0, 0x030200),
                         add(other, 0, 0x030200), add(far, 1, 0x030200), add(up, 0, 0x030200)};
  for (size_t i = 0; i < at.size(); ++i) {
    Gpu g;
    g.pci = at[i];
    g.bus_id = t.pci[at[i]].bus_id;
    g.numa = t.pci[at[i]].numa;
    t.gpus.push_back(g);
  }
  Gpu lost;  // not in the PCI tree
  lost.bus_id = "0000:f0:00.0";
  t.gpus.push_back(lost);
  t.resize_pairs();
  return t;
}

TEST(TopoPaths, EveryLevel) {
  const NodeTopo t = synthetic();
  EXPECT_EQ(gpu_path(t, 0, 1), PathClass::Pix);   // the same switch
  EXPECT_EQ(gpu_path(t, 0, 2), PathClass::Pxb);   // two switches below a common one
  EXPECT_EQ(gpu_path(t, 0, 6), PathClass::Pxb);   // one directly on the upper switch
  EXPECT_EQ(gpu_path(t, 0, 3), PathClass::Phb);   // meet at the host bridge
  EXPECT_EQ(gpu_path(t, 3, 6), PathClass::Phb);
  EXPECT_EQ(gpu_path(t, 0, 4), PathClass::Node);  // different top-level elements, one socket
  EXPECT_EQ(gpu_path(t, 0, 5), PathClass::Sys);
  EXPECT_EQ(gpu_path(t, 0, 7), PathClass::Sys);   // not in the tree
  EXPECT_EQ(gpu_path(t, 7, 7), PathClass::Loc);
  EXPECT_EQ(pci_path(t, -1, 0), PathClass::Sys);
  EXPECT_EQ(pci_path(t, 2, 7), PathClass::Pix);   // a switch and a device right below it
  EXPECT_EQ(pci_path(t, 1, 7), PathClass::Pxb);   // ... and two levels below
  // The same socket with its NUMA node unknown is SYS, as any unknown NUMA node.
  NodeTopo u = t;
  u.numa[0].os_index = -1;
  EXPECT_EQ(gpu_path(u, 0, 4), PathClass::Sys);
  EXPECT_EQ(gpu_path(u, 0, 1), PathClass::Pix);  // the tree still says so
  // NVSwitch: both GPUs need links to switches; NV# is the smaller count.
  NodeTopo s = t;
  s.gpus[0].nvswitch_links = 12;
  s.gpus[5].nvswitch_links = 6;
  EXPECT_EQ(gpu_path(s, 0, 5), PathClass::Nv);
  EXPECT_EQ(gpu_nv_links(s, 0, 5), 6);
  EXPECT_EQ(gpu_path(s, 0, 1), PathClass::Pix);
  // Out of range is SYS / nothing, not a crash.
  EXPECT_EQ(gpu_path(t, 0, 99), PathClass::Sys);
  EXPECT_EQ(nic_path(t, 0, 0), PathClass::Sys);
  EXPECT_EQ(gpu_nv_links(t, -1, 0), 0);
}

TEST(TopoP2p, PerLevel) {
  const NodeTopo t = load("pcie_2socket.xml");
  EXPECT_TRUE(p2p_allowed(t, 0, 1, P2pLevel::Pxb, false));  // PIX
  EXPECT_TRUE(p2p_allowed(t, 0, 1, P2pLevel::Pix, false));
  EXPECT_FALSE(p2p_allowed(t, 0, 1, P2pLevel::Nvl, false));
  EXPECT_FALSE(p2p_allowed(t, 0, 1, P2pLevel::Loc, false));
  EXPECT_FALSE(p2p_allowed(t, 0, 2, P2pLevel::Pxb, false));  // SYS
  EXPECT_FALSE(p2p_allowed(t, 0, 2, P2pLevel::Node, false));
  EXPECT_TRUE(p2p_allowed(t, 0, 2, P2pLevel::Sys, false));
  EXPECT_FALSE(p2p_allowed(t, 0, 1, P2pLevel::Sys, true));  // GCOLL_P2P_DISABLE
  EXPECT_TRUE(p2p_allowed(t, 2, 2, P2pLevel::Loc, true));   // the same GPU always
  EXPECT_FALSE(p2p_allowed(t, 0, 9, P2pLevel::Sys, false));
  EXPECT_TRUE(p2p_hardware(t, 0, 1));
  EXPECT_FALSE(p2p_hardware(t, 0, 2));  // across sockets, no NVLink

  const NodeTopo d = load("dgx1_v100.xml");
  EXPECT_TRUE(p2p_allowed(d, 0, 4, P2pLevel::Nvl, false));  // NVLink across sockets
  EXPECT_FALSE(p2p_allowed(d, 0, 4, P2pLevel::Loc, false));  // LOC: never, NVLink included (as NCCL)
  EXPECT_FALSE(p2p_allowed(d, 0, 4, P2pLevel::Sys, true));
  EXPECT_FALSE(p2p_allowed(d, 0, 5, P2pLevel::Pxb, false));
  EXPECT_TRUE(p2p_hardware(d, 0, 4));
  EXPECT_FALSE(p2p_hardware(d, 0, 5));

  const NodeTopo vm = load("cloud_vm_nop2p.xml");
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      EXPECT_EQ(p2p_allowed(vm, a, b, P2pLevel::Sys, false), a == b) << a << "-" << b;
      EXPECT_EQ(p2p_hardware(vm, a, b), a == b) << a << "-" << b;
      EXPECT_FALSE(p2p_broken(vm, a, b));
    }
  }

  // Broken is allowed (the probe is what catches it) and reported as broken.
  const NodeTopo b4 = load("broken4.xml");
  EXPECT_TRUE(p2p_allowed(b4, 1, 2, P2pLevel::Pxb, false));
  EXPECT_TRUE(p2p_broken(b4, 1, 2));
  EXPECT_TRUE(p2p_broken(b4, 2, 1));
  EXPECT_FALSE(p2p_broken(b4, 1, 1));
  EXPECT_FALSE(p2p_broken(b4, 0, 1));
  EXPECT_TRUE(p2p_hardware(b4, 1, 2));
  // Denied wins over NVLink.
  NodeTopo denied = b4;
  denied.pair[0][3] = denied.pair[3][0] = PairState::Denied;
  EXPECT_FALSE(p2p_allowed(denied, 0, 3, P2pLevel::Sys, false));
  EXPECT_FALSE(p2p_hardware(denied, 3, 0));
}

TEST(TopoGraph, ComponentsAndCliques) {
  const NodeTopo d = load("dgx1_v100.xml");
  const Matrix m = p2p_graph(d);
  EXPECT_EQ(components(m), std::vector<int>(8, 0));
  EXPECT_EQ(clique_partition(m), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));

  // A path 0-1-2 and a lone 3: one component of three (not a clique), then 3.
  Matrix p(4, std::vector<bool>(4, false));
  p[0][1] = p[1][0] = p[1][2] = p[2][1] = true;
  EXPECT_EQ(components(p), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(clique_partition(p), (std::vector<int>{0, 0, 1, 2}));
  // Numbered by the lowest vertex: 0 and 2 together, 1 and 3 together.
  Matrix q(4, std::vector<bool>(4, false));
  q[0][2] = q[2][0] = q[1][3] = q[3][1] = true;
  EXPECT_EQ(components(q), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(clique_partition(q), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_TRUE(components({}).empty());

  const NodeTopo pcie = load("pcie_2socket.xml");
  EXPECT_EQ(components(p2p_graph(pcie)), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(components(p2p_graph(pcie, P2pLevel::Sys)), (std::vector<int>{0, 0, 0, 0}));
  const NodeTopo vm = load("cloud_vm_nop2p.xml");
  EXPECT_EQ(clique_partition(p2p_graph(vm)), (std::vector<int>{0, 1, 2, 3}));
  // The broken pair splits the NV4 all-to-all: {0,1,3} and {2}.
  const NodeTopo b4 = load("broken4.xml");
  EXPECT_EQ(components(p2p_graph(b4)), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(clique_partition(p2p_graph(b4)), (std::vector<int>{0, 0, 1, 0}));
}

TEST(TopoGraph, Rings) {
  const NodeTopo r4 = load("dgx1_ring4.xml");  // GPUs 0,1,4,5 of the DGX-1 as 0..3
  const Matrix m4 = nv_graph(r4);
  const std::vector<int> ring = find_ring(m4, {0, 1, 2, 3});
  EXPECT_EQ(ring, (std::vector<int>{0, 1, 3, 2}));  // 0-1-5-4 in DGX-1 numbers
  expect_ring(m4, {0, 1, 2, 3}, ring);
  // Members in another order start elsewhere.
  expect_ring(m4, {2, 0, 1, 3}, find_ring(m4, {2, 0, 1, 3}));

  const NodeTopo n4 = load("dgx1_noring4.xml");
  const Matrix mn = nv_graph(n4);
  EXPECT_TRUE(find_ring(mn, {0, 1, 2, 3}).empty());
  EXPECT_EQ(find_ring(mn, {0, 1, 2}), (std::vector<int>{0, 1, 2}));  // the triangle

  const NodeTopo d = load("dgx1_v100.xml");
  const Matrix md = nv_graph(d);
  expect_ring(md, all_gpus(d), find_ring(md, all_gpus(d)));
  // Two members: joined or not; fewer: nothing.
  EXPECT_EQ(find_ring(md, {0, 4}), (std::vector<int>{0, 4}));
  EXPECT_TRUE(find_ring(md, {0, 5}).empty());
  EXPECT_TRUE(find_ring(md, {0}).empty());
  EXPECT_TRUE(find_ring(md, {}).empty());
  // Socket 0's four: 0-1-2-3 is a ring (the lowest first).
  EXPECT_EQ(find_ring(md, {0, 1, 2, 3}), (std::vector<int>{0, 1, 2, 3}));
}

TEST(TopoGraph, RingSearchIsBoundedOn16Vertices) {
  // Two 8-cliques joined by one edge have no Hamiltonian cycle; a plain search would try
  // about 8!^2 paths. The search must give up quickly.
  Matrix m(16, std::vector<bool>(16, false));
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) m[a][b] = a != b && (a < 8) == (b < 8);
  }
  m[7][8] = m[8][7] = true;
  std::vector<int> all;
  for (int i = 0; i < 16; ++i) all.push_back(i);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(find_ring(m, all).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // With a second joining edge it has one.
  m[0][15] = m[15][0] = true;
  expect_ring(m, all, find_ring(m, all));
}

// What gcoll's UCX configuration gets as NET_DEVICES: the RDMA device with its port.
TEST(TopoNics, UcxDeviceName) {
  const NodeTopo h = load("hgx_h100.xml");
  ASSERT_GE(h.nics.size(), 2u);
  EXPECT_EQ(ucx_device_name(h.nics[0]), "mlx5_0:1");
  EXPECT_EQ(ucx_device_name(h.nics[1]), "mlx5_1:1");
  Nic eth;
  eth.name = "eth0";
  EXPECT_EQ(ucx_device_name(eth), "eth0");  // no port: the interface itself
}

TEST(TopoNics, Choose) {
  const NodeTopo h = load("hgx_h100.xml");
  std::vector<int> gpus = all_gpus(h);
  EXPECT_EQ(choose_nics(h, gpus), gpus);  // GPU i -> NIC i (PIX)
  std::vector<int> twice = gpus;
  twice.insert(twice.end(), gpus.begin(), gpus.end());
  EXPECT_EQ(choose_nics(h, twice), twice);  // two ranks per GPU: still NIC i

  const NodeTopo p = load("pcie_2socket.xml");
  EXPECT_EQ(choose_nics(p, all_gpus(p)), (std::vector<int>{0, 0, 1, 1}));  // one nearest NIC each
  // NICs equally far from every GPU: taken in turn, in GPU order, repeats included.
  NodeTopo far = p;
  for (Nic &n : far.nics) n.pci = -1;
  EXPECT_EQ(choose_nics(far, all_gpus(far)), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(choose_nics(far, {0, 0, 0}), (std::vector<int>{0, 1, 0}));

  const NodeTopo b4 = load("broken4.xml");  // both NICs NODE from every GPU
  EXPECT_EQ(choose_nics(b4, all_gpus(b4)), (std::vector<int>{0, 1, 0, 1}));

  // DGX-1: the two GPUs of each PCIe switch share its NIC.
  const NodeTopo d = load("dgx1_v100.xml");
  EXPECT_EQ(choose_nics(d, all_gpus(d)), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));

  const NodeTopo none = load("dgx1_ring4.xml");
  NodeTopo no_nics = none;
  no_nics.nics.clear();
  EXPECT_EQ(choose_nics(no_nics, {0, 1}), (std::vector<int>{-1, -1}));
  EXPECT_TRUE(choose_nics(none, {}).empty());
}

TEST(TopoClassify, EachFile) {
  struct Case {
    const char *file;
    TopoClass want;
  } cases[] = {
      {"one_gpu.xml", TopoClass::OneGpu},        {"hgx_h100.xml", TopoClass::NvlinkAll},
      {"dgx1_v100.xml", TopoClass::Islands},     {"dgx1_ring4.xml", TopoClass::Islands},
      {"dgx1_noring4.xml", TopoClass::Islands},  {"pcie_2socket.xml", TopoClass::Islands},
      {"cloud_vm_nop2p.xml", TopoClass::NoP2p},  {"broken4.xml", TopoClass::Islands},
  };
  for (const Case &c : cases) {
    const NodeTopo t = load(c.file);
    EXPECT_EQ(classify(t, all_gpus(t), p2p_graph(t)), c.want) << c.file;
  }
  const NodeTopo p = load("pcie_2socket.xml");
  EXPECT_EQ(classify(p, all_gpus(p), p2p_graph(p, P2pLevel::Sys)), TopoClass::PcieAll);
  EXPECT_EQ(classify(p, {0, 1}, p2p_graph(p)), TopoClass::PcieAll);
  EXPECT_EQ(classify(p, {0, 0, 0}, p2p_graph(p)), TopoClass::OneGpu);
  EXPECT_EQ(classify(p, {1, 2}, p2p_graph(p)), TopoClass::NoP2p);
  const NodeTopo d = load("dgx1_v100.xml");
  EXPECT_EQ(classify(d, {0, 1, 2, 3}, p2p_graph(d)), TopoClass::NvlinkAll);
  EXPECT_EQ(classify(d, {0, 1, 2, 3, 0, 1}, p2p_graph(d)), TopoClass::NvlinkAll);
  EXPECT_EQ(classify(d, all_gpus(d), p2p_graph(d, P2pLevel::Sys)), TopoClass::PcieAll);
  const NodeTopo b4 = load("broken4.xml");
  Matrix with_broken(4, std::vector<bool>(4, true));
  EXPECT_EQ(classify(b4, all_gpus(b4), with_broken), TopoClass::NvlinkAll);
  EXPECT_EQ(classify(b4, {0, 1, 3}, p2p_graph(b4)), TopoClass::NvlinkAll);
}

}  // namespace
}  // namespace topo
}  // namespace gcoll
