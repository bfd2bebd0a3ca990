// The rail collectives (coll/rail.*) run for real in one process, with threads as ranks
// over the in-process transport (net/inproc.h), as gloo tests its algorithms: every
// schedule builder's allreduce, the binomial bcast and both allgathers, checked element
// by element against a sequential reference, and the transport's timeouts. No MPI job.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "coll/rail.h"
#include "net/inproc.h"

namespace gcoll {
namespace {

// A rank that waits this long for a message that never comes fails the test instead of
// hanging it.
constexpr double kTimeout = 10.0;
constexpr int kMaxRanks = 8;

struct Builder {
  const char *name;
  ScheduleBuilder build;
};
const Builder kBuilders[] = {{"ring", schedule_ring}, {"rd", schedule_rd}, {"rabenseifner", schedule_rabenseifner}};

// Runs body(rank, channel) on n threads (rank r on thread r) over one in-process
// transport; returns each rank's status.
std::vector<Status> run_ranks(int n, const std::function<Status(int, net::Channel *)> &body) {
  net::InProc net(n);
  std::vector<Status> st(n, Status::ErrInternal);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { st[r] = body(r, net.endpoint(r)); });
  for (auto &t : threads) t.join();
  return st;
}

Rail make_rail(net::Channel *ch, std::uint32_t seq, double timeout_s = kTimeout, int *steps = nullptr) {
  // space = nullptr: host buffers, reduced by the host kernels (rail.h).
  return Rail{ch, nullptr, seq, timeout_s, steps};
}

std::string statuses(const std::vector<Status> &st) {
  std::string s;
  for (Status x : st) s += std::string(status_name(x)) + " ";
  return s;
}

// ---- allreduce --------------------------------------------------------------------------

// Rank r's input element i: small integers of both signs, so that sums of up to 8 of them
// are exact in double too, and MAX picks a different rank for different elements.
template <class T>
T input(int r, std::size_t i) {
  return static_cast<T>(static_cast<long>((r * 7919 + i * 104729) % 201) - 100);
}

template <class T>
std::vector<T> reference(int n, ROp op, std::size_t count) {
  std::vector<T> ref(count);
  for (std::size_t i = 0; i < count; ++i) {
    T acc = input<T>(0, i);
    for (int r = 1; r < n; ++r) acc = op == ROp::Sum ? acc + input<T>(r, i) : std::max(acc, input<T>(r, i));
    ref[i] = acc;
  }
  return ref;
}

// One team of n threads runs the allreduce at every count in turn (a new tag sequence
// number per call, as the engine gives each chunk); every rank's result is compared with
// the reference.
template <class T>
void check_allreduce(const Builder &b, int n, DType t, ROp op) {
  const std::vector<std::size_t> counts = {0,
                                           1,
                                           static_cast<std::size_t>(n - 1),
                                           static_cast<std::size_t>(n),
                                           static_cast<std::size_t>(n + 1),
                                           1000,
                                           4099};
  // results[k][r]: rank r's buffer after the call at counts[k].
  std::vector<std::vector<std::vector<T>>> results(counts.size(), std::vector<std::vector<T>>(n));
  std::vector<std::vector<Status>> call_st(counts.size(), std::vector<Status>(n, Status::ErrInternal));
  const auto st = run_ranks(n, [&](int r, net::Channel *ch) {
    for (std::size_t k = 0; k < counts.size(); ++k) {
      const std::size_t count = counts[k];
      std::vector<T> buf(count), tmp(count + 1);
      for (std::size_t i = 0; i < count; ++i) buf[i] = input<T>(r, i);
      Rail rail = make_rail(ch, static_cast<std::uint32_t>(k + 1));
      call_st[k][r] = rail_allreduce(rail, b.build, t, op, buf.data(), count, sizeof(T), tmp.data());
      results[k][r] = std::move(buf);
      if (!ok(call_st[k][r])) return call_st[k][r];
    }
    return Status::Ok;
  });
  const std::string what = std::string(b.name) + " n=" + std::to_string(n) + " " + dtype_name(t) + " " +
                           rop_name(op);
  ASSERT_EQ(std::count(st.begin(), st.end(), Status::Ok), n) << what << ": " << statuses(st);
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const std::vector<T> ref = reference<T>(n, op, counts[k]);
    for (int r = 0; r < n; ++r) {
      const std::vector<T> &got = results[k][r];
      ASSERT_EQ(got.size(), ref.size());
      for (std::size_t i = 0; i < ref.size(); ++i)
        ASSERT_EQ(got[i], ref[i]) << what << " count=" << counts[k] << " rank " << r << " element " << i;
    }
  }
}

TEST(RailThreads, AllreduceEveryBuilderMatchesTheSequentialReference) {
  for (const Builder &b : kBuilders)
    for (int n = 1; n <= kMaxRanks; ++n) {
      check_allreduce<std::int32_t>(b, n, DType::Int32, ROp::Sum);
      check_allreduce<std::int32_t>(b, n, DType::Int32, ROp::Max);
      check_allreduce<double>(b, n, DType::Double, ROp::Sum);
      check_allreduce<double>(b, n, DType::Double, ROp::Max);
      if (HasFatalFailure()) return;
    }
}

TEST(RailThreads, AllreduceCountsItsNetworkRounds) {
  // Ring: 2(n-1) rounds; rd: rd_steps(n) on the ranks that take part in every round.
  for (int n = 1; n <= kMaxRanks; ++n) {
    std::vector<int> ring_steps(n, 0), rd_rounds(n, 0);
    const auto st = run_ranks(n, [&](int r, net::Channel *ch) {
      std::vector<std::int32_t> buf(100, r), tmp(100);
      Rail ring = make_rail(ch, 1, kTimeout, &ring_steps[r]);
      Status s = rail_allreduce(ring, schedule_ring, DType::Int32, ROp::Sum, buf.data(), 100, 4, tmp.data());
      if (!ok(s)) return s;
      Rail rd = make_rail(ch, 2, kTimeout, &rd_rounds[r]);
      return rail_allreduce(rd, schedule_rd, DType::Int32, ROp::Sum, buf.data(), 100, 4, tmp.data());
    });
    ASSERT_EQ(std::count(st.begin(), st.end(), Status::Ok), n) << statuses(st);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(ring_steps[r], n == 1 ? 0 : 2 * (n - 1)) << "n=" << n << " rank " << r;
      EXPECT_LE(rd_rounds[r], rd_steps(n)) << "n=" << n << " rank " << r;
    }
    if (n > 1) EXPECT_EQ(*std::max_element(rd_rounds.begin(), rd_rounds.end()), rd_steps(n)) << n;
  }
}

// ---- bcast ------------------------------------------------------------------------------

std::uint8_t pattern(int root, std::size_t i) { return static_cast<std::uint8_t>(root * 31 + i * 7 + 1); }

// ---- the compressed ring (RailAllreduce::start_compressed, docs/compression.md) ---------

// Every rank ends with the same bits, and each element is within the documented bound of
// the double-precision sum: |r - sum| <= n (u S + a)(1 + n u) + n 2^-23 S, S = sum of |x| over the
// ranks, a = the format's absolute term (fp16: 2^-25; fp8: 2^-10 of the largest block
// scale an element's block can have, from the largest S within 255 elements).
template <class T>
void check_compressed(int n, Compress c, std::size_t count) {
  const double u = c == Compress::Bf16 ? std::ldexp(1.0, -8) : c == Compress::Fp16 ? std::ldexp(1.0, -11)
                                                                                   : std::ldexp(1.0, -4);
  const DType t = sizeof(T) == 4 ? DType::Float : DType::Double;
  auto value = [](int r, std::size_t i) {
    // Mixed signs and magnitudes, some exact zeros.
    const std::uint64_t h = (static_cast<std::uint64_t>(r) * 2654435761u + i * 40503u) % 10007u;
    if (h % 17 == 0) return T(0);
    return static_cast<T>((static_cast<double>(h) - 5003.0) / 997.0 * std::ldexp(1.0, static_cast<int>(h % 9) - 4));
  };
  std::vector<std::vector<T>> out(n);
  const auto st = run_ranks(n, [&](int r, net::Channel *ch) {
    std::vector<T> buf(count);
    for (std::size_t i = 0; i < count; ++i) buf[i] = value(r, i);
    std::vector<char> cbuf(2 * ((compressed_bytes(c, count) + 63) / 64 * 64) + 64);
    RailAllreduce x;
    Status s = x.start_compressed(make_rail(ch, 1), c, t, buf.data(), count, sizeof(T), cbuf.data(), cbuf.size());
    if (ok(s)) s = x.finish();
    out[r] = buf;
    return s;
  });
  ASSERT_EQ(st, std::vector<Status>(n, Status::Ok)) << statuses(st);
  std::vector<double> S(count), sum(count);
  for (std::size_t i = 0; i < count; ++i)
    for (int r = 0; r < n; ++r) {
      sum[i] += static_cast<double>(value(r, i));
      S[i] += std::fabs(static_cast<double>(value(r, i)));
    }
  std::vector<double> G((count + 255) / 256);
  for (std::size_t i = 0; i < count; ++i) G[i / 256] = std::max(G[i / 256], S[i]);
  for (std::size_t i = 0; i < count; ++i) {
    for (int r = 1; r < n; ++r)
      ASSERT_EQ(std::memcmp(&out[r][i], &out[0][i], sizeof(T)), 0) << "rank " << r << " element " << i;
    double a = c == Compress::Fp16 ? std::ldexp(1.0, -25) : 0;
    if (c == Compress::Fp8) {
      // The largest S of the 256-aligned groups the window [i - 255, i + 255] touches.
      double m = 0;
      for (std::size_t g = (i >= 255 ? i - 255 : 0) / 256; g <= std::min(count - 1, i + 255) / 256; ++g)
        m = std::max(m, G[g]);
      a = std::ldexp(m / 448, -10);
    }
    const double bound = n * (u * S[i] + a) * (1 + n * u) * 1.001 + n * std::ldexp(1.0, -23) * S[i];
    ASSERT_LE(std::fabs(static_cast<double>(out[0][i]) - sum[i]), bound) << "element " << i << " n " << n;
  }
}

TEST(RailThreads, CompressedRingSameBitsOnEveryRankWithinTheBound) {
  for (Compress c : {Compress::Bf16, Compress::Fp16, Compress::Fp8})
    for (int n : {2, 3, 5})
      for (std::size_t count : {std::size_t{1}, std::size_t{4}, std::size_t{1000}, std::size_t{3001}}) {
        SCOPED_TRACE(std::string(compress_name(c)) + " n=" + std::to_string(n) + " count=" + std::to_string(count));
        check_compressed<float>(n, c, count);
        check_compressed<double>(n, c, count);
      }
}

TEST(RailThreads, BcastBinomialFromEveryRoot) {
  const std::vector<std::size_t> sizes = {0, 1, 13, 1000, 4099 * 8};
  for (int n = 1; n <= kMaxRanks; ++n) {
    // bufs[root][k][r]
    std::vector<std::vector<std::vector<std::vector<std::uint8_t>>>> bufs(
        n, std::vector<std::vector<std::vector<std::uint8_t>>>(sizes.size(), std::vector<std::vector<std::uint8_t>>(n)));
    const auto st = run_ranks(n, [&](int r, net::Channel *ch) {
      std::uint32_t seq = 1;
      for (int root = 0; root < n; ++root)
        for (std::size_t k = 0; k < sizes.size(); ++k) {
          std::vector<std::uint8_t> buf(sizes[k], 0xee);
          if (r == root)
            for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = pattern(root, i);
          Rail rail = make_rail(ch, seq++);
          Status s = rail_bcast_binomial(rail, buf.data(), buf.size(), root);
          bufs[root][k][r] = std::move(buf);
          if (!ok(s)) return s;
        }
      return Status::Ok;
    });
    ASSERT_EQ(std::count(st.begin(), st.end(), Status::Ok), n) << "n=" << n << ": " << statuses(st);
    for (int root = 0; root < n; ++root)
      for (std::size_t k = 0; k < sizes.size(); ++k)
        for (int r = 0; r < n; ++r) {
          const auto &got = bufs[root][k][r];
          ASSERT_EQ(got.size(), sizes[k]);
          for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(got[i], pattern(root, i))
                << "n=" << n << " root " << root << " bytes " << sizes[k] << " rank " << r << " byte " << i;
        }
  }
}

// ---- allgatherv -------------------------------------------------------------------------

std::uint8_t piece_byte(int owner, std::size_t i) { return static_cast<std::uint8_t>(owner * 53 + i * 3 + 5); }

// Uneven piece sizes with zeros among them (shape picks one of several layouts).
std::vector<std::size_t> piece_sizes(int n, int shape) {
  std::vector<std::size_t> s(n);
  for (int i = 0; i < n; ++i) {
    switch (shape) {
      case 0: s[i] = static_cast<std::size_t>((i * 37 + n) % 5) * 3; break;   // some 0
      case 1: s[i] = i == 0 ? 0 : static_cast<std::size_t>(1000 + 7 * i); break;  // first empty
      case 2: s[i] = i == n - 1 ? 4099 : 0; break;                              // one non-empty
      default: s[i] = static_cast<std::size_t>(i + 1); break;                  // all different
    }
  }
  return s;
}

void check_allgatherv(bool bruck) {
  for (int n = 1; n <= kMaxRanks; ++n)
    for (int shape = 0; shape < 4; ++shape) {
      const std::vector<std::size_t> sizes = piece_sizes(n, shape);
      std::vector<std::size_t> off(n + 1, 0);
      for (int i = 0; i < n; ++i) off[i + 1] = off[i] + sizes[i];
      const std::size_t total = off[n];
      std::vector<std::vector<std::uint8_t>> out(n);
      const auto st = run_ranks(n, [&](int r, net::Channel *ch) {
        std::vector<std::uint8_t> buf(total, 0xee), tmp(total + 1);
        for (std::size_t i = 0; i < sizes[r]; ++i) buf[off[r] + i] = piece_byte(r, i);
        Rail rail = make_rail(ch, 1);
        Status s = bruck ? rail_allgatherv_bruck(rail, sizes, buf.data(), tmp.data())
                         : rail_allgatherv_ring(rail, sizes, buf.data());
        out[r] = std::move(buf);
        return s;
      });
      const std::string what = std::string(bruck ? "bruck" : "ring") + " n=" + std::to_string(n) + " shape " +
                               std::to_string(shape);
      ASSERT_EQ(std::count(st.begin(), st.end(), Status::Ok), n) << what << ": " << statuses(st);
      for (int r = 0; r < n; ++r)
        for (int owner = 0; owner < n; ++owner)
          for (std::size_t i = 0; i < sizes[owner]; ++i)
            ASSERT_EQ(out[r][off[owner] + i], piece_byte(owner, i))
                << what << " rank " << r << " piece of " << owner << " byte " << i;
    }
}

TEST(RailThreads, AllgathervRingUnevenSizes) { check_allgatherv(false); }
TEST(RailThreads, AllgathervBruckUnevenSizes) { check_allgatherv(true); }

// ---- rooted and scattered reductions (reduce @hier, reduce_scatter @hier) ---------------

// Runs `steps` built for each rank on n threads; every rank's buffer afterwards.
std::vector<std::vector<std::int32_t>> run_reduction_steps(
    int n, std::size_t count, ROp op,
    const std::function<void(int r, std::int32_t *buf, std::int32_t *tmp, std::vector<RailStep> *)> &build,
    std::vector<Status> *st, std::vector<std::size_t> *sent = nullptr) {
  std::vector<std::vector<std::int32_t>> out(n);
  if (sent) sent->assign(n, 0);
  *st = run_ranks(n, [&](int r, net::Channel *ch) {
    std::vector<std::int32_t> buf(count), tmp(count + 1);
    for (std::size_t i = 0; i < count; ++i) buf[i] = input<std::int32_t>(r, i);
    std::vector<RailStep> steps;
    build(r, buf.data(), tmp.data(), &steps);
    if (sent)
      for (const RailStep &s : steps) (*sent)[r] += s.dst >= 0 ? s.sbytes : 0;
    RailAllreduce x;
    Status s = x.start_steps(make_rail(ch, 1), DType::Int32, op, std::move(steps));
    if (ok(s)) s = x.finish();
    out[r] = std::move(buf);
    return s;
  });
  return out;
}

TEST(RailThreads, BinomialReduceFromEveryRoot) {
  for (int n = 1; n <= kMaxRanks; ++n)
    for (int root = 0; root < n; ++root)
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1001}})
        for (ROp op : {ROp::Sum, ROp::Max}) {
          std::vector<Status> st;
          std::vector<std::size_t> sent;
          const auto out = run_reduction_steps(
              n, count, op,
              [&](int r, std::int32_t *buf, std::int32_t *tmp, std::vector<RailStep> *steps) {
                steps_binomial_reduce(n, r, root, count, 4, buf, tmp, steps);
              },
              &st, &sent);
          const std::string what = "n=" + std::to_string(n) + " root " + std::to_string(root) + " count " +
                                   std::to_string(count) + " " + rop_name(op);
          ASSERT_EQ(std::count(st.begin(), st.end(), Status::Ok), n) << what << ": " << statuses(st);
          const auto ref = reference<std::int32_t>(n, op, count);
          for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(out[root][i], ref[i]) << what << " element " << i;
          // The bound reduce @hier states: every rank but the root sends its buffer once.
          for (int r = 0; r < n; ++r) EXPECT_EQ(sent[r], r == root ? 0 : count * 4) << what << " rank " << r;
        }
}

TEST(RailThreads, RingReduceScatterOfUnevenSegments) {
  for (int n = 1; n <= kMaxRanks; ++n)
    for (int shape = 0; shape < 4; ++shape) {
      const std::vector<std::size_t> len = piece_sizes(n, shape);
      std::vector<std::size_t> off(n + 1, 0);
      for (int i = 0; i < n; ++i) off[i + 1] = off[i] + len[i];
      const std::size_t count = off[n];
      for (ROp op : {ROp::Sum, ROp::Max}) {
        std::vector<Status> st;
        std::vector<std::size_t> sent;
        const auto out = run_reduction_steps(
            n, count, op,
            [&](int r, std::int32_t *buf, std::int32_t *tmp, std::vector<RailStep> *steps) {
              steps_ring_reduce_scatter(n, r, off, len, 4, buf, tmp, steps);
            },
            &st, &sent);
        const std::string what = "n=" + std::to_string(n) + " shape " + std::to_string(shape) + " " + rop_name(op);
        ASSERT_EQ(std::count(st.begin(), st.end(), Status::Ok), n) << what << ": " << statuses(st);
        const auto ref = reference<std::int32_t>(n, op, count);
        for (int r = 0; r < n; ++r) {
          for (std::size_t i = off[r]; i < off[r + 1]; ++i)
            ASSERT_EQ(out[r][i], ref[i]) << what << " rank " << r << " element " << i;
          // The bound reduce_scatter @hier states: every segment but my own, once.
          EXPECT_EQ(sent[r], n == 1 ? 0 : (count - len[r]) * 4) << what << " rank " << r;
        }
      }
    }
}

// Pairwise alltoallv: rank r's piece for rank q has size(r, q) bytes (uneven, zeros among
// them, depending on the shape), its bytes a function of (r, q, i).
std::size_t a2a_size(int shape, int r, int q) {
  switch (shape) {
    case 0: return static_cast<std::size_t>((r * 7 + q * 3) % 5) * 3;  // some 0
    case 1: return r == q ? 0 : static_cast<std::size_t>(1000 + 7 * r + 11 * q);
    case 2: return q == 0 ? 4099 : 0;  // only to rank 0
    default: return static_cast<std::size_t>(r + 2 * q + 1);  // all different
  }
}
std::uint8_t a2a_byte(int r, int q, std::size_t i) { return static_cast<std::uint8_t>(r * 53 + q * 29 + i * 3 + 5); }

TEST(RailThreads, AlltoallvPairwiseUnevenSizes) {
  for (int n = 1; n <= 5; ++n)
    for (int shape = 0; shape < 4; ++shape) {
      std::vector<std::vector<std::uint8_t>> got(n);
      const auto st = run_ranks(n, [&](int r, net::Channel *ch) {
        std::vector<std::size_t> so(n), si(n);
        std::size_t to = 0, ti = 0;
        for (int q = 0; q < n; ++q) {
          so[q] = a2a_size(shape, r, q);
          si[q] = a2a_size(shape, q, r);
          to += so[q];
          ti += si[q];
        }
        std::vector<std::uint8_t> out(to + 1), in(ti + 1, 0xee);
        for (int q = 0, pos = 0; q < n; ++q)
          for (std::size_t i = 0; i < so[q]; ++i) out[pos++] = a2a_byte(r, q, i);
        int steps = 0;
        Rail rail = make_rail(ch, 3, kTimeout, &steps);
        const Status s = rail_alltoallv_pairwise(rail, so, out.data(), si, in.data());
        if (steps != n - 1) return Status::ErrInternal;  // one round per peer
        if (in[ti] != 0xee) return Status::ErrInternal;  // nothing written past the end
        in.resize(ti);
        got[r] = std::move(in);
        return s;
      });
      const std::string what = "n=" + std::to_string(n) + " shape " + std::to_string(shape);
      ASSERT_EQ(std::count(st.begin(), st.end(), Status::Ok), n) << what << ": " << statuses(st);
      for (int r = 0; r < n; ++r) {
        std::size_t pos = 0;
        for (int q = 0; q < n; ++q)
          for (std::size_t i = 0; i < a2a_size(shape, q, r); ++i, ++pos)
            ASSERT_EQ(got[r][pos], a2a_byte(q, r, i)) << what << " rank " << r << " piece from " << q << " byte " << i;
        ASSERT_EQ(pos, got[r].size()) << what;
      }
    }
}

// ---- failures: errors after the timeout, not hangs --------------------------------------

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- the end of a call between nodes (rail_barrier) --------------------------------------

// No rank leaves before every rank has entered (rank r enters r x 20 ms late), on 1 to 5
// ranks, twice in a row with call numbers of their own; a rank whose peer never comes
// times out instead of hanging.
TEST(RailBarrier, NoRankLeavesBeforeAllEntered) {
  using Clock = std::chrono::steady_clock;
  for (int n = 1; n <= 5; ++n) {
    std::vector<Clock::time_point> entered(n), left(n);
    const auto st = run_ranks(n, [&](int r, net::Channel *ch) {
      for (std::uint32_t call = 7; call < 9; ++call) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20 * r));
        entered[r] = Clock::now();
        Rail rail = make_rail(ch, call);
        const Status s = rail_barrier(rail);
        left[r] = Clock::now();
        if (!ok(s)) return s;
      }
      return Status::Ok;
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(st[r], Status::Ok) << "n " << n << ": " << statuses(st);
    const auto last = *std::max_element(entered.begin(), entered.end());
    for (int r = 0; r < n; ++r) EXPECT_GE(left[r], last) << "n " << n << ", rank " << r;
  }
  const auto st = run_ranks(2, [&](int r, net::Channel *ch) {
    if (r == 1) return Status::Ok;  // never comes
    Rail rail = make_rail(ch, 1, 0.3);
    return rail_barrier(rail);
  });
  EXPECT_EQ(st[0], Status::ErrTransport);
}

TEST(InProc, ReceiveThatNeverMatchesTimesOut) {
  net::InProc net(2);
  std::int32_t v = 7;
  net::Request req;
  ASSERT_EQ(net.endpoint(0)->irecv(1, &v, sizeof v, 5, &req), Status::Ok);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(net.endpoint(0)->wait(&req, 1, 0.2), Status::ErrTransport);
  const double took = seconds_since(t0);
  EXPECT_GE(took, 0.15);
  EXPECT_LT(took, 5.0);
  EXPECT_TRUE(req.done);
  // Cancelled: a late send does not write into the buffer.
  std::int32_t late = 99;
  net::Request sreq;
  ASSERT_EQ(net.endpoint(1)->isend(0, &late, sizeof late, 5, &sreq), Status::Ok);
  bool done = true;
  EXPECT_EQ(net.endpoint(1)->test(&sreq, 1, &done), Status::Ok);
  EXPECT_FALSE(done);
  EXPECT_EQ(v, 7);
  EXPECT_EQ(net.endpoint(1)->cancel(&sreq, 1), Status::Ok);
  EXPECT_TRUE(sreq.done);
}

TEST(InProc, MatchesBySourceAndTagInPostingOrder) {
  net::InProc net(3);
  std::int32_t a = 1, b = 2, c = 3, d = 4;
  std::int32_t ra = 0, rb = 0, rc = 0, rd = 0;
  net::Request s[4], r[4];
  // Sends first (unexpected), receives posted in another order.
  ASSERT_EQ(net.endpoint(1)->isend(0, &a, 4, 9, &s[0]), Status::Ok);
  ASSERT_EQ(net.endpoint(2)->isend(0, &b, 4, 9, &s[1]), Status::Ok);
  ASSERT_EQ(net.endpoint(1)->isend(0, &c, 4, 8, &s[2]), Status::Ok);
  ASSERT_EQ(net.endpoint(1)->isend(0, &d, 4, 9, &s[3]), Status::Ok);
  net::Channel *me = net.endpoint(0);
  ASSERT_EQ(me->irecv(1, &rc, 4, 8, &r[0]), Status::Ok);
  ASSERT_EQ(me->irecv(2, &rb, 4, 9, &r[1]), Status::Ok);
  ASSERT_EQ(me->irecv(1, &ra, 4, 9, &r[2]), Status::Ok);
  ASSERT_EQ(me->irecv(1, &rd, 4, 9, &r[3]), Status::Ok);
  EXPECT_EQ(me->wait(r, 4, kTimeout), Status::Ok);
  EXPECT_EQ(net.endpoint(1)->wait(s, 1, kTimeout), Status::Ok);
  EXPECT_EQ(net.endpoint(2)->wait(s + 1, 1, kTimeout), Status::Ok);
  EXPECT_EQ(net.endpoint(1)->wait(s + 2, 2, kTimeout), Status::Ok);
  EXPECT_EQ(ra, 1);
  EXPECT_EQ(rb, 2);
  EXPECT_EQ(rc, 3);
  EXPECT_EQ(rd, 4);
  EXPECT_EQ(net.endpoint(1)->bytes_sent(), 12u);
}

TEST(InProc, SizeMismatchFailsTheReceive) {
  net::InProc net(2);
  std::int64_t big = 0;
  std::int32_t small = 1;
  net::Request r, s;
  ASSERT_EQ(net.endpoint(0)->irecv(1, &big, sizeof big, 1, &r), Status::Ok);
  ASSERT_EQ(net.endpoint(1)->isend(0, &small, sizeof small, 1, &s), Status::Ok);
  EXPECT_EQ(net.endpoint(0)->wait(&r, 1, kTimeout), Status::ErrInternal);
  EXPECT_EQ(net.endpoint(1)->wait(&s, 1, kTimeout), Status::Ok);
}

TEST(RailThreads, MissingPeerFailsAfterTheTimeoutInsteadOfHanging) {
  // Rank 0 of 2 (the root) never takes part: rank 1's receive must fail after the timeout.
  net::InProc net(2);
  std::vector<std::uint8_t> buf(64, 1);
  Rail rail = make_rail(net.endpoint(1), 1, 0.2);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(rail_bcast_binomial(rail, buf.data(), buf.size(), 0), Status::ErrTransport);
  EXPECT_LT(seconds_since(t0), 5.0);

  // An allreduce of 3 ranks without rank 2, for every builder: ranks 0 and 1 return an
  // error (a receive from rank 2, or a send to it, never completes) instead of hanging.
  for (const Builder &b : kBuilders) {
    net::InProc net3(3);
    std::vector<Status> st(2, Status::Ok);
    std::vector<std::thread> threads;
    const auto t1 = std::chrono::steady_clock::now();
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        std::vector<std::int32_t> v(1000, r), tmp(1000);
        Rail rr = make_rail(net3.endpoint(r), 1, 0.2);
        st[r] = rail_allreduce(rr, b.build, DType::Int32, ROp::Sum, v.data(), v.size(), 4, tmp.data());
      });
    for (auto &t : threads) t.join();
    EXPECT_NE(st[0], Status::Ok) << b.name;
    EXPECT_NE(st[1], Status::Ok) << b.name;
    EXPECT_LT(seconds_since(t1), 5.0) << b.name;
  }
}

TEST(RailThreads, AbandonLeavesTheBuffersAlone) {
  // Rank 0 starts a ring allreduce with rank 1, which is late; rank 0 abandons it. What
  // rank 1 sends afterwards must not reach rank 0's buffers.
  net::InProc net(2);
  std::vector<std::int32_t> buf(10, 1), tmp(10, -1);
  RailAllreduce x;
  ASSERT_EQ(x.start(make_rail(net.endpoint(0), 1), schedule_ring, DType::Int32, ROp::Sum, buf.data(), buf.size(), 4,
                    tmp.data()),
            Status::Ok);
  bool done = true;
  EXPECT_EQ(x.advance(&done), Status::Ok);
  EXPECT_FALSE(done);
  x.abandon();
  std::vector<std::int32_t> other(10, 5), otmp(10);
  RailAllreduce y;
  ASSERT_EQ(y.start(make_rail(net.endpoint(1), 1, 0.2), schedule_ring, DType::Int32, ROp::Sum, other.data(),
                    other.size(), 4, otmp.data()),
            Status::Ok);
  EXPECT_NE(y.finish(), Status::Ok);  // its partner is gone
  EXPECT_EQ(buf, std::vector<std::int32_t>(10, 1));
  EXPECT_EQ(tmp, std::vector<std::int32_t>(10, -1));
}

}  // namespace
}  // namespace gcoll
