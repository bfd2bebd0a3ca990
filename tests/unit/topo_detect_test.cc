// Node topology detection (topo/detect.h, topo/nvml.h) without a GPU: the emulated NVML
// answering from a model, fill_from_nvml against it, hwloc reading hand-written hwloc XML
// exports (tests/topo/hwloc/), and the file / emulation / merge paths of
// build_node_topology.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "topo/detect.h"
#include "topo/node_topo.h"
#include "topo/nvml.h"
#include "topo/topo_xml.h"

namespace gcoll {
namespace topo {
namespace {

const std::string kDir = GCOLL_TOPO_DIR;

// node_topology() follows the process's settings, read once at their first use: the dump
// file is set before main() (nothing reads the settings during static initialisation).
const char *const kDumpPattern = "/tmp/gcoll-topo-detect-test-%p.xml";
const bool kDumpSet = [] { return setenv("GCOLL_TOPO_DUMP_FILE", kDumpPattern, 1) == 0; }();

NodeTopo read_file(const std::string &name) {
  NodeTopo t;
  std::string error;
  EXPECT_TRUE(read_topo_file(kDir + "/" + name, &t, &error)) << name << ": " << error;
  t.resize_pairs();
  return t;
}

// Two NUMA nodes; GPUs 0 and 1 under one PCIe switch on node 0 (NVLink x2 between them),
// GPU 2 and 3 on node 1 under their own switches, each with 6 links to NVSwitches; uuids.
NodeTopo small_model() {
  NodeTopo t;
  Numa n0, n1;
  n0.os_index = 0;
  n0.affinity = "00000000,0000000f";  // CPUs 0-3
  n1.os_index = 1;
  n1.affinity = "0000000f,00000000";  // CPUs 32-35
  t.numa = {n0, n1};
  auto pci = [&](const std::string &bus, int parent, int numa, std::uint32_t cls) {
    PciNode p;
    p.bus_id = bus;
    p.parent = parent;
    p.numa = numa;
    p.class_code = cls;
    t.pci.push_back(p);
    return static_cast<int>(t.pci.size()) - 1;
  };
  const int sw0 = pci("0000:10:00.0", -1, 0, 0x060400);
  const int sw1 = pci("0000:80:00.0", -1, 1, 0x060400);
  const int sw2 = pci("0000:90:00.0", -1, 1, 0x060400);
  const int p0 = pci("0000:11:00.0", sw0, 0, 0x030200);
  const int p1 = pci("0000:12:00.0", sw0, 0, 0x030200);
  const int p2 = pci("0000:81:00.0", sw1, 1, 0x030200);
  const int p3 = pci("0000:91:00.0", sw2, 1, 0x030200);
  const int pcis[4] = {p0, p1, p2, p3};
  for (int i = 0; i < 4; ++i) {
    Gpu g;
    g.bus_id = t.pci[pcis[i]].bus_id;
    g.pci = pcis[i];
    g.numa = i < 2 ? 0 : 1;
    g.sm = 90;
    g.dev = i;
    g.uuid = "GPU-0000000" + std::to_string(i) + "-1111-2222-3333-444444444444";
    t.gpus.push_back(g);
  }
  t.resize_pairs();
  t.nvlinks[0][1] = t.nvlinks[1][0] = 2;
  t.gpus[2].nvswitch_links = 6;
  t.gpus[3].nvswitch_links = 6;
  return t;
}

// The model without what NVML tells: uuids, sm, NVLinks, GPU NUMA nodes.
NodeTopo stripped(NodeTopo t) {
  for (Gpu &g : t.gpus) {
    g.uuid.clear();
    g.sm = 0;
    g.nvswitch_links = 0;
  }
  for (auto &row : t.nvlinks) std::fill(row.begin(), row.end(), 0);
  return t;
}

nvml::Device handle(const NvmlApi &api, const std::string &bus_id) {
  nvml::Device d = nullptr;
  EXPECT_EQ(api.device_by_bus_id(bus_id.c_str(), &d), nvml::kSuccess) << bus_id;
  return d;
}

// ---- affinity strings ----------------------------------------------------------------

TEST(TopoAffinity, ParsesNcclMasksMostSignificantWordFirst) {
  const std::vector<std::uint32_t> m = parse_affinity("0000ffff,00000000,f0000001");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], 0xf0000001u);
  EXPECT_EQ(m[1], 0u);
  EXPECT_EQ(m[2], 0x0000ffffu);
  EXPECT_EQ(parse_affinity("ff,ffffffff").size(), 2u);  // NCCL drops leading zero bytes
  EXPECT_EQ(parse_affinity("ff,ffffffff")[1], 0xffu);
  for (const char *bad : {"", "xyz", "1,,2", "123456789", "ff,"}) EXPECT_TRUE(parse_affinity(bad).empty()) << bad;
}

TEST(TopoAffinity, FormatsFixedWidthWords) {
  EXPECT_EQ(format_affinity({0x3, 0x0, 0x3}), "00000003,00000000,00000003");
  EXPECT_EQ(format_affinity({0xf}, 2), "00000000,0000000f");
  EXPECT_EQ(format_affinity({}), "00000000");
  EXPECT_EQ(format_affinity(parse_affinity("0000ffff,0000ffff")), "0000ffff,0000ffff");
}

// ---- the emulated NVML -----------------------------------------------------------------

TEST(EmulatedNvml, HandlesByBusIdInAnySpelling) {
  const NvmlApi api = emulated_nvml(small_model());
  nvml::Device a = handle(api, "0000:11:00.0");
  EXPECT_EQ(handle(api, "00000000:11:00.0"), a);  // NVML's 8-digit domain
  EXPECT_EQ(handle(api, "0000:11:00.0"), a);
  EXPECT_NE(handle(api, "0000:12:00.0"), a);
  nvml::Device d = nullptr;
  EXPECT_EQ(api.device_by_bus_id("0000:55:00.0", &d), nvml::kErrorNotFound);
  char uuid[nvml::kUuidBufferSize];
  ASSERT_EQ(api.uuid(a, uuid, sizeof uuid), nvml::kSuccess);
  EXPECT_STREQ(uuid, "GPU-00000000-1111-2222-3333-444444444444");
  EXPECT_NE(api.uuid(reinterpret_cast<nvml::Device>(uuid), uuid, sizeof uuid), nvml::kSuccess);  // not a handle
  int major = 0, minor = 0;
  ASSERT_EQ(api.compute_capability(a, &major, &minor), nvml::kSuccess);
  EXPECT_EQ(major * 10 + minor, 90);
}

TEST(EmulatedNvml, NvlinksNumberedPerPeerThenSwitch) {
  const NvmlApi api = emulated_nvml(small_model());
  nvml::Device g0 = handle(api, "0000:11:00.0"), g2 = handle(api, "0000:81:00.0");
  int active = -1;
  for (unsigned l = 0; l < 2; ++l) {
    ASSERT_EQ(api.nvlink_state(g0, l, &active), nvml::kSuccess);
    EXPECT_EQ(active, nvml::kFeatureEnabled);
    nvml::PciInfo pi;
    ASSERT_EQ(api.nvlink_remote_pci(g0, l, &pi), nvml::kSuccess);
    EXPECT_STREQ(pi.busId, "00000000:12:00.0");
    EXPECT_STREQ(pi.busIdLegacy, "0000:12:00.0");
    int type = -1;
    ASSERT_EQ(api.nvlink_remote_type(g0, l, &type), nvml::kSuccess);
    EXPECT_EQ(type, nvml::kNvlinkDeviceGpu);
  }
  ASSERT_EQ(api.nvlink_state(g0, 2, &active), nvml::kSuccess);
  EXPECT_EQ(active, nvml::kFeatureDisabled);
  EXPECT_EQ(api.nvlink_state(g0, nvml::kNvlinkMaxLinks, &active), nvml::kErrorInvalidArgument);
  int enabled = 0;
  for (unsigned l = 0; l < nvml::kNvlinkMaxLinks; ++l) {
    int type = -1;
    if (api.nvlink_state(g2, l, &active) == nvml::kSuccess && active == nvml::kFeatureEnabled) {
      ++enabled;
      ASSERT_EQ(api.nvlink_remote_type(g2, l, &type), nvml::kSuccess);
      EXPECT_EQ(type, nvml::kNvlinkDeviceSwitch);
    }
  }
  EXPECT_EQ(enabled, 6);
}

TEST(EmulatedNvml, P2pStatusFollowsTheModel) {
  NodeTopo t = small_model();
  const NvmlApi api = emulated_nvml(t);
  nvml::Device g0 = handle(api, "0000:11:00.0"), g1 = handle(api, "0000:12:00.0");
  nvml::Device g2 = handle(api, "0000:81:00.0"), g3 = handle(api, "0000:91:00.0");
  int s = -1;
  ASSERT_EQ(api.p2p_status(g0, g1, nvml::kP2pCapsRead, &s), nvml::kSuccess);
  EXPECT_EQ(s, nvml::kP2pStatusOk);
  ASSERT_EQ(api.p2p_status(g0, g2, nvml::kP2pCapsWrite, &s), nvml::kSuccess);  // across NUMA nodes, no NVLink
  EXPECT_EQ(s, nvml::kP2pStatusNotSupported);
  ASSERT_EQ(api.p2p_status(g2, g3, nvml::kP2pCapsNvlink, &s), nvml::kSuccess);  // both on NVSwitches
  EXPECT_EQ(s, nvml::kP2pStatusOk);
  t.pair[0][1] = t.pair[1][0] = PairState::Denied;
  const NvmlApi denied = emulated_nvml(t);
  ASSERT_EQ(denied.p2p_status(handle(denied, "0000:11:00.0"), handle(denied, "0000:12:00.0"), nvml::kP2pCapsRead, &s),
            nvml::kSuccess);
  EXPECT_EQ(s, nvml::kP2pStatusNotSupported);
}

TEST(EmulatedNvml, CpuAffinityIsTheNumaNodesMask) {
  const NvmlApi api = emulated_nvml(small_model());
  unsigned long set[4] = {~0UL, ~0UL, ~0UL, ~0UL};
  ASSERT_EQ(api.cpu_affinity(handle(api, "0000:81:00.0"), 4, set), nvml::kSuccess);
  EXPECT_EQ(set[0], 0xfUL << 32);  // CPUs 32-35
  EXPECT_EQ(set[1], 0UL);
  ASSERT_EQ(api.cpu_affinity(handle(api, "0000:11:00.0"), 4, set), nvml::kSuccess);
  EXPECT_EQ(set[0], 0xfUL);
  EXPECT_FALSE(static_cast<bool>(api.numa_node));
}

// ---- fill_from_nvml --------------------------------------------------------------------

TEST(FillFromNvml, RestoresNvlinksUuidsAndNuma) {
  const NodeTopo full = small_model();
  NodeTopo t = stripped(full);
  for (Gpu &g : t.gpus) g.numa = -1;
  ASSERT_TRUE(fill_from_nvml(emulated_nvml(full), &t));
  EXPECT_EQ(t.nvlinks, full.nvlinks);
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    EXPECT_EQ(t.gpus[i].uuid, full.gpus[i].uuid) << i;
    EXPECT_EQ(t.gpus[i].sm, 90) << i;
    EXPECT_EQ(t.gpus[i].nvswitch_links, full.gpus[i].nvswitch_links) << i;
    EXPECT_EQ(t.gpus[i].numa, full.gpus[i].numa) << i;
  }
  EXPECT_EQ(gpu_path(t, 0, 1), PathClass::Nv);
  EXPECT_EQ(gpu_nv_links(t, 2, 3), 6);
  EXPECT_EQ(gpu_path(t, 0, 2), PathClass::Sys);
}

TEST(FillFromNvml, RestoresTheNvlinksOfTopologyFiles) {
  for (const char *name : {"hgx_h100.xml", "dgx1_v100.xml", "dgx1_ring4.xml", "dgx1_noring4.xml"}) {
    const NodeTopo full = read_file(name);
    ASSERT_FALSE(full.gpus.empty()) << name;
    NodeTopo t = stripped(full);
    ASSERT_TRUE(fill_from_nvml(emulated_nvml(full), &t)) << name;
    EXPECT_EQ(t.nvlinks, full.nvlinks) << name;
    int links = 0;
    for (size_t i = 0; i < t.gpus.size(); ++i) {
      EXPECT_EQ(t.gpus[i].nvswitch_links, full.gpus[i].nvswitch_links) << name << " GPU " << i;
      EXPECT_EQ(t.gpus[i].sm, full.gpus[i].sm) << name << " GPU " << i;
      links += t.gpus[i].nvswitch_links;
      for (int v : t.nvlinks[i]) links += v;
    }
    EXPECT_GT(links, 0) << name;  // the file has NVLinks: the test restored something
    for (size_t a = 0; a < t.gpus.size(); ++a) {
      for (size_t b = 0; b < t.gpus.size(); ++b) {
        EXPECT_EQ(gpu_path(t, a, b), gpu_path(full, a, b)) << name << " " << a << "-" << b;
      }
    }
  }
}

TEST(FillFromNvml, ChangesNothingAFileSays) {
  // What the emulated GPU does with GCOLL_TOPO_FILE: the NVML answering from the file adds
  // nothing to it (pair states, NUMA nodes, links all as written).
  for (const char *name : {"hgx_h100.xml", "dgx1_v100.xml", "dgx1_ring4.xml", "dgx1_noring4.xml", "broken4.xml",
                           "cloud_vm_nop2p.xml", "pcie_2socket.xml", "one_gpu.xml"}) {
    const NodeTopo file = read_file(name);
    NodeTopo t = file;
    EXPECT_TRUE(fill_from_nvml(emulated_nvml(file), &t)) << name;
    EXPECT_EQ(write_topo_xml(t), write_topo_xml(file)) << name;
    EXPECT_EQ(t.pair, file.pair) << name;
  }
}

TEST(FillFromNvml, KeepsTheModelsNvlinkFacts) {
  const NodeTopo nvml_view = small_model();
  NodeTopo t = stripped(nvml_view);
  t.nvlinks[0][1] = t.nvlinks[1][0] = 4;  // the file says 4 where NVML says 2
  t.gpus[2].nvswitch_links = 3;          // and 3 switch links where NVML says 6
  ASSERT_TRUE(fill_from_nvml(emulated_nvml(nvml_view), &t));
  EXPECT_EQ(t.nvlinks[0][1], 4);
  EXPECT_EQ(t.gpus[2].nvswitch_links, 3);
  EXPECT_EQ(t.gpus[3].nvswitch_links, 6);  // GPU 3 had none: NVML's
}

TEST(FillFromNvml, DeniedWhereNvmlRefusesWhatThePathAllows) {
  NodeTopo nvml_view = small_model();
  nvml_view.nvlinks[0][1] = nvml_view.nvlinks[1][0] = 0;  // 0-1: PIX, NVML says no P2P
  nvml_view.pair[0][1] = nvml_view.pair[1][0] = PairState::Denied;
  NodeTopo t = stripped(nvml_view);
  t.gpus[2].nvswitch_links = t.gpus[3].nvswitch_links = 0;
  nvml_view.gpus[2].nvswitch_links = nvml_view.gpus[3].nvswitch_links = 0;  // 2-3: SYS, refused anyway
  t.pair[2][3] = t.pair[3][2] = PairState::Broken;                              // a file's fact
  ASSERT_TRUE(fill_from_nvml(emulated_nvml(nvml_view), &t));
  EXPECT_EQ(t.pair[0][1], PairState::Denied);
  EXPECT_EQ(t.pair[1][0], PairState::Denied);
  EXPECT_EQ(t.pair[0][2], PairState::Default);  // SYS: the path already says no
  EXPECT_EQ(t.pair[2][3], PairState::Broken);
  EXPECT_FALSE(p2p_allowed(t, 0, 1, P2pLevel::Sys, false));
}

TEST(FillFromNvml, WithoutRemoteTypesGpuLinksByBusIdAndSwitchesByPciClass) {
  NodeTopo full = small_model();
  PciNode nvswitch;
  nvswitch.bus_id = "0000:c1:00.0";
  nvswitch.class_code = 0x068000;
  full.pci.push_back(nvswitch);
  NvmlApi api = emulated_nvml(full);  // its switch links lead to 0000:c1:00.0
  api.nvlink_remote_type = nullptr;
  NodeTopo t = stripped(full);
  ASSERT_TRUE(fill_from_nvml(api, &t));
  EXPECT_EQ(t.nvlinks[0][1], 2);
  EXPECT_EQ(t.gpus[2].nvswitch_links, 6);

  NodeTopo no_switch_node = stripped(small_model());  // the remote end is nothing known
  NvmlApi api2 = emulated_nvml(small_model());
  api2.nvlink_remote_type = nullptr;
  ASSERT_TRUE(fill_from_nvml(api2, &no_switch_node));
  EXPECT_EQ(no_switch_node.nvlinks[0][1], 2);
  EXPECT_EQ(no_switch_node.gpus[2].nvswitch_links, 0);
}

TEST(FillFromNvml, NothingWithoutNvmlOrKnownGpus) {
  const NodeTopo full = small_model();
  NodeTopo t = stripped(full);
  NvmlApi failing = emulated_nvml(full);
  failing.init = [] { return 9; };  // NVML_ERROR_DRIVER_NOT_LOADED
  EXPECT_FALSE(fill_from_nvml(failing, &t));
  EXPECT_FALSE(fill_from_nvml(NvmlApi(), &t));
  NodeTopo other = read_file("dgx1_v100.xml");  // knows none of these bus ids
  EXPECT_FALSE(fill_from_nvml(emulated_nvml(other), &t));
  EXPECT_TRUE(t.gpus[0].uuid.empty());
  EXPECT_EQ(t.nvlinks[0][1], 0);
  // Only the symbols there are used: no NVLink functions, uuids still.
  NvmlApi partial = emulated_nvml(full);
  partial.nvlink_state = nullptr;
  ASSERT_TRUE(fill_from_nvml(partial, &t));
  EXPECT_EQ(t.gpus[0].uuid, full.gpus[0].uuid);
  EXPECT_EQ(t.nvlinks[0][1], 0);
}

TEST(RealNvml, AbsentOrUsable) {
  // No GPU driver on CI machines: nullptr. Where there is one, its entry points are bound.
  const NvmlApi *api = real_nvml();
  EXPECT_EQ(api, real_nvml());
  if (api != nullptr) {
    EXPECT_TRUE(static_cast<bool>(api->init));
    EXPECT_TRUE(static_cast<bool>(api->device_by_bus_id));
  }
}

// ---- hwloc -----------------------------------------------------------------------------

class HwlocXml : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!hwloc_supported()) GTEST_SKIP() << "built without hwloc";
  }
  NodeTopo load(const std::string &name) {
    NodeTopo t;
    std::string error;
    EXPECT_TRUE(topo_from_hwloc_xml(kDir + "/hwloc/" + name, &t, &error)) << error;
    return t;
  }
};

TEST_F(HwlocXml, TwoSocketsGpusNumaAndNics) {
  const NodeTopo t = load("two_socket_2gpu.xml");
  ASSERT_EQ(t.numa.size(), 2u);
  EXPECT_EQ(t.numa[0].os_index, 0);
  EXPECT_EQ(t.numa[0].affinity, "00000003,00000000,00000003");  // CPUs 0, 1, 64, 65
  EXPECT_EQ(t.numa[1].affinity, "0000000c,00000000,0000000c");
  bool vendor = false;
  for (const auto &kv : t.numa[1].attrs) vendor = vendor || (kv.first == "vendor" && kv.second == "GenuineIntel");
  EXPECT_TRUE(vendor);
  // The NVIDIA 3D controllers only (not the Matrox VGA).
  ASSERT_EQ(t.gpus.size(), 2u);
  const int g0 = t.gpu_index("0000:18:00.0"), g1 = t.gpu_index("0000:a3:00.0");
  ASSERT_GE(g0, 0);
  ASSERT_GE(g1, 0);
  EXPECT_EQ(t.gpus[g0].numa, 0);
  EXPECT_EQ(t.gpus[g1].numa, 1);
  EXPECT_EQ(t.pci[t.gpus[g0].pci].class_code, 0x030200u);
  // The OpenFabrics name of the ConnectX (not ib0), and the plain Ethernet port.
  ASSERT_EQ(t.nics.size(), 2u);
  const int ib = t.nic_index("mlx5_0"), eth = t.nic_index("eno1");
  ASSERT_GE(ib, 0);
  ASSERT_GE(eth, 0);
  EXPECT_LT(t.nic_index("ib0"), 0);
  EXPECT_EQ(t.nics[ib].bus_id, "0000:19:00.0");
  EXPECT_EQ(t.nics[ib].numa, 0);
  EXPECT_EQ(t.nics[eth].numa, 1);
  // Paths as nvidia-smi topo -m says them.
  EXPECT_EQ(gpu_path(t, g0, g1), PathClass::Sys);
  EXPECT_EQ(nic_path(t, g0, ib), PathClass::Pix);   // one switch
  EXPECT_EQ(nic_path(t, g1, eth), PathClass::Phb);  // through socket 1's host bridge
  EXPECT_EQ(nic_path(t, g0, eth), PathClass::Sys);
  EXPECT_EQ(nic_path(t, g1, ib), PathClass::Sys);
  EXPECT_EQ(t.nvlinks.size(), 2u);
}

TEST_F(HwlocXml, NestedSwitchesAndHostBridges) {
  const NodeTopo t = load("one_socket_pxb.xml");
  ASSERT_EQ(t.numa.size(), 1u);
  EXPECT_EQ(t.numa[0].affinity, "0000000f");
  bool arm = false;
  for (const auto &kv : t.numa[0].attrs) arm = arm || (kv.first == "arch" && kv.second == "arm64");
  EXPECT_TRUE(arm);
  ASSERT_EQ(t.gpus.size(), 4u);
  const int a = t.gpu_index("0000:05:00.0"), b = t.gpu_index("0000:08:00.0");
  const int c = t.gpu_index("0000:09:00.0"), d = t.gpu_index("0000:41:00.0");
  ASSERT_TRUE(a >= 0 && b >= 0 && c >= 0 && d >= 0);
  EXPECT_EQ(gpu_path(t, a, b), PathClass::Pxb);   // two levels of switches
  EXPECT_EQ(gpu_path(t, a, c), PathClass::Phb);   // one host bridge
  EXPECT_EQ(gpu_path(t, c, d), PathClass::Node);  // two host bridges of one NUMA node
  const int nic = t.nic_index("mlx5_2");
  ASSERT_GE(nic, 0);
  EXPECT_EQ(nic_path(t, c, nic), PathClass::Phb);
  EXPECT_EQ(nic_path(t, d, nic), PathClass::Node);
  // A switch is one node (its upstream port); the root ports are not nodes.
  EXPECT_EQ(t.pci[t.pci[t.gpus[a].pci].parent].bus_id, "0000:03:00.0");
  EXPECT_EQ(t.pci[t.pci[t.pci[t.gpus[a].pci].parent].parent].bus_id, "0000:01:00.0");
  for (const PciNode &p : t.pci) EXPECT_NE(p.bus_id, "0000:00:01.0");
}

TEST_F(HwlocXml, DumpReadsBackWithTheSamePaths) {
  const NodeTopo t = load("one_socket_pxb.xml");
  NodeTopo back;
  std::string error;
  ASSERT_TRUE(read_topo_xml(write_topo_xml(t), &back, &error)) << error;
  ASSERT_EQ(back.gpus.size(), t.gpus.size());
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    for (size_t j = 0; j < t.gpus.size(); ++j) {
      const int bi = back.gpu_index(t.gpus[i].bus_id), bj = back.gpu_index(t.gpus[j].bus_id);
      EXPECT_EQ(gpu_path(back, bi, bj), gpu_path(t, i, j)) << i << "-" << j;
    }
  }
}

TEST_F(HwlocXml, MissingFileIsAnError) {
  NodeTopo t;
  std::string error;
  EXPECT_FALSE(topo_from_hwloc_xml(kDir + "/hwloc/no_such_file.xml", &t, &error));
  EXPECT_FALSE(error.empty());
}

TEST_F(HwlocXml, ThisMachineLoads) {
  NodeTopo t;
  std::string error;
  ASSERT_TRUE(topo_from_hwloc(&t, &error)) << error;
  EXPECT_FALSE(t.numa.empty());
  EXPECT_FALSE(t.numa[0].affinity.empty());
}

// ---- build_node_topology ---------------------------------------------------------------

TEST(BuildNodeTopology, EmulatedGpuUsesTheFileAsTheMachine) {
  Config c;
  c.cuda = true;
  c.cuda_emulate = true;
  c.topo_file = kDir + "/dgx1_v100.xml";
  std::string source;
  const NodeTopo t = build_node_topology(c, &source);
  EXPECT_EQ(write_topo_xml(t), write_topo_xml(read_file("dgx1_v100.xml")));
  EXPECT_NE(source.find("file " + c.topo_file), std::string::npos) << source;
  EXPECT_NE(source.find("emulated NVML"), std::string::npos) << source;
}

TEST(BuildNodeTopology, UnreadableFileFallsBackToDetection) {
  Config c;
  c.cuda = false;
  c.topo_file = kDir + "/no_such_file.xml";
  std::string source;
  const NodeTopo t = build_node_topology(c, &source);
  EXPECT_EQ(source.find("file"), std::string::npos) << source;
  EXPECT_NE(source.find("no CUDA"), std::string::npos) << source;
  if (hwloc_supported()) {
    EXPECT_FALSE(t.numa.empty());
  }
}

TEST(BuildNodeTopology, FileWinsOverDetection) {
  Config c;
  c.cuda = false;
  c.topo_file = kDir + "/pcie_2socket.xml";
  std::string source;
  const NodeTopo t = build_node_topology(c, &source);
  const NodeTopo file = read_file("pcie_2socket.xml");
  EXPECT_EQ(source.rfind("file " + c.topo_file + " + ", 0), 0u) << source;
  ASSERT_EQ(t.gpus.size(), file.gpus.size());  // this machine has no GPU: the file's stay
  for (size_t i = 0; i < t.gpus.size(); ++i) EXPECT_EQ(t.gpus[i].bus_id, file.gpus[i].bus_id);
}

TEST(MergeDetected, FillsWhatTheFileOmitsAndKeepsWhatItSays) {
  const NodeTopo det = small_model();
  NodeTopo file = stripped(det);
  for (Gpu &g : file.gpus) g.numa = -1;
  file.numa[1].affinity.clear();
  file.gpus[1].uuid = "GPU-from-the-file";
  file.gpus[2].nvswitch_links = 2;  // the file's
  NodeTopo d = det;
  d.pair[0][1] = d.pair[1][0] = PairState::Denied;
  merge_detected(&file, d);
  EXPECT_EQ(file.gpus[0].uuid, det.gpus[0].uuid);
  EXPECT_EQ(file.gpus[1].uuid, "GPU-from-the-file");
  EXPECT_EQ(file.gpus[3].numa, 1);
  EXPECT_EQ(file.numa[1].affinity, det.numa[1].affinity);
  EXPECT_EQ(file.nvlinks[0][1], 2);          // neither GPU had links in the file
  EXPECT_EQ(file.gpus[2].nvswitch_links, 2);  // the file's value
  EXPECT_EQ(file.gpus[3].nvswitch_links, 6);
  EXPECT_EQ(file.pair[1][0], PairState::Denied);
}

TEST(NodeTopology, OncePerProcessThreadSafeAndDumped) {
  ASSERT_TRUE(kDumpSet);
  std::vector<const NodeTopo *> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&seen, i] { seen[i] = &node_topology(); });
  for (std::thread &t : threads) t.join();
  for (const NodeTopo *p : seen) EXPECT_EQ(p, &node_topology());
  const std::string &source = node_topology_source();
  EXPECT_EQ(&source, &node_topology_source());
  if (hwloc_supported()) {
    EXPECT_NE(source.find("hwloc"), std::string::npos) << source;
  }
  if (real_nvml() == nullptr) {
    EXPECT_NE(source.find("no NVML"), std::string::npos) << source;
  }
  const std::string path = expand_dump_path(kDumpPattern);
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str(), write_topo_xml(node_topology()));
  std::remove(path.c_str());
}

TEST(DumpPath, ExpandsHostAndPid) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(expand_dump_path("/tmp/topo-%h-%p.xml"),
            "/tmp/topo-" + std::string(host) + "-" + std::to_string(getpid()) + ".xml");
  EXPECT_EQ(expand_dump_path("a%%b%"), "a%b%");
  EXPECT_EQ(expand_dump_path("plain"), "plain");
}

}  // namespace
}  // namespace topo
}  // namespace gcoll
