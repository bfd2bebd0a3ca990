#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <thread>
#include <vector>

#include "base/stats.h"

namespace gcoll {
namespace {

std::uint64_t field(const std::string &json, const std::string &coll, const std::string &key) {
  const std::regex re("\"" + coll + "\": \\{[^}]*\"" + key + "\": ([0-9]+)");
  std::smatch m;
  if (!std::regex_search(json, m, re)) return ~0ull;
  return std::stoull(m[1]);
}

TEST(Stats, RecordAndSnapshot) {
  Stats s;
  s.record(Coll::Allreduce, Path::Passthrough, 8);
  s.record(Coll::Allreduce, Path::Engine, 16);
  s.record(Coll::Bcast, Path::Error, 0);
  const auto v = s.snapshot();
  ASSERT_EQ(v.size(), static_cast<size_t>(kCounters));
  EXPECT_EQ(v[static_cast<int>(Field::Passthrough)], 1u);
  EXPECT_EQ(v[static_cast<int>(Field::Engine)], 1u);
  EXPECT_EQ(v[static_cast<int>(Field::Bytes)], 24u);
  EXPECT_EQ(v[kFields + static_cast<int>(Field::Errors)], 1u);
}

TEST(Stats, ConcurrentRecordsAreAllCounted) {
  Stats s;
  constexpr int kThreads = 4, kPer = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < kPer; ++i) s.record(Coll::Allgather, Path::Passthrough, 3);
    });
  for (auto &t : ts) t.join();
  const auto v = s.snapshot();
  EXPECT_EQ(v[2 * kFields + static_cast<int>(Field::Passthrough)], static_cast<std::uint64_t>(kThreads * kPer));
  EXPECT_EQ(v[2 * kFields + static_cast<int>(Field::Bytes)], static_cast<std::uint64_t>(3 * kThreads * kPer));
}

TEST(Stats, AggregationSumsRanksAndJsonHasEveryField) {
  // Three "ranks" with different mixes of paths.
  std::vector<std::vector<std::uint64_t>> ranks;
  for (int r = 0; r < 3; ++r) {
    Stats s;
    for (int i = 0; i <= r; ++i) s.record(Coll::Allreduce, Path::Passthrough, 8);
    s.record(Coll::Bcast, r == 1 ? Path::Staged : Path::Engine, 100);
    if (r == 2) s.record(Coll::Allgather, Path::Error, 0);
    ranks.push_back(s.snapshot());
  }
  const auto sum = stats_sum(ranks);
  const std::string json = stats_to_json(sum, std::vector<std::uint64_t>(kMaxima, 0), {});
  EXPECT_EQ(field(json, "allreduce", "calls"), 6u);
  EXPECT_EQ(field(json, "allreduce", "passthrough"), 6u);
  EXPECT_EQ(field(json, "allreduce", "bytes"), 48u);
  EXPECT_EQ(field(json, "bcast", "calls"), 3u);
  EXPECT_EQ(field(json, "bcast", "engine"), 2u);
  EXPECT_EQ(field(json, "bcast", "staged"), 1u);
  EXPECT_EQ(field(json, "bcast", "bytes"), 300u);
  EXPECT_EQ(field(json, "allgather", "calls"), 1u);
  EXPECT_EQ(field(json, "allgather", "errors"), 1u);
  for (const char *c : {"allreduce", "bcast", "allgather"})
    for (const char *k : {"calls", "engine", "staged", "passthrough", "errors", "bytes", "intra_node_bytes",
                          "inter_node_bytes", "inter_node_steps_max"})
      EXPECT_NE(field(json, c, k), ~0ull) << c << "." << k;
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json[json.find_last_not_of('\n')], '}');
}

TEST(Stats, EngineFieldsAlgorithmsAndMaxima) {
  Stats a, b;
  EngineRecord r;
  r.algo = 1;
  r.intra = 100;
  r.inter = 40;
  r.inter_steps = 3;
  a.record(Coll::Allreduce, Path::Engine, 8);
  a.record_engine(Coll::Allreduce, r);
  r.inter_steps = 5;
  r.algo = 0;
  b.record(Coll::Allreduce, Path::Engine, 8);
  b.record_engine(Coll::Allreduce, r);
  r.inter_steps = 2;
  r.algo = 2;
  b.record(Coll::Bcast, Path::Engine, 8);
  b.record_engine(Coll::Bcast, r);
  const auto sum = stats_sum({a.snapshot(), b.snapshot()});
  std::vector<std::uint64_t> max(kMaxima, 0);
  for (const auto &m : {a.snapshot_max(), b.snapshot_max()})
    for (int k = 0; k < kMaxima; ++k) max[k] = std::max(max[k], m[k]);
  const std::string json = stats_to_json(sum, max, {{Coll::Allreduce, "x"}, {Coll::Allreduce, "y"}, {Coll::Bcast, "z"}});
  EXPECT_EQ(field(json, "allreduce", "intra_node_bytes"), 200u);
  EXPECT_EQ(field(json, "allreduce", "inter_node_bytes"), 80u);
  EXPECT_EQ(field(json, "allreduce", "inter_node_steps_max"), 5u);
  EXPECT_EQ(field(json, "bcast", "inter_node_steps_max"), 2u);
  EXPECT_NE(json.find("\"algorithms\": {\"x\": 1, \"y\": 1}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"algorithms\": {\"z\": 1}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"allgather\": {\"calls\": 0"), std::string::npos) << json;
}

}  // namespace
}  // namespace gcoll
