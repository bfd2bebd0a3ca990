// NCCL's topology XML dialect (topo/topo_xml.h): the files of tests/topo, what NCCL's own
// dumps hold, malformed text, and the round trip through write_topo_xml.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "topo/node_topo.h"
#include "topo/topo_xml.h"
#include "topo_files.h"

namespace gcoll {
namespace topo {
namespace {

const std::vector<std::string> kFiles = {"one_gpu.xml",       "hgx_h100.xml",         "dgx1_v100.xml",
                                         "dgx1_ring4.xml",    "dgx1_noring4.xml",     "pcie_2socket.xml",
                                         "cloud_vm_nop2p.xml", "broken4.xml",          "nic_every_cpu.xml",
                                         "pcie16_unordered.xml", "dgx_a100_nvswitch.xml", "vm_host_bridges.xml",
                                         "no_gpu.xml",        "nic_far4.xml"};

NodeTopo parse(const std::string &text) {
  NodeTopo t;
  std::string err;
  EXPECT_TRUE(read_topo_xml(text, &t, &err)) << err;
  return t;
}

// The error for text that must not read, "" where it reads.
std::string error_of(const std::string &text) {
  NodeTopo t;
  std::string err;
  if (read_topo_xml(text, &t, &err)) return "";
  return err;
}

// Field by field, so that a difference names itself.
void expect_same(const NodeTopo &a, const NodeTopo &b, const std::string &what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.numa.size(), b.numa.size());
  for (size_t i = 0; i < a.numa.size(); ++i) {
    EXPECT_EQ(a.numa[i].os_index, b.numa[i].os_index) << "numa " << i;
    EXPECT_EQ(a.numa[i].affinity, b.numa[i].affinity) << "numa " << i;
    EXPECT_EQ(a.numa[i].attrs, b.numa[i].attrs) << "numa " << i;
  }
  ASSERT_EQ(a.pci.size(), b.pci.size());
  for (size_t i = 0; i < a.pci.size(); ++i) {
    EXPECT_EQ(a.pci[i].bus_id, b.pci[i].bus_id) << "pci " << i;
    EXPECT_EQ(a.pci[i].parent, b.pci[i].parent) << "pci " << i;
    EXPECT_EQ(a.pci[i].numa, b.pci[i].numa) << "pci " << i;
    EXPECT_EQ(a.pci[i].class_code, b.pci[i].class_code) << "pci " << i;
    EXPECT_EQ(a.pci[i].attrs, b.pci[i].attrs) << "pci " << i;
  }
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const Gpu &x = a.gpus[i], &y = b.gpus[i];
    EXPECT_EQ(x.bus_id, y.bus_id) << "gpu " << i;
    EXPECT_EQ(x.uuid, y.uuid) << "gpu " << i;
    EXPECT_EQ(x.pci, y.pci) << "gpu " << i;
    EXPECT_EQ(x.numa, y.numa) << "gpu " << i;
    EXPECT_EQ(x.sm, y.sm) << "gpu " << i;
    EXPECT_EQ(x.dev, y.dev) << "gpu " << i;
    EXPECT_EQ(x.nvswitch_links, y.nvswitch_links) << "gpu " << i;
    EXPECT_EQ(x.attrs, y.attrs) << "gpu " << i;
  }
  ASSERT_EQ(a.nics.size(), b.nics.size());
  for (size_t i = 0; i < a.nics.size(); ++i) {
    const Nic &x = a.nics[i], &y = b.nics[i];
    EXPECT_EQ(x.name, y.name) << "nic " << i;
    EXPECT_EQ(x.bus_id, y.bus_id) << "nic " << i;
    EXPECT_EQ(x.pci, y.pci) << "nic " << i;
    EXPECT_EQ(x.numa, y.numa) << "nic " << i;
    EXPECT_EQ(x.speed_mbps, y.speed_mbps) << "nic " << i;
    EXPECT_EQ(x.gdr, y.gdr) << "nic " << i;
    EXPECT_EQ(x.attrs, y.attrs) << "nic " << i;
  }
  EXPECT_EQ(a.nvlinks, b.nvlinks);
  EXPECT_EQ(a.pair, b.pair);
}

std::string attr(const std::vector<std::pair<std::string, std::string>> &attrs, const std::string &key) {
  for (const auto &a : attrs) {
    if (a.first == key) return a.second;
  }
  return "(absent)";
}

TEST(TopoXml, EveryFileIsListedAndReads) {
  // A file added to tests/topo without a line here (and a golden output) fails.
  std::set<std::string> on_disk;
  DIR *d = opendir(GCOLL_TOPO_DIR);
  ASSERT_NE(d, nullptr);
  while (dirent *e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".xml") == 0) on_disk.insert(n);
  }
  closedir(d);
  EXPECT_EQ(on_disk, std::set<std::string>(kFiles.begin(), kFiles.end()));

  struct Count {
    const char *file;
    size_t numa, gpus, nics;
  } counts[] = {{"one_gpu.xml", 1, 1, 1},      {"hgx_h100.xml", 2, 8, 8},          {"dgx1_v100.xml", 2, 8, 4},
                {"dgx1_ring4.xml", 2, 4, 2},   {"dgx1_noring4.xml", 2, 4, 3},      {"pcie_2socket.xml", 2, 4, 2},
                {"cloud_vm_nop2p.xml", 1, 4, 1}, {"broken4.xml", 1, 4, 2},
                // NCCL's dumps of issue 31: repeated NICs are one NIC each.
                {"nic_every_cpu.xml", 2, 4, 4},  {"pcie16_unordered.xml", 2, 16, 2}, {"dgx_a100_nvswitch.xml", 4, 8, 4},
                {"vm_host_bridges.xml", 2, 4, 2}, {"no_gpu.xml", 1, 0, 1},
                // broken4's board with its NICs by GPU1 and GPU3 (leaders by NIC).
                {"nic_far4.xml", 1, 4, 2}};
  for (const Count &c : counts) {
    const NodeTopo t = load(c.file);
    EXPECT_EQ(t.numa.size(), c.numa) << c.file;
    EXPECT_EQ(t.gpus.size(), c.gpus) << c.file;
    EXPECT_EQ(t.nics.size(), c.nics) << c.file;
    ASSERT_EQ(t.nvlinks.size(), c.gpus) << c.file;
    ASSERT_EQ(t.pair.size(), c.gpus) << c.file;
    for (size_t a = 0; a < c.gpus; ++a) {
      // GPU a is the a-th by bus id, which is also what the files' dev attributes say
      // (NVML's numbering), whatever order the file lists them in.
      EXPECT_EQ(t.gpus[a].dev, static_cast<int>(a)) << c.file;
      if (a > 0) EXPECT_LT(t.gpus[a - 1].bus_id, t.gpus[a].bus_id) << c.file;
      EXPECT_EQ(t.gpus[a].bus_id, pci_bus_id_normalise(t.gpus[a].bus_id)) << c.file;
      ASSERT_GE(t.gpus[a].pci, 0) << c.file;
      EXPECT_EQ(t.pci[t.gpus[a].pci].bus_id, t.gpus[a].bus_id) << c.file;
      EXPECT_EQ(t.pci[t.gpus[a].pci].class_code >> 16, 0x03u) << c.file;
      for (size_t b = 0; b < c.gpus; ++b) {
        EXPECT_EQ(t.nvlinks[a][b], t.nvlinks[b][a]) << c.file;
        EXPECT_EQ(t.pair[a][b], t.pair[b][a]) << c.file;
      }
      EXPECT_EQ(t.nvlinks[a][a], 0) << c.file;
    }
  }
}

TEST(TopoXml, HgxDetails) {
  const NodeTopo t = load("hgx_h100.xml");
  EXPECT_EQ(t.numa[0].os_index, 0);
  EXPECT_EQ(t.numa[1].os_index, 1);
  EXPECT_EQ(t.numa[0].affinity, "00000000,000000ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff");
  EXPECT_EQ(attr(t.numa[0].attrs, "vendor"), "GenuineIntel");
  EXPECT_EQ(attr(t.numa[0].attrs, "modelid"), "143");
  const Gpu &g = t.gpus[0];
  EXPECT_EQ(g.bus_id, "0000:1b:00.0");
  EXPECT_EQ(g.sm, 90);
  EXPECT_EQ(g.nvswitch_links, 18);
  EXPECT_EQ(g.numa, 0);
  EXPECT_EQ(t.gpus[5].numa, 1);
  EXPECT_EQ(attr(g.attrs, "rank"), "0");
  EXPECT_EQ(attr(g.attrs, "gdr"), "1");
  EXPECT_EQ(t.pci[g.pci].class_code, 0x030200u);
  EXPECT_EQ(attr(t.pci[g.pci].attrs, "device"), "0x2330");
  EXPECT_EQ(attr(t.pci[g.pci].attrs, "link_speed"), "32.0 GT/s PCIe");
  for (const Gpu &x : t.gpus) EXPECT_EQ(x.nvswitch_links, 18);
  for (const auto &row : t.nvlinks) {
    for (int v : row) EXPECT_EQ(v, 0);  // all through the switches
  }
  const Nic &n = t.nics[3];
  EXPECT_EQ(n.name, "mlx5_3");
  EXPECT_EQ(n.bus_id, "0000:5e:00.0");
  EXPECT_EQ(n.speed_mbps, 400000);
  EXPECT_TRUE(n.gdr);
  EXPECT_EQ(n.numa, 0);
  EXPECT_EQ(attr(n.attrs, "port"), "1");
  EXPECT_EQ(attr(n.attrs, "maxconn"), "131072");
  EXPECT_EQ(t.pci[n.pci].class_code, 0x020700u);
  // The PCIe switch holds both; a root port holds two switches.
  EXPECT_EQ(t.pci[n.pci].parent, t.pci[t.gpus[3].pci].parent);
  EXPECT_EQ(t.pci[t.pci[t.gpus[2].pci].parent].parent, t.pci[t.pci[t.gpus[3].pci].parent].parent);
}

TEST(TopoXml, Dgx1NvlinksExactly) {
  const NodeTopo t = load("dgx1_v100.xml");
  // nvidia-smi topo -m on a DGX-1V.
  const std::vector<std::vector<int>> want = {
      {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
      {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1}, {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  EXPECT_EQ(t.nvlinks, want);
  for (const Gpu &g : t.gpus) {
    EXPECT_EQ(g.sm, 70);
    EXPECT_EQ(g.nvswitch_links, 0);
  }
  // Subsets keep the bus ids; links to GPUs not in the file are dropped.
  const NodeTopo r = load("dgx1_ring4.xml");
  EXPECT_EQ(r.gpus[2].bus_id, t.gpus[4].bus_id);
  EXPECT_EQ(r.nvlinks, (std::vector<std::vector<int>>{{0, 1, 2, 0}, {1, 0, 0, 2}, {2, 0, 0, 1}, {0, 2, 1, 0}}));
  const NodeTopo n = load("dgx1_noring4.xml");
  EXPECT_EQ(n.gpus[3].bus_id, t.gpus[7].bus_id);
  EXPECT_EQ(n.nvlinks, (std::vector<std::vector<int>>{{0, 1, 1, 0}, {1, 0, 2, 0}, {1, 2, 0, 0}, {0, 0, 0, 0}}));
}

TEST(TopoXml, PairFacts) {
  const NodeTopo vm = load("cloud_vm_nop2p.xml");
  ASSERT_EQ(vm.numa.size(), 1u);
  EXPECT_EQ(vm.numa[0].os_index, -1);
  EXPECT_EQ(vm.numa[0].affinity, "");
  EXPECT_FALSE(vm.nics[0].gdr);
  EXPECT_EQ(vm.nics[0].name, "ens5");
  EXPECT_EQ(vm.gpus[2].bus_id, "0000:00:1d.0");
  for (int a = 0; a < 4; ++a) {
    EXPECT_EQ(vm.gpus[a].pci, a);
    EXPECT_EQ(vm.pci[a].parent, -1);
    for (int b = 0; b < 4; ++b) EXPECT_EQ(vm.pair[a][b], a == b ? PairState::Default : PairState::Denied);
  }
  const NodeTopo b4 = load("broken4.xml");
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      const bool broken = (a == 1 && b == 2) || (a == 2 && b == 1);
      EXPECT_EQ(b4.pair[a][b], broken ? PairState::Broken : PairState::Default) << a << "-" << b;
      EXPECT_EQ(b4.nvlinks[a][b], a == b ? 0 : 4);
    }
  }
  // One side's word holds for both; denied outranks broken.
  const NodeTopo one_sided = parse(R"(<system version="1"><cpu numaid="0">
    <pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="80">
      <gcoll_p2p target="0000:02:00.0" state="broken"/><gcoll_p2p target="0000:03:00.0" state="broken"/>
      <gcoll_p2p target="0000:09:00.0" state="denied"/></gpu></pci>
    <pci busid="0000:02:00.0" class="0x030200"><gpu dev="1" sm="80"/></pci>
    <pci busid="0000:03:00.0" class="0x030200"><gpu dev="2" sm="80">
      <gcoll_p2p target="0000:01:00.0" state="denied"/></gpu></pci>
  </cpu></system>)");
  EXPECT_EQ(one_sided.pair[1][0], PairState::Broken);
  EXPECT_EQ(one_sided.pair[0][1], PairState::Broken);
  EXPECT_EQ(one_sided.pair[0][2], PairState::Denied);
  EXPECT_EQ(one_sided.pair[2][0], PairState::Denied);
  EXPECT_EQ(one_sided.pair[1][2], PairState::Default);
}

TEST(TopoXml, WhatAFileOmitsStaysUnknown) {
  const NodeTopo t = parse(R"(<system version="1">
  <cpu>
    <pci busid="0000:3B:00.0" class="0x030200">
      <gpu dev="0" sm="80"/>
    </pci>
    <pci busid="3c:00">
      <gpu/>
    </pci>
  </cpu>
</system>
)");
  ASSERT_EQ(t.numa.size(), 1u);
  EXPECT_EQ(t.numa[0].os_index, -1);
  EXPECT_TRUE(t.numa[0].affinity.empty());
  EXPECT_TRUE(t.numa[0].attrs.empty());
  EXPECT_TRUE(t.nics.empty());
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].bus_id, "0000:3b:00.0");
  EXPECT_EQ(t.gpus[1].bus_id, "0000:3c:00.0");
  EXPECT_EQ(t.gpus[1].sm, 0);
  EXPECT_EQ(t.gpus[1].dev, -1);
  EXPECT_EQ(t.pci[1].class_code, 0u);
  EXPECT_TRUE(t.gpus[0].uuid.empty());
  EXPECT_TRUE(t.gpus[0].attrs.empty());
  EXPECT_EQ(t.gpus[0].numa, 0);
  EXPECT_EQ(t.nvlinks, (std::vector<std::vector<int>>{{0, 0}, {0, 0}}));
  // numaid="-1" is NCCL's "unknown".
  EXPECT_EQ(parse(R"(<system version="1"><cpu numaid="-1"/></system>)").numa[0].os_index, -1);
  EXPECT_EQ(parse(R"(<system version="1"><cpu numaid="3"/></system>)").numa[0].os_index, 3);
  // An empty system is a machine without GPUs.
  EXPECT_TRUE(parse(R"(<system version="1"/>)").gpus.empty());
  // uuid kept; nvlinks symmetrised by the larger side; bus ids in NVML's spelling.
  const NodeTopo u = parse(R"(<system version="1"><cpu numaid="0">
    <pci busid="0000:01:00.0"><gpu dev="0" uuid="GPU-12345678-abcd-ef01-2345-6789abcdef01">
      <nvlink target="00000000:02:00.0" count="2" tclass="0x030200"/>
      <nvlink target="0000:03:00.0" count="1" tclass="0x030200"/></gpu></pci>
    <pci busid="0000:02:00.0"><gpu dev="1"><nvlink target="0000:01:00.0" count="1" tclass="0x030200"/></gpu></pci>
    <pci busid="0000:03:00.0"><gpu dev="2"><nvlink target="0000:01:00.0" count="3" tclass="0x030200"/>
      <nvlink target="0000:02:00.0" count="5"/></gpu></pci>
  </cpu></system>)");
  EXPECT_EQ(u.gpus[0].uuid, "GPU-12345678-abcd-ef01-2345-6789abcdef01");
  EXPECT_EQ(u.nvlinks, (std::vector<std::vector<int>>{{0, 2, 3}, {2, 0, 5}, {3, 5, 0}}));
}

TEST(TopoXml, UnknownElementsAndAttributesAreIgnored) {
  const NodeTopo t = parse(R"(<system version="1" name="my cluster">
  <future_thing a="1"><cpu numaid="7"/></future_thing>
  <cpu numaid="0" shiny="yes">
    <mystery><pci busid="0000:99:00.0" class="0x030200"><gpu dev="9"/></pci></mystery>
    <pci busid="0000:01:00.0" class="0x030200" colour="blue">
      <gpu dev="0" sm="90" widget="3"><sparkle/></gpu>
    </pci>
    <gpu dev="5"/>
  </cpu>
</system>)");
  ASSERT_EQ(t.numa.size(), 1u);  // a cpu only counts directly in system
  EXPECT_EQ(t.numa[0].os_index, 0);
  ASSERT_EQ(t.gpus.size(), 1u);  // nor a pci outside cpu/pci, nor a gpu outside pci
  EXPECT_EQ(t.gpus[0].bus_id, "0000:01:00.0");
  // Unknown attributes are kept (written back), not interpreted.
  EXPECT_EQ(attr(t.gpus[0].attrs, "widget"), "3");
  EXPECT_EQ(attr(t.pci[0].attrs, "colour"), "blue");
  EXPECT_EQ(attr(t.numa[0].attrs, "shiny"), "yes");
}

// What NCCL_TOPO_DUMP_FILE writes (NCCL 2.2x on a Grace Hopper-like and a Broadcom-switch
// machine, shortened): host_hash, keep, pcilink, c2c, a NIC without PCI under its CPU,
// NVLinks to an NVSwitch NCCL cannot see and to the CPU.
TEST(TopoXml, NcclDump) {
  const std::string dump = R"(<?xml version="1.0"?>
<!-- written by hand after a dump -->
<system version="1">
  <cpu host_hash="0x6a1e87dd1f2b3c4d" numaid="0" affinity="ffffffff,ffffffff" arch="arm64" vendor='NVIDIA'
       keep="1">
    <pci busid="0009:01:00.0" class="0x030200" vendor="0x10de" device="0x2342" subsystem_vendor="0x10de"
         subsystem_device="0x16eb" link_speed="" link_width="" keep="1">
      <gpu dev="0" sm="90" rank="0" gdr="1">
        <nvlink target="fffffff:ffff:ff" count="18" tclass="0x068000"/>
        <nvlink target="0000:00:00.0" count="2" tclass="0x068001"/>
        <c2c bw="21000" count="10"/>
      </gpu>
    </pci>
    <pci busid="0000:0a:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe"
         link_width="16">
      <pcilink target="0000:8a:00.0"/>
      <pci busid="0000:0c:00.0" class="0x020000" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe"
           link_width="16">
        <nic>
          <net name="mlx5_0" dev="0" speed="400000" port="1" latency="0.000000" guid="0x6e53b10300f4c2a0"
               maxconn="131072" gdr="1" coll="1" keep="1"/>
          <net name="mlx5_0:2" dev="1" speed="400000" port="2" latency="0.000000" guid="0x6e53b10300f4c2a1"
               maxconn="131072" gdr="1"/>
        </nic>
      </pci>
    </pci>
    <nic>
      <net name="eth0" dev="2" speed="10000" port="0" latency="0.000000" guid="0x0" maxconn="65536" gdr="0"/>
    </nic>
  </cpu>
</system>
)";
  const NodeTopo t = parse(dump);
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].bus_id, "0009:01:00.0");
  EXPECT_EQ(t.gpus[0].nvswitch_links, 18);  // not 20: 0x068001 is the CPU
  EXPECT_EQ(attr(t.numa[0].attrs, "host_hash"), "0x6a1e87dd1f2b3c4d");
  EXPECT_EQ(attr(t.numa[0].attrs, "vendor"), "NVIDIA");
  EXPECT_EQ(attr(t.numa[0].attrs, "keep"), "(absent)");
  EXPECT_EQ(attr(t.pci[0].attrs, "keep"), "(absent)");
  EXPECT_EQ(attr(t.pci[0].attrs, "link_speed"), "");
  ASSERT_EQ(t.nics.size(), 3u);
  EXPECT_EQ(t.nics[0].bus_id, "0000:0c:00.0");
  EXPECT_EQ(t.nics[1].pci, t.nics[0].pci);  // two ports of one function
  EXPECT_EQ(attr(t.nics[1].attrs, "port"), "2");
  EXPECT_EQ(attr(t.nics[0].attrs, "coll"), "1");
  EXPECT_EQ(attr(t.nics[0].attrs, "keep"), "(absent)");
  EXPECT_EQ(t.nics[2].name, "eth0");
  EXPECT_EQ(t.nics[2].pci, -1);
  EXPECT_EQ(t.nics[2].bus_id, "");
  EXPECT_EQ(t.nics[2].numa, 0);
  EXPECT_EQ(nic_path(t, 0, 2), PathClass::Sys);
  EXPECT_EQ(nic_path(t, 0, 0), PathClass::Node);
  // And back: the model of the dump survives a write and a read.
  NodeTopo again;
  std::string err;
  ASSERT_TRUE(read_topo_xml(write_topo_xml(t), &again, &err)) << err;
  expect_same(t, again, "NCCL dump");
}

TEST(TopoXml, LexicalDetails) {
  // Single quotes, entities, comments anywhere, text content, CRLF, a DOCTYPE.
  const NodeTopo t = parse(
      "<!DOCTYPE system>\r\n<system version='1'>some text<!-- a <comment> -- with dashes -->\r\n"
      "  <cpu numaid = \"0\" vendor=\"A&amp;B &lt;&gt; &quot;q&quot; &apos;s&apos; &#65;&#x42;\">\r\n"
      "    <pci busid='0000:01:00.0' class='0x03'><gpu dev='0' sm='80'></gpu></pci>\r\n"
      "  </cpu>\r\n</system>\r\n<!-- trailing -->\r\n");
  EXPECT_EQ(attr(t.numa[0].attrs, "vendor"), "A&B <> \"q\" 's' AB");
  EXPECT_EQ(t.pci[0].class_code, 0x030000u);  // NCCL's short class "0x03"
  ASSERT_EQ(t.gpus.size(), 1u);
  // The writer escapes what it must; the value comes back.
  NodeTopo again = parse(write_topo_xml(t));
  EXPECT_EQ(attr(again.numa[0].attrs, "vendor"), "A&B <> \"q\" 's' AB");
}

TEST(TopoXml, MalformedTextNamesItsLine) {
  struct Case {
    const char *text;
    const char *error_start;
  } cases[] = {
      {"<system version=\"1\">\n  <cpu>\n  </pci>\n</system>\n", "line 3: </pci> closes <cpu> (line 2)"},
      {"<system version=\"1\">\n  <!-- open\n\n", "line 2: unterminated comment"},
      {"<system version=\"1\">\n  <cpu numaid=0>\n", "line 2: attribute numaid: value not in quotes"},
      {"<system version=\"1\">\n<cpu numaid=\"0\">\n\n", "line 4: <cpu> (line 2) is not closed"},
      {"<system version=\"1\">\n<cpu numaid=\"0\"", "line 2: <cpu: unexpected end of text"},
      {"\n\n<topology/>\n", "line 3: <topology>, expected <system>"},
      {"", "line 1: no <system> element"},
      {"<!-- only a comment -->", "line 1: no <system> element"},
      {"<system>\n</system>\n</system>\n", "line 3: </system> without an open element"},
      {"<system>\n<cpu>\n<pci class=\"0x060400\"/>\n</cpu></system>", "line 3: <pci> has no busid"},
      {"<system>\n<cpu>\n<pci busid=\"07:00.0:1\"><gpu/></pci>\n</cpu></system>",
       "line 3: <pci> busid=\"07:00.0:1\" is not a PCI bus id"},
      {"<system><cpu><pci busid=\"0000:01:00.0\"><gpu>\n\n<gcoll_p2p target=\"0000:02:00.0\" state=\"flaky\"/>"
       "</gpu></pci></cpu></system>",
       "line 3: <gcoll_p2p> state=\"flaky\": denied or broken"},
      {"<system><cpu>\n<pci busid=\"0000:01:00.0\"><gpu/></pci>\n<pci busid=\"1:0.0\"><gpu/></pci></cpu></system>",
       "line 3: <gpu> GPU 0000:01:00.0 appears twice"},
      {"<system>\n<cpu a=\"1\" / ></system>", "line 2: expected '>' after '/' in <cpu>"},
      {"<system>\n< cpu/></system>", "line 2: expected an element name after '<'"},
      {"<system>\n<cpu\n  numaid\n  =\n  \"0\" bad!=\"1\"/></system>", "line 5: attribute bad of <cpu> has no value"},
      {"<system>\n<cpu !x=\"1\"/></system>", "line 2: unexpected '!' in <cpu>"},
  };
  for (const Case &c : cases) {
    const std::string err = error_of(c.text);
    EXPECT_EQ(err.compare(0, std::string(c.error_start).size(), c.error_start), 0)
        << "text: " << c.text << "\nerror: " << err << "\nwanted: " << c.error_start;
  }
  // Nesting deep enough to blow a stack is refused, not followed.
  std::string deep = "<system><cpu>";
  for (int i = 0; i < 5000; ++i) deep += "<x>";
  EXPECT_NE(error_of(deep).find("nested too deeply"), std::string::npos);
  // The output is left alone on failure.
  NodeTopo t = load("one_gpu.xml");
  std::string err;
  EXPECT_FALSE(read_topo_xml("<system><cpu></system>", &t, &err));
  EXPECT_EQ(t.gpus.size(), 1u);
}

// Issue 31: what NCCL's own reader accepts (graph/xml.cc, graph/topo.cc), gcoll
// accepts with the same meaning.
TEST(TopoXml, NcclTolerates) {
  // A NIC without a PCI device listed under every CPU (NCCL's dump of a virtual or
  // plugin-only NIC): one NIC, where it is first listed.
  const NodeTopo e = load("nic_every_cpu.xml");
  ASSERT_EQ(e.nics.size(), 4u);
  EXPECT_EQ(e.nics[0].name, "mlx5_0");
  EXPECT_EQ(e.nics[1].name, "hsn0");
  EXPECT_EQ(e.nics[2].name, "hsn1");
  EXPECT_EQ(e.nics[3].name, "mlx5_1");
  EXPECT_EQ(e.nics[1].pci, -1);
  EXPECT_EQ(e.nics[1].numa, 0);
  EXPECT_EQ(attr(e.nics[2].attrs, "dev"), "3");
  EXPECT_EQ(e.nics[3].bus_id, "0000:c4:00.0");
  EXPECT_EQ(e.nics[3].numa, 1);

  // The same NIC seen without and then with its PCI function: the PCI one wins.
  const NodeTopo h = parse(
      "<system version=\"1\"><cpu numaid=\"0\"><nic><net name=\"ib0\" dev=\"0\"/></nic></cpu>"
      "<cpu numaid=\"1\"><pci busid=\"0000:81:00.0\" class=\"0x020000\"><nic>"
      "<net name=\"ib0\" dev=\"0\" speed=\"100000\" gdr=\"1\"/></nic></pci></cpu></system>");
  ASSERT_EQ(h.nics.size(), 1u);
  EXPECT_EQ(h.nics[0].bus_id, "0000:81:00.0");
  EXPECT_EQ(h.nics[0].numa, 1);
  EXPECT_EQ(h.nics[0].speed_mbps, 100000);
  EXPECT_TRUE(h.nics[0].gdr);

  // Optional and odd attributes, unknown elements, several <nic> and <gpu> in one function,
  // NCCL's "ignore" rules for <net>.
  const NodeTopo t = parse(
      "<junk/>\n"
      "<system version=\"2\" name=\"x\">\n"
      "  <cpu numaid=\"0\" numaid=\"5\" vendor=\"A&B\" extra=\"<y>\">\n"
      "    <pci busid=\"0000:01:00.0\" class=\"bridge\" link_width=\"\">\n"
      "      <pci busid=\"0000:02:00.0\" class=\"0x0302\">\n"
      "        <gpu dev=\"0\" sm=\"90x\" mlopart=\"0\"><nvlink target=\"0000:aa:00.0\" count=\"4\"/>"
      "<nvlink target=\"0000:03:00.0\" count=\"2\"/><c2c bw=\"1\" count=\"1\"/></gpu>\n"
      "        <gpu dev=\"0\" sm=\"90\" mlopart=\"1\"/>\n"
      "      </pci>\n"
      "      <pci busid=\"0000:03:00.0\" class=\"0x030200\"><gpu sm=\"80\"/></pci>\n"
      "      <pci busid=\"weird\" class=\"0x020000\">\n"
      "        <nic><net name=\"a\" dev=\"0\"/><net name=\"nodev\"/><net name=\"fused\" dev=\"9\" net=\"0\"/>"
      "<gin name=\"g\" dev=\"1\"/><net dev=\"4\"/></nic>\n"
      "        <nic><net name=\"second\" dev=\"2\"/></nic>\n"
      "      </pci>\n"
      "      <unknown><pci busid=\"0000:0f:00.0\"><gpu/></pci></unknown>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "</system>\n"
      "<system version=\"1\"><cpu numaid=\"7\"/></system>\n");
  ASSERT_EQ(t.numa.size(), 1u);
  EXPECT_EQ(t.numa[0].os_index, 0);                 // the first of two: xmlGetAttr's
  EXPECT_EQ(attr(t.numa[0].attrs, "vendor"), "A&B");  // a bare '&' as written
  EXPECT_EQ(attr(t.numa[0].attrs, "extra"), "<y>");
  EXPECT_EQ(t.pci[0].class_code, 0u);  // unknown class: a plain PCI node
  ASSERT_EQ(t.gpus.size(), 2u);        // MLOPart partitions: one GPU; <unknown>: skipped
  EXPECT_EQ(t.gpus[0].sm, 90);         // strtol: "90x" is 90
  EXPECT_EQ(t.gpus[0].nvswitch_links, 4);  // no tclass, target not in the file: an NVSwitch
  EXPECT_EQ(t.nvlinks[0][1], 2);           // no tclass, target a GPU of the file
  ASSERT_EQ(t.nics.size(), 2u);            // no dev, net="0", <gin>, the second <nic>: ignored
  EXPECT_EQ(t.nics[0].name, "a");
  EXPECT_EQ(t.nics[1].name, "net4");  // no name: NCCL keys nets by dev
  EXPECT_EQ(t.nics[0].bus_id, "weird");
}

TEST(TopoXml, GpusInBusOrder) {
  // A 16-GPU PCIe server whose file lists socket 1 first and switches and GPUs out of
  // order: GPU i is the i-th by bus id, as nvidia-smi, NVML and the file's dev say.
  const NodeTopo t = load("pcie16_unordered.xml");
  const char *want[] = {"1c", "1d", "1e", "1f", "3c", "3d", "3e", "3f",
                        "9c", "9d", "9e", "9f", "bc", "bd", "be", "bf"};
  ASSERT_EQ(t.gpus.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(t.gpus[i].bus_id, std::string("0000:") + want[i] + ":00.0") << i;
    EXPECT_EQ(t.gpus[i].dev, i);
  }
  // Pair facts and NVLinks move with their GPUs.
  const NodeTopo p = parse(
      "<system><cpu numaid=\"0\">"
      "<pci busid=\"0000:09:00.0\"><gpu><nvlink target=\"0000:05:00.0\" count=\"3\" tclass=\"0x030200\"/>"
      "<gcoll_p2p target=\"0000:01:00.0\" state=\"denied\"/></gpu></pci>"
      "<pci busid=\"0000:05:00.0\"><gpu/></pci><pci busid=\"0000:01:00.0\"><gpu/></pci></cpu></system>");
  ASSERT_EQ(p.gpus.size(), 3u);
  EXPECT_EQ(p.gpus[0].bus_id, "0000:01:00.0");
  EXPECT_EQ(p.gpus[2].bus_id, "0000:09:00.0");
  EXPECT_EQ(p.nvlinks[1][2], 3);
  EXPECT_EQ(p.nvlinks[2][1], 3);
  EXPECT_EQ(p.nvlinks[0][2], 0);
  EXPECT_EQ(p.pair[0][2], PairState::Denied);
  EXPECT_EQ(p.pair[2][0], PairState::Denied);
  EXPECT_EQ(p.pair[1][2], PairState::Default);
  // The writer keeps the order: read back, the same.
  const NodeTopo again = parse(write_topo_xml(p));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(again.gpus[i].bus_id, p.gpus[i].bus_id);
}

TEST(TopoXml, ReadFileErrors) {
  NodeTopo t;
  std::string err;
  EXPECT_FALSE(read_topo_file("/nonexistent/topo.xml", &t, &err));
  EXPECT_EQ(err.find("/nonexistent/topo.xml: "), 0u) << err;
}

TEST(TopoXml, RoundTripEveryFile) {
  for (const std::string &f : kFiles) {
    const NodeTopo t = load(f);
    const std::string text = write_topo_xml(t);
    NodeTopo again;
    std::string err;
    ASSERT_TRUE(read_topo_xml(text, &again, &err)) << f << ": " << err << "\n" << text;
    expect_same(t, again, f);
    EXPECT_EQ(write_topo_xml(again), text) << f;
  }
}

TEST(TopoXml, WriterDialect) {
  const NodeTopo t = load("hgx_h100.xml");
  const std::string x = write_topo_xml(t);
  EXPECT_EQ(x.compare(0, 20, "<system version=\"1\">"), 0);
  // NCCL's attribute order, two-space indent.
  EXPECT_NE(x.find("\n  <cpu numaid=\"0\" affinity=\"00000000,000000ff,"), std::string::npos) << x;
  EXPECT_NE(x.find("\n    <pci busid=\"0000:15:01.0\" class=\"0x060400\" vendor=\"0x8086\" device=\"0x352a\" "
                   "subsystem_vendor=\"0x8086\" subsystem_device=\"0x0000\" link_speed=\"32.0 GT/s PCIe\" "
                   "link_width=\"16\">"),
            std::string::npos);
  EXPECT_NE(x.find("\n          <gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n            <nvlink target=\"fffffff:"
                   "ffff:ff\" count=\"18\" tclass=\"0x068000\"/>\n"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<net name=\"mlx5_0\" dev=\"0\" speed=\"400000\" port=\"1\" latency=\"0.000000\" "
                   "guid=\"0x8c91a00300b1c200\" maxconn=\"131072\" gdr=\"1\"/>"),
            std::string::npos);
  // GPU links name their peer; gcoll's pair facts travel in its own element.
  const std::string b = write_topo_xml(load("broken4.xml"));
  EXPECT_NE(b.find("<nvlink target=\"0000:81:00.0\" count=\"4\" tclass=\"0x030200\"/>"), std::string::npos);
  EXPECT_NE(b.find("<gcoll_p2p target=\"0000:81:00.0\" state=\"broken\"/>"), std::string::npos);
  EXPECT_NE(b.find("<gcoll_p2p target=\"0000:41:00.0\" state=\"broken\"/>"), std::string::npos);
  const std::string v = write_topo_xml(load("cloud_vm_nop2p.xml"));
  EXPECT_NE(v.find("<cpu numaid=\"-1\" arch=\"x86_64\""), std::string::npos) << v;  // NCCL needs numaid
  EXPECT_NE(v.find("state=\"denied\""), std::string::npos);
}

TEST(TopoXml, WriterKeepsWhatHasNoPlace) {
  // Detection may give a GPU outside the PCI tree, or things without a NUMA node: they
  // are written under a CPU of unknown NUMA node, and read back.
  NodeTopo t;
  Numa n;
  n.os_index = 0;
  t.numa.push_back(n);
  PciNode p;
  p.bus_id = "0000:01:00.0";
  p.numa = -1;
  p.class_code = 0x060400;
  t.pci.push_back(p);
  Gpu g;
  g.bus_id = "0000:02:00.0";
  g.sm = 80;
  g.dev = 0;
  t.gpus.push_back(g);
  Nic nic;
  nic.name = "ib0";
  t.nics.push_back(nic);
  t.resize_pairs();
  const NodeTopo r = parse(write_topo_xml(t));
  ASSERT_EQ(r.numa.size(), 2u);
  EXPECT_EQ(r.numa[1].os_index, -1);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].bus_id, "0000:02:00.0");
  EXPECT_EQ(r.gpus[0].sm, 80);
  ASSERT_EQ(r.nics.size(), 1u);
  EXPECT_EQ(r.nics[0].name, "ib0");
  EXPECT_EQ(r.pci.size(), 2u);
}

}  // namespace
}  // namespace topo
}  // namespace gcoll
