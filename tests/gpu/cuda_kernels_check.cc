// GPU check of the kernels: cuda_reduce / cuda_copy against host_reduce, bit for bit,
// for every device (type, op), m up to 16 sources, odd offsets and counts, dst == srcs[0];
// then the copy kernel, then a bandwidth line per m (printed, never asserted).
// Without a GPU it prints "SKIPPED: no GPU" and exits 77 (CTest SKIP_RETURN_CODE).
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <cmath>
#include <random>
#include <vector>
#include <cuda_runtime.h>
#include "kernels/cuda_reduce.cuh"
#include "kernels/host_reduce.h"
#include "kernels/elements.h"

using namespace gcoll;
using Rng = std::mt19937_64;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); std::exit(1);} } while (0)

static int failures = 0;

template <class V> static void put(unsigned char *p, V v) { std::memcpy(p, &v, sizeof v); }

static float small(Rng &g) { return static_cast<float>(static_cast<int>(g() % 257) - 128) / 64; }

static void gen(DType t, Rng &g, unsigned char *p) {
  switch (t) {
    case DType::Float: put(p, small(g)); break;
    case DType::Double: put(p, static_cast<double>(small(g))); break;
    case DType::Half: {
      uint16_t b = float_to_half(small(g)).bits;
      if (g() % 50 == 0) b = (g() % 2) ? 0x7c00 : static_cast<uint16_t>(0x7c01 + g() % 0x3fe);  // inf / NaN
      put(p, b); break; }
    case DType::BFloat16: {
      uint16_t b = float_to_bf16(small(g)).bits;
      if (g() % 50 == 0) b = (g() % 2) ? 0xff80 : static_cast<uint16_t>(0x7f81 + g() % 0x7e);
      put(p, b); break; }
    case DType::CFloatComplex: put(p, small(g)); put(p + 4, small(g)); break;
    case DType::CDoubleComplex: put(p, (double)small(g)); put(p + 8, (double)small(g)); break;
    case DType::Bool: put(p, static_cast<uint8_t>(g() % 3 ? g() % 3 : 0)); break;
    case DType::FloatInt: put(p, Pair<float,int>{float(g() % 4), int(g() % 8)}); break;
    case DType::DoubleInt: put(p, Pair<double,int>{double(g() % 4), int(g() % 8)}); break;
    case DType::LongInt: put(p, Pair<long,int>{long(g() % 4), int(g() % 8)}); break;
    case DType::IntInt: put(p, Pair<int,int>{int(g() % 4), int(g() % 8)}); break;
    case DType::ShortInt: put(p, Pair<short,int>{short(g() % 4), int(g() % 8)}); break;
    case DType::FloatFloat: put(p, Pair<float,float>{float(g() % 4), float(g() % 8)}); break;
    case DType::DoubleDouble: put(p, Pair<double,double>{double(g() % 4), double(g() % 8)}); break;
    default: {  // integers: random, a quarter zero
      uint64_t v = g() % 4 ? g() : 0; std::memcpy(p, &v, dtype_size(t)); }
  }
}

// compares ignoring pair padding
static bool same(DType t, const unsigned char *a, const unsigned char *b) {
  size_t vb = dtype_size(t), io = 0, ib = 0;
  switch (t) {
    case DType::DoubleInt: vb = 8; io = 8; ib = 4; break;
    case DType::LongInt: vb = 8; io = 8; ib = 4; break;
    case DType::ShortInt: vb = 2; io = 4; ib = 4; break;
    default: break;
  }
  return std::memcmp(a, b, vb) == 0 && std::memcmp(a + io, b + io, ib) == 0;
}

static void check(DType t, ROp op, int m, size_t count, const std::vector<size_t> &offs, bool alias, Rng &g) {
  const size_t es = dtype_size(t), bytes = count * es;
  std::vector<std::vector<unsigned char>> h(m, std::vector<unsigned char>(bytes + 1));
  for (auto &v : h) for (size_t i = 0; i < count; ++i) gen(t, g, v.data() + i * es);
  std::vector<const void *> hp(m);
  for (int s = 0; s < m; ++s) hp[s] = h[s].data();
  std::vector<unsigned char> want(bytes + 1);
  if (!ok(host_reduce(t, op, want.data(), hp.data(), m, count))) { std::printf("host refused\n"); ++failures; return; }
  // device buffers: element offsets per source (offs[s] elements), dst offset offs[m]
  std::vector<unsigned char *> d(m + 1);
  std::vector<const void *> dp(m);
  for (int s = 0; s <= m; ++s) {
    CK(cudaMalloc(&d[s], bytes + 64 * es + 64));
    CK(cudaMemset(d[s], 0x5a, bytes + 64 * es + 64));
  }
  for (int s = 0; s < m; ++s) {
    unsigned char *p = d[s] + offs[s] * es;
    CK(cudaMemcpy(p, h[s].data(), bytes, cudaMemcpyHostToDevice));
    dp[s] = p;
  }
  unsigned char *dst = alias ? const_cast<unsigned char *>(static_cast<const unsigned char *>(dp[0])) : d[m] + offs[m] * es;
  cudaError_t e = cuda_reduce(t, op, dst, dp.data(), m, count, 0);
  if (e != cudaSuccess) { std::printf("FAIL %s %s m=%d count=%zu: %s\n", dtype_name(t), rop_name(op), m, count, cudaGetErrorString(e)); ++failures; }
  CK(cudaDeviceSynchronize());
  std::vector<unsigned char> got(bytes + es);
  CK(cudaMemcpy(got.data(), dst, bytes + es, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!same(t, got.data() + i * es, want.data() + i * es)) {
      if (bad++ < 3) {
        std::printf("MISMATCH %s %s m=%d count=%zu alias=%d off0=%zu elem %zu:", dtype_name(t), rop_name(op), m, count, alias, offs[0], i);
        for (size_t k = 0; k < es; ++k) std::printf(" %02x/%02x", got[i * es + k], want[i * es + k]);
        std::printf("\n");
      }
    }
  }
  // the element after count stays as it was
  if (!alias) for (size_t k = 0; k < es; ++k) if (got[bytes + k] != 0x5a) { if (bad++ < 3) std::printf("OVERRUN %s %s\n", dtype_name(t), rop_name(op)); break; }
  if (bad) ++failures;
  for (auto p : d) CK(cudaFree(p));
}

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("SKIPPED: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s sm_%d%d\n", prop.name, prop.major, prop.minor);
  Rng g(42);
  int combos = 0, runs = 0;
  for (int ti = 0; ti < kNumDTypes; ++ti) for (int oi = 0; oi < kNumROps; ++oi) {
    const DType t = static_cast<DType>(ti); const ROp op = static_cast<ROp>(oi);
    if (!cuda_op_supported(op, t)) {
      if (cuda_reduce(t, op, nullptr, nullptr, 2, 10, 0) != cudaErrorNotSupported) { std::printf("expected NotSupported %s %s\n", dtype_name(t), rop_name(op)); ++failures; }
      continue;
    }
    ++combos;
    for (int m : {1, 2, 3, 7, 16}) for (size_t count : {0ul, 1ul, 3ul, 17ul, 1001ul, 100003ul}) {
      std::vector<size_t> same_off(m + 1, 0), one_off(m + 1, 1), mixed(m + 1);
      for (int s = 0; s <= m; ++s) mixed[s] = s % 3;
      check(t, op, m, count, same_off, false, g);
      check(t, op, m, count, one_off, false, g);
      check(t, op, m, count, mixed, false, g);
      check(t, op, m, count, one_off, true, g);
      runs += 4;
    }
  }
  std::printf("cuda_reduce: %d combos, %d runs, %d failures\n", combos, runs, failures);
  // argument checks
  const void *srcs[17] = {};
  if (cuda_reduce(DType::Float, ROp::Sum, nullptr, srcs, 17, 10, 0) != cudaErrorInvalidValue) { std::printf("m=17 accepted\n"); ++failures; }
  if (cuda_reduce(DType::Float, ROp::Sum, nullptr, srcs, 0, 10, 0) != cudaErrorInvalidValue) { std::printf("m=0 accepted\n"); ++failures; }
  if (cuda_reduce(DType::LongDouble, ROp::Sum, nullptr, srcs, 2, 10, 0) != cudaErrorNotSupported) { std::printf("long double accepted\n"); ++failures; }
  // cuda_copy: offsets and sizes
  {
    const size_t N = 1 << 20;
    unsigned char *a, *b; CK(cudaMalloc(&a, N + 64)); CK(cudaMalloc(&b, N + 64));
    std::vector<unsigned char> h(N + 64), r(N + 64);
    for (auto &c : h) c = static_cast<unsigned char>(g());
    CK(cudaMemcpy(a, h.data(), N + 64, cudaMemcpyHostToDevice));
    for (size_t so : {0, 1, 5, 16}) for (size_t dof : {0, 1, 5, 16}) for (size_t len : {0ul, 1ul, 15ul, 16ul, 17ul, 1000ul, N - 17}) {
      CK(cudaMemset(b, 0, N + 64));
      CK(cuda_copy(b + dof, a + so, len, 0)); CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(r.data(), b, N + 64, cudaMemcpyDeviceToHost));
      bool ok = std::memcmp(r.data() + dof, h.data() + so, len) == 0;
      for (size_t k = 0; k < dof; ++k) ok = ok && r[k] == 0;
      for (size_t k = dof + len; k < N + 64; ++k) if (r[k] != 0) { ok = false; break; }
      if (!ok) { std::printf("copy FAIL so=%zu do=%zu len=%zu\n", so, dof, len); ++failures; }
    }
    CK(cudaFree(a)); CK(cudaFree(b));
  }
  // bandwidth: float sum, 64M elements per source
  {
    const size_t count = 64ul << 20;
    for (int m : {1, 2, 4, 8, 16}) {
      std::vector<void *> bufs(m + 1);
      for (auto &p : bufs) { CK(cudaMalloc(&p, count * 4)); CK(cudaMemset(p, 0, count * 4)); }
      std::vector<const void *> s(bufs.begin() + 1, bufs.end());
      cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
      CK(cuda_reduce(DType::Float, ROp::Sum, bufs[0], s.data(), m, count, 0));
      CK(cudaEventRecord(e0));
      for (int it = 0; it < 10; ++it) CK(cuda_reduce(DType::Float, ROp::Sum, bufs[0], s.data(), m, count, 0));
      CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
      const double gb = double(count) * 4 * (m + 1) * 10 / 1e9;
      std::printf("float sum m=%2d count=%zu: %.3f ms/call, %.0f GB/s (reads+write)\n", m, count, ms / 10, gb / (ms / 1e3));
      for (auto p : bufs) CK(cudaFree(p));
    }
  }
  std::printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
