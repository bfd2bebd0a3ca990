// The settings that must be equal on every rank (base/uniform_settings.h), agreed through
// the in-process bootstrap (boot/bootstrap.h) with threads as ranks: every rank gets the
// same outcome, and a setting that differs gets the outcome its table entry names.
#include <algorithm>
#include <climits>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/uniform_settings.h"
#include "boot/bootstrap.h"

namespace gcoll {
namespace {

// What each of n ranks agrees, given each rank's GCOLL_* variables (through the real
// parser and the in-process bootstrap).
std::vector<AgreedSettings> agree(const std::vector<EnvList> &envs, const std::vector<bool> &gpu = {},
                                  const std::vector<bool> &thread_multiple = {}) {
  const int n = static_cast<int>(envs.size());
  InProcBootstrapGroup group(n);
  std::vector<AgreedSettings> out(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      auto b = group.member(r);
      const ParsedConfig pc = parse_config(envs[static_cast<std::size_t>(r)]);
      const bool g = gpu.empty() ? false : gpu[static_cast<std::size_t>(r)];
      const bool tm = thread_multiple.empty() ? false : thread_multiple[static_cast<std::size_t>(r)];
      const std::vector<long long> mine = uniform_vote(pc.effective, g, tm);
      std::vector<long long> lo(mine.size()), hi(mine.size());
      ASSERT_EQ(min_max(*b, mine.data(), static_cast<int>(mine.size()), lo.data(), hi.data()), Status::Ok);
      out[static_cast<std::size_t>(r)] = agreed_settings(lo, hi);
    });
  for (auto &t : threads) t.join();
  return out;
}

void expect_same(const std::vector<AgreedSettings> &v) {
  for (const AgreedSettings &a : v) {
    EXPECT_EQ(a.same_build, v[0].same_build);
    EXPECT_EQ(a.gpu, v[0].gpu);
    EXPECT_EQ(a.host_engine, v[0].host_engine);
    EXPECT_EQ(a.device_engine, v[0].device_engine);
    EXPECT_EQ(a.uniform_memory, v[0].uniform_memory);
    EXPECT_EQ(a.thread_multiple, v[0].thread_multiple);
    EXPECT_EQ(a.agree_interval, v[0].agree_interval);
    EXPECT_EQ(a.timeout_s, v[0].timeout_s);
    EXPECT_EQ(a.engine, v[0].engine);
    EXPECT_EQ(a.differences.size(), v[0].differences.size());
  }
}

// The progress thread may call the MPI (and so run calls across nodes) only where every
// rank's MPI granted MPI_THREAD_MULTIPLE.
TEST(UniformSettings, ThreadMultipleOnlyWhereEveryRankHasIt) {
  const EnvList e;
  auto v = agree({e, e, e}, {}, {true, true, true});
  expect_same(v);
  EXPECT_TRUE(v[0].thread_multiple);
  EXPECT_TRUE(v[0].differences.empty());
  v = agree({e, e, e}, {}, {true, false, true});
  expect_same(v);
  EXPECT_FALSE(v[0].thread_multiple);
  EXPECT_FALSE(agree({e, e}, {})[0].thread_multiple);
}

TEST(UniformSettings, EqualSettingsAgreeWithoutDifferences) {
  const EnvList e = {{"GCOLL_HOST_BUFFERS", "engine"}, {"GCOLL_CHUNK_SIZE", "64K"}, {"GCOLL_DEBUG", "INFO"}};
  const auto v = agree({e, e, e}, {false, true, false});
  expect_same(v);
  EXPECT_TRUE(v[0].same_build);
  EXPECT_TRUE(v[0].gpu);  // one rank can hold device memory
  EXPECT_TRUE(v[0].host_engine);
  EXPECT_TRUE(v[0].device_engine);
  EXPECT_TRUE(v[0].engine);
  EXPECT_EQ(v[0].agree_interval, 1024);
  EXPECT_TRUE(v[0].differences.empty());
}

TEST(UniformSettings, SettingsThatMayDifferAreNotAgreed) {
  // GCOLL_DEBUG, GCOLL_WAIT, GCOLL_IPC_CACHE_SIZE are each rank's own.
  const auto v = agree({{{"GCOLL_DEBUG", "TRACE"}, {"GCOLL_WAIT", "spin"}}, {{"GCOLL_IPC_CACHE_SIZE", "1G"}}});
  expect_same(v);
  EXPECT_TRUE(v[0].differences.empty());
  EXPECT_TRUE(v[0].engine);
}

TEST(UniformSettings, HostBuffersGoToTheMpiWhereAnyRankSaysMpi) {
  const auto v = agree({{{"GCOLL_HOST_BUFFERS", "engine"}}, {{"GCOLL_HOST_BUFFERS", "mpi"}}, {}});
  expect_same(v);
  EXPECT_FALSE(v[0].host_engine);
  ASSERT_EQ(v[0].differences.size(), 1u);
  EXPECT_EQ(v[0].differences[0].setting, "GCOLL_HOST_BUFFERS");
  EXPECT_EQ(v[0].differences[0].lo, "mpi");
  EXPECT_EQ(v[0].differences[0].hi, "engine");
  EXPECT_EQ(difference_message(v[0].differences[0]),
            "GCOLL_HOST_BUFFERS differs between the ranks of a communicator (mpi to engine): host buffers go to the "
            "MPI where any rank says mpi");
}

TEST(UniformSettings, ScheduleSettingsThatDifferTakeTheEngineAway) {
  for (const char *name : {"GCOLL_CHUNK_SIZE", "GCOLL_DEVICE_CHUNK_SIZE", "GCOLL_DEVICE_NET_CHUNK"}) {
    const auto v = agree({{{name, "64K"}}, {{name, "1M"}}});
    expect_same(v);
    EXPECT_FALSE(v[0].engine) << name;
    ASSERT_EQ(v[0].differences.size(), 1u) << name;
    EXPECT_EQ(v[0].differences[0].lo, "64K");
    EXPECT_EQ(v[0].differences[0].hi, "1M");
  }
  const auto t = agree({{{"GCOLL_TUNE", "bcast:0-inf:@binomial"}}, {}});
  EXPECT_FALSE(t[0].engine);
  ASSERT_EQ(t[0].differences.size(), 1u);
  EXPECT_EQ(t[0].differences[0].lo, "");  // strings: only that they differ
  // The host crossovers (issue 32): ranks that would decline different sizes must not meet
  // in the engine.
  const auto h = agree({{{"GCOLL_HOST_TUNE", "off"}}, {}});
  EXPECT_FALSE(h[0].engine);
  ASSERT_EQ(h[0].differences.size(), 1u);
  EXPECT_EQ(h[0].differences[0].setting, "GCOLL_HOST_TUNE");
  EXPECT_TRUE(agree({{{"GCOLL_HOST_TUNE", "off"}}, {{"GCOLL_HOST_TUNE", "off"}}})[0].engine);
  const auto r = agree({{{"GCOLL_RANKS_PER_NODE", "2"}}, {{"GCOLL_RANKS_PER_NODE", "2"}}});
  EXPECT_TRUE(r[0].engine);
  EXPECT_FALSE(agree({{{"GCOLL_RANKS_PER_NODE", "1"}}, {{"GCOLL_RANKS_PER_NODE", "2"}}})[0].engine);
  EXPECT_FALSE(agree({{{"GCOLL_CUDA", "emulate"}}, {{"GCOLL_CUDA", "auto"}}})[0].engine);
}

TEST(UniformSettings, DeviceAndMemorySettings) {
  auto v = agree({{{"GCOLL_DEVICE_BUFFERS", "staged"}}, {}});
  EXPECT_FALSE(v[0].device_engine);
  EXPECT_TRUE(v[0].engine);  // the host engine is not concerned
  v = agree({{{"GCOLL_UNIFORM_MEMORY", "1"}}, {{"GCOLL_UNIFORM_MEMORY", "1"}}});
  EXPECT_TRUE(v[0].uniform_memory);
  v = agree({{{"GCOLL_UNIFORM_MEMORY", "1"}}, {}});
  EXPECT_FALSE(v[0].uniform_memory);
  v = agree({{{"GCOLL_MEMORY_AGREE_INTERVAL", "16"}}, {{"GCOLL_MEMORY_AGREE_INTERVAL", "16"}}});
  EXPECT_EQ(v[0].agree_interval, 16);
  v = agree({{{"GCOLL_MEMORY_AGREE_INTERVAL", "16"}}, {}});
  EXPECT_EQ(v[0].agree_interval, 1);
  v = agree({{{"GCOLL_DEVICE_FUSED", "auto"}}, {}});
  ASSERT_EQ(v[0].differences.size(), 1u);  // agreed where it is used (the node's vote): warned here
  EXPECT_EQ(v[0].differences[0].setting, "GCOLL_DEVICE_FUSED");
}

TEST(UniformSettings, TimeoutIsTheSmallestNonzeroValue) {
  EXPECT_EQ(agree({{}, {}})[0].timeout_s, 0);
  EXPECT_EQ(agree({{{"GCOLL_TIMEOUT", "30"}}, {}})[0].timeout_s, 30);
  EXPECT_EQ(agree({{{"GCOLL_TIMEOUT", "30"}}, {{"GCOLL_TIMEOUT", "10"}}, {}})[0].timeout_s, 10);
}

// GCOLL_ALLREDUCE_COMPRESS (docs/compression.md): the format where every rank says it,
// off (uncompressed, with the one warning) where they differ; the engine stays.
TEST(UniformSettings, AllreduceCompressIsOffWhereTheRanksDiffer) {
  EXPECT_EQ(agree({{}, {}})[0].allreduce_compress, 0);
  auto v = agree({{{"GCOLL_ALLREDUCE_COMPRESS", "fp8"}}, {{"GCOLL_ALLREDUCE_COMPRESS", "FP8"}}});
  EXPECT_EQ(v[0].allreduce_compress, 3);
  EXPECT_EQ(v[1].allreduce_compress, 3);
  EXPECT_TRUE(v[0].differences.empty());
  v = agree({{{"GCOLL_ALLREDUCE_COMPRESS", "bf16"}}, {{"GCOLL_ALLREDUCE_COMPRESS", "fp16"}}, {}});
  for (const auto &a : v) {
    EXPECT_EQ(a.allreduce_compress, 0);
    EXPECT_TRUE(a.engine);
    ASSERT_EQ(a.differences.size(), 1u);
    EXPECT_EQ(a.differences[0].setting, "GCOLL_ALLREDUCE_COMPRESS");
  }
}

TEST(UniformSettings, ADifferentBuildMeansTheMpiForEverything) {
  const ParsedConfig pc = parse_config({{"GCOLL_HOST_BUFFERS", "engine"}});
  std::vector<long long> lo = uniform_vote(pc.effective, false), hi = lo;
  hi[0] ^= 2;  // another build's magic
  const AgreedSettings a = agreed_settings(lo, hi);
  EXPECT_FALSE(a.same_build);
  EXPECT_FALSE(a.host_engine);
  EXPECT_FALSE(a.device_engine);
  EXPECT_FALSE(a.engine);
  EXPECT_TRUE(a.gpu);
  EXPECT_EQ(a.agree_interval, 1);
  // A vote of another length (another build's table) too.
  lo.pop_back();
  EXPECT_FALSE(agreed_settings(lo, lo).same_build);
}

TEST(UniformSettings, EveryUniformSettingNamesItsOutcome) {
  int n = 0;
  for (const SettingDef &d : settings_table())
    if (d.differ) {
      ++n;
      EXPECT_GT(std::string(d.differ).size(), 10u) << d.name;
    }
  EXPECT_GE(n, 14);
}

TEST(UniformSettings, FormatSize) {
  EXPECT_EQ(format_size(0), "0");
  EXPECT_EQ(format_size(3000), "3000");
  EXPECT_EQ(format_size(65536), "64K");
  EXPECT_EQ(format_size(1 << 20), "1M");
  EXPECT_EQ(format_size(1536), "1536");
  EXPECT_EQ(format_size(16ull << 30), "16G");
  std::uint64_t back = 0;
  ASSERT_TRUE(parse_size(format_size(8ull << 20), &back));
  EXPECT_EQ(back, 8ull << 20);
}

TEST(Bootstrap, InProcessCollectives) {
  const int n = 4;
  InProcBootstrapGroup group(n);
  std::vector<std::thread> threads;
  std::vector<int> bad(n, 0);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      auto b = group.member(r);
      for (int round = 0; round < 50; ++round) {  // rounds back to back reuse the group
        long long v[2] = {r * 10 + round, -r};
        if (!ok(b->max(v, 2)) || v[0] != (n - 1) * 10 + round || v[1] != 0) ++bad[r];
        long long lo = 0, hi = 0;
        const long long mine = r == 2 ? LLONG_MIN : r;
        if (!ok(min_max(*b, &mine, 1, &lo, &hi)) || hi != n - 1 || lo > -(LLONG_MAX)) ++bad[r];
        int all[n] = {};
        const int me = r * r;
        if (!ok(b->allgather(&me, sizeof me, all))) ++bad[r];
        for (int q = 0; q < n; ++q)
          if (all[q] != q * q) ++bad[r];
        int x = r == 1 ? 77 + round : -1;
        if (!ok(b->bcast(&x, sizeof x, 1)) || x != 77 + round) ++bad[r];
        if (!ok(b->barrier())) ++bad[r];
      }
    });
  for (auto &t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(bad[r], 0) << "rank " << r;
}

// A rank without gcoll (GCOLL_ENABLE=0) makes its own collective call when the others
// exchange their votes: the MPI reduces the votes with its data (a shorter message: the
// start of the exchange). What arrives is recognised as not a vote (agree_once then fails
// every call on the communicator): four ints of 1, a float, zeros, a double.
TEST(UniformSettings, AVoteMixedWithAnApplicationsDataIsRecognised) {
  const std::vector<long long> vote = uniform_vote(parse_config({}).effective, false);
  for (long long foreign : {0x0000000100000001LL, 0x3f800000LL, 0LL, 0x3ff0000000000000LL, -1LL}) {
    // The maximum over [v, -v] (min_max) of this rank's vote and the application's bytes
    // that landed on the first word.
    std::vector<long long> lo(vote), hi(vote);
    hi[0] = std::max(vote[0], foreign);
    // (the negated half, past the short message, is untouched: lo stays the vote)
    const AgreedSettings a = agreed_settings(lo, hi);
    EXPECT_FALSE(a.all_gcoll) << std::hex << foreign;
    EXPECT_FALSE(a.same_build);
    EXPECT_FALSE(a.engine);
  }
  std::vector<long long> lo(vote), hi(vote);
  EXPECT_TRUE(agreed_settings(lo, hi).all_gcoll);
}

}  // namespace
}  // namespace gcoll
