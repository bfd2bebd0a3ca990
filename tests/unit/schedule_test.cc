// Schedule arithmetic of the engine: slices, recursive-doubling steps, node layouts,
// selection rules. No MPI job.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "coll/rail.h"
#include "coll/tune.h"
#include "topo/topology.h"

namespace gcoll {
namespace {

TEST(Schedule, PartsCoverEveryElementOnceInOrder) {
  for (std::size_t n : {0u, 1u, 2u, 7u, 1000u, 1048579u})
    for (int parts : {1, 2, 3, 4, 7, 8}) {
      std::size_t expect = 0, maxlen = 0, minlen = SIZE_MAX;
      for (int i = 0; i < parts; ++i) {
        std::size_t off, len;
        part_range(n, parts, i, &off, &len);
        EXPECT_EQ(off, expect) << n << "/" << parts << " part " << i;
        expect = off + len;
        maxlen = std::max(maxlen, len);
        minlen = std::min(minlen, len);
      }
      EXPECT_EQ(expect, n);
      EXPECT_LE(maxlen - minlen, 1u);
    }
}

TEST(Schedule, RecursiveDoublingSteps) {
  // floor(log2 n), plus fold-in and fold-out for non-powers of two: <= ceil(log2 n) + 2.
  EXPECT_EQ(rd_steps(1), 0);
  EXPECT_EQ(rd_steps(2), 1);
  EXPECT_EQ(rd_steps(3), 3);
  EXPECT_EQ(rd_steps(4), 2);
  EXPECT_EQ(rd_steps(5), 4);
  EXPECT_EQ(rd_steps(8), 3);
  for (int n = 1; n <= 1024; ++n) {
    int ceil_log = 0;
    while ((1 << ceil_log) < n) ++ceil_log;
    EXPECT_LE(rd_steps(n), ceil_log + 2) << n;
  }
}

// Node keys as build_topology computes them: the lowest comm rank of each node.
std::vector<int> keys_for(const std::vector<int> &node_of_rank) {
  std::vector<int> keys(node_of_rank.size());
  for (size_t r = 0; r < keys.size(); ++r)
    keys[r] = static_cast<int>(std::find(node_of_rank.begin(), node_of_rank.end(), node_of_rank[r]) -
                               node_of_rank.begin());
  return keys;
}

TEST(Topology, UnevenNodes) {
  // 5 ranks as 2 + 2 + 1 (GCOLL_RANKS_PER_NODE=2).
  Topology t;
  compute_layout(keys_for({0, 0, 1, 1, 2}), 3, &t);
  EXPECT_EQ(t.num_nodes, 3);
  EXPECT_EQ(t.node, 1);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_size, 2);
  EXPECT_EQ(t.min_local, 1);
  EXPECT_FALSE(t.has_rail());  // local rank 1 >= L_min: no rail
  EXPECT_TRUE(t.uneven());
  EXPECT_EQ(t.members[2], std::vector<int>({4}));
}

TEST(Topology, InterleavedRanks) {
  // An odd/even split over two machines: comm ranks alternate between the nodes.
  Topology t;
  compute_layout(keys_for({0, 1, 0, 1, 0, 1}), 4, &t);
  EXPECT_EQ(t.num_nodes, 2);
  EXPECT_EQ(t.members[0], std::vector<int>({0, 2, 4}));
  EXPECT_EQ(t.members[1], std::vector<int>({1, 3, 5}));
  EXPECT_EQ(t.node, 0);
  EXPECT_EQ(t.local_rank, 2);
  EXPECT_EQ(t.min_local, 3);
  EXPECT_FALSE(t.uneven());
  for (int r = 0; r < 6; ++r) EXPECT_EQ(t.members[t.node_of[r]][t.local_of[r]], r);
}

TEST(Tune, DefaultRulesParseAndCoverEverySize) {
  std::vector<TuneRule> rules;
  std::string err;
  ASSERT_TRUE(parse_tune(kDefaultTune, &rules, &err)) << err;
  // Host calls: exactly one rule whose algorithm takes host memory matches every size.
  Topology topo;
  topo.num_nodes = 1;
  CollArgs host;
  for (int c = 0; c < kColls; ++c)
    for (std::uint64_t b : {0ull, 1ull, 8ull, 4096ull, 65536ull, 1ull << 20, 1ull << 26, 1ull << 40}) {
      host.coll = static_cast<Coll>(c);
      int hits = 0;
      for (const auto &r : rules) hits += r.coll == host.coll && b >= r.lo && b < r.hi && r.algo->supports(host, topo);
      EXPECT_EQ(hits, 1) << coll_name(static_cast<Coll>(c)) << " " << b;
    }
}

TEST(Tune, DeviceBuffersOnOneNodeTakeZeroCopyForLargeAllreduce) {
  Topology one, two, wide;
  one.num_nodes = 1;
  one.local_size = 4;
  two.num_nodes = 2;
  two.local_size = 4;
  wide.num_nodes = 1;
  wide.local_size = 17;  // more sources than one kernel pass reads
  CollArgs a;
  a.coll = Coll::Allreduce;
  a.dtype = DType::Float;
  a.elem = 4;
  a.mem = MemKind::Device;
  a.zero_copy = true;
  a.count = 1 << 20;  // 4 MiB
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "twoshot");
  EXPECT_STRNE(select_algorithm({}, a, two)->name, "twoshot");  // several nodes: never zero-copy
  EXPECT_STRNE(select_algorithm({}, a, wide)->name, "twoshot");
  a.zero_copy = false;  // a rank's buffer cannot be exported (e.g. cudaMallocAsync): bank algorithms
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "ring");
  a.zero_copy = true;
  a.count = 16;  // 64 bytes: one-shot
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "oneshot");
  a.mem = MemKind::Host;
  a.count = 1 << 20;
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "ring");
}

TEST(Tune, UserRulesAndErrors) {
  std::vector<TuneRule> rules;
  std::string err;
  ASSERT_TRUE(parse_tune("allreduce:0-64K:@rd,allreduce:64K-inf:@ring", &rules, &err)) << err;
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_STREQ(rules[0].algo->name, "rd");
  EXPECT_EQ(rules[0].hi, 65536u);
  EXPECT_EQ(rules[1].hi, UINT64_MAX);
  for (const char *bad : {"allreduce:0-64K:@nope", "allreduce:64K-0:@rd", "reduce:0-1:@rd", "allreduce:0-1:rd",
                          "allreduce", "bcast:0-inf:@ring", "allreduce:x-1:@rd"}) {
    std::vector<TuneRule> keep = rules;
    EXPECT_FALSE(parse_tune(bad, &keep, &err)) << bad;
    EXPECT_FALSE(err.empty());
    EXPECT_EQ(keep.size(), 2u) << "a rejected value must not change anything: " << bad;
  }
  // A valid rule next to a bad one: nothing is applied.
  std::vector<TuneRule> none;
  EXPECT_FALSE(parse_tune("allreduce:0-inf:@ring,bcast:0-inf:@nope", &none, &err));
  EXPECT_TRUE(none.empty());
}

TEST(Tune, SelectionFollowsSizeAndUserRulesFirst) {
  Topology t;
  compute_layout({0, 0, 2, 2}, 0, &t);
  CollArgs a;
  a.coll = Coll::Allreduce;
  a.elem = 4;
  a.count = 2;  // 8 bytes
  EXPECT_STREQ(select_algorithm({}, a, t)->name, "oneshot");
  a.count = 4 << 20;  // 16 MiB
  EXPECT_STREQ(select_algorithm({}, a, t)->name, "ring");
  std::vector<TuneRule> user;
  std::string err;
  ASSERT_TRUE(parse_tune("allreduce:0-inf:@rd", &user, &err));
  EXPECT_STREQ(select_algorithm(user, a, t)->name, "rd");
}

}  // namespace
}  // namespace gcoll
