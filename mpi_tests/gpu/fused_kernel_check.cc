// GPU check of the fused one-shot kernels (kernels/fused.h, cuda_fused) in ONE process,
// without MPI: n "ranks" are n streams of one GPU, each with its own banks, control words
// and pinned outcome words, launched one after the other so that their kernels run at
// once and meet through the flags. It checks what the emulated GPU cannot: the real
// kernels' flags and fences, the fold (bit for bit against host_reduce, in rank order),
// ops back to back with no synchronisation in between (the double-buffered banks), a
// failed rank, a late rank (timed-out blocks, then a resume) and unaligned buffers.
// (Across processes, through CUDA IPC and MPS, gpu.fused.* and the gpu.mpi.* tests do
// the same on the GPU.) Without a GPU: "SKIPPED: no GPU", exit 77.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda_reduce.cuh"
#include "kernels/elements.h"
#include "kernels/fused.h"
#include "kernels/host_reduce.h"

#include "cuda_check.h"

using namespace gcoll;


namespace {

int failures = 0;
constexpr std::size_t kBank = 1 << 20;

// One simulated rank: its banks and control words (one allocation, as cuda_space.cc has
// them), its stream and its outcome words.
struct Rank {
  char *mem = nullptr;
  FusedControl *ctl = nullptr;
  cudaStream_t stream = nullptr;
  std::uint64_t *status = nullptr;
};

std::vector<Rank> make_ranks(int n) {
  std::vector<Rank> r(n);
  for (Rank &x : r) {
    CK(cudaMalloc(&x.mem, 2 * kBank + sizeof(FusedControl)));
    x.ctl = reinterpret_cast<FusedControl *>(x.mem + 2 * kBank);
    CK(cudaMemset(x.ctl, 0, sizeof(FusedControl)));
    CK(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking));
    CK(cudaHostAlloc(reinterpret_cast<void **>(&x.status), kFusedMaxBlocks * sizeof(std::uint64_t), cudaHostAllocPortable));
  }
  CK(cudaDeviceSynchronize());
  return r;
}

void free_ranks(std::vector<Rank> &r) {
  for (Rank &x : r) {
    CK(cudaFree(x.mem));
    CK(cudaStreamDestroy(x.stream));
    CK(cudaFreeHost(x.status));
  }
  r.clear();
}

// Pair types: compare the value and the index, not the padding.
bool same(DType t, const unsigned char *a, const unsigned char *b) {
  std::size_t vb = dtype_size(t), io = 0, ib = 0;
  switch (t) {
    case DType::DoubleInt: vb = 8; io = 8; ib = 4; break;
    case DType::LongInt: vb = 8; io = 8; ib = 4; break;
    case DType::ShortInt: vb = 2; io = 4; ib = 4; break;
    default: break;
  }
  return std::memcmp(a, b, vb) == 0 && std::memcmp(a + io, b + io, ib) == 0;
}

// Small values of any type (floats of a few bits: sums are exact enough to stay finite).
void gen(DType t, std::mt19937_64 &g, unsigned char *p) {
  const std::size_t es = dtype_size(t);
  switch (t) {
    case DType::Float: { const float v = static_cast<float>(static_cast<int>(g() % 257) - 128) / 64; std::memcpy(p, &v, 4); break; }
    case DType::Double: { const double v = static_cast<double>(static_cast<int>(g() % 257) - 128) / 64; std::memcpy(p, &v, 8); break; }
    case DType::Half: { const std::uint16_t b = float_to_half(static_cast<float>(g() % 64) / 8).bits; std::memcpy(p, &b, 2); break; }
    case DType::BFloat16: { const std::uint16_t b = float_to_bf16(static_cast<float>(g() % 64) / 8).bits; std::memcpy(p, &b, 2); break; }
    case DType::CFloatComplex: for (int k = 0; k < 2; ++k) { const float v = static_cast<float>(g() % 16) / 4; std::memcpy(p + 4 * k, &v, 4); } break;
    case DType::CDoubleComplex: for (int k = 0; k < 2; ++k) { const double v = static_cast<double>(g() % 16) / 4; std::memcpy(p + 8 * k, &v, 8); } break;
    case DType::Bool: p[0] = static_cast<unsigned char>(g() % 3 ? g() % 3 : 0); break;
    default: for (std::size_t k = 0; k < es; ++k) p[k] = static_cast<unsigned char>(g()); break;
  }
}

// One op of every rank: its parameters, its buffers, what it must give.
struct Op {
  FusedKind kind;
  DType t = DType::Uint8;
  ROp op = ROp::Sum;
  std::size_t bytes = 0, out_bytes = 0, out_off = 0;
  int root = 0;
  std::vector<unsigned char *> in, out;     // per rank (device)
  std::vector<std::vector<unsigned char>> hin;
  std::vector<unsigned char> want;          // every rank's result
};

Op make_op(int n, FusedKind kind, DType t, ROp op, std::size_t count, std::size_t out_off, std::mt19937_64 &g) {
  Op o;
  o.kind = kind;
  o.t = t;
  o.op = op;
  const std::size_t es = kind == FusedKind::Allreduce ? dtype_size(t) : 1;
  o.bytes = count * es;
  o.out_off = out_off;
  o.root = static_cast<int>(g() % static_cast<unsigned>(n));
  o.out_bytes = kind == FusedKind::Allgather ? o.bytes * n : o.bytes;
  o.hin.assign(n, std::vector<unsigned char>(o.bytes));
  for (auto &v : o.hin)
    for (std::size_t i = 0; i < count; ++i) gen(kind == FusedKind::Allreduce ? t : DType::Uint8, g, v.data() + i * es);
  if (kind == FusedKind::Allreduce) {
    std::vector<const void *> srcs(n);
    for (int q = 0; q < n; ++q) srcs[q] = o.hin[q].data();
    o.want.assign(o.bytes, 0);
    if (count && !ok(host_reduce(t, op, o.want.data(), srcs.data(), n, count))) { std::printf("host refused\n"); ++failures; }
  } else if (kind == FusedKind::Bcast) {
    o.want = o.hin[o.root];
  } else {
    for (int q = 0; q < n; ++q) o.want.insert(o.want.end(), o.hin[q].begin(), o.hin[q].end());
  }
  for (int q = 0; q < n; ++q) {
    unsigned char *i = nullptr, *u = nullptr;
    CK(cudaMalloc(&i, o.bytes + 64));
    CK(cudaMalloc(&u, o.out_bytes + out_off + 64));
    CK(cudaMemset(u, 0xEE, o.out_bytes + out_off + 64));
    if (o.bytes) CK(cudaMemcpy(i + out_off % 3, o.hin[q].data(), o.bytes, cudaMemcpyHostToDevice));
    if (kind == FusedKind::Bcast && q == o.root && o.bytes)
      CK(cudaMemcpy(u + out_off, o.hin[q].data(), o.bytes, cudaMemcpyHostToDevice));
    o.in.push_back(i + out_off % 3);  // inputs unaligned too, now and then
    o.out.push_back(u);
  }
  // The kernels run on non-blocking streams, which do not wait for the legacy default
  // stream: cudaMemset is asynchronous, and cudaMemcpy from pageable memory may return
  // before its DMA has landed. Without this, a kernel read inputs still being written
  // (zeros in the results of the largest ops, seen on an H200, 2026-11-26).
  CK(cudaDeviceSynchronize());
  return o;
}

void free_op(Op &o) {
  for (std::size_t q = 0; q < o.in.size(); ++q) {
    CK(cudaFree(o.in[q] - o.out_off % 3));
    CK(cudaFree(o.out[q]));
  }
}

FusedParams params(const Op &o, const std::vector<Rank> &r, int me, std::uint64_t seq, int blocks) {
  FusedParams p;
  const int n = static_cast<int>(r.size());
  p.kind = o.kind;
  p.dtype = o.t;
  p.op = o.op;
  p.elem = o.kind == FusedKind::Allreduce ? dtype_size(o.t) : 1;
  p.nranks = n;
  p.me = me;
  p.root = o.kind == FusedKind::Bcast ? o.root : 0;
  p.blocks = blocks;
  p.seq = seq;
  p.spin_ns = 2000000000ull;  // 2 s: nothing times out unless meant to
  p.bytes = o.bytes;
  p.in = o.kind == FusedKind::Bcast ? static_cast<const void *>(o.out[me] + o.out_off) : o.in[me];
  p.out = o.out[me] + o.out_off;
  for (int q = 0; q < n; ++q) {
    p.bank[q] = r[q].mem + (seq & 1) * kBank;
    p.ctl[q] = r[q].ctl;
    p.dst[q] = o.kind == FusedKind::Allgather ? o.out[me] + o.out_off + o.bytes * q : nullptr;
  }
  p.status = r[me].status;
  return p;
}

bool check_outcome(const std::vector<Rank> &r, std::uint64_t seq, int blocks, std::uint64_t code, const char *what) {
  for (std::size_t q = 0; q < r.size(); ++q)
    for (int b = 0; b < blocks; ++b)
      if (r[q].status[b] != ((seq << 2) | code)) {
        std::printf("FAIL %s: rank %zu block %d outcome 0x%llx, expected op %llu code %llu\n", what, q, b,
                    static_cast<unsigned long long>(r[q].status[b]), static_cast<unsigned long long>(seq),
                    static_cast<unsigned long long>(code));
        ++failures;
        return false;
      }
  return true;
}

void check_result(const Op &o, const char *what) {
  const std::size_t es = o.kind == FusedKind::Allreduce ? dtype_size(o.t) : 1;
  std::vector<unsigned char> got(o.out_bytes + o.out_off + 64);
  for (std::size_t q = 0; q < o.out.size(); ++q) {
    CK(cudaMemcpy(got.data(), o.out[q], got.size(), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (std::size_t i = 0; i + es <= o.out_bytes; i += es)
      if (!same(o.kind == FusedKind::Allreduce ? o.t : DType::Uint8, got.data() + o.out_off + i, o.want.data() + i) &&
          bad++ < 2)
        std::printf("MISMATCH %s rank %zu byte %zu: 0x%02x, expected 0x%02x\n", what, q, i, got[o.out_off + i], o.want[i]);
    for (std::size_t k = 0; k < o.out_off; ++k)
      if (got[k] != 0xEE && bad++ < 2) std::printf("UNDERRUN %s rank %zu\n", what, q);
    for (std::size_t k = o.out_off + o.out_bytes; k < got.size(); ++k)
      if (got[k] != 0xEE) {
        if (bad++ < 2) std::printf("OVERRUN %s rank %zu byte %zu\n", what, q, k);
        break;
      }
    if (bad) ++failures;
  }
}

// Launches op `o` (number seq) on every rank's stream, rank after rank.
void launch_all(const Op &o, const std::vector<Rank> &r, std::uint64_t seq, int blocks) {
  for (int me = 0; me < static_cast<int>(r.size()); ++me) CK(cuda_fused(params(o, r, me, seq, blocks), r[me].stream));
}

}  // namespace

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIPPED: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  std::mt19937_64 g(7);
  int runs = 0;
  for (int n : {1, 2, 4, 8}) {
    std::vector<Rank> r = make_ranks(n);
    const int cap = std::max(1, std::min(kFusedMaxBlocks, prop.multiProcessorCount / n));
    std::uint64_t seq = 0;
    // Every (type, op), a few sizes and block counts, one op at a time.
    for (int ti = 0; ti < kNumDTypes; ++ti)
      for (int oi = 0; oi < kNumROps; ++oi) {
        const DType t = static_cast<DType>(ti);
        const ROp op = static_cast<ROp>(oi);
        if (!cuda_op_supported(op, t)) continue;
        for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1001}, std::size_t{40000}}) {
          const int blocks = count < 1001 ? 1 : count == 1001 ? 3 : cap;
          Op o = make_op(n, FusedKind::Allreduce, t, op, count, count % 2 ? 1 : 0, g);
          if (o.bytes > kBank) { free_op(o); continue; }
          launch_all(o, r, ++seq, blocks);
          CK(cudaDeviceSynchronize());
          char what[96];
          std::snprintf(what, sizeof what, "n=%d allreduce %s %s count=%zu blocks=%d", n, rop_name(op), dtype_name(t), count, blocks);
          if (check_outcome(r, seq, blocks, kFusedDone, what)) check_result(o, what);
          free_op(o);
          ++runs;
        }
      }
    // Back to back: 12 ops of every kind per rank queued before any synchronisation.
    {
      std::vector<Op> ops;
      std::vector<std::uint64_t> seqs;
      std::vector<int> blocks;
      for (int k = 0; k < 12; ++k) {
        const FusedKind kind = static_cast<FusedKind>(k % 3);
        const std::size_t count = (k * 7919u) % 300000u + 1;
        ops.push_back(make_op(n, kind, DType::Float, ROp::Sum, kind == FusedKind::Allreduce ? count / 4 + 1 : count / n + 1,
                              k % 4 == 3 ? 5 : 0, g));
        seqs.push_back(++seq);
        blocks.push_back(1 + k % cap);
      }
      for (int me = 0; me < n; ++me)
        for (std::size_t k = 0; k < ops.size(); ++k) CK(cuda_fused(params(ops[k], r, me, seqs[k], blocks[k]), r[me].stream));
      CK(cudaDeviceSynchronize());
      for (std::size_t k = 0; k < ops.size(); ++k) {
        char what[64];
        std::snprintf(what, sizeof what, "n=%d back to back op %zu", n, k);
        check_result(ops[k], what);  // outcome words: the last op's only
        free_op(ops[k]);
        ++runs;
      }
      check_outcome(r, seqs.back(), blocks.back(), kFusedDone, "back to back, last op");
    }
    if (n > 1) {
      // A failed rank: every rank's blocks say failed, nothing is written.
      Op o = make_op(n, FusedKind::Allreduce, DType::Int32, ROp::Sum, 5000, 0, g);
      const std::uint64_t s = ++seq;
      for (int me = 0; me < n; ++me) {
        FusedParams p = params(o, r, me, s, 2);
        p.failed = me == n - 1;
        CK(cuda_fused(p, r[me].stream));
      }
      CK(cudaDeviceSynchronize());
      check_outcome(r, s, 2, kFusedFailed, "a failed rank");
      std::vector<unsigned char> got(o.bytes);
      CK(cudaMemcpy(got.data(), o.out[0], o.bytes, cudaMemcpyDeviceToHost));
      if (got[0] != 0xEE) { std::printf("FAIL a failed rank: rank 0 wrote its result\n"); ++failures; }
      free_op(o);
      // A late rank: the others time out (100 us), then all run as a resume.
      Op l = make_op(n, FusedKind::Allreduce, DType::Double, ROp::Sum, 20000, 0, g);
      const std::uint64_t s2 = ++seq;
      for (int me = 0; me < n - 1; ++me) {
        FusedParams p = params(l, r, me, s2, 2);
        p.spin_ns = 100000;
        CK(cuda_fused(p, r[me].stream));
      }
      CK(cudaDeviceSynchronize());
      for (int me = 0; me < n - 1; ++me)
        for (int b = 0; b < 2; ++b)
          if (r[me].status[b] != ((s2 << 2) | kFusedTimedOut)) {
            std::printf("FAIL a late rank: rank %d block %d outcome 0x%llx, expected timed out\n", me, b,
                        static_cast<unsigned long long>(r[me].status[b]));
            ++failures;
          }
      CK(cuda_fused(params(l, r, n - 1, s2, 2), r[n - 1].stream));
      for (int me = 0; me < n - 1; ++me) {
        FusedParams p = params(l, r, me, s2, 2);
        p.resume = true;
        CK(cuda_fused(p, r[me].stream));
      }
      CK(cudaDeviceSynchronize());
      if (check_outcome(r, s2, 2, kFusedDone, "a late rank, resumed")) check_result(l, "a late rank, resumed");
      free_op(l);
      runs += 2;
    }
    // Latency of one small op, all ranks launched back to back (printed, not asserted).
    {
      Op o = make_op(n, FusedKind::Allreduce, DType::Float, ROp::Sum, 2, 0, g);
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      CK(cudaEventRecord(e0, r[0].stream));
      for (int it = 0; it < 100; ++it) launch_all(o, r, ++seq, 1);
      CK(cudaEventRecord(e1, r[0].stream));
      CK(cudaDeviceSynchronize());
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      std::printf("n=%d: 8-byte fused allreduce, %.2f us per op on the GPU (one process, %d streams)\n", n, ms * 10, n);
      free_op(o);
    }
    free_ranks(r);
  }
  std::printf("%s: %d runs, %d failures\n", failures ? "FAILED" : "PASSED", runs, failures);
  return failures ? 1 : 0;
}
