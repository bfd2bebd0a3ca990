// Device buffers across nodes (net/device_channel.h): StagedChannel (pipelined through
// pinned host pieces) and ViewChannel (the emulated GPU's "direct" way) over the
// in-process transport, with threads as ranks, on the emulated GPU: device memory the
// CPU cannot touch and streams whose copies run up to kDelayUs late, so that a request
// reported done before its copy has landed, a piece posted out of order or a copy left
// running after a cancel shows as a wrong byte. No MPI job, no GPU.
//
// Results are read back with emu::memcpy (the legacy stream) without synchronising the
// channel's streams first: what a receive left behind must be there when it is done.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "cuda/emulate.h"
#include "gcoll/gcoll_emulate.h"
#include "net/device_channel.h"
#include "net/inproc.h"

namespace gcoll {
namespace {

namespace emu = cuda::emu;
using Bytes = std::vector<unsigned char>;

constexpr int kDelayUs = 200;       // largest delay of a queued device operation
constexpr std::size_t kPiece = 4096;
constexpr double kTimeout = 10.0;   // a rank waiting for a message that never comes fails instead of hanging

class DeviceChannel : public ::testing::Test {
 protected:
  void SetUp() override { emu::set_delay_for_testing(kDelayUs); }
  void TearDown() override { emu::set_delay_for_testing(-1); }
};

// Runs body(rank, inner channel) on n threads over one in-process transport.
void run_ranks(int n, const std::function<void(int, net::Channel *)> &body) {
  net::InProc net(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { body(r, net.endpoint(r)); });
  for (auto &t : threads) t.join();
}

// Device memory of the emulation, freed at scope exit.
struct Dev {
  explicit Dev(std::size_t n) : bytes(n) { EXPECT_EQ(emu::malloc(&p, n, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK); }
  ~Dev() { emu::free(p); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  void *p = nullptr;
  std::size_t bytes;
};

// The bytes rank r sends in message `id` of `n` bytes.
Bytes pattern(int r, int id, std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(r * 131 + id * 17 + i * 7 + i / 251);
  return b;
}

// Writes the device buffer and waits until the bytes are there (the caller's side of the
// contract: the GPU work producing a buffer is complete when it is posted).
void put(void *dev, const Bytes &h) {
  if (!h.empty()) {
    EXPECT_EQ(emu::memcpy(dev, h.data(), h.size()), GCOLL_EMU_OK);
  }
  emu::device_synchronize();
}

// Reads the device buffer through the legacy stream, not waiting for the channel's.
Bytes get(const void *dev, std::size_t n) {
  Bytes h(n);
  if (n) {
    EXPECT_EQ(emu::memcpy(h.data(), dev, n), GCOLL_EMU_OK);
  }
  return h;
}

net::StagedOptions opts(int window, std::size_t piece = kPiece) {
  net::StagedOptions o;
  o.piece_bytes = piece;
  o.window = window;
  return o;
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

const std::vector<std::size_t> kSizes = {0, 1, kPiece - 1, kPiece, kPiece + 1, 10 * kPiece + 3};

// ---- StagedChannel ------------------------------------------------------------------------

// Every rank sends every size to its right neighbour and receives it from its left one,
// for 2 to 4 ranks and windows 1, 2 and 4.
TEST_F(DeviceChannel, StagedSizesRanksWindows) {
  for (int n = 2; n <= 4; ++n) {
    for (int window : {1, 2, 4}) {
      SCOPED_TRACE(::testing::Message() << n << " ranks, window " << window);
      run_ranks(n, [&](int r, net::Channel *inner) {
        net::StagedChannel ch(inner, cuda::emulated_runtime(), opts(window));
        ASSERT_EQ(ch.init(), Status::Ok);
        const int right = (r + 1) % n, left = (r + n - 1) % n;
        std::uint64_t sent = 0;
        for (std::size_t j = 0; j < kSizes.size(); ++j) {
          const std::size_t s = kSizes[j];
          const int id = static_cast<int>(j);
          Dev sb(s), rb(s);
          put(sb.p, pattern(r, id, s));
          EXPECT_EQ(ch.sendrecv(right, sb.p, s, left, rb.p, s, 100 + id, kTimeout), Status::Ok) << s << " bytes";
          EXPECT_EQ(get(rb.p, s), pattern(left, id, s)) << "rank " << r << ", " << s << " bytes";
          sent += s;
        }
        EXPECT_EQ(ch.bytes_sent(), sent);
      });
    }
  }
}

// A rank may send to itself.
TEST_F(DeviceChannel, StagedSelfSend) {
  run_ranks(1, [&](int, net::Channel *inner) {
    net::StagedChannel ch(inner, cuda::emulated_runtime(), opts(2));
    ASSERT_EQ(ch.init(), Status::Ok);
    const std::size_t s = 10 * kPiece + 3;
    Dev sb(s), rb(s);
    put(sb.p, pattern(0, 1, s));
    EXPECT_EQ(ch.sendrecv(0, sb.p, s, 0, rb.p, s, 9, kTimeout), Status::Ok);
    EXPECT_EQ(get(rb.p, s), pattern(0, 1, s));
  });
}

// Several requests outstanding at once on both sides: different tags received in another
// order than sent, the same tag matched in posting order, and a wait on a later request
// of a tag alone (it needs the earlier ones moved on).
TEST_F(DeviceChannel, StagedManyOutstanding) {
  struct Msg {
    std::uint32_t tag;
    std::size_t bytes;
  };
  const std::vector<Msg> msgs = {{1, 10 * kPiece + 3}, {2, kPiece + 1}, {1, kPiece - 1}, {1, 0},
                                 {3, 3 * kPiece},      {1, 2 * kPiece}, {2, 5}};
  const std::vector<int> recv_order = {4, 1, 0, 2, 6, 3, 5};  // per tag still in sending order
  const int kLater = 5;  // the last message of tag 1
  for (int window : {1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << "window " << window);
    run_ranks(2, [&](int r, net::Channel *inner) {
      net::StagedChannel ch(inner, cuda::emulated_runtime(), opts(window));
      ASSERT_EQ(ch.init(), Status::Ok);
      const int m = static_cast<int>(msgs.size());
      std::vector<std::unique_ptr<Dev>> bufs;
      for (const Msg &x : msgs) bufs.push_back(std::make_unique<Dev>(x.bytes));
      std::vector<net::Request> reqs(m);
      if (r == 0) {
        for (int i = 0; i < m; ++i) put(bufs[i]->p, pattern(0, i, msgs[i].bytes));
        for (int i = 0; i < m; ++i)
          ASSERT_EQ(ch.isend(1, bufs[i]->p, msgs[i].bytes, msgs[i].tag, &reqs[i]), Status::Ok);
        EXPECT_EQ(ch.wait(reqs.data(), m, kTimeout), Status::Ok);
      } else {
        for (int i : recv_order)
          ASSERT_EQ(ch.irecv(0, bufs[i]->p, msgs[i].bytes, msgs[i].tag, &reqs[i]), Status::Ok);
        EXPECT_EQ(ch.wait(&reqs[kLater], 1, kTimeout), Status::Ok);
        EXPECT_EQ(get(bufs[kLater]->p, msgs[kLater].bytes), pattern(0, kLater, msgs[kLater].bytes));
        EXPECT_EQ(ch.wait(reqs.data(), m, kTimeout), Status::Ok);
        for (int i = 0; i < m; ++i)
          EXPECT_EQ(get(bufs[i]->p, msgs[i].bytes), pattern(0, i, msgs[i].bytes)) << "message " << i;
      }
      for (const net::Request &q : reqs) EXPECT_TRUE(q.done);
    });
  }
}

// A ring over 4 ranks passes device buffers on with Channel::sendrecv: after round k,
// rank r holds the data of rank r - k - 1.
TEST_F(DeviceChannel, StagedSendrecvRing) {
  const int n = 4;
  const std::size_t s = 10 * kPiece + 3;
  run_ranks(n, [&](int r, net::Channel *inner) {
    net::StagedChannel ch(inner, cuda::emulated_runtime(), opts(2));
    ASSERT_EQ(ch.init(), Status::Ok);
    Dev a(s), b(s);
    put(a.p, pattern(r, 0, s));
    void *send = a.p, *recv = b.p;
    for (int k = 0; k < n - 1; ++k) {
      ASSERT_EQ(ch.sendrecv((r + 1) % n, send, s, (r + n - 1) % n, recv, s, 40 + k, kTimeout), Status::Ok);
      EXPECT_EQ(get(recv, s), pattern((r + 2 * n - k - 1) % n, 0, s)) << "rank " << r << ", round " << k;
      std::swap(send, recv);
    }
  });
}

// The pinned blocks are pooled: a request takes min(window, pieces) of them and gives
// them back, so a sendrecv after sendrecv never needs more than two windows.
TEST_F(DeviceChannel, StagedPinnedBlocksArePooled) {
  run_ranks(2, [&](int r, net::Channel *inner) {
    net::StagedChannel ch(inner, cuda::emulated_runtime(), opts(2));
    ASSERT_EQ(ch.init(), Status::Ok);
    EXPECT_EQ(ch.pinned_blocks(), 0u);
    const std::size_t s = 10 * kPiece + 3;
    Dev sb(s), rb(s);
    put(sb.p, pattern(r, 0, s));
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(ch.sendrecv(1 - r, sb.p, kPiece, 1 - r, rb.p, kPiece, 1, kTimeout), Status::Ok);
      EXPECT_EQ(ch.pinned_blocks(), 2u);  // one piece each way
    }
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(ch.sendrecv(1 - r, sb.p, s, 1 - r, rb.p, s, 2, kTimeout), Status::Ok);
      EXPECT_EQ(ch.pinned_blocks(), 4u);  // a window each way
    }
    EXPECT_EQ(get(rb.p, s), pattern(1 - r, 0, s));
  });
}

// A receive (and a send) that never matches: ErrTransport through wait's timeout, both
// done, the device buffer untouched; the channel still works afterwards.
TEST_F(DeviceChannel, StagedUnmatchedTimesOut) {
  run_ranks(1, [&](int, net::Channel *inner) {
    net::StagedChannel ch(inner, cuda::emulated_runtime(), opts(4));
    ASSERT_EQ(ch.init(), Status::Ok);
    const std::size_t s = 10 * kPiece + 3;
    Dev rb(s), sb(s);
    const Bytes before = pattern(7, 7, s);
    put(rb.p, before);
    put(sb.p, pattern(0, 1, s));
    net::Request reqs[2];
    ASSERT_EQ(ch.irecv(0, rb.p, s, 7, &reqs[0]), Status::Ok);
    ASSERT_EQ(ch.isend(0, sb.p, s, 8, &reqs[1]), Status::Ok);  // no receive for tag 8
    const double t0 = now_s();
    EXPECT_EQ(ch.wait(reqs, 2, 0.3), Status::ErrTransport);
    const double took = now_s() - t0;
    EXPECT_GE(took, 0.3);
    EXPECT_LT(took, 5.0);
    EXPECT_TRUE(reqs[0].done && reqs[1].done);
    EXPECT_EQ(reqs[0].status, Status::ErrTransport);
    emu::device_synchronize();
    EXPECT_EQ(get(rb.p, s), before);
    // Still usable: tag 7 matches afresh.
    EXPECT_EQ(ch.sendrecv(0, sb.p, s, 0, rb.p, s, 7, kTimeout), Status::Ok);
    EXPECT_EQ(get(rb.p, s), pattern(0, 1, s));
  });
}

// Forwards to an inner channel and counts the inner receives it saw complete, so that a
// test can act right after a piece arrived (when its H2D copy has just been queued).
class CountingChannel final : public net::Channel {
 public:
  explicit CountingChannel(net::Channel *inner) : in_(inner) {}
  int rank() const override { return in_->rank(); }
  int size() const override { return in_->size(); }
  Status isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, net::Request *req) override {
    return in_->isend(peer, buf, bytes, tag, req);
  }
  Status irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, net::Request *req) override {
    return in_->irecv(peer, buf, bytes, tag, req);
  }
  Status test(net::Request *reqs, int n, bool *all_done) override {
    std::vector<char> pending(n);
    for (int i = 0; i < n; ++i) pending[i] = !reqs[i].done && reqs[i].kind == net::Request::Kind::Recv;
    const Status st = in_->test(reqs, n, all_done);
    for (int i = 0; i < n; ++i)
      if (pending[i] && reqs[i].done && ok(reqs[i].status)) received.fetch_add(1);
    return st;
  }
  Status wait(net::Request *reqs, int n, double timeout_s) override { return in_->wait(reqs, n, timeout_s); }
  Status cancel(net::Request *reqs, int n) override { return in_->cancel(reqs, n); }
  std::uint64_t bytes_sent() const override { return in_->bytes_sent(); }

  std::atomic<int> received{0};

 private:
  net::Channel *in_;
};

// cancel() of outstanding requests: all done, Ok, ErrTransport statuses; a receive
// cancelled in mid-message, right after a piece arrived, writes nothing after cancel()
// returned (its queued H2D copy is waited for); the channel works on.
TEST_F(DeviceChannel, StagedCancel) {
  const std::size_t s = 40 * kPiece + 3;
  std::atomic<int> stage{0};  // 1: the receiver is ready (slow copies); 2: it has cancelled
  run_ranks(2, [&](int r, net::Channel *inner) {
    CountingChannel counting(inner);
    net::StagedChannel ch(&counting, cuda::emulated_runtime(), opts(4));
    ASSERT_EQ(ch.init(), Status::Ok);
    Dev sb(s), rb(s);
    put(sb.p, pattern(r, 3, s));
    put(rb.p, pattern(9, 9, s));
    // Nothing matches: requests with copies queued and receives posted.
    if (r == 0) {
      net::Request reqs[2];
      ASSERT_EQ(ch.isend(1, sb.p, s, 11, &reqs[0]), Status::Ok);
      ASSERT_EQ(ch.irecv(1, rb.p, s, 12, &reqs[1]), Status::Ok);
      bool all = true;
      EXPECT_EQ(ch.test(reqs, 2, &all), Status::Ok);
      EXPECT_FALSE(all);
      EXPECT_EQ(ch.cancel(reqs, 2), Status::Ok);
      EXPECT_TRUE(reqs[0].done && reqs[1].done);
      EXPECT_EQ(reqs[0].status, Status::ErrTransport);
      EXPECT_EQ(reqs[1].status, Status::ErrTransport);
      emu::device_synchronize();
      EXPECT_EQ(get(rb.p, s), pattern(9, 9, s));
    }
    // In mid-message: rank 1 sends; rank 0 cancels its receive as soon as one piece has
    // arrived, with copies slow enough (up to 20 ms) that its H2D copy is still queued.
    net::Request q;
    if (r == 1) {
      while (stage.load() == 0) std::this_thread::yield();
      ASSERT_EQ(ch.isend(0, sb.p, s, 13, &q), Status::Ok);
      bool all = false;
      while (stage.load() == 1 && !all) ASSERT_EQ(ch.test(&q, 1, &all), Status::Ok);
      while (stage.load() == 1) std::this_thread::yield();
      EXPECT_EQ(ch.cancel(&q, 1), Status::Ok);
    } else {
      emu::set_delay_for_testing(20000);
      ASSERT_EQ(ch.irecv(1, rb.p, s, 13, &q), Status::Ok);
      stage = 1;
      bool all = false;
      const double t0 = now_s();
      while (counting.received.load() == 0 && now_s() - t0 < kTimeout && !all)
        ASSERT_EQ(ch.test(&q, 1, &all), Status::Ok);
      EXPECT_GE(counting.received.load(), 1);
      EXPECT_EQ(ch.cancel(&q, 1), Status::Ok);
      EXPECT_TRUE(q.done);
      emu::set_delay_for_testing(0);  // the reads below run at once
      const Bytes at_cancel = get(rb.p, s);
      emu::device_synchronize();
      EXPECT_EQ(get(rb.p, s), at_cancel) << "the buffer changed after cancel()";
      emu::set_delay_for_testing(kDelayUs);
      stage = 2;
    }
    EXPECT_TRUE(q.done);
    // The channel works on (a new tag).
    EXPECT_EQ(ch.sendrecv(1 - r, sb.p, s, 1 - r, rb.p, s, 14, kTimeout), Status::Ok);
    EXPECT_EQ(get(rb.p, s), pattern(1 - r, 3, s));
  });
}

// Sender and receiver disagree on the size: an error, not a hang. There is no header on
// the wire: piece lists that differ in a size fail the receiver at once (ErrInternal);
// a sender whose later pieces the receiver never posts, and a receiver waiting for
// pieces never sent, time out (ErrTransport). Some side always reports an error, and
// the channel works on afterwards.
TEST_F(DeviceChannel, StagedSizeMismatchIsAnError) {
  struct Case {
    std::size_t send, recv;
    Status at_sender, at_receiver;
  };
  const Status ok_ = Status::Ok, mismatch = Status::ErrInternal, timeout = Status::ErrTransport;
  const std::vector<Case> cases = {
      {10 * kPiece + 3, 10 * kPiece + 5, ok_, mismatch},  // the last pieces differ
      {3, 5, ok_, mismatch},
      {kPiece + 3, kPiece - 3, timeout, mismatch},  // the sender's second piece is never received
      {kPiece, 2 * kPiece, ok_, timeout},           // the receiver's second piece is never sent
      {2 * kPiece, kPiece, timeout, ok_},           // the receiver's pieces are a prefix of the sender's
  };
  constexpr double kShort = 0.3;
  for (const Case &c : cases) {
    SCOPED_TRACE(::testing::Message() << "send " << c.send << ", receive " << c.recv);
    Status got[2] = {Status::ErrInternal, Status::ErrInternal};
    const double t0 = now_s();
    run_ranks(2, [&](int r, net::Channel *inner) {
      net::StagedChannel ch(inner, cuda::emulated_runtime(), opts(2));
      ASSERT_EQ(ch.init(), Status::Ok);
      const std::size_t s = 3 * kPiece + 1;
      Dev sb(20 * kPiece), rb(20 * kPiece);
      put(sb.p, pattern(r, 5, 20 * kPiece));
      net::Request q;
      if (r == 0) {
        ASSERT_EQ(ch.isend(1, sb.p, c.send, 20, &q), Status::Ok);
      } else {
        ASSERT_EQ(ch.irecv(0, rb.p, c.recv, 20, &q), Status::Ok);
      }
      got[r] = ch.wait(&q, 1, kShort);
      EXPECT_TRUE(q.done);
      // The channel works on.
      EXPECT_EQ(ch.sendrecv(1 - r, sb.p, s, 1 - r, rb.p, s, 30, kTimeout), Status::Ok);
      Bytes want = pattern(1 - r, 5, 20 * kPiece);
      want.resize(s);
      EXPECT_EQ(get(rb.p, s), want);
    });
    EXPECT_EQ(got[0], c.at_sender);
    EXPECT_EQ(got[1], c.at_receiver);
    EXPECT_FALSE(ok(got[0]) && ok(got[1]));
    EXPECT_LT(now_s() - t0, 5.0);
  }
}

// init() checks its options and device; requests before init() fail at once.
TEST_F(DeviceChannel, StagedInitValidates) {
  net::InProc net(1);
  for (auto o : {opts(0), opts(2, 0)}) {
    net::StagedChannel ch(net.endpoint(0), cuda::emulated_runtime(), o);
    EXPECT_EQ(ch.init(), Status::ErrArg);
  }
  net::StagedOptions o = opts(2);
  o.device = 1;  // the emulation has one device
  net::StagedChannel bad(net.endpoint(0), cuda::emulated_runtime(), o);
  EXPECT_NE(bad.init(), Status::Ok);
  net::StagedChannel ch(net.endpoint(0), cuda::emulated_runtime(), opts(2));
  Dev b(16);
  net::Request q;
  EXPECT_EQ(ch.isend(0, b.p, 16, 1, &q), Status::ErrInternal);
  EXPECT_TRUE(q.done);
  ASSERT_EQ(ch.init(), Status::Ok);
  EXPECT_EQ(ch.isend(1, b.p, 16, 1, &q), Status::ErrArg);  // no rank 1
  EXPECT_TRUE(q.done);
  EXPECT_EQ(ch.irecv(0, nullptr, 16, 1, &q), Status::ErrArg);
  EXPECT_TRUE(q.done);
}

// ---- ViewChannel and transport_view ------------------------------------------------------

TEST_F(DeviceChannel, TransportView) {
  Dev d(1000);
  void *v = emu::transport_view(d.p, 1000);
  ASSERT_NE(v, nullptr);
  EXPECT_NE(v, d.p);
  const Bytes b = pattern(1, 2, 1000);
  std::memcpy(v, b.data(), b.size());  // what a GPUDirect NIC would write
  EXPECT_EQ(get(d.p, 1000), b);
  EXPECT_EQ(emu::transport_view(static_cast<char *>(d.p) + 10, 990), static_cast<char *>(v) + 10);
  EXPECT_EQ(emu::transport_view(d.p, 1001), nullptr);
  EXPECT_EQ(emu::transport_view(static_cast<char *>(d.p) + 10, 991), nullptr);
  int host = 0;
  EXPECT_EQ(emu::transport_view(&host, sizeof host), &host);
  void *pinned = nullptr;
  ASSERT_EQ(emu::malloc(&pinned, 64, GCOLL_EMU_MEM_PINNED), GCOLL_EMU_OK);
  EXPECT_EQ(emu::transport_view(pinned, 64), pinned);
  emu::free(pinned);
}

// Device buffers move between 3 ranks through their transport views; a range past its
// allocation fails the call with ErrInternal.
TEST_F(DeviceChannel, ViewChannelMovesDeviceBuffers) {
  const int n = 3;
  run_ranks(n, [&](int r, net::Channel *inner) {
    net::ViewChannel ch(inner, emu::transport_view);
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    for (std::size_t j = 0; j < kSizes.size(); ++j) {
      const std::size_t s = kSizes[j];
      const int id = static_cast<int>(j);
      Dev sb(s), rb(s);
      put(sb.p, pattern(r, id, s));
      EXPECT_EQ(ch.sendrecv(right, sb.p, s, left, rb.p, s, id, kTimeout), Status::Ok);
      EXPECT_EQ(get(rb.p, s), pattern(left, id, s)) << s << " bytes";
    }
    Dev b(100);
    net::Request q;
    EXPECT_EQ(ch.isend(right, b.p, 101, 50, &q), Status::ErrInternal);
    EXPECT_TRUE(q.done);
    EXPECT_EQ(q.status, Status::ErrInternal);
    EXPECT_EQ(ch.irecv(left, b.p, 101, 50, &q), Status::ErrInternal);
    EXPECT_TRUE(q.done);
  });
}

}  // namespace
}  // namespace gcoll
