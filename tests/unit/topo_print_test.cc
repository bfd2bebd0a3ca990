// gcoll_info --topology's text (topo/topo_print.h) against golden outputs, one per
// topology file: tests/topo/golden/<file>.txt (ranks_per_gpu 1), <file>.rpg2.txt
// (ranks_per_gpu 2), <file>.ranks4.txt (ranks 4).
//
// After an intended change of the text, GCOLL_UPDATE_GOLDEN=1 makes this test write the
// golden files instead of comparing (it then passes): read the diff before committing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "topo/node_topo.h"
#include "topo/topo_print.h"
#include "topo/topo_xml.h"
#include "topo_files.h"

namespace gcoll {
namespace topo {
namespace {

struct Golden {
  const char *file;
  const char *suffix;  // golden file: <stem><suffix>.txt
  int ranks_per_gpu;
  int ranks;
};

const Golden kGolden[] = {
    {"one_gpu.xml", "", 1, 0},         {"one_gpu.xml", ".ranks4", 1, 4},     {"hgx_h100.xml", "", 1, 0},
    {"hgx_h100.xml", ".rpg2", 2, 0},   {"dgx1_v100.xml", "", 1, 0},          {"dgx1_ring4.xml", "", 1, 0},
    {"dgx1_noring4.xml", "", 1, 0},    {"pcie_2socket.xml", "", 1, 0},       {"cloud_vm_nop2p.xml", "", 1, 0},
    {"broken4.xml", "", 1, 0},         {"nic_every_cpu.xml", "", 1, 0},      {"pcie16_unordered.xml", "", 1, 0},
    {"dgx_a100_nvswitch.xml", "", 1, 0}, {"vm_host_bridges.xml", "", 1, 0}, {"no_gpu.xml", "", 1, 0},
    {"nic_far4.xml", "", 1, 0},
};

std::string golden_path(const Golden &g) {
  std::string stem = g.file;
  stem = stem.substr(0, stem.rfind(".xml"));
  return std::string(GCOLL_TOPO_DIR) + "/golden/" + stem + g.suffix + ".txt";
}

std::string format(const char *file, int ranks_per_gpu, int ranks = 0, P2pLevel level = P2pLevel::Pxb,
                   bool disable = false) {
  PrintOptions o;
  o.level = level;
  o.p2p_disable = disable;
  o.ranks_per_gpu = ranks_per_gpu;
  o.ranks = ranks;
  return format_topology(load(file), o);
}

TEST(TopoPrint, Golden) {
  for (const Golden &g : kGolden) expect_golden(golden_path(g), format(g.file, g.ranks_per_gpu, g.ranks));
}

TEST(TopoPrint, Deterministic) {
  for (const Golden &g : kGolden) {
    EXPECT_EQ(format(g.file, g.ranks_per_gpu, g.ranks), format(g.file, g.ranks_per_gpu, g.ranks)) << g.file;
  }
}

bool has(const std::string &text, const std::string &what) { return text.find(what) != std::string::npos; }

TEST(TopoPrint, Content) {
  const std::string h = format("hgx_h100.xml", 1);
  EXPECT_TRUE(has(h, "  NIC7: mlx5_7\n"));
  EXPECT_TRUE(has(h, "CPU Affinity"));
  EXPECT_TRUE(has(h, "0-55,112-167"));
  EXPECT_TRUE(has(h, "NV18"));
  EXPECT_TRUE(has(h, "P2P between GPUs not on NVLink (or not usable): none\n"));
  EXPECT_TRUE(has(h, "class: nvlink\n"));
  EXPECT_TRUE(has(h, "GPU0 > GPU1 > GPU2 > GPU3 > GPU4 > GPU5 > GPU6 > GPU7 > GPU0"));

  const std::string b = format("broken4.xml", 1);
  EXPECT_TRUE(has(b, "GPU1-GPU2  NV4  broken: caught by the data probe\n")) << b;
  EXPECT_TRUE(has(b, "island 0: GPU0 GPU1 GPU3; NVLink ring: GPU0 > GPU1 > GPU3 > GPU0\n")) << b;
  EXPECT_TRUE(has(b, "island 1: GPU2\n")) << b;
  // The ring across islands avoids the broken pair.
  EXPECT_TRUE(has(b, "NVLink ring over all GPUs in use: GPU0 > GPU1 > GPU3 > GPU2 > GPU0\n")) << b;

  const std::string n = format("dgx1_noring4.xml", 1);
  EXPECT_TRUE(has(n, "island 0: GPU0 GPU1 GPU2; NVLink ring: GPU0 > GPU1 > GPU2 > GPU0\n")) << n;
  EXPECT_TRUE(has(n, "NVLink ring over all GPUs in use: none\n")) << n;
  const std::string r = format("dgx1_ring4.xml", 1);
  EXPECT_TRUE(has(r, "NVLink ring over all GPUs in use: GPU0 > GPU1 > GPU3 > GPU2 > GPU0\n")) << r;
  EXPECT_FALSE(has(h, "over all GPUs")) << h;  // one island: its ring is the ring

  const std::string v = format("cloud_vm_nop2p.xml", 1);
  EXPECT_TRUE(has(v, "denied")) << v;
  EXPECT_TRUE(has(v, "class: no-p2p\n")) << v;
  EXPECT_TRUE(has(v, "N/A")) << v;

  // The level and GCOLL_P2P_DISABLE change the verdicts.
  const std::string sys = format("pcie_2socket.xml", 1, 0, P2pLevel::Sys);
  EXPECT_TRUE(has(sys, "GPU0-GPU2  SYS  allowed (SYS within SYS)\n")) << sys;
  EXPECT_TRUE(has(sys, "class: pcie\n")) << sys;
  const std::string nvl = format("pcie_2socket.xml", 1, 0, P2pLevel::Nvl);
  EXPECT_TRUE(has(nvl, "GPU0-GPU1  PIX  not allowed (PIX above NVL)\n")) << nvl;
  const std::string off = format("dgx1_v100.xml", 1, 0, P2pLevel::Pxb, true);
  EXPECT_TRUE(has(off, "GPU0-GPU1  NV1  disabled (GCOLL_P2P_DISABLE)\n")) << off;
  EXPECT_TRUE(has(off, "class: no-p2p\n")) << off;
  EXPECT_TRUE(has(off, "P2P islands: 8\n")) << off;
  EXPECT_TRUE(has(off, "NVLink ring over all GPUs in use: none\n")) << off;

  // Fewer ranks than GPUs: only the GPUs in use.
  const std::string two = format("dgx1_v100.xml", 1, 2);
  EXPECT_TRUE(has(two, "2 ranks on 2 of 8 GPUs")) << two;
  EXPECT_TRUE(has(two, "class: nvlink\n")) << two;
  EXPECT_FALSE(has(two, "rank 2")) << two;

  // No NIC, no GPU.
  NodeTopo bare = load("dgx1_ring4.xml");
  bare.nics.clear();
  EXPECT_TRUE(has(format_topology(bare, PrintOptions{}), "rail NIC per rank: none (no NIC)\n"));
  const std::string empty = format_topology(NodeTopo{}, PrintOptions{});
  EXPECT_TRUE(has(empty, "0 ranks on 0 of 0 GPUs")) << empty;
}

// Issue 31: each NCCL dump against the matrix nvidia-smi topo -m prints on that machine:
// GPUs numbered by bus id, the GPU x GPU block, and the column of each PCI NIC (named:
// nvidia-smi numbers NICs its own way). NICs without a PCI device nvidia-smi does not show;
// gcoll prints them SYS from every GPU (checked here too).
struct Matrix {
  const char *file;
  std::vector<std::string> gpu_rows;  // "X PIX SYS ..." per GPU, by bus id
  std::vector<std::pair<std::string, std::string>> nic_columns;  // NIC name, its cell per GPU
};

std::vector<std::string> words(const std::string &line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

std::string pcie16_row(int i) {
  std::string r;
  for (int j = 0; j < 16; ++j) {
    r += j ? " " : "";
    r += i == j ? "X" : i / 4 == j / 4 ? "PIX" : i / 8 == j / 8 ? "NODE" : "SYS";
  }
  return r;
}

TEST(TopoPrint, NvidiaSmiMatrix) {
  std::vector<std::string> nv12;
  for (int i = 0; i < 8; ++i) {
    std::string r;
    for (int j = 0; j < 8; ++j) r += std::string(j ? " " : "") + (i == j ? "X" : "NV12");
    nv12.push_back(r);
  }
  std::vector<std::string> pcie16;
  for (int i = 0; i < 16; ++i) pcie16.push_back(pcie16_row(i));
  const Matrix kMatrices[] = {
      {"nic_every_cpu.xml",
       {"X PIX SYS SYS", "PIX X SYS SYS", "SYS SYS X PIX", "SYS SYS PIX X"},
       {{"mlx5_0", "PIX PIX SYS SYS"}, {"mlx5_1", "SYS SYS PIX PIX"}, {"hsn0", "SYS SYS SYS SYS"},
        {"hsn1", "SYS SYS SYS SYS"}}},
      {"pcie16_unordered.xml",
       pcie16,
       {{"mlx5_0", "PIX PIX PIX PIX NODE NODE NODE NODE SYS SYS SYS SYS SYS SYS SYS SYS"},
        {"mlx5_1", "SYS SYS SYS SYS SYS SYS SYS SYS PIX PIX PIX PIX NODE NODE NODE NODE"}}},
      {"dgx_a100_nvswitch.xml",
       nv12,
       {{"mlx5_0", "PXB PXB SYS SYS SYS SYS SYS SYS"},
        {"mlx5_1", "SYS SYS PXB PXB SYS SYS SYS SYS"},
        {"mlx5_2", "SYS SYS SYS SYS PXB PXB SYS SYS"},
        {"mlx5_3", "SYS SYS SYS SYS SYS SYS PXB PXB"}}},
      {"vm_host_bridges.xml",
       {"X NODE SYS SYS", "NODE X SYS SYS", "SYS SYS X NODE", "SYS SYS NODE X"},
       {{"mlx5_ib0", "NODE NODE SYS SYS"}, {"eth0", "SYS SYS SYS SYS"}}},
      {"no_gpu.xml", {}, {{"mlx5_0", ""}}},
  };
  for (const Matrix &m : kMatrices) {
    const std::string text = format(m.file, 1);
    std::istringstream in(text);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    ASSERT_FALSE(lines.empty()) << m.file;
    const std::vector<std::string> head = words(lines[0]);
    const size_t n = m.gpu_rows.size();
    // Header: GPU0..GPUn-1, then NIC0.., "CPU Affinity", "NUMA Affinity".
    for (size_t g = 0; g < n; ++g) ASSERT_EQ(head.at(g), "GPU" + std::to_string(g)) << m.file;
    for (size_t g = 0; g < n; ++g) {
      const std::vector<std::string> row = words(lines.at(1 + g));
      ASSERT_EQ(row.at(0), "GPU" + std::to_string(g)) << m.file;
      const std::vector<std::string> want = words(m.gpu_rows[g]);
      const std::vector<std::string> got(row.begin() + 1, row.begin() + 1 + static_cast<long>(n));
      EXPECT_EQ(got, want) << m.file << " GPU" << g;
    }
    for (const auto &nic : m.nic_columns) {
      // "  NICk: name" in the NIC legend gives its column.
      int k = -1;
      for (const std::string &l : lines) {
        const std::vector<std::string> w = words(l);
        if (w.size() == 2 && w[1] == nic.first && w[0].rfind("NIC", 0) == 0) k = std::atoi(w[0].c_str() + 3);
      }
      ASSERT_GE(k, 0) << m.file << ": " << nic.first << " not in the NIC legend";
      std::string col;
      for (size_t g = 0; g < n; ++g) col += (g ? " " : "") + words(lines.at(1 + g)).at(1 + n + static_cast<size_t>(k));
      EXPECT_EQ(col, nic.second) << m.file << " " << nic.first;
    }
  }
  EXPECT_TRUE(has(format("no_gpu.xml", 1), "class: no-gpu\n"));
  EXPECT_TRUE(has(format("no_gpu.xml", 1), "0 ranks on 0 of 0 GPUs"));
}

}  // namespace
}  // namespace topo
}  // namespace gcoll
