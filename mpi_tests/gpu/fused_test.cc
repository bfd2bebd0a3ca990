// gcoll_gpu_fused_test: the fused one-shot collectives (kernels/fused.h) at the level of
// the device memory space (src/mem/cuda_space.cc), linked from gcoll_engine. It
// allocates and copies through gcoll's own cuda::runtime(): the CUDA runtime on a GPU,
// the emulated GPU under GCOLL_CUDA=emulate (gpu_or_skip.sh sets it where there is no
// GPU). Every rank uses device 0 and forces the fused ops on (GCOLL_DEVICE_FUSED=on), so
// that they also run where ranks share a GPU without MPS (slowly: the kernels relaunch).
//   FusedDecision.*        decide_fused(): MPS, shared GPUs, the modes, the blocks
//   FusedSpace.Ops         ops of every kind, size and type, in place and not, in batches
//                          run back to back, each result checked against host_reduce /
//                          the inputs (every rank can compute every rank's input)
//   FusedSpace.PeerFailure a rank whose part of an op fails (mark_failed before it):
//                          every rank's op fails, at once (not after a timeout); the next
//                          op is right
//   FusedSpace.LatePeer    a rank 300 ms late while a launch waits 20 us: the ranks that
//                          came relaunch their kernels until it comes; right results
//   FusedSpace.Timeout     a rank never comes: the others fail within the timeout (1 s)
//                          plus a relaunch, and later ops of that space fail at once
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cuda/runtime.h"
#include "harness.h"
#include "kernels/host_reduce.h"
#include "mem/cuda_space.h"

namespace gct {
namespace {

using gcoll::FusedCall;
using gcoll::FusedKind;
using gcoll::Status;

gcoll::cuda::Runtime &rt() { return gcoll::cuda::runtime(); }

gcoll::cuda::Stream test_stream() {
  static gcoll::cuda::Stream s = [] {
    gcoll::cuda::Stream x = nullptr;
    if (!gcoll::ok(rt().stream_create(&x))) {
      std::fprintf(stderr, "fused_test: no stream: %s\n", rt().last_error());
      PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    return x;
  }();
  return s;
}

void must(Status st, const char *what) {
  if (gcoll::ok(st)) return;
  std::fprintf(stderr, "[rank %d] fused_test: %s: %s (%s)\n", world_rank(), what, gcoll::status_name(st),
               rt().last_error());
  PMPI_Abort(MPI_COMM_WORLD, 2);
}

// Device memory with synchronous copies in and out.
class Dev {
 public:
  explicit Dev(size_t bytes) : bytes_(bytes) { must(rt().malloc_device(&p_, bytes ? bytes : 1), "malloc_device"); }
  ~Dev() { rt().free_device(p_); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  char *at(size_t off) const { return static_cast<char *>(p_) + off; }
  void put(size_t off, const std::vector<unsigned char> &v) const {
    if (v.empty()) return;
    must(rt().memcpy_async(at(off), v.data(), v.size(), test_stream()), "memcpy_async in");
    must(rt().stream_synchronize(test_stream()), "stream_synchronize");
  }
  std::vector<unsigned char> get(size_t off, size_t n) const {
    std::vector<unsigned char> v(n);
    if (!n) return v;
    must(rt().memcpy_async(v.data(), at(off), n, test_stream()), "memcpy_async out");
    must(rt().stream_synchronize(test_stream()), "stream_synchronize");
    return v;
  }

 private:
  void *p_ = nullptr;
  size_t bytes_;
};

constexpr size_t kBank = 65536;

std::unique_ptr<gcoll::MemSpace> make_space(double spin_us, double timeout_s, bool *ok) {
  gcoll::CudaSpaceOptions o;
  o.device = 0;
  o.bank_bytes = kBank;
  o.fused = gcoll::FusedMode::On;  // also on a GPU shared without MPS
  o.fused_spin_us = spin_us;
  o.timeout_s = timeout_s;
  std::unique_ptr<gcoll::MemSpace> s;
  const Status st = gcoll::create_cuda_space(MPI_COMM_WORLD, o, &s);
  *ok = gcoll::ok(st) && s && s->can_fuse();
  if (!*ok) report("create_cuda_space: %s, can_fuse %d", gcoll::status_name(st), s ? s->can_fuse() : -1);
  *ok = all_ranks(*ok);
  return s;
}

// Rank q's input of op k: bytes that differ by op, rank and position (as elements of any
// type: sums of a few ranks' floats stay finite).
std::vector<unsigned char> input(int k, int q, size_t n) {
  std::vector<unsigned char> v(n);
  uint32_t x = 0x9E3779B9u * static_cast<uint32_t>(k + 1) ^ (0x85EBCA6Bu * static_cast<uint32_t>(q + 1));
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<unsigned char>(x >> 24);
    if (i % 2 == 1) v[i] &= 0x3f;  // keeps the exponents of floats of any width (little endian) small
  }
  return v;
}

struct Reduction {
  gcoll::DType t;
  gcoll::ROp op;
};
const Reduction kReductions[] = {{gcoll::DType::Uint8, gcoll::ROp::Bxor},  {gcoll::DType::Int32, gcoll::ROp::Sum},
                                 {gcoll::DType::Float, gcoll::ROp::Sum},   {gcoll::DType::Double, gcoll::ROp::Max},
                                 {gcoll::DType::Int64, gcoll::ROp::Min},   {gcoll::DType::Half, gcoll::ROp::Sum},
                                 {gcoll::DType::FloatInt, gcoll::ROp::Minloc}};

// One op with its buffers and what it must give.
struct Op {
  FusedCall call;
  std::unique_ptr<Dev> in, out;
  std::vector<unsigned char> want;
  size_t out_bytes = 0;
  std::string what;
};

// Op k of a sequence (the same kind, size and root on every rank).
std::unique_ptr<Op> make_op(int k, int me, int n) {
  static const size_t sizes[] = {1, 7, 16, 100, 4096, 16384, 16385, 40000, kBank};
  auto o = std::make_unique<Op>();
  FusedCall &c = o->call;
  const int kind = k % 3;
  const bool in_place = (k / 3) % 2 == 1;
  size_t bytes = sizes[(k * 7) % (sizeof sizes / sizeof sizes[0])];
  if (kind == 0) {
    const Reduction r = kReductions[k % (sizeof kReductions / sizeof kReductions[0])];
    const size_t e = gcoll::dtype_size(r.t);
    const size_t count = bytes / e;
    bytes = count * e;
    c.kind = FusedKind::Allreduce;
    c.dtype = r.t;
    c.op = r.op;
    c.elem = e;
    c.bytes = bytes;
    o->out_bytes = bytes;
    std::vector<std::vector<unsigned char>> ins(n);
    std::vector<const void *> srcs(n);
    for (int q = 0; q < n; ++q) {
      ins[q] = input(k, q, bytes);
      srcs[q] = ins[q].data();
    }
    o->want.assign(bytes, 0);
    if (count && !ok(gcoll::host_reduce(r.t, r.op, o->want.data(), srcs.data(), n, count)))
      report("host_reduce refuses %s %s", gcoll::rop_name(r.op), gcoll::dtype_name(r.t));
    o->out = std::make_unique<Dev>(bytes);
    o->out->put(0, ins[me]);
    if (in_place) {
      c.in = o->out->at(0);
    } else {
      o->in = std::make_unique<Dev>(bytes);
      o->in->put(0, ins[me]);
      o->out->put(0, std::vector<unsigned char>(bytes, 0xEE));
      c.in = o->in->at(0);
    }
    c.out = o->out->at(0);
    o->what = std::string("allreduce ") + gcoll::rop_name(r.op) + " of " + std::to_string(count) + " " +
              gcoll::dtype_name(r.t) + (in_place ? ", in place" : "");
  } else if (kind == 1) {
    c.kind = FusedKind::Bcast;
    c.root = (k / 3) % n;
    c.bytes = bytes;
    o->out_bytes = bytes;
    o->want = input(k, c.root, bytes);
    o->out = std::make_unique<Dev>(bytes);
    o->out->put(0, me == c.root ? o->want : std::vector<unsigned char>(bytes, 0xEE));
    c.in = c.out = o->out->at(0);
    o->what = "bcast of " + std::to_string(bytes) + " bytes from " + std::to_string(c.root);
  } else {
    c.kind = FusedKind::Allgather;
    c.bytes = bytes;
    o->out_bytes = bytes * static_cast<size_t>(n);
    o->want.clear();
    for (int q = 0; q < n; ++q) {
      const std::vector<unsigned char> v = input(k, q, bytes);
      o->want.insert(o->want.end(), v.begin(), v.end());
    }
    o->out = std::make_unique<Dev>(o->out_bytes);
    o->out->put(0, std::vector<unsigned char>(o->out_bytes, 0xEE));
    if (in_place) {
      o->out->put(bytes * static_cast<size_t>(me), input(k, me, bytes));
      c.in = o->out->at(bytes * static_cast<size_t>(me));
    } else {
      o->in = std::make_unique<Dev>(bytes);
      o->in->put(0, input(k, me, bytes));
      c.in = o->in->at(0);
    }
    for (int q = 0; q < n; ++q)
      c.dst[q] = q == me && in_place ? nullptr : o->out->at(bytes * static_cast<size_t>(q));
    o->what = "allgather of " + std::to_string(bytes) + " bytes" + (in_place ? ", in place" : "");
  }
  o->what = "op " + std::to_string(k) + ": " + o->what;
  return o;
}

// Runs one op as the engine does (begin_call, fused, finish).
Status run(gcoll::MemSpace &s, const FusedCall &c) {
  s.begin_call();
  Status st = s.fused(c);
  const Status f = s.finish();
  return gcoll::ok(st) ? f : st;
}

bool check(const Op &o) {
  const std::vector<unsigned char> got = o.out->get(0, o.out_bytes);
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != o.want[i]) {
      report("%s: byte %zu is 0x%02x, expected 0x%02x", o.what.c_str(), i, got[i], o.want[i]);
      return false;
    }
  return true;
}

// ---- the decision -------------------------------------------------------------------

using gcoll::FusedMode;

gcoll::FusedVote vote(int gpu, int mps, FusedMode mode, int sms = 132) {
  gcoll::FusedVote v;
  v.uuid[0] = static_cast<unsigned char>(gpu + 1);
  v.sm_count = sms;
  v.mps = mps;
  v.mode = mode;
  return v;
}

TEST(FusedDecision, SharedGpusNeedMps) {
  using V = std::vector<gcoll::FusedVote>;
  gcoll::FusedDecision d = gcoll::decide_fused(V(4, vote(0, 1, FusedMode::Auto)));
  EXPECT_EQ(d.blocks, 33);  // 132 SMs, 4 ranks on the GPU
  EXPECT_FALSE(d.time_sliced);
  d = gcoll::decide_fused(V(4, vote(0, 0, FusedMode::Auto)));
  EXPECT_EQ(d.blocks, 0);
  EXPECT_TRUE(d.time_sliced);
  d = gcoll::decide_fused(V(4, vote(0, -1, FusedMode::Auto)));  // cannot tell: as without MPS
  EXPECT_EQ(d.blocks, 0);
  EXPECT_TRUE(d.time_sliced);
  V mixed(4, vote(0, 1, FusedMode::Auto));
  mixed[2].mps = 0;  // one rank is not an MPS client
  EXPECT_EQ(gcoll::decide_fused(mixed).blocks, 0);
  // A GPU per rank: no MPS needed; blocks capped.
  V own;
  for (int r = 0; r < 4; ++r) own.push_back(vote(r, 0, FusedMode::Auto));
  d = gcoll::decide_fused(own);
  EXPECT_EQ(d.blocks, gcoll::kFusedMaxBlocks);
  EXPECT_FALSE(d.time_sliced);
  // Two GPUs, two ranks each, under MPS; one GPU with few SMs sets the blocks.
  V two = {vote(0, 1, FusedMode::Auto, 132), vote(0, 1, FusedMode::Auto, 132), vote(1, 1, FusedMode::Auto, 6), vote(1, 1, FusedMode::Auto, 6)};
  EXPECT_EQ(gcoll::decide_fused(two).blocks, 3);
  two[3].sm_count = 0;
  EXPECT_EQ(gcoll::decide_fused(two).blocks, 1);
}

TEST(FusedDecision, Modes) {
  using V = std::vector<gcoll::FusedVote>;
  EXPECT_EQ(gcoll::decide_fused(V(4, vote(0, 0, FusedMode::On))).blocks, 33);  // on everywhere: even time-sliced
  V some_on(4, vote(0, 0, FusedMode::On));
  some_on[1].mode = FusedMode::Auto;
  EXPECT_EQ(gcoll::decide_fused(some_on).blocks, 0);
  V one_off(4, vote(0, 1, FusedMode::Auto));
  one_off[3].mode = FusedMode::Off;
  EXPECT_EQ(gcoll::decide_fused(one_off).blocks, 0);
  EXPECT_EQ(gcoll::decide_fused(V(gcoll::kFusedMaxRanks + 1, vote(0, 1, FusedMode::On))).blocks, 0);
  EXPECT_EQ(gcoll::decide_fused(V()).blocks, 0);
}

// ---- the protocol ---------------------------------------------------------------------

// Batches of 6 ops run back to back (no copy, no host wait in between), then checked.
TEST(FusedSpace, Ops) {
  bool ok = true;
  auto s = make_space(2000, 0, &ok);
  if (ok) {
    const int me = world_rank(), n = world_size();
    for (int batch = 0; batch < 24 && ok; ++batch) {
      std::vector<std::unique_ptr<Op>> ops;
      for (int i = 0; i < 6; ++i) ops.push_back(make_op(batch * 6 + i, me, n));
      for (const auto &o : ops) {
        set_phase("%s", o->what.c_str());
        const Status st = run(*s, o->call);
        if (!gcoll::ok(st)) {
          report("%s: %s", o->what.c_str(), gcoll::status_name(st));
          ok = false;
        }
      }
      for (const auto &o : ops) ok = check(*o) && ok;
      ok = all_ranks(ok);
    }
  }
  EXPECT_ALL_RANKS(ok);
}

TEST(FusedSpace, PeerFailure) {
  bool ok = true;
  auto s = make_space(2000, 0, &ok);
  if (ok) {
    const int me = world_rank(), n = world_size();
    int k = 1000;
    for (int failing : {0, n - 1}) {
      auto o = make_op(k++, me, n);
      set_phase("%s, rank %d fails its part", o->what.c_str(), failing);
      const auto t0 = std::chrono::steady_clock::now();
      s->begin_call();
      if (me == failing) s->mark_failed();
      const Status st = s->fused(o->call);
      s->finish();
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (st != Status::ErrInternal) {
        report("%s, rank %d failed its part: this rank got %s, expected ErrInternal", o->what.c_str(), failing,
               gcoll::status_name(st));
        ok = false;
      }
      if (secs > 5) {
        report("%s: the failure took %.1f s to show (a wait, not the failure flag)", o->what.c_str(), secs);
        ok = false;
      }
      // The next op is clean and right.
      auto next = make_op(k++, me, n);
      set_phase("%s after a failure", next->what.c_str());
      const Status st2 = run(*s, next->call);
      if (!gcoll::ok(st2)) {
        report("%s after rank %d's failure: %s", next->what.c_str(), failing, gcoll::status_name(st2));
        ok = false;
      } else {
        ok = check(*next) && ok;
      }
      ok = all_ranks(ok);
    }
  }
  EXPECT_ALL_RANKS(ok);
}

TEST(FusedSpace, LatePeer) {
  bool ok = true;
  auto s = make_space(20, 0, &ok);
  if (ok) {
    const int me = world_rank(), n = world_size();
    for (int k = 2000; k < 2006; ++k) {
      auto o = make_op(k, me, n);
      set_phase("%s, the last rank 300 ms late", o->what.c_str());
      if (me == n - 1 && k % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const Status st = run(*s, o->call);
      if (!gcoll::ok(st)) {
        report("%s with a late peer: %s", o->what.c_str(), gcoll::status_name(st));
        ok = false;
      }
      ok = check(*o) && ok;
    }
  }
  EXPECT_ALL_RANKS(ok);
}

TEST(FusedSpace, Timeout) {
  bool ok = true;
  auto s = make_space(100, 1, &ok);
  if (ok) {
    const int me = world_rank(), n = world_size();
    auto o = make_op(3000, me, n);
    if (me != n - 1) {  // the last rank never comes to this op
      set_phase("%s, the last rank never comes", o->what.c_str());
      const auto t0 = std::chrono::steady_clock::now();
      const Status st = run(*s, o->call);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (st != Status::ErrTransport || secs > 10) {
        report("%s without the last rank: %s after %.1f s, expected ErrTransport after about 1 s", o->what.c_str(),
               gcoll::status_name(st), secs);
        ok = false;
      }
      auto later = make_op(3001, me, n);
      const auto t1 = std::chrono::steady_clock::now();
      const Status st2 = run(*s, later->call);
      const double secs2 = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      if (st2 != Status::ErrInternal || secs2 > 1) {
        report("the op after a timeout: %s after %.1f s, expected ErrInternal at once", gcoll::status_name(st2), secs2);
        ok = false;
      }
    }
  }
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
