// Schedule arithmetic of the engine: slices, recursive-doubling steps, node layouts,
// selection rules. No MPI job.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <numeric>
#include <tuple>

#include "base/stats.h"
#include "coll/algorithms.h"
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

// The allgather / allgatherv pipeline step (allgather.cc): what one chunk publishes on the
// busiest rail, sum of min(step, block bytes), fits a bank.
TEST(Schedule, AllgatherStepFitsEveryRailInABank) {
  using Rails = std::vector<std::vector<std::size_t>>;
  EXPECT_EQ(allgather_step(Rails{{100, 100, 100}, {100, 100}}, 64, 1000), 21u);  // 3 x 21 <= 64 < 3 x 22
  EXPECT_EQ(allgather_step(Rails{{10, 10, 10}}, 64, 1000), 1000u);               // everything fits at once
  EXPECT_EQ(allgather_step(Rails{{1000, 0, 0, 0}}, 64, 1000), 64u);              // empty blocks take no room
  EXPECT_EQ(allgather_step(Rails{{1000, 8, 8}, {30}}, 64, 1000), 48u);           // 48 + 8 + 8
  EXPECT_EQ(allgather_step(Rails{{1000, 1000}}, 64, 16), 16u);                   // the chunk bounds it
  EXPECT_EQ(allgather_step(Rails{{5, 5, 5}}, 2, 16), 1u);                        // never below 1
  // Against brute force: the largest step that fits.
  std::uint32_t x = 12345;
  const auto rnd = [&](std::uint32_t m) {
    x = x * 1103515245u + 12345u;
    return (x >> 8) % m;
  };
  for (int k = 0; k < 300; ++k) {
    Rails rails(1 + rnd(3));
    for (auto &r : rails)
      for (std::uint32_t i = 0, n = 1 + rnd(5); i < n; ++i) r.push_back(rnd(4) ? rnd(200) : 0);
    const std::size_t cap = 1 + rnd(300), limit = 1 + rnd(250);
    std::size_t want = 1;
    for (std::size_t s = 1; s <= limit; ++s) {
      std::size_t need = 0;
      for (const auto &r : rails) {
        std::size_t sum = 0;
        for (std::size_t b : r) sum += std::min(s, b);
        need = std::max(need, sum);
      }
      if (need <= cap) want = s;
    }
    EXPECT_EQ(allgather_step(rails, cap, limit), want) << k;
  }
  // Even blocks (MPI_Allgather): as many chunks as the former bound, cap / busiest rail's
  // pieces, gave.
  for (std::size_t B : {1u, 7u, 64u, 100u, 1000u, 5000u})
    for (std::size_t pieces : {1u, 2u, 3u, 5u})
      for (std::size_t limit : {16u, 256u, 4096u}) {
        const std::size_t cap = 256;
        const std::size_t old = std::max<std::size_t>(1, std::min(limit, cap / pieces));
        const std::size_t now = allgather_step(Rails{std::vector<std::size_t>(pieces, B)}, cap, limit);
        EXPECT_EQ((B + old - 1) / old, (B + now - 1) / now) << B << " " << pieces << " " << limit;
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

// ---- inter-node schedules, run on paper -----------------------------------------------
// Every rail rank's step list for an allreduce (sum of int64) of `count` elements among n
// ranks, executed in lock step the way RailAllreduce runs them: a step posts its send and
// its receive, completes when its message has arrived, then reduces. Messages match by
// (source, destination, tag) and must have exactly the size the receiver posted.
struct SimRun {
  std::vector<std::vector<RailStep>> steps;        // per rank
  std::vector<std::vector<std::int64_t>> buf;      // per rank, the result in the end
  std::vector<std::size_t> sent_bytes;             // per rank
  std::vector<std::vector<std::pair<int, int>>> peers;  // per rank and step: (dst, src)
  bool ok = true;
  std::string error;
};

std::int64_t input(int rank, std::size_t i) { return static_cast<std::int64_t>((rank * 131 + i * 7) % 1000); }

bool overlap(const void *a, std::size_t an, const void *b, std::size_t bn) {
  const char *x = static_cast<const char *>(a), *y = static_cast<const char *>(b);
  return an && bn && x < y + bn && y < x + an;
}

SimRun run_schedule(ScheduleBuilder build, int n, std::size_t count) {
  SimRun r;
  const std::size_t elem = sizeof(std::int64_t);
  r.buf.resize(n);
  std::vector<std::vector<std::int64_t>> tmp(n);
  r.steps.resize(n);
  r.sent_bytes.assign(n, 0);
  r.peers.resize(n);
  for (int k = 0; k < n; ++k) {
    r.buf[k].resize(count);
    tmp[k].assign(count + 1, -1);
    for (std::size_t i = 0; i < count; ++i) r.buf[k][i] = input(k, i);
    ScheduleArgs a;
    a.n = n;
    a.rank = k;
    a.count = count;
    a.elem = elem;
    a.buf = r.buf[k].data();
    a.tmp = tmp[k].data();
    build(a, &r.steps[k]);
    for (const auto &s : r.steps[k]) {
      r.peers[k].push_back({s.dst, s.src});
      if (s.dst == k || s.src == k || s.dst >= n || s.src >= n || s.tag < 0 || s.tag > 0xfff ||
          overlap(s.sbuf, s.sbytes, s.rbuf, s.rbytes)) {
        r.ok = false;
        r.error = "bad step on rank " + std::to_string(k);
        return r;
      }
    }
  }
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> wire;
  std::vector<std::size_t> next(n, 0);
  std::vector<bool> posted(n, false);
  for (bool progress = true; progress;) {
    progress = false;
    for (int k = 0; k < n; ++k) {
      if (next[k] >= r.steps[k].size()) continue;
      const RailStep &s = r.steps[k][next[k]];
      if (!posted[k]) {
        posted[k] = progress = true;
        if (s.dst >= 0) {
          const char *p = static_cast<const char *>(s.sbuf);
          wire[{k, s.dst, s.tag}].emplace_back(p, p + s.sbytes);
          r.sent_bytes[k] += s.sbytes;
        }
      }
      if (s.src >= 0) {
        auto it = wire.find({s.src, k, s.tag});
        if (it == wire.end() || it->second.empty()) continue;  // not arrived yet
        if (it->second.front().size() != s.rbytes) {
          r.ok = false;
          r.error = "size mismatch on rank " + std::to_string(k);
          return r;
        }
        if (s.rbytes) std::memcpy(s.rbuf, it->second.front().data(), s.rbytes);
        it->second.pop_front();
      }
      auto *acc = static_cast<std::int64_t *>(s.acc);
      const auto *in = static_cast<const std::int64_t *>(s.rbuf);
      for (std::size_t i = 0; acc && i < s.elems; ++i) acc[i] += in[i];
      ++next[k];
      posted[k] = false;
      progress = true;
    }
  }
  for (int k = 0; k < n; ++k)
    if (next[k] < r.steps[k].size()) {
      r.ok = false;
      r.error = "deadlock: rank " + std::to_string(k) + " stuck at step " + std::to_string(next[k]);
      return r;
    }
  for (const auto &w : wire)
    if (!w.second.empty()) {
      r.ok = false;
      r.error = "a message nobody received";
      return r;
    }
  return r;
}

TEST(Schedule, EveryScheduleComputesTheAllreduce) {
  int checked = 0;
  for (const auto &algo : algorithms()) {
    if (!algo.schedule) continue;
    for (int n = 2; n <= 9; ++n)
      for (std::size_t count : {1u, 2u, 3u, 5u, 8u, 17u, 1000u}) {
        const SimRun r = run_schedule(algo.schedule, n, count);
        ASSERT_TRUE(r.ok) << algo.name << " n=" << n << " count=" << count << ": " << r.error;
        for (int k = 0; k < n; ++k)
          for (std::size_t i = 0; i < count; ++i) {
            std::int64_t expect = 0;
            for (int q = 0; q < n; ++q) expect += input(q, i);
            ASSERT_EQ(r.buf[k][i], expect) << algo.name << " n=" << n << " count=" << count << " rank " << k;
          }
        ++checked;
      }
  }
  EXPECT_GE(checked, 4 * 8 * 7);  // oneshot's rd, rd, ring, rabenseifner
}

TEST(Schedule, RingAndRabenseifnerSend2NMinus1OverNOfTheBuffer) {
  // Summed over the rail, both send exactly 2(n-1) x S: 2(n-1)/n x S per rank on average
  // (the traffic test's bound); Rabenseifner's fold sends the whole buffer twice per pair.
  for (ScheduleBuilder b : {schedule_ring, schedule_rabenseifner})
    for (int n = 2; n <= 9; ++n)
      for (std::size_t count : {1u, 7u, 1000u, 65537u}) {
        const SimRun r = run_schedule(b, n, count);
        ASSERT_TRUE(r.ok) << r.error;
        const std::size_t total = std::accumulate(r.sent_bytes.begin(), r.sent_bytes.end(), std::size_t{0});
        EXPECT_EQ(total, 2 * (n - 1) * count * sizeof(std::int64_t)) << "n=" << n << " count=" << count;
      }
}

TEST(Schedule, RabenseifnerPowerOfTwo) {
  // 8 ranks: halving with partners at distance 4, 2, 1, then doubling at 1, 2, 4; every rank
  // sends (p-1)/p of the buffer in each phase: 1/2, 1/4, 1/8, then 1/8, 1/4, 1/2.
  const int n = 8;
  const std::size_t count = 64, S = count * sizeof(std::int64_t);
  const SimRun r = run_schedule(schedule_rabenseifner, n, count);
  ASSERT_TRUE(r.ok) << r.error;
  const int dist[6] = {4, 2, 1, 1, 2, 4};
  const std::size_t part[6] = {S / 2, S / 4, S / 8, S / 8, S / 4, S / 2};
  for (int k = 0; k < n; ++k) {
    ASSERT_EQ(r.steps[k].size(), 6u);
    for (int i = 0; i < 6; ++i) {
      const RailStep &s = r.steps[k][i];
      EXPECT_EQ(s.dst, k ^ dist[i]);
      EXPECT_EQ(s.src, k ^ dist[i]);
      EXPECT_EQ(s.sbytes, part[i]);
      EXPECT_EQ(s.rbytes, part[i]);
      EXPECT_EQ(s.acc != nullptr, i < 3) << "reduce in the reduce-scatter only";
    }
    EXPECT_EQ(r.sent_bytes[k], 2 * (n - 1) * S / n);
  }
  // Two ranks: one exchange of halves each way.
  const SimRun two = run_schedule(schedule_rabenseifner, 2, 5);
  ASSERT_TRUE(two.ok) << two.error;
  EXPECT_EQ(two.steps[0].size(), 2u);
  EXPECT_EQ(two.steps[0][0].sbytes, 2 * sizeof(std::int64_t));  // rank 0 keeps the larger lower half (3)
  EXPECT_EQ(two.steps[1][0].sbytes, 3 * sizeof(std::int64_t));
}

TEST(Schedule, RabenseifnerNonPowersOfTwoFold) {
  // n = p + extra: ranks 0 .. 2 extra - 1 pair up; the even one sends its whole buffer to
  // the odd one, sits out, and gets the whole result back (2 steps); everyone else runs
  // 2 log2(p) steps of the power of two, the odd ones of the pairs 2 more.
  for (int n : {3, 5, 6, 7}) {
    int p = 1, lg = 0;
    while (p * 2 <= n) p *= 2, ++lg;
    const int extra = n - p;
    const std::size_t count = 840, S = count * sizeof(std::int64_t);  // 840: divisible by 1..8
    const SimRun r = run_schedule(schedule_rabenseifner, n, count);
    ASSERT_TRUE(r.ok) << "n=" << n << ": " << r.error;
    for (int k = 0; k < n; ++k) {
      const auto &st = r.steps[k];
      if (k < 2 * extra && k % 2 == 0) {
        ASSERT_EQ(st.size(), 2u) << "n=" << n << " rank " << k;
        EXPECT_EQ(r.peers[k][0], std::make_pair(k + 1, -1));
        EXPECT_EQ(r.peers[k][1], std::make_pair(-1, k + 1));
        EXPECT_EQ(st[0].sbytes, S);
        EXPECT_EQ(st[1].rbytes, S);
        EXPECT_EQ(r.sent_bytes[k], S);
        continue;
      }
      const bool folds = k < 2 * extra;
      ASSERT_EQ(st.size(), static_cast<std::size_t>(2 * lg + (folds ? 2 : 0))) << "n=" << n << " rank " << k;
      if (folds) {
        EXPECT_EQ(r.peers[k].front(), std::make_pair(-1, k - 1));
        EXPECT_EQ(r.peers[k].back(), std::make_pair(k - 1, -1));
        EXPECT_EQ(st.front().rbytes, S);
        EXPECT_EQ(st.front().elems, count);  // the fold reduces the whole buffer
        EXPECT_EQ(st.back().sbytes, S);
      }
      // The power-of-two part talks only to ranks that take part (odd ones of the pairs
      // and those past the pairs), sending (p-1)/p of the buffer in each phase.
      std::size_t mid = 0;
      for (std::size_t i = folds ? 1 : 0; i < st.size() - (folds ? 1 : 0); ++i) {
        const int q = st[i].dst;
        EXPECT_EQ(st[i].src, q);
        EXPECT_TRUE(q >= 2 * extra || q % 2 == 1) << "n=" << n << " rank " << k << " talks to " << q;
        mid += st[i].sbytes;
      }
      EXPECT_EQ(mid, 2 * (p - 1) * S / p) << "n=" << n << " rank " << k;
    }
    const int most = static_cast<int>(std::max_element(r.steps.begin(), r.steps.end(), [](auto &a, auto &b) {
                                        return a.size() < b.size();
                                      })->size());
    EXPECT_EQ(most, 2 * lg + 2) << n;
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
  ASSERT_EQ(parse_tune(kDefaultTune, &rules, &err), Status::Ok) << err;
  // Host calls: exactly one rule whose algorithm takes host memory matches every size, for
  // every collective with host algorithms; those without (issue 23: gather, scatter and
  // the v-forms but allgatherv have none) match no rule, so nothing can select the engine
  // for them on host memory.
  Topology topo;
  topo.num_nodes = 1;
  CollArgs host;
  int with_algorithms = 0;
  for (int c = 0; c < kColls; ++c) {
    bool has = false;
    host.coll = static_cast<Coll>(c);
    for (const auto &a : algorithms()) has = has || (a.coll == host.coll && a.supports(host, topo));
    with_algorithms += has;
    for (std::uint64_t b : {0ull, 1ull, 8ull, 4096ull, 65536ull, 1ull << 20, 1ull << 26, 1ull << 40}) {
      host.coll = static_cast<Coll>(c);
      int hits = 0;
      for (const auto &r : rules) hits += r.coll == host.coll && b >= r.lo && b < r.hi && r.algo->supports(host, topo);
      EXPECT_EQ(hits, has ? 1 : 0) << coll_name(static_cast<Coll>(c)) << " " << b;
    }
  }
  EXPECT_EQ(with_algorithms, 8);  // allreduce, bcast, allgather, reduce_scatter_block, reduce, reduce_scatter,
                                  // alltoall, allgatherv
  // Device buffers on one node, zero-copy, not in place: every collective with an engine
  // algorithm has a rule at every size (the others: none).
  CollArgs dev;
  dev.mem = MemKind::Device;
  dev.zero_copy = true;
  dev.sendbuf = &dev;
  topo.local_size = 4;
  int with_device = 0;
  for (int c = 0; c < kColls; ++c) {
    dev.coll = static_cast<Coll>(c);
    bool has = false;
    for (const auto &a : algorithms()) has = has || (a.coll == dev.coll && a.run && a.supports(dev, topo));
    with_device += has;
    for (std::uint64_t b : {0ull, 8ull, 65536ull, 1ull << 26}) {
      int hits = 0;
      for (const auto &r : rules)
        hits += r.coll == dev.coll && b >= r.lo && b < r.hi && r.algo->run && r.algo->supports(dev, topo);
      EXPECT_EQ(hits > 0, has) << coll_name(dev.coll) << " " << b;
    }
  }
  EXPECT_EQ(with_device, 8);  // and reduce, reduce_scatter, alltoall
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
  // Allgatherv (bytes): device buffers on one node zero-copy at every size, in place too;
  // else the banks' bruck / ring by total bytes.
  CollArgs v;
  v.coll = Coll::Allgatherv;
  v.mem = MemKind::Device;
  v.zero_copy = true;
  for (std::size_t bytes : {std::size_t{8}, std::size_t{1} << 26}) {
    v.count = bytes;
    EXPECT_STREQ(select_algorithm({}, v, one)->name, "direct") << bytes;
    EXPECT_STREQ(select_algorithm({}, v, two)->name, bytes < 16384 ? "bruck" : "ring") << bytes;
    v.zero_copy = false;
    EXPECT_STREQ(select_algorithm({}, v, one)->name, bytes < 16384 ? "bruck" : "ring") << bytes;
    v.zero_copy = true;
    v.mem = MemKind::Host;
    EXPECT_STREQ(select_algorithm({}, v, one)->name, bytes < 16384 ? "bruck" : "ring") << bytes;
    v.mem = MemKind::Device;
  }
}

// Issue 12: a device space that fuses (MPS, or a GPU per rank) takes @fused for small and
// mid sizes and for what cannot be exposed, the two-shot for large exposable allreduces,
// and never a bank algorithm; ranks time-sliced on a shared GPU stage small calls.
TEST(Tune, FusedAndTimeSlicedDeviceSelection) {
  std::vector<TuneRule> ts;
  std::string err;
  ASSERT_EQ(parse_tune(kTimeSlicedTune, &ts, &err), Status::Ok) << err;
  Topology one;
  one.num_nodes = 1;
  one.local_size = 4;
  CollArgs a;
  a.mem = MemKind::Device;
  a.zero_copy = true;
  a.fused = true;
  a.elem = 4;
  a.dtype = DType::Float;
  for (Coll c : {Coll::Allreduce, Coll::Bcast, Coll::Allgather}) {
    a.coll = c;
    for (std::size_t count : {std::size_t{2}, std::size_t{4096}, std::size_t{1} << 18}) {
      a.count = count;
      EXPECT_STREQ(select_algorithm({}, a, one)->name, "fused") << coll_name(a.coll) << " " << a.bytes();
    }
  }
  // reduce_scatter_block has no fused op: zero-copy (not in place; below 16K by the
  // table's order, no rule naming it), else staged (the banks are the fused ops').
  a.coll = Coll::Reduce_scatter_block;
  a.sendbuf = &a;
  a.count = 2;
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "twoshot");
  a.count = std::size_t{1} << 18;
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "twoshot");
  a.sendbuf = nullptr;  // in place
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "staged");
  a.coll = Coll::Allreduce;
  a.count = std::size_t{4} << 20;  // 16 MiB
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "twoshot");
  a.zero_copy = false;  // cannot be exposed: fused ops, a bank at a time
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "fused");
  // A user rule for a bank algorithm does not apply on a space that fuses.
  std::vector<TuneRule> user;
  ASSERT_EQ(parse_tune("allreduce:0-inf:@ring,bcast:0-inf:@binomial", &user, &err), Status::Ok) << err;
  EXPECT_STREQ(select_algorithm(user, a, one)->name, "fused");
  // Long double pairs (32 bytes: no fused kernel) are staged unless exposable and large.
  a.dtype = DType::LongDoubleInt;
  a.elem = 32;
  a.count = 2;
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "staged");
  // Time-sliced and not fusing: staged below the thresholds, the engine above.
  a = CollArgs();
  a.mem = MemKind::Device;
  a.zero_copy = true;
  a.time_sliced = true;
  a.elem = 1;
  for (Coll c : {Coll::Allreduce, Coll::Bcast, Coll::Allgather, Coll::Allgatherv}) {
    a.coll = c;
    a.count = 8;
    EXPECT_STREQ(select_algorithm({}, a, one)->name, "staged") << coll_name(c);
    a.count = std::size_t{64} << 20;
    EXPECT_STRNE(select_algorithm({}, a, one)->name, "staged") << coll_name(c);
  }
  // The same call on a node that is not time-sliced (fused off, MPS): the engine.
  a.coll = Coll::Allreduce;
  a.count = 8;
  a.time_sliced = false;
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "oneshot");
  // @staged through GCOLL_TUNE anywhere device buffers are.
  ASSERT_EQ(parse_tune("allreduce:0-1M:@staged", &user, &err), Status::Ok) << err;
  EXPECT_STREQ(select_algorithm(user, a, one)->name, "staged");
  a.mem = MemKind::Host;
  EXPECT_STRNE(select_algorithm(user, a, one)->name, "staged");
}

// Issue 31 item 2: on a node's NVLink ring (Topology::ring) every one of the engine's eight
// collectives runs @nvring on device buffers, in place and not, at every size (the others
// read peers the ring's space does not map); never on host memory; across nodes that each
// have one, @nvring_hier. On a
// space that fuses (no banks) alltoall in place runs @direct; reduce_scatter(_block) in
// place are still staged there (no scratch: docs/engine.md).
TEST(Tune, NvringTakesEveryEngineCollectiveOnTheRing) {
  Topology ring;
  ring.num_nodes = 1;
  ring.size = ring.local_size = 4;
  ring.ring = {0, 1, 3, 2};
  const Coll colls[] = {Coll::Allreduce, Coll::Bcast,  Coll::Allgather,      Coll::Allgatherv,
                        Coll::Reduce,    Coll::Reduce_scatter_block, Coll::Reduce_scatter, Coll::Alltoall};
  const int counts[4] = {3, 0, 5, 1};
  const std::size_t bytes[4] = {3, 0, 5, 1}, offsets[4] = {0, 3, 3, 8};
  for (Coll c : colls)
    for (bool in_place : {false, true})
      for (std::size_t count : {std::size_t{0}, std::size_t{8}, std::size_t{1} << 26}) {
        CollArgs a;
        a.coll = c;
        a.mem = MemKind::Device;
        a.zero_copy = true;
        a.sendbuf = in_place ? nullptr : &a;
        a.count = count;
        a.counts = counts;
        a.block_bytes = bytes;
        a.block_offsets = offsets;
        EXPECT_STREQ(select_algorithm({}, a, ring)->name, "nvring") << coll_name(c) << " " << in_place << " " << count;
        a.mem = MemKind::Host;  // (the host algorithms need more of the topology: none, or not nvring)
        const Algorithm *h = select_algorithm({}, a, ring);
        EXPECT_TRUE(!h || std::strcmp(h->name, "nvring") != 0) << coll_name(c);
      }
  // Across nodes, every node on its ring (issue 31 item 3): @nvring_hier for all eight,
  // device buffers only; nodes of different sizes (ranks without a rail): neither.
  Topology two;
  compute_layout({0, 0, 0, 3, 3, 3}, 0, &two);
  two.ring = {0, 2, 1};
  Topology uneven;
  compute_layout({0, 0, 0, 3, 3, 3, 3}, 0, &uneven);
  uneven.ring = {0, 2, 1};
  const int counts6[7] = {3, 0, 5, 1, 2, 2, 2};
  const std::size_t bytes6[7] = {3, 0, 5, 1, 2, 2, 2}, offsets6[7] = {0, 3, 3, 8, 9, 11, 13};
  for (Coll c : colls)
    for (bool in_place : {false, true}) {
      CollArgs a;
      a.coll = c;
      a.mem = MemKind::Device;
      a.sendbuf = in_place ? nullptr : &a;
      a.count = 8;
      a.counts = counts6;
      a.block_bytes = bytes6;
      a.block_offsets = offsets6;
      EXPECT_STREQ(select_algorithm({}, a, two)->name, "nvring_hier") << coll_name(c) << " " << in_place;
      const Algorithm *u = select_algorithm({}, a, uneven);
      EXPECT_TRUE(!u || std::strncmp(u->name, "nvring", 6) != 0) << coll_name(c);
      a.mem = MemKind::Host;
      const Algorithm *h = select_algorithm({}, a, two);
      EXPECT_TRUE(!h || std::strncmp(h->name, "nvring", 6) != 0) << coll_name(c);
    }
  CollArgs a;
  // A space that fuses, one node without a ring.
  Topology one;
  one.num_nodes = 1;
  one.size = one.local_size = 4;
  a = CollArgs();
  a.mem = MemKind::Device;
  a.zero_copy = true;
  a.fused = true;
  a.count = 64;
  a.counts = counts;
  for (Coll c : {Coll::Alltoall, Coll::Reduce_scatter, Coll::Reduce_scatter_block}) {
    a.coll = c;
    a.sendbuf = &a;
    EXPECT_STRNE(select_algorithm({}, a, one)->name, "staged") << coll_name(c);
    a.sendbuf = nullptr;
    EXPECT_STREQ(select_algorithm({}, a, one)->name, c == Coll::Alltoall ? "direct" : "staged") << coll_name(c);
  }
  a.fused = false;  // banks: in place through them
  a.coll = Coll::Alltoall;
  EXPECT_STREQ(select_algorithm({}, a, one)->name, "hier");
}

// The compressed allreduce (docs/compression.md): asked for (CollArgs::compress), float and
// double sums on several nodes take @compressed on host and device buffers, before any rule
// and before the cost model; never on one node, along NVLink rings (@nvring_hier), for other
// types or ops, or unasked.
TEST(Tune, CompressedOnHostAndDeviceBuffersAcrossNodesOnly) {
  Topology one, two, rings;
  one.num_nodes = 1;
  one.size = one.local_size = 4;
  compute_layout({0, 0, 2, 2}, 0, &two);
  compute_layout({0, 0, 0, 3, 3, 3}, 0, &rings);
  rings.ring = {0, 2, 1};
  const std::vector<TuneRule> user = {
      TuneRule{Coll::Allreduce, 0, ~std::uint64_t{0}, find_algorithm(Coll::Allreduce, "rd")}};
  for (MemKind m : {MemKind::Host, MemKind::Device})
    for (DType t : {DType::Float, DType::Double}) {
      CollArgs a;
      a.coll = Coll::Allreduce;
      a.mem = m;
      a.dtype = t;
      a.elem = dtype_size(t);
      a.op = ROp::Sum;
      a.count = 1 << 20;
      a.compress = Compress::Fp8;
      const std::string what = std::string(m == MemKind::Host ? "host " : "device ") + dtype_name(t);
      EXPECT_STREQ(select_algorithm({}, a, two)->name, "compressed") << what;
      EXPECT_STREQ(select_algorithm(user, a, two)->name, "compressed") << what;  // before GCOLL_TUNE
      EXPECT_STRNE(select_algorithm({}, a, one)->name, "compressed") << what;
      if (m == MemKind::Device) EXPECT_STREQ(select_algorithm({}, a, rings)->name, "nvring_hier") << what;
      a.op = ROp::Max;
      EXPECT_STRNE(select_algorithm({}, a, two)->name, "compressed") << what;
      a.op = ROp::Sum;
      a.compress = Compress::Off;
      EXPECT_STRNE(select_algorithm({}, a, two)->name, "compressed") << what;
    }
  CollArgs i;
  i.coll = Coll::Allreduce;
  i.mem = MemKind::Device;
  i.dtype = DType::Int32;
  i.elem = 4;
  i.count = 1 << 20;
  i.compress = Compress::Bf16;
  EXPECT_STRNE(select_algorithm({}, i, two)->name, "compressed");
}

// gpu.stats.engine.* expects engine calls of every collective with engine algorithms, also
// on a GPU that ranks share without MPS (time-sliced: small device calls staged). Its
// program (mpi_tests/gpu/gpu_stats.c) makes one large call of each for that: those sizes
// must stay above the time-sliced staging (an H200 without MPS staged every smaller call,
// 2026-11-26 for allreduce/bcast/allgather, 2026-11-27 for the four below), its small
// ones below.
TEST(Tune, GpuStatsLargeCallsTakeTheEngineWhenTimeSliced) {
  Topology one;
  one.num_nodes = 1;
  one.local_size = 4;
  const int n = 4;  // ranks (gpu.stats.engine.np4; np2 halves the v-forms' totals: still above)
  const std::size_t nr = std::size_t{1} << 21, nb = std::size_t{1} << 18, small = 4099;  // floats
  std::vector<int> counts(n);
  int buf = 0;
  for (bool large : {true, false}) {
    for (Coll c : {Coll::Reduce, Coll::Reduce_scatter, Coll::Alltoall, Coll::Allgatherv}) {
      CollArgs a;
      a.mem = MemKind::Device;
      a.zero_copy = true;
      a.time_sliced = true;
      a.coll = c;
      a.sendbuf = &buf;  // not in place
      a.recvbuf = &buf;
      const std::size_t k = large ? (c == Coll::Reduce ? nr : nb) : small;
      for (int &x : counts) x = static_cast<int>(k);
      if (c == Coll::Reduce || c == Coll::Reduce_scatter) {
        a.dtype = DType::Float;
        a.op = ROp::Sum;
        a.elem = 4;
        a.count = c == Coll::Reduce ? k : k * n;  // reduce_scatter: every block's elements
        a.counts = counts.data();
      } else {
        a.elem = 1;
        a.count = c == Coll::Alltoall ? 4 * k : 4 * k * n;  // alltoall: one block's bytes; allgatherv: all
      }
      const Algorithm *x = select_algorithm({}, a, one);
      ASSERT_NE(x, nullptr) << coll_name(c);
      if (large)
        EXPECT_STRNE(x->name, "staged") << coll_name(c) << " " << a.bytes() << " bytes";
      else
        EXPECT_STREQ(x->name, "staged") << coll_name(c) << " " << a.bytes() << " bytes";
    }
  }
}

TEST(Tune, UserRulesAndErrors) {
  std::vector<TuneRule> rules;
  std::string err;
  ASSERT_EQ(parse_tune("allreduce:0-64K:@rd,allreduce:64K-inf:@ring", &rules, &err), Status::Ok) << err;
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_STREQ(rules[0].algo->name, "rd");
  EXPECT_EQ(rules[0].hi, 65536u);
  EXPECT_EQ(rules[1].hi, UINT64_MAX);
  for (const char *bad : {"allreduce:0-64K:@nope", "allreduce:64K-0:@rd", "reduce:0-1:@rd", "allreduce:0-1:rd",
                          "allreduce", "bcast:0-inf:@ring", "allreduce:x-1:@rd"}) {
    std::vector<TuneRule> keep = rules;
    EXPECT_EQ(parse_tune(bad, &keep, &err), Status::ErrArg) << bad;
    EXPECT_FALSE(err.empty());
    EXPECT_EQ(keep.size(), 2u) << "a rejected value must not change anything: " << bad;
  }
  // A valid rule next to a bad one: nothing is applied.
  std::vector<TuneRule> none;
  EXPECT_EQ(parse_tune("allreduce:0-inf:@ring,bcast:0-inf:@nope", &none, &err), Status::ErrArg);
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
  ASSERT_EQ(parse_tune("allreduce:0-inf:@rd", &user, &err), Status::Ok);
  EXPECT_STREQ(select_algorithm(user, a, t)->name, "rd");
  ASSERT_EQ(parse_tune("allreduce:1M-inf:@rabenseifner", &user, &err), Status::Ok) << err;
  EXPECT_STREQ(select_algorithm(user, a, t)->name, "rabenseifner");
  EXPECT_EQ(select_algorithm(user, a, t)->schedule, schedule_rabenseifner);
}

// A float sum on host buffers, not in place, with the given receive counts (which the
// selection does not read): the scatter-reductions' selection tests.
CollArgs host_float_sum(const int *counts, const float *in) {
  CollArgs a;
  a.mem = MemKind::Host;
  a.dtype = DType::Float;
  a.elem = 4;
  a.op = ROp::Sum;
  a.reducible = true;
  a.sendbuf = in;
  a.counts = counts;
  return a;
}

// Issue 32 item 1: host buffers go to the MPI's own collective (@mpi: no run, the engine
// declines) at the sizes of the host crossovers, the engine elsewhere; device buffers never
// see them; GCOLL_HOST_TUNE replaces or drops them; GCOLL_TUNE's rules come first.
TEST(Tune, HostCrossoversSendHostCallsToTheMpi) {
  std::vector<TuneRule> host;
  std::string err;
  ASSERT_EQ(parse_tune(kHostTune, &host, &err), Status::Ok) << err;
  ASSERT_FALSE(host.empty());
  for (const auto &r : host) {
    EXPECT_STREQ(r.algo->name, "mpi") << coll_name(r.coll);
    EXPECT_EQ(r.algo->run, nullptr);
  }
  // Every engine collective has its @mpi row, taking host buffers only.
  Topology t;
  compute_layout({0, 0, 2, 2}, 0, &t);  // two nodes of two
  for (Coll c : {Coll::Allreduce, Coll::Bcast, Coll::Allgather, Coll::Allgatherv, Coll::Reduce_scatter_block,
                 Coll::Reduce, Coll::Reduce_scatter, Coll::Alltoall}) {
    const Algorithm *m = find_algorithm(c, "mpi");
    ASSERT_NE(m, nullptr) << coll_name(c);
    EXPECT_EQ(m->run, nullptr);
    CollArgs x;
    x.coll = c;
    EXPECT_TRUE(m->supports(x, t)) << coll_name(c);
    x.mem = MemKind::Device;
    EXPECT_FALSE(m->supports(x, t)) << coll_name(c);
  }
  // Allreduce (built-in): the MPI below 4K and from 32K; the engine's algorithms between.
  CollArgs a;
  a.coll = Coll::Allreduce;
  a.elem = 4;
  a.reducible = true;
  const std::pair<std::size_t, const char *> expect[] = {
      {8, "mpi"}, {4095, "mpi"}, {4096, "oneshot"}, {16384, "rd"}, {32 * 1024 - 4, "rd"}, {32 * 1024, "mpi"},
      {std::size_t{16} << 20, "mpi"}};
  for (const auto &e : expect) {
    a.count = e.first / 4;
    EXPECT_STREQ(select_algorithm({}, a, t, &host)->name, e.second) << a.bytes();
  }
  // Without host rules (GCOLL_HOST_TUNE=off; unit tests' default): the engine at every size.
  a.count = 2;
  EXPECT_STREQ(select_algorithm({}, a, t)->name, "oneshot");
  EXPECT_STREQ(select_algorithm({}, a, t, nullptr)->name, "oneshot");
  // Device buffers: the host crossovers do not apply.
  a.mem = MemKind::Device;
  EXPECT_STREQ(select_algorithm({}, a, t, &host)->name, "oneshot");
  a.mem = MemKind::Host;
  // GCOLL_TUNE first: a user's engine rule beats the crossover, a user's @mpi the engine.
  std::vector<TuneRule> user;
  ASSERT_EQ(parse_tune("allreduce:0-1K:@rd,bcast:0-inf:@mpi", &user, &err), Status::Ok) << err;
  EXPECT_STREQ(select_algorithm(user, a, t, &host)->name, "rd");
  CollArgs b;
  b.coll = Coll::Bcast;
  b.elem = 1;
  b.count = 8;
  EXPECT_STREQ(select_algorithm(user, b, t)->name, "mpi");
  b.mem = MemKind::Device;  // @mpi takes no device buffers: the defaults
  EXPECT_STRNE(select_algorithm(user, b, t)->name, "mpi");
  // Reduce_scatter_block: the selection's bytes are the block.
  CollArgs r;
  r.coll = Coll::Reduce_scatter_block;
  r.elem = 4;
  r.reducible = true;
  r.count = 1024;  // 4K block
  EXPECT_STREQ(select_algorithm({}, r, t, &host)->name, "mpi");
  r.count = 8192;  // 32K block
  EXPECT_STREQ(select_algorithm({}, r, t, &host)->name, "mpi");
  r.count = 16384;  // 64K block
  EXPECT_STRNE(select_algorithm({}, r, t, &host)->name, "mpi");
  // Reduce_scatter (the total; 2026-11-30): the MPI from 256K below 4M, the engine's @rails
  // from 4M (1.16-1.95x the MPI there, paired on 2 x 2 virtual nodes; 2M on par).
  const int counts[4] = {1, 1, 1, 1};
  const float in = 0;
  CollArgs s = host_float_sum(counts, &in);
  s.coll = Coll::Reduce_scatter;
  s.count = (std::size_t{2} << 20) / 4;
  EXPECT_STREQ(select_algorithm({}, s, t, &host)->name, "mpi");
  s.count = (std::size_t{4} << 20) / 4 - 1;
  EXPECT_STREQ(select_algorithm({}, s, t, &host)->name, "mpi");
  s.count = (std::size_t{4} << 20) / 4;
  EXPECT_STREQ(select_algorithm({}, s, t, &host)->name, "rails");
  s.count = (std::size_t{16} << 20) / 4;
  EXPECT_STREQ(select_algorithm({}, s, t, &host)->name, "rails");
  // GCOLL_HOST_TUNE's values.
  EXPECT_EQ(host_rules_of("default", &err).size(), host.size());
  EXPECT_TRUE(err.empty());
  EXPECT_EQ(host_rules_of("", &err).size(), host.size());
  EXPECT_TRUE(host_rules_of("off", &err).empty());
  EXPECT_TRUE(err.empty());
  const auto mine = host_rules_of("allgather:0-1K:@mpi", &err);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_TRUE(err.empty());
  EXPECT_EQ(mine[0].coll, Coll::Allgather);
  EXPECT_EQ(host_rules_of("allgather:0-1K:@nope", &err).size(), host.size());  // invalid: the built-in ones
  EXPECT_FALSE(err.empty());
  // gcoll_info's table shows the @mpi rows and the host rules per collective.
  const std::string table = describe_algorithms("");
  EXPECT_NE(table.find("host buffers (GCOLL_HOST_BUFFERS=engine), before the rules below"), std::string::npos);
  EXPECT_NE(table.find("0-4K:@mpi"), std::string::npos);
}

// The per-collective ranges the passthrough check reads (tune.h: DeclineRanges) say what
// host_declines() says over both rule lists, at every rule bound and next to it, for the
// built-in crossovers, with GCOLL_TUNE rules over them, and with too many ranges to fit
// (then the rule walk decides).
TEST(Tune, DeclineRangesAreHostDeclines) {
  std::string err;
  std::vector<TuneRule> host, user, many;
  ASSERT_EQ(parse_tune(kHostTune, &host, &err), Status::Ok) << err;
  ASSERT_EQ(parse_tune("allreduce:2K-8K:@ring,reduce:512K-4M:@direct,bcast:0-64:@binomial", &user, &err), Status::Ok)
      << err;
  std::string text;
  for (int i = 0; i < 2 * DeclineRanges::kMax + 2; ++i)
    text += "allgather:" + std::to_string(2 * i) + "K-" + std::to_string(2 * i + 1) + "K:@mpi,";
  ASSERT_EQ(parse_tune(text, &many, &err), Status::Ok) << err;
  const std::vector<TuneRule> none;
  using Rules = const std::vector<TuneRule> *;
  const Rules users[] = {&none, &user}, hosts[] = {&host, &many, &none};
  for (Rules u : users)
    for (Rules h : hosts) {
      const DeclineRanges d = decline_ranges_of(*u, *h);
      std::vector<std::uint64_t> probes = {0, 1, 7, 8, 1000, 1ull << 40, UINT64_MAX - 1};
      for (Rules rules : {u, h})
        for (const TuneRule &r : *rules)
          for (std::uint64_t b : {r.lo, r.hi})
            for (std::uint64_t x : {b - 1, b, b + 1}) probes.push_back(x);
      int declined = 0;
      const std::uint32_t engine_colls = host_engine_colls_of(d);
      for (int c = 0; c < kBlockingColls; ++c) {
        // host_engine_colls_of: a collective left out only if every size is declined
        // (never allreduce), kept if some size is not.
        bool every = true;
        for (std::uint64_t b : probes) {
          if (b == UINT64_MAX) continue;  // "inf" is [lo, UINT64_MAX): no call has that many bytes
          CollArgs a;
          a.coll = static_cast<Coll>(c);
          a.elem = 1;
          a.count = b;
          every = every && host_declines(*u, *h, a);
        }
        const bool kept = (engine_colls >> c) & 1u;
        EXPECT_EQ(kept, !every || static_cast<Coll>(c) == Coll::Allreduce) << coll_name(static_cast<Coll>(c));
      }
      for (int c = 0; c < kBlockingColls; ++c)
        for (std::uint64_t b : probes) {
          CollArgs a;
          a.coll = static_cast<Coll>(c);
          a.elem = 1;
          a.count = b;
          const bool want = host_declines(*u, *h, a);
          declined += want;
          bool got = false;
          if (!d.exact[c]) {
            got = want;  // the rule walk decides
          } else {
            for (int i = 0; i < d.n[c]; ++i) got = got || (b >= d.r[c][i].lo && b < d.r[c][i].hi);
          }
          EXPECT_EQ(got, want) << coll_name(static_cast<Coll>(c)) << " " << b << " bytes";
        }
      if (h != &none) EXPECT_GT(declined, 0);
    }
  EXPECT_FALSE(decline_ranges_of(none, many).exact[static_cast<int>(Coll::Allgather)]);
  EXPECT_TRUE(decline_ranges_of(none, host).exact[static_cast<int>(Coll::Reduce_scatter)]);
  // The built-in crossovers: bcast, allgather and alltoall at the MPI at every size; a
  // GCOLL_TUNE rule for bcast brings it back.
  const auto bit = [](Coll c) { return 1u << static_cast<int>(c); };
  const std::uint32_t builtin = host_engine_colls_of(decline_ranges_of(none, host));
  for (Coll c : {Coll::Bcast, Coll::Allgather, Coll::Alltoall}) EXPECT_EQ(builtin & bit(c), 0u) << coll_name(c);
  for (Coll c : {Coll::Allreduce, Coll::Allgatherv, Coll::Reduce, Coll::Reduce_scatter, Coll::Reduce_scatter_block})
    EXPECT_NE(builtin & bit(c), 0u) << coll_name(c);
  EXPECT_NE(host_engine_colls_of(decline_ranges_of(user, host)) & bit(Coll::Bcast), 0u);
  std::vector<TuneRule> all_mpi;
  ASSERT_EQ(parse_tune("allreduce:0-inf:@mpi", &all_mpi, &err), Status::Ok) << err;
  EXPECT_NE(host_engine_colls_of(decline_ranges_of(none, all_mpi)) & bit(Coll::Allreduce), 0u);
}

// GCOLL_HOST_BUSY_MPI (issue 32 item 2): which host calls may go to the MPI on a loaded
// machine: from the setting's size on, not where it is 0, not with GCOLL_HOST_TUNE=off,
// not where the call is compressed, not where a GCOLL_TUNE rule covers the collective and size.
TEST(Tune, BusyCandidatesBySizeAndSettings) {
  CollArgs a;
  a.coll = Coll::Allreduce;
  a.dtype = DType::Float;
  a.op = ROp::Sum;
  a.elem = 4;
  a.count = 65536;  // 256K
  EXPECT_TRUE(host_busy_candidate({}, a, 256 << 10, false));
  EXPECT_FALSE(host_busy_candidate({}, a, 512 << 10, false));
  EXPECT_FALSE(host_busy_candidate({}, a, 0, false));
  EXPECT_FALSE(host_busy_candidate({}, a, 256 << 10, true));
  std::string err;
  std::vector<TuneRule> user;
  ASSERT_TRUE(ok(parse_tune("allreduce:128K-1M:@ring", &user, &err))) << err;
  ASSERT_EQ(user.size(), 1u);
  EXPECT_FALSE(host_busy_candidate(user, a, 256 << 10, false));
  a.coll = Coll::Bcast;  // the rule is allreduce's
  EXPECT_TRUE(host_busy_candidate(user, a, 256 << 10, false));
  // The scatter-reductions at any size below 64 KiB (their engine lost on shared cores
  // there); the others from the setting's size; none where the setting is 0.
  a.count = 1024;  // 4K
  for (Coll c : {Coll::Reduce, Coll::Reduce_scatter, Coll::Reduce_scatter_block}) {
    a.coll = c;
    EXPECT_TRUE(host_busy_candidate({}, a, 256 << 10, false)) << coll_name(c);
    EXPECT_FALSE(host_busy_candidate({}, a, 0, false)) << coll_name(c);
    EXPECT_FALSE(host_busy_candidate({}, a, 256 << 10, true)) << coll_name(c);
  }
  for (Coll c : {Coll::Allreduce, Coll::Allgatherv, Coll::Allgather, Coll::Bcast, Coll::Alltoall}) {
    a.coll = c;
    EXPECT_FALSE(host_busy_candidate({}, a, 256 << 10, false)) << coll_name(c);
  }
  // ... but from 64 KiB (the selection's bytes: reduce's message, reduce_scatter's total,
  // reduce_scatter_block's block) the scatter-reductions stay on the engine (it beats the
  // MPI there on shared cores since the waits ration the MPI's progress pokes and run with
  // a short time slice).
  for (Coll c : {Coll::Reduce, Coll::Reduce_scatter, Coll::Reduce_scatter_block}) {
    a.coll = c;
    a.count = (kBusyEngineScatterBytes / 4) - 1;
    EXPECT_TRUE(host_busy_candidate({}, a, 256 << 10, false)) << coll_name(c);
    a.count = kBusyEngineScatterBytes / 4;
    EXPECT_FALSE(host_busy_candidate({}, a, 256 << 10, false)) << coll_name(c);
    EXPECT_FALSE(host_busy_candidate({}, a, 16 << 10, false)) << coll_name(c);
    // Large ones too: reduce_scatter of 16 MiB in all went to the MPI until @rails.
    for (std::size_t count : {std::size_t{1} << 20, std::size_t{4} << 20, std::size_t{64} << 20}) {
      a.count = count;
      EXPECT_FALSE(host_busy_candidate({}, a, 256 << 10, false)) << coll_name(c) << " " << count;
    }
  }
  a.count = 65536;
  a.coll = Coll::Allreduce;
  a.compress = Compress::Bf16;
  EXPECT_FALSE(host_busy_candidate({}, a, 256 << 10, false));
}

TEST(Tune, AlgorithmTableNamesDefaultsAndUnknownRules) {
  const std::string table = describe_algorithms("");
  EXPECT_NE(table.find("rabenseifner"), std::string::npos);
  EXPECT_NE(table.find("oneshot       0-16K"), std::string::npos) << table;
  EXPECT_EQ(table.find("GCOLL_TUNE ignored"), std::string::npos);
  const std::string bad = describe_algorithms("allreduce:0-inf:@rabenseifnr");
  EXPECT_NE(bad.find("warning: GCOLL_TUNE ignored: unknown algorithm '@rabenseifnr'"), std::string::npos) << bad;
  const std::string good = describe_algorithms("allreduce:64K-inf:@rabenseifner");
  EXPECT_NE(good.find("allreduce:64K-inf:@rabenseifner"), std::string::npos) << good;
}

// Issue 21, item 4: what the kernels cannot do is decided before anything is published.
// Device MPI_LONG_DOUBLE (no CUDA kernel) used to pass every allreduce's supports(),
// publish and sync, and be refused by the reduction itself (on every rank at the same
// step, by luck). Now no allreduce algorithm of the engine takes an unreducible (type, op),
// at any size, zero-copy or not, fused or not, one node or several: the staged row does
// (device), or nothing (host: the MPI).
TEST(Tune, UnreducibleTypesAreRefusedBeforeAnythingMoves) {
  Topology one, two;
  one.num_nodes = 1;
  one.local_size = 4;
  two.num_nodes = 2;
  two.local_size = 2;
  two.min_local = 2;
  CollArgs a;
  a.coll = Coll::Allreduce;
  a.dtype = DType::LongDouble;
  a.elem = dtype_size(DType::LongDouble);
  a.reducible = false;
  for (MemKind mem : {MemKind::Device, MemKind::Host})
    for (bool zero_copy : {false, true})
      for (bool fused : {false, true})
        for (const Topology *t : {&one, &two})
          for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{1} << 22}) {
            a.mem = mem;
            a.zero_copy = zero_copy;
            a.fused = fused;
            a.count = count;
            for (const Algorithm &algo : algorithms())
              if (algo.coll == Coll::Allreduce && algo.run)
                EXPECT_FALSE(algo.supports(a, *t)) << algo.name;
            const Algorithm *sel = select_algorithm({}, a, *t);
            if (mem == MemKind::Device) {
              ASSERT_NE(sel, nullptr);
              EXPECT_STREQ(sel->name, "staged");
            } else {
              EXPECT_TRUE(sel == nullptr || sel->run == nullptr);
            }
          }
  // Reducible: the engine's algorithms again.
  a.reducible = true;
  a.mem = MemKind::Host;
  a.count = 1000;
  ASSERT_NE(select_algorithm({}, a, one), nullptr);
  EXPECT_NE(select_algorithm({}, a, one)->run, nullptr);
}

// reduce_scatter(_block) @rails (reduce_scatter_rails.cc): host buffers on nodes of one size,
// by default from two rounds of the bank on 2 x 2 (rsb from a 512 KiB block, reduce_scatter
// from 2 MiB in all), @hier below and on uneven nodes, and never on device buffers.
TEST(Tune, ReduceScatterRailsFromTwoRoundsOnEvenNodes) {
  Topology even, uneven;
  even.size = 4;
  even.num_nodes = 2;
  even.local_size = 2;
  even.min_local = 2;
  even.members = {{0, 1}, {2, 3}};
  uneven.size = 3;
  uneven.num_nodes = 2;
  uneven.local_size = 2;
  uneven.min_local = 1;
  uneven.members = {{0, 1}, {2}};
  const int counts[4] = {1, 2, 3, 4};
  const float in = 0;
  CollArgs a = host_float_sum(counts, &in);
  const auto pick = [&a](Coll c, std::size_t bytes, const Topology &t) {
    a.coll = c;
    a.count = bytes / 4;
    const Algorithm *x = select_algorithm({}, a, t);
    return std::string(x ? x->name : "none");
  };
  for (Coll c : {Coll::Reduce_scatter_block, Coll::Reduce_scatter}) {
    const std::size_t from = c == Coll::Reduce_scatter_block ? 512 << 10 : 2 << 20;
    EXPECT_EQ(pick(c, from - 4, even), "hier") << coll_name(c);
    EXPECT_EQ(pick(c, from, even), "rails") << coll_name(c);
    EXPECT_EQ(pick(c, 64 << 20, even), "rails") << coll_name(c);
    EXPECT_EQ(pick(c, from, uneven), "hier") << coll_name(c);
    a.sendbuf = nullptr;  // in place: @rails takes it too
    EXPECT_EQ(pick(c, from, even), "rails") << coll_name(c);
    a.sendbuf = &in;
    // Forced below its default sizes; not on uneven nodes even when forced.
    std::vector<TuneRule> force;
    std::string err;
    ASSERT_TRUE(ok(parse_tune(std::string(coll_name(c)) + ":0-inf:@rails", &force, &err))) << err;
    a.coll = c;
    a.count = 1;
    EXPECT_STREQ(select_algorithm(force, a, even)->name, "rails");
    EXPECT_STREQ(select_algorithm(force, a, uneven)->name, "hier");
    a.mem = MemKind::Device;
    a.count = (64 << 20) / 4;
    const Algorithm *d = select_algorithm({}, a, even);
    EXPECT_TRUE(d == nullptr || std::string(d->name) != "rails") << coll_name(c);
    a.mem = MemKind::Host;
  }
}

}  // namespace
}  // namespace gcoll

namespace gcoll {
namespace {

// The stats count engine calls per algorithm by table index: a row past kMaxAlgos would
// not be counted at all (the table passed 32 rows with issue 23).
TEST(Registry, EveryAlgorithmHasAStatsSlot) {
  EXPECT_LE(algorithms().size(), static_cast<std::size_t>(kMaxAlgos));
}

}  // namespace
}  // namespace gcoll
