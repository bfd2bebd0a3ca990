// The cost model (coll/cost_model.h) on the machines of tests/topo: the links it reads
// from the files, its picks (they change where the topology says they should), predicted
// bus bandwidth that never falls as the size grows, the same pick on every rank, and the
// selection (tune.h) using it only for device buffers with agreed links, after GCOLL_TUNE.
// Golden text of gcoll_info --topology's model lines: tests/topo/golden/<file>.model.txt
// (GCOLL_UPDATE_GOLDEN=1 rewrites them; read the diff).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "coll/cost_model.h"
#include "coll/engine.h"
#include "coll/tune.h"
#include "topo_files.h"

namespace gcoll {
namespace {

using topo::load;

// The device topology of `ranks` ranks on a file's machine (rank 0's view) and its links.
struct Machine {
  topo::NodeTopo node;
  Topology dt;
  CostLinks links;
  topo::TopoClass cls = topo::TopoClass::NoGpu;
  explicit Machine(const char *file, int ranks_per_gpu = 1) : node(load(file)) {
    cls = model_device_topology(node, ranks_per_gpu * static_cast<int>(node.gpus.size()), &dt, &links);
  }
};

// A device call of nccl-tests' size `whole` (allgather, alltoall, reduce_scatter_block: the
// block is whole / ranks), not in place, exposable buffers.
struct Call {
  CollArgs a;
  std::vector<int> counts;
  std::vector<std::size_t> blocks, offsets;
  Call(Coll c, std::uint64_t whole, int ranks, bool fused = false) {
    a.coll = c;
    a.mem = MemKind::Device;
    a.zero_copy = true;
    a.fused = fused;
    a.sendbuf = &a;
    const bool reduces = is_reduction(c);
    a.dtype = reduces ? DType::Float : DType::Uint8;
    a.elem = reduces ? 4 : 1;
    const bool per_rank = c == Coll::Allgather || c == Coll::Alltoall || c == Coll::Reduce_scatter_block;
    const std::uint64_t part = per_rank ? whole / static_cast<std::uint64_t>(ranks) : whole;
    a.count = std::max<std::size_t>(1, static_cast<std::size_t>(part / a.elem));
    counts.assign(static_cast<std::size_t>(ranks), static_cast<int>(std::max<std::size_t>(1, a.count / ranks)));
    blocks.assign(static_cast<std::size_t>(ranks), a.count / static_cast<std::size_t>(ranks));
    offsets.assign(static_cast<std::size_t>(ranks), 0);
    a.counts = counts.data();
    a.block_bytes = blocks.data();
    a.block_offsets = offsets.data();
  }
};

std::string pick(const Machine &m, Coll c, std::uint64_t whole, bool fused = false) {
  Call call(c, whole, m.dt.size, fused);
  const Algorithm *al = model_pick(call.a, m.dt, m.links);
  return al ? al->name : "(none)";
}

const std::uint64_t KiB = 1024, MiB = KiB * KiB, GiB = MiB * KiB;
const Coll kColls[] = {Coll::Allreduce, Coll::Bcast,          Coll::Allgather, Coll::Reduce_scatter_block,
                       Coll::Reduce,    Coll::Reduce_scatter, Coll::Alltoall,  Coll::Allgatherv};
const char *const kMachines[] = {"hgx_h100.xml",     "dgx_a100_nvswitch.xml", "dgx1_v100.xml",  "dgx1_ring4.xml",
                                 "dgx1_noring4.xml", "pcie_2socket.xml",      "cloud_vm_nop2p.xml", "broken4.xml",
                                 "nic_every_cpu.xml", "pcie16_unordered.xml", "vm_host_bridges.xml"};

TEST(CostModel, LinksFromTheFiles) {
  const Machine h("hgx_h100.xml");
  ASSERT_EQ(h.links.valid, 1);
  EXPECT_EQ(h.cls, topo::TopoClass::NvlinkAll);
  EXPECT_EQ(h.links.nv_all_mbps, 18 * 20600);  // 18 NVLink 4 links to the NVSwitches
  EXPECT_EQ(h.links.nv_pair_mbps, 18 * 20600);
  EXPECT_NEAR(static_cast<double>(h.links.pcie_mbps), 47900, 100);  // Gen5 x16
  EXPECT_EQ(h.links.sys_mbps, 10000);                                // two Sapphire Rapids sockets
  EXPECT_EQ(h.links.net_mbps, 50000);                                // 400 Gb/s
  const Machine a("dgx_a100_nvswitch.xml");
  EXPECT_EQ(a.links.nv_all_mbps, 12 * 20000);  // NVLink 3, 12 links
  EXPECT_EQ(a.links.sys_mbps, 16000);          // AMD
  const Machine d("dgx1_v100.xml");
  EXPECT_EQ(d.links.nv_pair_mbps, 20000);   // the narrowest bundle: NV1
  EXPECT_EQ(d.links.nv_all_mbps, 6 * 20000);  // six NVLink 2 links per V100
  const Machine p("pcie_2socket.xml");
  EXPECT_EQ(p.links.nv_all_mbps, 0);
  EXPECT_GT(p.links.pcie_mbps, 0);
  // No model where every rank shares one GPU, or without a GPU.
  EXPECT_EQ(Machine("one_gpu.xml", 4).links.valid, 0);
  EXPECT_EQ(Machine("no_gpu.xml").links.valid, 0);
}

TEST(CostModel, PicksFollowTheTopology) {
  const Machine h("hgx_h100.xml"), a("dgx_a100_nvswitch.xml"), d("dgx1_v100.xml"), r("dgx1_ring4.xml"),
      p("pcie_2socket.xml"), v("cloud_vm_nop2p.xml");
  // NVSwitch: one-shot while small (the model never stages what the engine runs, even where
  // it predicts two copies and the MPI faster: only printed), the large two-shot
  // (2(n-1)/n x S over the links).
  EXPECT_EQ(pick(h, Coll::Allreduce, 8), "oneshot");
  EXPECT_EQ(pick(h, Coll::Allreduce, 64 * KiB), "oneshot");
  EXPECT_EQ(pick(h, Coll::Allreduce, 16 * MiB), "twoshot");
  EXPECT_EQ(pick(h, Coll::Allreduce, 1 * GiB), "twoshot");
  EXPECT_EQ(pick(a, Coll::Allreduce, 1 * GiB), "twoshot");
  // Where the space fuses: the fused one-shot while its (n - 1) x S reads are cheap.
  EXPECT_EQ(pick(h, Coll::Allreduce, 8, true), "fused");
  EXPECT_EQ(pick(h, Coll::Allreduce, 64 * KiB, true), "fused");
  EXPECT_EQ(pick(h, Coll::Allreduce, 1 * GiB, true), "twoshot");
  // The fused crossover comes earlier on slower links (A100's 240 GB/s vs H100's 371).
  std::uint64_t cross_h = 0, cross_a = 0;
  for (std::uint64_t s = 8; s <= GiB; s *= 2) {
    if (!cross_h && pick(h, Coll::Allreduce, s, true) == "twoshot") cross_h = s;
    if (!cross_a && pick(a, Coll::Allreduce, s, true) == "twoshot") cross_a = s;
  }
  EXPECT_GT(cross_h, 0u);
  EXPECT_LE(cross_a, cross_h);
  // The NVLink ring: nvring at every size (only the ring's algorithms run there).
  EXPECT_EQ(pick(d, Coll::Allreduce, 8), "nvring");
  EXPECT_EQ(pick(d, Coll::Allreduce, 16 * MiB), "nvring");
  EXPECT_EQ(pick(r, Coll::Bcast, 1 * GiB), "nvring");
  EXPECT_EQ(pick(r, Coll::Allgather, 1 * GiB), "nvring");
  // PCIe islands, no P2P at all: one-shot through the banks when small, and never two-shot
  // or the ring when large (each rank's copies over its own PCIe link).
  for (const Machine *m : {&p, &v}) {
    EXPECT_EQ(pick(*m, Coll::Allreduce, 8), "oneshot");
    const std::string big = pick(*m, Coll::Allreduce, 1 * GiB);
    EXPECT_NE(big, "staged");
    EXPECT_NE(big, "twoshot");
    EXPECT_NE(big, "nvring");
  }
  // The same call, three machines, three families.
  EXPECT_EQ(pick(h, Coll::Allreduce, 16 * MiB), "twoshot");
  EXPECT_EQ(pick(d, Coll::Allreduce, 16 * MiB), "nvring");
  EXPECT_NE(pick(p, Coll::Allreduce, 16 * MiB), "twoshot");
}

// Bus bandwidth of the model's pick at 8 B, 16 B, ..., 1 GiB never falls (a doubling at
// most doubles every term of a prediction).
TEST(CostModel, BusBandwidthGrowsWithSize) {
  for (const char *file : kMachines) {
    for (int per_gpu : {1, 2}) {
      const Machine m(file, per_gpu);
      if (m.links.valid != 1) continue;
      for (Coll c : kColls) {
        double last = 0;
        for (std::uint64_t s = 8; s <= GiB; s *= 2) {
          Call call(c, s, m.dt.size);
          const Algorithm *al = model_pick(call.a, m.dt, m.links);
          ASSERT_NE(al, nullptr) << file << " " << coll_name(c) << " " << s;
          const double us = predict_us(*al, call.a, m.dt, m.links);
          ASSERT_TRUE(std::isfinite(us) && us > 0) << file << " " << al->name;
          const double bw = bus_factor(c, m.dt.size) * static_cast<double>(whole_bytes(call.a, m.dt.size)) / us;
          EXPECT_GE(bw, last * (1 - 1e-12)) << file << " x" << per_gpu << " " << coll_name(c) << " at " << s
                                            << " B: @" << al->name;
          last = bw;
        }
      }
    }
  }
}

// Every rank of the communicator picks the same algorithm (its own place in the device
// topology must not matter: islands of different sizes included).
TEST(CostModel, SamePickOnEveryRank) {
  for (const char *file : kMachines) {
    const Machine m(file);
    if (m.links.valid != 1) continue;
    for (int r = 1; r < m.dt.size; ++r) {
      Topology mine;
      compute_layout(m.dt.node_of, r, &mine);
      mine.ring = m.dt.ring;
      for (Coll c : kColls)
        for (std::uint64_t s = 8; s <= GiB; s *= 8) {
          Call call(c, s, m.dt.size);
          const Algorithm *x = model_pick(call.a, m.dt, m.links), *y = model_pick(call.a, mine, m.links);
          EXPECT_EQ(x, y) << file << " rank " << r << " " << coll_name(c) << " " << s << ": @"
                          << (x ? x->name : "-") << " vs @" << (y ? y->name : "-");
        }
    }
  }
}

TEST(CostModel, SelectionUsesTheModelOnlyWhereItMay) {
  const Machine h("hgx_h100.xml");
  Call small(Coll::Allreduce, 8, h.dt.size), mid(Coll::Allreduce, 1 * MiB, h.dt.size);
  // Without links (one GPU, host buffers, the model off): the default rules.
  EXPECT_STREQ(select_algorithm({}, small.a, h.dt)->name, "oneshot");
  small.a.model = &h.links;
  mid.a.model = &h.links;
  EXPECT_STREQ(select_algorithm({}, mid.a, h.dt)->name, "twoshot");  // the model's (the rules: @rd)
  EXPECT_STREQ(select_algorithm({}, small.a, h.dt)->name, "oneshot");  // never @staged
  Call host = small;
  host.a.mem = MemKind::Host;
  host.a.model = &h.links;
  EXPECT_STREQ(select_algorithm({}, host.a, h.dt)->name, "oneshot");
  CostLinks off = h.links;
  off.valid = 0;
  small.a.model = &off;
  EXPECT_STREQ(select_algorithm({}, small.a, h.dt)->name, "oneshot");
  // GCOLL_TUNE first.
  std::vector<TuneRule> user;
  std::string err;
  ASSERT_EQ(parse_tune("allreduce:0-inf:@ring", &user, &err), Status::Ok) << err;
  small.a.model = &h.links;
  EXPECT_STREQ(select_algorithm(user, small.a, h.dt)->name, "ring");
  // GPUs shared without MPS: their measured rules before the model.
  mid.a.model = &h.links;
  EXPECT_STREQ(select_algorithm({}, mid.a, h.dt)->name, "twoshot");
  mid.a.time_sliced = true;
  EXPECT_STREQ(select_algorithm({}, mid.a, h.dt)->name, "staged");
}

TEST(CostModel, AgreementTakesTheBottleneckAndNeedsEqualFacts) {
  const Machine h("hgx_h100.xml");
  CostLinks slow = h.links;
  slow.pcie_mbps /= 2;
  const char *why = nullptr;
  CostLinks l = agree_cost_links(slow, h.links, &why);
  EXPECT_EQ(l.valid, 1) << why;
  EXPECT_EQ(l.pcie_mbps, slow.pcie_mbps);
  CostLinks other = h.links;
  other.cls = static_cast<std::int64_t>(topo::TopoClass::Islands);
  EXPECT_EQ(agree_cost_links(h.links, other, &why).valid, 0);
  EXPECT_NE(why, nullptr);
  CostLinks none;  // a rank without a model (GCOLL_COST_MODEL=0, its GPU not in its file)
  EXPECT_EQ(agree_cost_links(none, h.links, &why).valid, 0);
  // Through the engine's encoding (min and max of each field).
  std::int64_t v[CostLinks::kFields];
  h.links.to(v);
  CostLinks back;
  back.from(v);
  EXPECT_EQ(back.nv_all_mbps, h.links.nv_all_mbps);
  EXPECT_EQ(back.net_hop, h.links.net_hop);
  EXPECT_EQ(back.bank_bytes, h.links.bank_bytes);
}

// Algorithms the model has no formula of its own for (another engineer's new rows) get
// their family's rule by name, or the generic one.
TEST(CostModel, AnyNameGetsARule) {
  const Machine r("dgx1_ring4.xml");
  Call call(Coll::Reduce_scatter, 16 * MiB, r.dt.size);
  const Algorithm nvring{Coll::Reduce_scatter, "nvring", "", nullptr, nullptr};
  const Algorithm nvring2{Coll::Reduce_scatter, "nvring2", "", nullptr, nullptr};
  const Algorithm mystery{Coll::Reduce_scatter, "mystery", "", nullptr, nullptr};
  EXPECT_EQ(predict_us(nvring, call.a, r.dt, r.links), predict_us(nvring2, call.a, r.dt, r.links));
  const double m = predict_us(mystery, call.a, r.dt, r.links);
  EXPECT_TRUE(std::isfinite(m) && m > 0);
}

// Two nodes, each on its NVLink ring (issue 31 item 3): only the nvring_hier rows take
// device calls there, so the model picks them for every collective and size (finite,
// positive predictions); one node of the same ring keeps the nvring rows.
TEST(CostModel, RingsAcrossNodesPickNvringHier) {
  const Machine r("dgx1_ring4.xml");
  ASSERT_EQ(r.links.valid, 1);
  ASSERT_FALSE(r.dt.ring.empty());
  const int L = r.dt.size;
  std::vector<int> keys(2 * static_cast<std::size_t>(L));
  for (int i = 0; i < 2 * L; ++i) keys[i] = i < L ? 0 : L;
  Topology two;
  compute_layout(keys, 0, &two);
  two.ring = r.dt.ring;
  for (Coll c : kColls)
    for (std::uint64_t whole : {8 * KiB, 16 * MiB, GiB}) {
      Call call(c, whole, two.size);
      const Algorithm *al = model_pick(call.a, two, r.links);
      ASSERT_NE(al, nullptr) << coll_name(c);
      EXPECT_STREQ(al->name, "nvring_hier") << coll_name(c) << " " << whole;
      const double us = predict_us(*al, call.a, two, r.links);
      EXPECT_TRUE(std::isfinite(us) && us > 0) << coll_name(c);
      Call one(c, whole, L);
      const Algorithm *al1 = model_pick(one.a, r.dt, r.links);
      ASSERT_NE(al1, nullptr);
      EXPECT_STREQ(al1->name, "nvring") << coll_name(c);
    }
}

TEST(CostModel, GoldenText) {
  for (const char *file : kMachines) {
    const topo::NodeTopo t = load(file);
    std::string stem = file;
    stem = stem.substr(0, stem.rfind(".xml"));
    topo::expect_golden(std::string(GCOLL_TOPO_DIR) + "/golden/" + stem + ".model.txt",
                        cost_model_text(t, static_cast<int>(t.gpus.size())));
  }
  EXPECT_NE(cost_model_text(load("one_gpu.xml"), 4).find("cost model: not used (one-gpu)"), std::string::npos);
}

}  // namespace
}  // namespace gcoll
