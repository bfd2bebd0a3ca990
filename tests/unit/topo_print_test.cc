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
    {"broken4.xml", "", 1, 0},
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

// The first line that differs, both ways: shorter than the whole texts.
std::string first_difference(const std::string &got, const std::string &want) {
  std::istringstream g(got), w(want);
  std::string gl, wl;
  for (int line = 1;; ++line) {
    const bool gm = static_cast<bool>(std::getline(g, gl)), wm = static_cast<bool>(std::getline(w, wl));
    if (!gm && !wm) return "(no line differs)";
    if (gm != wm || gl != wl) {
      return "line " + std::to_string(line) + "\n  got:    " + (gm ? gl : "(end)") +
             "\n  golden: " + (wm ? wl : "(end)");
    }
  }
}

TEST(TopoPrint, Golden) {
  const char *update = std::getenv("GCOLL_UPDATE_GOLDEN");
  const bool write = update != nullptr && std::string(update) == "1";
  for (const Golden &g : kGolden) {
    const std::string text = format(g.file, g.ranks_per_gpu, g.ranks);
    const std::string path = golden_path(g);
    if (write) {
      std::ofstream(path) << text;
      continue;
    }
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path << " missing (GCOLL_UPDATE_GOLDEN=1 writes it)";
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_TRUE(text == want.str()) << path << " differs (GCOLL_UPDATE_GOLDEN=1 rewrites it): "
                                    << first_difference(text, want.str());
  }
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

}  // namespace
}  // namespace topo
}  // namespace gcoll
