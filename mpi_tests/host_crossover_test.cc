// Host crossovers (issue 32 item 1): with GCOLL_HOST_BUFFERS=engine, a host-buffer call of
// one of the engine's eight collectives goes to the MPI's own collective (the stats'
// "passthrough") at the sizes an @mpi rule covers, and through the engine at the others;
// every rank alike, with results equal to PMPI_* on copies of the same inputs.
//
// The rules the program expects are GCOLLTEST_MPI_RULES (else GCOLL_HOST_TUNE): the @mpi
// rules of GCOLL_TUNE's grammar (coll:lo-hi:@mpi, [lo, hi) in the selection's bytes:
// allreduce, reduce, bcast the message; allgather and alltoall the block; allgatherv and
// reduce_scatter the total; reduce_scatter_block the block), read here by a parser of its
// own. mpi_tests/CMakeLists.txt runs it with the rules in GCOLL_HOST_TUNE (the host
// crossovers) and in GCOLL_TUNE (a user's @mpi).
//
// A loaded machine (issue 32 item 2, GCOLL_HOST_BUSY_MPI): GCOLLTEST_BUSY_MPI=<bytes> says
// that calls of that many bytes and more go to the MPI too (after the engine's first call,
// which sets it up at 64 bytes here). GCOLLTEST_LOADED_RANK=<r>: only world rank r says its
// cores are shared (GCOLL_SHARED_CORES=yes), the others that theirs are not (no), set before
// MPI_Init. Every rank must still take the MPI's path (the ranks agree), else the calls
// would mismatch.
#include <gcoll/gcoll.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"

namespace gct {
namespace {

struct MpiRange {
  std::string coll;
  std::uint64_t lo, hi;
};

bool parse_bytes(const std::string &s, std::uint64_t *v) {
  if (s == "inf") {
    *v = UINT64_MAX;
    return true;
  }
  char *end = nullptr;
  const unsigned long long x = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return false;
  std::uint64_t m = 1;
  if (*end == 'K') m = 1024, ++end;
  else if (*end == 'M') m = 1024 * 1024, ++end;
  else if (*end == 'G') m = 1024ull * 1024 * 1024, ++end;
  if (*end) return false;
  *v = x * m;
  return true;
}

// The @mpi rules of `text`; other rules are left out (they do not send calls to the MPI).
std::vector<MpiRange> parse_mpi_rules(const std::string &text, bool *ok) {
  std::vector<MpiRange> out;
  *ok = true;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string r = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (r.empty()) continue;
    const size_t c1 = r.find(':'), c2 = r.find(':', c1 + 1), dash = r.find('-', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos || dash == std::string::npos || dash > c2) {
      *ok = false;
      continue;
    }
    MpiRange m;
    m.coll = r.substr(0, c1);
    if (!parse_bytes(r.substr(c1 + 1, dash - c1 - 1), &m.lo) || !parse_bytes(r.substr(dash + 1, c2 - dash - 1), &m.hi))
      *ok = false;
    else if (r.substr(c2 + 1) == "@mpi")
      out.push_back(m);
  }
  return out;
}

const std::vector<MpiRange> &mpi_rules() {
  static const std::vector<MpiRange> rules = [] {
    const char *t = std::getenv("GCOLLTEST_MPI_RULES");
    if (!t) t = std::getenv("GCOLL_HOST_TUNE");
    bool ok = true;
    auto r = parse_mpi_rules(t ? t : "", &ok);
    if (!ok) report("cannot read the rules '%s'", t ? t : "");
    return r;
  }();
  return rules;
}

// Before MPI_Init (gcoll reads its settings at its first use): GCOLL_SHARED_CORES per rank.
const int kLoadedRankSetup = [] {
  const char *loaded = std::getenv("GCOLLTEST_LOADED_RANK"), *me = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!loaded || !me) return 0;
  setenv("GCOLL_SHARED_CORES", std::strcmp(loaded, me) == 0 ? "yes" : "no", 1);
  return 1;
}();

// GCOLLTEST_BUSY_MPI: GCOLL_HOST_BUSY_MPI of a run where some rank's cores are shared
// (UINT64_MAX: not such a run).
std::uint64_t busy_mpi() {
  static const std::uint64_t busy = [] {
    std::uint64_t v = 0;
    const char *t = std::getenv("GCOLLTEST_BUSY_MPI");
    return t && parse_bytes(t, &v) ? v : UINT64_MAX;
  }();
  return busy;
}

bool expect_mpi(const char *coll, std::uint64_t bytes) {
  const std::uint64_t busy = busy_mpi();
  // Where some rank's cores are shared: from GCOLL_HOST_BUSY_MPI's size, and reduce,
  // reduce_scatter and reduce_scatter_block at any size below 64 KiB (their selection's
  // bytes); from 64 KiB those three stay on the engine (coll/tune.h: host_busy_candidate).
  const std::string c = coll;
  const bool scatter = c == "reduce" || c == "reduce_scatter" || c == "reduce_scatter_block";
  const bool engine_busy = scatter && bytes >= (64u << 10);
  if (busy != UINT64_MAX && !engine_busy && (bytes >= busy || scatter)) return true;
  for (const auto &r : mpi_rules())
    if (r.coll == coll && bytes >= r.lo && bytes < r.hi) return true;
  return false;
}

// Selection bytes per call, from under the smallest rule to above the engine's small
// sizes: crossovers between them are seen on both sides.
const std::uint64_t kSizes[] = {64, 1024, 4096, 16384, 65536};

float value_of(int rank, size_t i) { return static_cast<float>((rank * 7 + static_cast<int>(i) * 3) % 11); }

// Runs `call` (gcoll's path) twice and `ref` (PMPI_* on copies; the caller compares the
// results) and checks that both calls took the path the rules say: two passthrough calls
// and no engine call where an @mpi rule covers `bytes`, two engine calls and no
// passthrough otherwise. The second is a repeated call (coll/team.h: Team::mpi_bytes gives
// it to the MPI without the crossover check where the first went there).
template <class Call, class Ref>
bool run_checked(const char *coll, std::uint64_t bytes, Call &&call, Ref &&ref) {
  set_phase("%s, %llu bytes", coll, static_cast<unsigned long long>(bytes));
  const long long e0 = gcoll_call_count(coll, "engine"), p0 = gcoll_call_count(coll, "passthrough");
  int rc = call();
  if (rc == MPI_SUCCESS) rc = call();
  const long long e1 = gcoll_call_count(coll, "engine"), p1 = gcoll_call_count(coll, "passthrough");
  ref();
  bool ok = rc == MPI_SUCCESS;
  if (!ok) report("%s, %llu bytes: rc %d", coll, static_cast<unsigned long long>(bytes), rc);
  const bool mpi = expect_mpi(coll, bytes);
  if (e1 - e0 != (mpi ? 0 : 2) || p1 - p0 != (mpi ? 2 : 0)) {
    report("%s, %llu bytes: expected the %s twice, got %lld engine and %lld passthrough calls", coll,
           static_cast<unsigned long long>(bytes), mpi ? "MPI (@mpi)" : "engine", e1 - e0, p1 - p0);
    ok = false;
  }
  return ok;
}

// A shared-cores run: the engine set up first (an allreduce of 4K, through the engine by
// the rules and below the busy size), since the busy agreement is made only once the
// engine exists (team_call.h); the calls checked after it take the busy path from the first.
void set_up_engine_if_busy() {
  if (busy_mpi() == UINT64_MAX) return;
  std::vector<float> in(1024, 1.f), out(1024);
  ASSERT_EQ(MPI_Allreduce(in.data(), out.data(), 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
}

TEST(HostCrossover, ReductionsTakeThePathOfTheirSize) {
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  set_up_engine_if_busy();
  bool ok = !mpi_rules().empty();
  for (std::uint64_t bytes : kSizes) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> in(count * static_cast<size_t>(n));
    for (size_t i = 0; i < in.size(); ++i) in[i] = value_of(rank, i);
    {  // allreduce: count floats
      std::vector<float> out(count), want(count);
      bool path_ok = run_checked(
          "allreduce", bytes,
          [&] { return MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                     MPI_COMM_WORLD); },
          [&] { PMPI_Allreduce(in.data(), want.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
      ok = path_ok &&
           (out == want || (report("allreduce %llu: differs", static_cast<unsigned long long>(bytes)), false)) && ok;
    }
    {  // reduce to the last rank
      std::vector<float> out(count, -1.f), want(count, -1.f);
      const int root = n - 1;
      bool path_ok = run_checked(
          "reduce", bytes,
          [&] { return MPI_Reduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, root,
                                  MPI_COMM_WORLD); },
          [&] { PMPI_Reduce(in.data(), want.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, root,
                            MPI_COMM_WORLD); });
      ok = path_ok &&
           (out == want || (report("reduce %llu: differs", static_cast<unsigned long long>(bytes)), false)) && ok;
    }
    {  // reduce_scatter: total `count` floats, uneven blocks
      const size_t N = static_cast<size_t>(n);
      std::vector<int> counts(N);
      for (size_t i = 0; i < N; ++i) counts[i] = static_cast<int>(count / N + (i < count % N));
      const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(rank)]);
      std::vector<float> out(mine + 1, -1.f), want(mine + 1, -1.f);
      bool path_ok = run_checked(
          "reduce_scatter", bytes,
          [&] { return MPI_Reduce_scatter(in.data(), out.data(), counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
          [&] { PMPI_Reduce_scatter(in.data(), want.data(), counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
      ok = path_ok &&
           (out == want || (report("reduce_scatter %llu: differs", static_cast<unsigned long long>(bytes)), false)) &&
           ok;
    }
    {  // reduce_scatter_block: blocks of `count` floats (the selection's bytes: the block)
      std::vector<float> out(count, -1.f), want(count, -1.f);
      bool path_ok = run_checked(
          "reduce_scatter_block", bytes,
          [&] { return MPI_Reduce_scatter_block(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                                MPI_COMM_WORLD); },
          [&] { PMPI_Reduce_scatter_block(in.data(), want.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                          MPI_COMM_WORLD); });
      ok = path_ok &&
           (out == want ||
            (report("reduce_scatter_block %llu: differs", static_cast<unsigned long long>(bytes)), false)) &&
           ok;
    }
  }
  EXPECT_ALL_RANKS(ok);
}

// A shared-cores run: the scatter-reductions of 64 KiB and more (their selection's bytes) at
// sizes the crossovers give the engine stay on it (it beats the MPI there on shared cores:
// coll/tune.h, host_busy_candidate), on every rank: reduce_scatter_block's blocks of 1 MiB,
// reduce of 512 KiB, reduce_scatter of 128 KiB in all.
TEST(HostCrossover, LargeScatterReductionsStayOnTheEngineWhenBusy) {
  if (busy_mpi() == UINT64_MAX) GTEST_SKIP() << "not a shared-cores run";
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  set_up_engine_if_busy();
  bool ok = true;
  {
    const std::uint64_t bytes = 1u << 20;
    const size_t count = bytes / sizeof(float);
    std::vector<float> in(count * static_cast<size_t>(n));
    for (size_t i = 0; i < in.size(); ++i) in[i] = value_of(rank, i);
    std::vector<float> out(count, -1.f), want(count, -1.f);
    ok = run_checked(
             "reduce_scatter_block", bytes,
             [&] { return MPI_Reduce_scatter_block(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                                   MPI_COMM_WORLD); },
             [&] { PMPI_Reduce_scatter_block(in.data(), want.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                             MPI_COMM_WORLD); }) &&
         ok;
    ok = (out == want || (report("reduce_scatter_block %llu: differs", static_cast<unsigned long long>(bytes)), false)) &&
         ok;
  }
  {
    const std::uint64_t bytes = 512u << 10;
    const size_t count = bytes / sizeof(float);
    std::vector<float> in(count);
    for (size_t i = 0; i < count; ++i) in[i] = value_of(rank, i);
    std::vector<float> out(count, -1.f), want(count, -1.f);
    ok = run_checked(
             "reduce", bytes,
             [&] { return MPI_Reduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, 0,
                                     MPI_COMM_WORLD); },
             [&] { PMPI_Reduce(in.data(), want.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, 0,
                               MPI_COMM_WORLD); }) &&
         ok;
    ok = (rank != 0 || out == want || (report("reduce %llu: differs", static_cast<unsigned long long>(bytes)), false)) &&
         ok;
  }
  {
    const std::uint64_t bytes = 128u << 10;  // in all: n blocks, the last one larger
    const size_t total = bytes / sizeof(float);
    std::vector<int> counts(static_cast<size_t>(n), static_cast<int>(total / static_cast<size_t>(n)));
    counts.back() += static_cast<int>(total % static_cast<size_t>(n));
    std::vector<float> in(total);
    for (size_t i = 0; i < total; ++i) in[i] = value_of(rank, i);
    const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(rank)]);
    std::vector<float> out(mine, -1.f), want(mine, -1.f);
    ok = run_checked(
             "reduce_scatter", bytes,
             [&] { return MPI_Reduce_scatter(in.data(), out.data(), counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
             [&] { PMPI_Reduce_scatter(in.data(), want.data(), counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }) &&
         ok;
    ok = (out == want || (report("reduce_scatter %llu: differs", static_cast<unsigned long long>(bytes)), false)) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

TEST(HostCrossover, ByteMoversTakeThePathOfTheirSize) {
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const size_t N = static_cast<size_t>(n);
  bool ok = !mpi_rules().empty();
  for (std::uint64_t bytes : kSizes) {
    const size_t b = static_cast<size_t>(bytes);
    std::vector<char> in(b * N);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<char>((rank * 31 + static_cast<int>(i)) & 0x7f);
    {  // bcast from rank 1 % n
      std::vector<char> buf(in.begin(), in.begin() + static_cast<long>(b)), ref = buf;
      const int root = 1 % n;
      bool path_ok = run_checked(
          "bcast", bytes, [&] { return MPI_Bcast(buf.data(), static_cast<int>(b), MPI_CHAR, root, MPI_COMM_WORLD); },
          [&] { PMPI_Bcast(ref.data(), static_cast<int>(b), MPI_CHAR, root, MPI_COMM_WORLD); });
      ok = path_ok && (buf == ref || (report("bcast %zu: differs", b), false)) && ok;
    }
    {  // allgather: blocks of b bytes
      std::vector<char> out(b * N), want(b * N);
      bool path_ok = run_checked(
          "allgather", bytes,
          [&] { return MPI_Allgather(in.data(), static_cast<int>(b), MPI_CHAR, out.data(), static_cast<int>(b),
                                     MPI_CHAR, MPI_COMM_WORLD); },
          [&] { PMPI_Allgather(in.data(), static_cast<int>(b), MPI_CHAR, want.data(), static_cast<int>(b), MPI_CHAR,
                               MPI_COMM_WORLD); });
      ok = path_ok && (out == want || (report("allgather %zu: differs", b), false)) && ok;
    }
    {  // allgatherv: b bytes in all, uneven blocks
      std::vector<int> counts(N), displs(N);
      int at = 0;
      for (size_t i = 0; i < N; ++i) {
        counts[i] = static_cast<int>(b / N + (i < b % N));
        displs[i] = at;
        at += counts[i];
      }
      std::vector<char> out(b), want(b);
      const int mine = counts[static_cast<size_t>(rank)];
      bool path_ok = run_checked(
          "allgatherv", bytes,
          [&] { return MPI_Allgatherv(in.data(), mine, MPI_CHAR, out.data(), counts.data(), displs.data(), MPI_CHAR,
                                      MPI_COMM_WORLD); },
          [&] { PMPI_Allgatherv(in.data(), mine, MPI_CHAR, want.data(), counts.data(), displs.data(), MPI_CHAR,
                                MPI_COMM_WORLD); });
      ok = path_ok && (out == want || (report("allgatherv %zu: differs", b), false)) && ok;
    }
    {  // alltoall: blocks of b bytes
      std::vector<char> out(b * N), want(b * N);
      bool path_ok = run_checked(
          "alltoall", bytes,
          [&] { return MPI_Alltoall(in.data(), static_cast<int>(b), MPI_CHAR, out.data(), static_cast<int>(b),
                                    MPI_CHAR, MPI_COMM_WORLD); },
          [&] { PMPI_Alltoall(in.data(), static_cast<int>(b), MPI_CHAR, want.data(), static_cast<int>(b), MPI_CHAR,
                              MPI_COMM_WORLD); });
      ok = path_ok && (out == want || (report("alltoall %zu: differs", b), false)) && ok;
    }
  }
  EXPECT_ALL_RANKS(ok);
}

// The compressed allreduce asked for (the info key) after allreduces of the same bytes went
// to the MPI by the crossovers: the compressed ones go through the engine from the first
// (it ignores the crossovers), repeated calls included (coll/team.h: Team::mpi_bytes is
// cleared where the key is agreed); values small integers, exact in bf16.
TEST(HostCrossover, CompressionAskedAfterCallsAtTheMpi) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comm = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &comm), MPI_SUCCESS);
  set_up_engine_if_busy();
  const std::uint64_t bytes = 1024;
  const int count = static_cast<int>(bytes / sizeof(float));
  std::vector<float> in(static_cast<size_t>(count)), out(in.size()), want(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = value_of(rank, i);
  bool ok = true;
  const auto calls = [&](const char *when, bool engine) {
    set_phase("allreduce %llu bytes, %s", static_cast<unsigned long long>(bytes), when);
    for (int k = 0; k < 3; ++k) {
      const long long e0 = gcoll_call_count("allreduce", "engine"), p0 = gcoll_call_count("allreduce", "passthrough");
      std::fill(out.begin(), out.end(), -1.f);
      const int rc = MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, comm);
      const long long e1 = gcoll_call_count("allreduce", "engine"), p1 = gcoll_call_count("allreduce", "passthrough");
      PMPI_Allreduce(in.data(), want.data(), count, MPI_FLOAT, MPI_SUM, comm);
      if (rc != MPI_SUCCESS || out != want || e1 - e0 != (engine ? 1 : 0) || p1 - p0 != (engine ? 0 : 1)) {
        report("allreduce %s, call %d: rc %d, %s, %lld engine and %lld passthrough calls (expected the %s)", when, k,
               rc, out == want ? "results right" : "results differ", e1 - e0, p1 - p0, engine ? "engine" : "MPI");
        ok = false;
      }
    }
  };
  calls("uncompressed", !expect_mpi("allreduce", bytes));
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "gcoll_allreduce_compress", "bf16");
  ASSERT_EQ(MPI_Comm_set_info(comm, info), MPI_SUCCESS);
  MPI_Info_free(&info);
  calls("compressed (bf16)", true);
  MPI_Comm_free(&comm);
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
