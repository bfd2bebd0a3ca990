// Tests of the UCX transport (src/net/transport.h), GoogleTest under mpirun.
//
// Own main(): MPI_Init(_thread) / MPI_Finalize around RUN_ALL_TESTS; only rank 0 keeps
// GoogleTest's printer (the other ranks print their failures with a "[rank N]" prefix);
// every test ends with a verdict agreed by all ranks; the exit code is nonzero on every
// rank if any rank failed; a watchdog ends the program after --watchdog=S seconds
// (default 240) so that a hang fails with a message.
//
// Rules: every rank runs the same tests and the same sequence of collective calls; no
// ASSERT_* around collective calls (compute a local `ok`, then EXPECT_TRUE(all_ok(ok))).
//
// Extra flags (after the GoogleTest ones): --thread-multiple (MPI_Init_thread with
// MPI_THREAD_MULTIPLE, enables UcxMT.*), --no-peer-failure-detection (init with
// Options::peer_failure_detection = false), --watchdog=S.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/config.h"
#include "base/log.h"
#include "net/transport.h"

using gcoll::Status;
using gcoll::status_name;
using gcoll::ucx::Group;
using gcoll::ucx::Request;

namespace {

int g_rank = 0;
int g_size = 1;
int g_thread_level = MPI_THREAD_SINGLE;
constexpr double kTimeout = 60.0;  // per wait: a healthy run never gets near it

bool all_ok(bool ok, MPI_Comm comm = MPI_COMM_WORLD) {
  int in = ok ? 1 : 0, out = 0;
  PMPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm);
  return out == 1;
}

std::uint8_t pattern(int src, int dst, std::uint32_t tag, std::uint32_t salt, std::size_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(src) * 1000003u) ^
                    (static_cast<std::uint64_t>(dst) * 7919u) ^ (std::uint64_t{tag} << 20) ^
                    (std::uint64_t{salt} << 40) ^ (i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  return static_cast<std::uint8_t>(x ^ (x >> 8) ^ (i >> 12));
}

std::vector<std::uint8_t> make_buf(std::size_t n, int src, int dst, std::uint32_t tag,
                                   std::uint32_t salt = 0) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = pattern(src, dst, tag, salt, i);
  return v;
}

// Index of the first wrong byte, or -1.
long long first_mismatch(const std::uint8_t *p, std::size_t n, int src, int dst,
                         std::uint32_t tag, std::uint32_t salt = 0) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != pattern(src, dst, tag, salt, i)) return static_cast<long long>(i);
  return -1;
}

bool check_buf(const std::vector<std::uint8_t> &v, std::size_t n, int src, int dst,
               std::uint32_t tag, std::uint32_t salt, const char *what) {
  if (v.size() != n) {
    ADD_FAILURE() << what << ": buffer size " << v.size() << " != " << n;
    return false;
  }
  const long long bad = first_mismatch(v.data(), n, src, dst, tag, salt);
  if (bad >= 0) {
    ADD_FAILURE() << what << ": " << n << " bytes from " << src << " to " << dst << " tag "
                  << tag << " salt " << salt << ": first wrong byte at " << bad;
    return false;
  }
  return true;
}

bool expect_ok(Status s, const char *what) {
  if (s != Status::Ok) {
    ADD_FAILURE() << what << " returned " << status_name(s);
    return false;
  }
  return true;
}

std::unique_ptr<Group> make_group(MPI_Comm comm, bool *ok) {
  std::unique_ptr<Group> g;
  const Status s = Group::create(comm, &g);
  if (s != Status::Ok || !g) {
    ADD_FAILURE() << "Group::create returned " << status_name(s);
    *ok = false;
    return nullptr;
  }
  return g;
}

const std::vector<std::size_t> &sizes() {
  static const std::vector<std::size_t> v = {0, 1, 4096 + 13, 8u << 20};
  return v;
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// ---- watchdog ----------------------------------------------------------------------------
std::mutex g_wd_mu;
std::condition_variable g_wd_cv;
bool g_wd_stop = false;
char g_current_test[256] = "(none)";

void watchdog(double seconds) {
  std::unique_lock<std::mutex> lk(g_wd_mu);
  if (g_wd_cv.wait_for(lk, std::chrono::duration<double>(seconds), [] { return g_wd_stop; }))
    return;
  std::fprintf(stderr, "[rank %d] watchdog: still running after %.1f s, in test %s; aborting\n",
               g_rank, seconds, g_current_test);
  std::fflush(stderr);
  _exit(124);
}

class RankListener : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo &info) override {
    std::lock_guard<std::mutex> lk(g_wd_mu);
    std::snprintf(g_current_test, sizeof g_current_test, "%s.%s", info.test_suite_name(),
                  info.name());
  }
  void OnTestPartResult(const testing::TestPartResult &r) override {
    if (g_rank == 0 || !r.failed()) return;  // rank 0 has GoogleTest's printer
    std::fprintf(stderr, "[rank %d] %s:%d: failure in %s\n%s\n", g_rank,
                 r.file_name() ? r.file_name() : "?", r.line_number(), g_current_test,
                 r.message());
  }
};

// ---- helpers used by several tests ------------------------------------------------------

// Ring: receive from the left, send to the right, with isend/irecv + wait.
bool ring_exchange(Group &g, std::size_t n, std::uint32_t tag, std::uint32_t salt) {
  const int r = g.rank(), p = g.size();
  const int right = (r + 1) % p, left = (r - 1 + p) % p;
  auto sbuf = make_buf(n, r, right, tag, salt);
  std::vector<std::uint8_t> rbuf(n, 0xEE);
  Request reqs[2];
  bool ok = expect_ok(g.irecv(left, rbuf.data(), n, tag, &reqs[0]), "irecv");
  ok = expect_ok(g.isend(right, sbuf.data(), n, tag, &reqs[1]), "isend") && ok;
  ok = expect_ok(g.wait(reqs, 2, kTimeout), "wait") && ok;
  ok = ok && reqs[0].done && reqs[1].done;
  return check_buf(rbuf, n, left, r, tag, salt, "ring") && ok;
}

// ---- tests ----------------------------------------------------------------------------------

TEST(Ucx, NoCudaMemorySupport) {
  // Debian's UCX 1.13.1 has no CUDA transports: the context reports host memory only.
  EXPECT_EQ(gcoll::ucx::init(), Status::Ok);
  EXPECT_FALSE(gcoll::ucx::supports_cuda_memory());
  EXPECT_EQ(gcoll::ucx::init(), Status::Ok);  // idempotent
}

TEST(Ucx, RingExchange) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g) {
    EXPECT_EQ(g->rank(), g_rank);
    EXPECT_EQ(g->size(), g_size);
    std::uint64_t expect_sent = 0;
    std::uint32_t tag = 100;
    for (std::size_t n : sizes()) {
      ok = ring_exchange(*g, n, tag++, 1) && ok;
      expect_sent += n;
    }
    // The same through sendrecv.
    for (std::size_t n : sizes()) {
      const int r = g->rank(), p = g->size();
      const int right = (r + 1) % p, left = (r - 1 + p) % p;
      auto sbuf = make_buf(n, r, right, tag, 2);
      std::vector<std::uint8_t> rbuf(n, 0xEE);
      ok = expect_ok(g->sendrecv(right, sbuf.data(), n, left, rbuf.data(), n, tag, kTimeout),
                     "sendrecv") && ok;
      ok = check_buf(rbuf, n, left, r, tag, 2, "ring sendrecv") && ok;
      expect_sent += n;
      ++tag;
    }
    EXPECT_EQ(g->bytes_sent(), expect_sent);
    ok = ok && g->bytes_sent() == expect_sent;
  }
  EXPECT_TRUE(all_ok(ok));
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
}

TEST(Ucx, LargeRingExchange64MiB) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g) ok = ring_exchange(*g, 64u << 20, 77, 3);
  EXPECT_TRUE(all_ok(ok));
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
}

TEST(Ucx, PairwiseAllToAll) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g) {
    const int r = g->rank(), p = g->size();
    std::uint32_t tag = 1000;
    // Pairwise steps with sendrecv (self included at k = 0).
    for (std::size_t n : sizes()) {
      for (int k = 0; k < p; ++k) {
        const int dst = (r + k) % p, src = (r - k + p) % p;
        auto sbuf = make_buf(n, r, dst, tag, 4);
        std::vector<std::uint8_t> rbuf(n, 0xEE);
        ok = expect_ok(g->sendrecv(dst, sbuf.data(), n, src, rbuf.data(), n, tag, kTimeout),
                       "sendrecv") && ok;
        ok = check_buf(rbuf, n, src, r, tag, 4, "pairwise") && ok;
      }
      ++tag;
    }
    // Everything at once: all receives, then all sends, one wait.
    for (std::size_t n : sizes()) {
      std::vector<std::vector<std::uint8_t>> sbufs(p), rbufs(p);
      std::vector<Request> reqs(2 * p);
      for (int q = 0; q < p; ++q) {
        rbufs[q].assign(n, 0xEE);
        ok = expect_ok(g->irecv(q, rbufs[q].data(), n, tag, &reqs[q]), "irecv") && ok;
      }
      for (int k = 0; k < p; ++k) {
        const int q = (r + k) % p;
        sbufs[q] = make_buf(n, r, q, tag, 5);
        ok = expect_ok(g->isend(q, sbufs[q].data(), n, tag, &reqs[p + q]), "isend") && ok;
      }
      ok = expect_ok(g->wait(reqs.data(), 2 * p, kTimeout), "wait") && ok;
      for (int q = 0; q < p; ++q) ok = check_buf(rbufs[q], n, q, r, tag, 5, "alltoall") && ok;
      ++tag;
    }
  }
  EXPECT_TRUE(all_ok(ok));
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
}

// Many messages per pair with different tags: receives posted partly before and partly
// after the sends (unexpected messages), in an order unrelated to the send order.
TEST(Ucx, ManyOutstandingTags) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g) {
    const int r = g->rank(), p = g->size();
    constexpr int K = 64;
    auto size_of = [](int t) -> std::size_t {
      return (t % 16 == 5) ? (200000 + t) : static_cast<std::size_t>((t * 97) % 3001);
    };
    std::vector<std::vector<std::uint8_t>> sbufs(p * K), rbufs(p * K);
    std::vector<Request> reqs(2 * p * K);
    auto post_recv = [&](int q, int t) {
      const int i = q * K + t;
      rbufs[i].assign(size_of(t), 0xEE);
      ok = expect_ok(g->irecv(q, rbufs[i].data(), size_of(t), 0x10000 + t, &reqs[i]),
                     "irecv") && ok;
    };
    // Odd tags: posted first, in reverse order.
    for (int q = 0; q < p; ++q)
      for (int t = K - 1; t >= 0; --t)
        if (t % 2) post_recv(q, t);
    // Sends: in tag order, peers in rotated order.
    for (int k = 0; k < p; ++k) {
      const int q = (r + k) % p;
      for (int t = 0; t < K; ++t) {
        const int i = q * K + t;
        sbufs[i] = make_buf(size_of(t), r, q, 0x10000 + t, 6);
        ok = expect_ok(g->isend(q, sbufs[i].data(), size_of(t), 0x10000 + t,
                                &reqs[p * K + i]),
                       "isend") && ok;
      }
    }
    // Even tags: posted after the sends, in a scrambled order.
    for (int q = p - 1; q >= 0; --q)
      for (int j = 0; j < K / 2; ++j) post_recv(q, 2 * ((j * 13) % (K / 2)));
    ok = expect_ok(g->wait(reqs.data(), static_cast<int>(reqs.size()), kTimeout), "wait") && ok;
    for (int q = 0; q < p; ++q)
      for (int t = 0; t < K; ++t)
        ok = check_buf(rbufs[q * K + t], size_of(t), q, r, 0x10000 + t, 6, "many tags") && ok;
  }
  EXPECT_TRUE(all_ok(ok));
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
}

// After wait() returns, a receiver may block in MPI (no UCX progress) for as long as it
// likes: its senders must not depend on it any more (wait flushes the rendezvous
// acknowledgements it owes). Odd ranks receive large messages from their even neighbour
// while sending it many small ones, so that the acknowledgements queue up behind them;
// then they block in PMPI_Barrier while the even ranks still wait for their sends.
TEST(Ucx, ReceiverMayBlockAfterWait) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g && g->size() >= 2) {
    const int r = g->rank(), p = g->size();
    constexpr int kBig = 32, kSmall = 256;
    constexpr std::size_t kBigBytes = 96 * 1024, kSmallBytes = 4000;
    const bool even = (r % 2 == 0) && r + 1 < p;
    const bool odd = (r % 2 == 1);
    const int peer = even ? r + 1 : r - 1;
    std::vector<std::vector<std::uint8_t>> big(kBig), small(kSmall);
    std::vector<Request> reqs(kBig + kSmall);
    for (int round = 0; round < 6; ++round) {
      if (!even && !odd) {
        PMPI_Barrier(MPI_COMM_WORLD);
        continue;
      }
      const int src_big = even ? r : peer, dst_big = even ? peer : r;
      for (int k = 0; k < kBig; ++k) {
        if (even) {
          big[k] = make_buf(kBigBytes, r, peer, 500 + k, round);
          ok = expect_ok(g->isend(peer, big[k].data(), kBigBytes, 500 + k, &reqs[k]), "isend") && ok;
        } else {
          big[k].assign(kBigBytes, 0xEE);
          ok = expect_ok(g->irecv(peer, big[k].data(), kBigBytes, 500 + k, &reqs[k]), "irecv") && ok;
        }
      }
      for (int k = 0; k < kSmall; ++k) {
        Request *q = &reqs[kBig + k];
        if (odd) {
          small[k] = make_buf(kSmallBytes, r, peer, 900 + k, round);
          ok = expect_ok(g->isend(peer, small[k].data(), kSmallBytes, 900 + k, q), "isend") && ok;
        } else {
          small[k].assign(kSmallBytes, 0xEE);
          ok = expect_ok(g->irecv(peer, small[k].data(), kSmallBytes, 900 + k, q), "irecv") && ok;
        }
      }
      // Even ranks: a finite timeout, so a receiver that owes us something fails the test
      // instead of hanging it.
      ok = expect_ok(g->wait(reqs.data(), kBig + kSmall, even ? 20.0 : kTimeout), "wait") && ok;
      for (int k = 0; k < kBig && odd; ++k)
        ok = check_buf(big[k], kBigBytes, src_big, dst_big, 500 + k, round, "big") && ok;
      for (int k = 0; k < kSmall && even; ++k)
        ok = check_buf(small[k], kSmallBytes, peer, r, 900 + k, round, "small") && ok;
      PMPI_Barrier(MPI_COMM_WORLD);  // deliberately not progress_barrier
    }
  }
  EXPECT_TRUE(all_ok(ok));
}

// Three groups at once: world, a duplicate of world (same ranks: only the group id tells
// their messages apart) and a reversed odd/even split; same caller tags on all three,
// operations interleaved, receives posted in mixed order.
TEST(Ucx, GroupsDoNotCrosstalk) {
  bool ok = true;
  MPI_Comm dup = MPI_COMM_NULL, split = MPI_COMM_NULL;
  PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
  PMPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, -g_rank, &split);
  auto a = make_group(MPI_COMM_WORLD, &ok);
  auto b = make_group(dup, &ok);
  auto c = make_group(split, &ok);
  if (a && b && c) {
    EXPECT_NE(a->id(), b->id());
    EXPECT_NE(a->id(), c->id());
    EXPECT_NE(b->id(), c->id());
    ok = ok && a->id() != b->id() && a->id() != c->id() && b->id() != c->id();
    Group *gs[3] = {a.get(), b.get(), c.get()};
    for (std::size_t n : sizes()) {
      for (std::uint32_t tag = 7; tag < 9; ++tag) {
        std::vector<std::uint8_t> sb[3], rb[3];
        Request reqs[6];
        for (int j : {2, 0, 1}) {
          Group &g = *gs[j];
          const int left = (g.rank() - 1 + g.size()) % g.size();
          rb[j].assign(n, 0xEE);
          ok = expect_ok(g.irecv(left, rb[j].data(), n, tag, &reqs[j]), "irecv") && ok;
        }
        for (int j : {1, 2, 0}) {
          Group &g = *gs[j];
          const int right = (g.rank() + 1) % g.size();
          sb[j] = make_buf(n, g.rank(), right, tag, 10 + j);
          ok = expect_ok(g.isend(right, sb[j].data(), n, tag, &reqs[3 + j]), "isend") && ok;
        }
        // Mixed groups in one wait.
        ok = expect_ok(a->wait(reqs, 6, kTimeout), "wait") && ok;
        for (int j = 0; j < 3; ++j) {
          Group &g = *gs[j];
          const int left = (g.rank() - 1 + g.size()) % g.size();
          ok = check_buf(rb[j], n, left, g.rank(), tag, 10 + j, "crosstalk") && ok;
        }
      }
    }
  }
  a.reset();
  b.reset();
  c.reset();
  PMPI_Comm_free(&dup);
  PMPI_Comm_free(&split);
  EXPECT_TRUE(all_ok(ok));
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
}

TEST(Ucx, GroupOfOneRank) {
  bool ok = true;
  MPI_Comm self = MPI_COMM_NULL;
  PMPI_Comm_split(MPI_COMM_WORLD, g_rank, 0, &self);
  auto g = make_group(self, &ok);
  if (g) {
    EXPECT_EQ(g->size(), 1);
    EXPECT_EQ(g->rank(), 0);
    std::uint32_t tag = 5;
    for (std::size_t n : sizes()) {
      auto sbuf = make_buf(n, 0, 0, tag, 20);
      std::vector<std::uint8_t> rbuf(n, 0xEE);
      ok = expect_ok(g->sendrecv(0, sbuf.data(), n, 0, rbuf.data(), n, tag, kTimeout),
                     "sendrecv") && ok;
      ok = check_buf(rbuf, n, 0, 0, tag, 20, "self sendrecv") && ok;
      // Send first (unexpected message), receive after.
      Request reqs[2];
      std::vector<std::uint8_t> rbuf2(n, 0xEE);
      ok = expect_ok(g->isend(0, sbuf.data(), n, tag + 1000, &reqs[0]), "isend") && ok;
      ok = expect_ok(g->irecv(0, rbuf2.data(), n, tag + 1000, &reqs[1]), "irecv") && ok;
      ok = expect_ok(g->wait(reqs, 2, kTimeout), "wait") && ok;
      ok = check_buf(rbuf2, n, 0, 0, tag, 20, "self isend first") && ok;
      ++tag;
    }
  }
  g.reset();
  PMPI_Comm_free(&self);
  EXPECT_TRUE(all_ok(ok));
}

// 100 groups created and destroyed, with a window of up to 4 alive at once: ids agree on
// all members and differ among live groups; every 10th group carries traffic.
TEST(Ucx, CreateDestroy100Groups) {
  bool ok = true;
  MPI_Comm dup = MPI_COMM_NULL;
  PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
  std::vector<std::unique_ptr<Group>> live;
  const double t0 = now_s();
  for (int i = 0; i < 100 && ok; ++i) {
    auto g = make_group(i % 2 ? dup : MPI_COMM_WORLD, &ok);
    if (!g) break;
    unsigned id = g->id(), id_min = 0, id_max = 0;
    PMPI_Allreduce(&id, &id_min, 1, MPI_UNSIGNED, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&id, &id_max, 1, MPI_UNSIGNED, MPI_MAX, MPI_COMM_WORLD);
    if (id_min != id_max) {
      ADD_FAILURE() << "group " << i << ": ids differ between ranks (" << id_min << ".."
                    << id_max << ")";
      ok = false;
    }
    for (auto &l : live) {
      if (l->id() == g->id()) {
        ADD_FAILURE() << "group " << i << " got id " << g->id() << " of a live group";
        ok = false;
      }
    }
    if (i % 10 == 0) ok = ring_exchange(*g, 1024 + i, 3, 30 + i) && ok;
    live.push_back(std::move(g));
    if (live.size() > 4) live.erase(live.begin() + (i % 4));
  }
  live.clear();
  PMPI_Comm_free(&dup);
  if (g_rank == 0) std::printf("[ info ] 100 groups in %.3f s\n", now_s() - t0);
  EXPECT_TRUE(all_ok(ok));
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
}

// A receive nobody sends times out with ErrTransport; the request is cancelled (a message
// sent later with that tag does not land in its buffer) and the peer stays usable.
TEST(Ucx, WaitTimesOutAndCancels) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g) {
    const int r = g->rank(), p = g->size();
    const int right = (r + 1) % p, left = (r - 1 + p) % p;
    constexpr std::uint32_t kTag = 0xDEAD;
    std::vector<std::uint8_t> lost(64, 0xEE);
    Request req;
    ok = expect_ok(g->irecv(left, lost.data(), lost.size(), kTag, &req), "irecv") && ok;
    const double t0 = now_s();
    const Status s = g->wait(&req, 1, 0.5);
    const double dt = now_s() - t0;
    EXPECT_EQ(s, Status::ErrTransport);
    EXPECT_TRUE(req.done);
    EXPECT_EQ(req.handle, nullptr);
    EXPECT_GE(dt, 0.45);
    EXPECT_LT(dt, 10.0);
    ok = ok && s == Status::ErrTransport && req.done && dt >= 0.45 && dt < 10.0;
    EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
    // Now the left neighbour sends with that tag: only the new receive gets it.
    auto sbuf = make_buf(lost.size(), r, right, kTag, 40);
    std::vector<std::uint8_t> rbuf(lost.size(), 0xEE);
    Request reqs[2];
    ok = expect_ok(g->irecv(left, rbuf.data(), rbuf.size(), kTag, &reqs[0]), "irecv") && ok;
    ok = expect_ok(g->isend(right, sbuf.data(), sbuf.size(), kTag, &reqs[1]), "isend") && ok;
    ok = expect_ok(g->wait(reqs, 2, kTimeout), "wait after timeout") && ok;
    ok = check_buf(rbuf, rbuf.size(), left, r, kTag, 40, "after timeout") && ok;
    if (std::any_of(lost.begin(), lost.end(), [](std::uint8_t b) { return b != 0xEE; })) {
      ADD_FAILURE() << "the cancelled receive's buffer was written";
      ok = false;
    }
    // The timeout did not cost the peer: a large exchange still works.
    ok = ring_exchange(*g, 8u << 20, kTag + 1, 41) && ok;
    // Explicit cancel of a receive that was never matched.
    Request never;
    ok = expect_ok(g->irecv(left, lost.data(), lost.size(), kTag + 2, &never), "irecv") && ok;
    ok = expect_ok(Group::cancel(&never, 1), "cancel") && ok;
    ok = ok && never.done && never.handle == nullptr;
  }
  EXPECT_TRUE(all_ok(ok));
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
}

// Size mismatch is reported (ErrInternal), not silently accepted.
TEST(Ucx, SizeMismatchIsAnError) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g) {
    const int r = g->rank(), p = g->size();
    const int right = (r + 1) % p, left = (r - 1 + p) % p;
    // Longer than the receive buffer (truncation) and shorter.
    for (std::size_t n : {std::size_t{100}, std::size_t{300000}}) {
      auto sbuf = make_buf(n, r, right, 9, 50);
      std::vector<std::uint8_t> small(n / 2), big(n * 2);
      Request reqs[2];
      ok = expect_ok(g->irecv(left, small.data(), small.size(), 9, &reqs[0]), "irecv") && ok;
      ok = expect_ok(g->isend(right, sbuf.data(), n, 9, &reqs[1]), "isend") && ok;
      const Status s1 = g->wait(reqs, 2, kTimeout);
      ok = expect_ok(g->isend(right, sbuf.data(), n, 10, &reqs[1]), "isend") && ok;
      ok = expect_ok(g->irecv(left, big.data(), big.size(), 10, &reqs[0]), "irecv") && ok;
      const Status s2 = g->wait(reqs, 2, kTimeout);
      EXPECT_EQ(s1, Status::ErrInternal) << n << " bytes into " << small.size();
      EXPECT_EQ(s2, Status::ErrInternal) << n << " bytes into " << big.size();
      ok = ok && s1 == Status::ErrInternal && s2 == Status::ErrInternal;
      EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
    }
  }
  EXPECT_TRUE(all_ok(ok));
}

TEST(Ucx, BadArguments) {
  bool ok = true;
  std::unique_ptr<Group> none;
  EXPECT_EQ(Group::create(MPI_COMM_NULL, &none), Status::ErrComm);
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g) {
    char b = 0;
    Request req;
    EXPECT_EQ(g->isend(g->size(), &b, 1, 0, &req), Status::ErrArg);
    EXPECT_TRUE(req.done);
    EXPECT_EQ(g->irecv(-1, &b, 1, 0, &req), Status::ErrArg);
    EXPECT_EQ(g->wait(&req, 1, 1.0), Status::ErrArg);  // a done request keeps its status
    EXPECT_EQ(g->wait(nullptr, 0, 1.0), Status::Ok);
  }
  EXPECT_TRUE(all_ok(ok));
}

// Destructive (run in its own registration): a send nobody receives times out; UCX
// cannot cancel a send, so the endpoint is force-closed and the peer is lost for good.
TEST(UcxDestructive, SendTimeoutLosesPeer) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (g && g->size() >= 2) {
    if (g->rank() == 0) {
      std::vector<std::uint8_t> big(8u << 20, 1);
      Request req;
      ok = expect_ok(g->isend(1, big.data(), big.size(), 1, &req), "isend") && ok;
      const double t0 = now_s();
      const Status s = g->wait(&req, 1, 0.5);
      const double dt = now_s() - t0;
      EXPECT_EQ(s, Status::ErrTransport);
      EXPECT_TRUE(req.done);
      EXPECT_LT(dt, 20.0);
      ok = ok && s == Status::ErrTransport && req.done;
      // The peer is lost: later operations fail at once.
      EXPECT_EQ(g->isend(1, big.data(), 16, 2, &req), Status::ErrTransport);
      EXPECT_EQ(g->irecv(1, big.data(), 16, 2, &req), Status::ErrTransport);
      big.assign(big.size(), 0);  // the buffer is ours again
    }
  }
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
  EXPECT_TRUE(all_ok(ok));
}

// Run in its own registration, with Open MPI's recovery on (mpirun keeps the job when a
// rank dies): the last rank exits without MPI_Finalize; requests to and from it must fail
// (tcp: connection reset; shared memory: UCX keepalive, 20 s) instead of hanging. The
// survivors then skip every collective and exit with their verdict.
bool g_peer_died = false;

TEST(UcxDeadPeer, RequestsFailInsteadOfHanging) {
  bool ok = true;
  auto g = make_group(MPI_COMM_WORLD, &ok);
  if (!g || g->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int r = g->rank(), p = g->size(), victim = p - 1;
  // Connect everybody with everybody first.
  for (int k = 1; k < p; ++k) {
    char s = 1, d = 0;
    ok = expect_ok(g->sendrecv((r + k) % p, &s, 1, (r - k + p) % p, &d, 1, 1, kTimeout),
                   "sendrecv") && ok;
  }
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
  g_peer_died = true;
  if (r == victim) {
    std::fflush(stdout);
    _exit(0);
  }
  // A receive from the dead rank (posted before or after it died).
  char buf[8];
  Request req;
  const double t0 = now_s();
  Status s = g->irecv(victim, buf, sizeof buf, 2, &req);
  if (s == Status::Ok) s = g->wait(&req, 1, 90.0);
  const double dt = now_s() - t0;
  EXPECT_EQ(s, Status::ErrTransport);
  EXPECT_LT(dt, 60.0) << "the dead peer was noticed only by the timeout";
  EXPECT_TRUE(req.done);
  // A large send to it fails too (at once: the peer is lost).
  std::vector<std::uint8_t> big(8u << 20, 1);
  s = g->isend(victim, big.data(), big.size(), 3, &req);
  if (s == Status::Ok) s = g->wait(&req, 1, 90.0);
  EXPECT_EQ(s, Status::ErrTransport);
  // The survivors still talk to each other.
  if (p > 2) {
    const int q = p - 1;  // survivors: 0..p-2
    const int right = (r + 1) % q, left = (r - 1 + q) % q;
    auto sbuf = make_buf(4096, r, right, 4, 70);
    std::vector<std::uint8_t> rbuf(4096, 0xEE);
    ok = expect_ok(g->sendrecv(right, sbuf.data(), sbuf.size(), left, rbuf.data(),
                               rbuf.size(), 4, kTimeout),
                   "sendrecv among survivors") && ok;
    ok = check_buf(rbuf, rbuf.size(), left, r, 4, 70, "survivors") && ok;
  }
  EXPECT_TRUE(ok);
}

// Under MPI_THREAD_MULTIPLE: two threads create groups on two communicators at the same
// time (the id agreement must keep them apart) and exchange messages concurrently.
TEST(UcxMT, ConcurrentGroupsOnTwoThreads) {
  if (g_thread_level != MPI_THREAD_MULTIPLE) GTEST_SKIP() << "needs --thread-multiple";
  MPI_Comm comms[2];
  PMPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
  PMPI_Comm_split(MPI_COMM_WORLD, 0, -g_rank, &comms[1]);  // reversed order
  std::atomic<bool> ok{true};
  std::unique_ptr<Group> groups[2];
  auto body = [&](int t) {
    Status s = Group::create(comms[t], &groups[t]);
    if (s != Status::Ok) {
      ok = false;
      return;
    }
    Group &g = *groups[t];
    const int r = g.rank(), p = g.size();
    const int right = (r + 1) % p, left = (r - 1 + p) % p;
    for (int it = 0; it < 30; ++it) {
      for (std::size_t n : {std::size_t{1}, std::size_t{4109}, std::size_t{1} << 20}) {
        auto sbuf = make_buf(n, r, right, it, 60 + t);
        std::vector<std::uint8_t> rbuf(n, 0xEE);
        Request reqs[2];
        if (g.irecv(left, rbuf.data(), n, it, &reqs[0]) != Status::Ok ||
            g.isend(right, sbuf.data(), n, it, &reqs[1]) != Status::Ok ||
            g.wait(reqs, 2, kTimeout) != Status::Ok ||
            first_mismatch(rbuf.data(), n, left, r, it, 60 + t) >= 0) {
          ok = false;
          return;
        }
      }
    }
  };
  std::thread th0(body, 0), th1(body, 1);
  th0.join();
  th1.join();
  bool local = ok.load() && groups[0] && groups[1] && groups[0]->id() != groups[1]->id();
  EXPECT_TRUE(local);
  groups[0].reset();
  groups[1].reset();
  PMPI_Comm_free(&comms[0]);
  PMPI_Comm_free(&comms[1]);
  EXPECT_TRUE(all_ok(local));
  EXPECT_EQ(gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout), Status::Ok);
}

}  // namespace

int main(int argc, char **argv) {
  testing::InitGoogleTest(&argc, argv);
  bool want_multiple = false;
  bool no_peer = false;
  double watchdog_s = 240;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--thread-multiple") == 0) want_multiple = true;
    if (std::strncmp(argv[i], "--watchdog=", 11) == 0) watchdog_s = std::atof(argv[i] + 11);
    if (std::strcmp(argv[i], "--no-peer-failure-detection") == 0) no_peer = true;
  }
  MPI_Init_thread(&argc, &argv, want_multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                  &g_thread_level);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  gcoll::log_set_rank(g_rank);
  gcoll::log_set_level(gcoll::config().debug);

  if (no_peer) {
    gcoll::ucx::Options opts;
    opts.peer_failure_detection = false;
    if (gcoll::ucx::init(opts) != Status::Ok) std::fprintf(stderr, "ucx::init failed\n");
  }

  std::thread wd(watchdog, watchdog_s);
  testing::TestEventListeners &listeners = testing::UnitTest::GetInstance()->listeners();
  if (g_rank != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new RankListener);

  const int rc = RUN_ALL_TESTS();
  if (g_peer_died) {
    // A rank is gone: no collective may be called any more. finalize() must not hang on
    // the dead peer's endpoint.
    gcoll::ucx::finalize();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(rc != 0 ? 1 : 0);
  }

  // As libgcoll does inside MPI_Finalize: quiesce, then tear the transport down.
  gcoll::ucx::progress_barrier(MPI_COMM_WORLD, kTimeout);
  gcoll::ucx::finalize();
  int failed = rc != 0 ? 1 : 0, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  {
    std::lock_guard<std::mutex> lk(g_wd_mu);
    g_wd_stop = true;
  }
  g_wd_cv.notify_all();
  wd.join();
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
