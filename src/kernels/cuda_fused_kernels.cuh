// Device code of the fused one-shot collectives (kernels/fused.h has the protocol):
// included by cuda_fused.cu (bcast, allgather, the dispatch) and by the unit files
// cuda_reduce_{integer,floating,pair}.cu (allreduce, one kernel per type and op).
#pragma once

#if !defined(__CUDACC__)
#error "cuda_fused_kernels.cuh is for nvcc only; C++ code includes cuda_reduce.cuh"
#endif

#include <cstddef>
#include <cstdint>

#include "kernels/cuda_kernels.cuh"
#include "kernels/fused.h"

namespace gcoll {
namespace gpu {

static_assert(kFusedThreads >= kFusedMaxRanks, "one waiting thread per rank");
static_assert(kFusedAlign == kVecBytes, "block ranges keep the 16-byte alignment of the banks");

// What the unit launchers get (the parameters stay in host memory until the launch).
struct FusedJob {
  const FusedParams *p;
  cudaStream_t stream;
};

// Allreduce launchers of the unit files (cuda_reduce_*.cu); cuda_fused.cu has checked the op.
cudaError_t fused_integer(DType t, ROp op, const FusedJob &j);
cudaError_t fused_floating(DType t, ROp op, const FusedJob &j);
cudaError_t fused_pair(DType t, ROp op, const FusedJob &j);

// ---- flags and time --------------------------------------------------------------------
// Flags are read and written at system scope: peers are other processes, on this GPU
// (MPS) or on another one (peer access over NVLink or PCIe).

__device__ __forceinline__ std::uint64_t ld_acquire_sys(const std::uint64_t *p) {
  std::uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_release_sys(std::uint64_t *p, std::uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- loads of peers' banks --------------------------------------------------------------
// Through L2 only (ld.global.cg): this SM's L1 may still hold the same lines from two ops
// ago, and the flag's acquire is made by another thread of the block.

template <int kSize>
struct CgWord;
template <>
struct CgWord<1> {
  using type = unsigned char;
};
template <>
struct CgWord<2> {
  using type = unsigned short;
};
template <>
struct CgWord<4> {
  using type = unsigned int;
};
template <>
struct CgWord<8> {
  using type = unsigned long long;
};
template <>
struct CgWord<16> {
  using type = uint4;
};

// One element of type T (1, 2, 4, 8 or 16 bytes) at an address aligned for its size.
template <class T>
__device__ __forceinline__ T load_cg(const void *p) {
  using W = typename CgWord<sizeof(T)>::type;
  const W w = __ldcg(static_cast<const W *>(p));
  T x;
  memcpy(&x, &w, sizeof x);
  return x;
}

// ---- block-wide copy and fold -------------------------------------------------------

// dst[0, n) = src[0, n) by all threads of the block; 16-byte words where dst and src
// have the same offset within 16 bytes. `cg`: src is a peer's bank (loads through L2).
template <bool kCg>
__device__ void block_copy(unsigned char *dst, const unsigned char *src, std::size_t n) {
  const std::size_t tid = threadIdx.x, nt = blockDim.x;
  const auto d = reinterpret_cast<std::uintptr_t>(dst), s = reinterpret_cast<std::uintptr_t>(src);
  std::size_t head = 0, nvec = 0;
  if (((d ^ s) & (kVecBytes - 1)) == 0) {
    head = (kVecBytes - (d & (kVecBytes - 1))) & (kVecBytes - 1);
    if (head > n) head = n;
    nvec = (n - head) / kVecBytes;
  } else {
    head = n;  // bytewise
  }
  const uint4 *vs = reinterpret_cast<const uint4 *>(src + head);
  uint4 *vd = reinterpret_cast<uint4 *>(dst + head);
  for (std::size_t k = tid; k < nvec; k += nt) vd[k] = kCg ? __ldcg(vs + k) : vs[k];
  const std::size_t tail = head + nvec * kVecBytes;
  const std::size_t scalar = head + (n - tail);
  for (std::size_t r = tid; r < scalar; r += nt) {
    const std::size_t i = r < head ? r : tail + (r - head);
    dst[i] = kCg ? __ldcg(src + i) : src[i];
  }
}

// dst[i] = op(bank_0[i], ..., bank_{m-1}[i]) for i < count, the same left fold as
// cuda_reduce (and host_reduce): the same bits on every rank. The banks are 16-byte
// aligned; dst may be anything (unaligned elements are stored byte by byte).
template <class T, class Op>
__device__ void block_fold(unsigned char *dst, const FusedParams &p, std::size_t lo, std::size_t count) {
  constexpr int kPer = static_cast<int>(kVecBytes / sizeof(T));
  static_assert(kVecBytes % sizeof(T) == 0, "element size must divide 16");
  const Op op;
  const int m = p.nranks;
  const std::size_t tid = threadIdx.x, nt = blockDim.x;
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  std::size_t nvec = 0;
  if (d % kVecBytes == 0) {
    nvec = count / kPer;
    for (std::size_t k = tid; k < nvec; k += nt) {
      T acc[kPer];
      {
        const uint4 raw = __ldcg(reinterpret_cast<const uint4 *>(p.bank[0] + lo) + k);
        memcpy(acc, &raw, sizeof raw);
      }
      for (int q = 1; q < m; ++q) {
        T x[kPer];
        const uint4 raw = __ldcg(reinterpret_cast<const uint4 *>(p.bank[q] + lo) + k);
        memcpy(x, &raw, sizeof raw);
#pragma unroll
        for (int e = 0; e < kPer; ++e) acc[e] = op(acc[e], x[e]);
      }
      uint4 out;
      memcpy(&out, acc, sizeof out);
      reinterpret_cast<uint4 *>(dst)[k] = out;
    }
  }
  const bool aligned = d % alignof(T) == 0;
  for (std::size_t i = nvec * kPer + tid; i < count; i += nt) {
    const std::size_t at = lo + i * sizeof(T);
    T acc = load_cg<T>(p.bank[0] + at);
    for (int q = 1; q < m; ++q) acc = op(acc, load_cg<T>(p.bank[q] + at));
    if (aligned)
      reinterpret_cast<T *>(dst)[i] = acc;
    else
      memcpy(dst + i * sizeof(T), &acc, sizeof(T));
  }
}

// ---- the protocol of one block (kernels/fused.h) -----------------------------------------

// Steps 1 to 5 for block blockIdx.x; body(lo, hi, off) writes the block's range of my
// result from the banks' range [lo, hi), each bank at bank[q] + off (the op's bank).
template <class Body>
__device__ __forceinline__ void fused_block(const FusedParams &p, Body &&body) {
  __shared__ int s_code;
  __shared__ std::uint64_t s_seq;
  const int b = static_cast<int>(blockIdx.x);
  std::size_t lo, hi;
  fused_range(p.bytes, p.blocks, b, &lo, &hi);
  FusedControl *const mine = p.ctl[p.me];
  // The op's number: the host's, or (stream-ordered) one more than my last kernel's, which
  // ended before this one started (one stream).
  if (threadIdx.x == 0) s_seq = p.seq ? p.seq : *reinterpret_cast<volatile const std::uint64_t *>(&mine->epoch) + 1;
  __syncthreads();
  const std::uint64_t seq = s_seq;
  const std::size_t off = p.seq ? 0 : static_cast<std::size_t>(seq & 1) * p.bank_stride;
  if (!p.resume) {
    // 1. publish
    const bool publish = !p.failed && (p.kind != FusedKind::Bcast || p.me == p.root);
    if (publish && hi > lo)
      block_copy<false>(reinterpret_cast<unsigned char *>(p.bank[p.me]) + off + lo,
                        static_cast<const unsigned char *>(p.in) + lo, hi - lo);
    __syncthreads();
    // 2. post: the block's writes (ordered before thread 0 by the barrier) first
    if (threadIdx.x == 0) {
      __threadfence_system();
      if (p.failed) st_release_sys(&mine->failed[seq & 1], seq);
      st_release_sys(&mine->flag[b], seq);
    }
  }
  if (threadIdx.x == 0) s_code = p.failed ? static_cast<int>(kFusedFailed) : static_cast<int>(kFusedDone);
  __syncthreads();
  // 3. wait: thread q for rank q
  const int q = static_cast<int>(threadIdx.x);
  if (q < p.nranks && q != p.me) {
    const std::uint64_t *flag = &p.ctl[q]->flag[b];
    const std::uint64_t t0 = global_ns();
    std::uint64_t v;
    while ((v = ld_acquire_sys(flag)) < seq) {
      if (global_ns() - t0 > p.spin_ns) break;
      __nanosleep(100);
    }
    if (v < seq)
      atomicMax(&s_code, static_cast<int>(kFusedTimedOut));
    else if (ld_acquire_sys(&p.ctl[q]->failed[seq & 1]) == seq)
      atomicMax(&s_code, static_cast<int>(kFusedFailed));
  }
  __syncthreads();
  const int code = s_code;
  // 4. my result
  if (code == static_cast<int>(kFusedDone) && hi > lo) body(lo, hi, off);
  // 5. the block's outcome, for the host, after the block's writes (the host may read it
  //    before the kernel ends, and then return: the result must be in place)
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    *reinterpret_cast<volatile std::uint64_t *>(p.status + b) = (seq << 2) | static_cast<std::uint64_t>(code);
    if (!p.seq) {
      // Stream-ordered: the last block to end moves the epoch on, for my next kernel.
      __threadfence();
      if (atomicAdd(&mine->done, 1u) == static_cast<unsigned>(p.blocks) - 1) {
        mine->done = 0;
        *reinterpret_cast<volatile std::uint64_t *>(&mine->epoch) = seq;
        __threadfence();
      }
    }
    // The status word says why (the host reads it at its next call: coll/stream_device.h).
    if (p.trap && code != static_cast<int>(kFusedDone)) {
      __trap();
    }
  }
}

template <class T, class Op>
__global__ void __launch_bounds__(kFusedThreads) fused_allreduce_kernel(const __grid_constant__ FusedParams p) {
  fused_block(p, [&](std::size_t lo, std::size_t hi, std::size_t off) {
    block_fold<T, Op>(static_cast<unsigned char *>(p.out) + lo, p, off + lo, (hi - lo) / sizeof(T));
  });
}

template <class T, class Op>
struct LaunchFused {
  static cudaError_t run(const FusedJob &j) {
    fused_allreduce_kernel<T, Op><<<j.p->blocks, kFusedThreads, 0, j.stream>>>(*j.p);
    return cudaGetLastError();
  }
};

}  // namespace gpu
}  // namespace gcoll
