// Device kernels behind cuda_reduce / cuda_copy (included by the .cu files only).
#pragma once

#if !defined(__CUDACC__)
#error "cuda_kernels.cuh is for nvcc only; C++ code includes cuda_reduce.cuh"
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "kernels/cuda_reduce.cuh"
#include "kernels/functors.h"

namespace gcoll {
namespace gpu {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;  // grid-stride loops past this
constexpr std::size_t kVecBytes = 16;  // one uint4 load or store

struct Job {
  void *dst;
  const void *const *srcs;
  int m;
  std::size_t count;
  cudaStream_t stream;
};

// The list's CUDA unit column: which .cu file instantiates a type's kernels.
enum class CudaUnit { None, Integer, Floating, Pair };

constexpr CudaUnit cuda_unit(DType t) {
  switch (t) {
#define GCOLL_X(dtype, name, ops, unit, ...) \
  case DType::dtype: return CudaUnit::unit;
    GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
    case DType::kCount: break;
  }
  return CudaUnit::None;
}

// Unit launchers, one .cu file each (reduce_unit below, with the file's unit);
// cuda_reduce.cu has already checked the op, m, and count > 0 with m >= 2.
cudaError_t reduce_integer(DType t, ROp op, const Job &j);   // Int*, Uint*, Bool
cudaError_t reduce_floating(DType t, ROp op, const Job &j);  // floats, 16-bit, complex
cudaError_t reduce_pair(DType t, ROp op, const Job &j);      // MINLOC / MAXLOC pairs

// The sources, passed to the kernel by value.
template <class T>
struct Sources {
  const T *p[kCudaMaxSources];
};

// Elements [0, head) and [head + nvec * per-pack, count) go one at a time; the nvec
// 16-byte packs in between with vector loads and stores.
struct Split {
  std::size_t head;
  std::size_t nvec;
};

// Vector packs are used when every pointer has the same offset within 16 bytes and the
// elements before the first 16-byte boundary are whole.
inline Split plan_split(const void *const *ptrs, int n, std::size_t count, std::size_t elem) {
  const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(ptrs[0]) % kVecBytes;
  for (int i = 1; i < n; ++i) {
    if (reinterpret_cast<std::uintptr_t>(ptrs[i]) % kVecBytes != off) return {0, 0};
  }
  const std::size_t lead = (kVecBytes - off) % kVecBytes;
  if (lead % elem != 0) return {0, 0};
  const std::size_t head = lead / elem < count ? lead / elem : count;
  return {head, (count - head) / (kVecBytes / elem)};
}

inline unsigned grid_for(std::size_t work) {
  const std::size_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <class T, int N>
__device__ __forceinline__ void load_pack(const T *base, std::size_t k, T (&out)[N]) {
  const uint4 raw = reinterpret_cast<const uint4 *>(base)[k];
  memcpy(out, &raw, sizeof raw);
}

template <class T, int N>
__device__ __forceinline__ void store_pack(T *base, std::size_t k, const T (&in)[N]) {
  uint4 raw;
  memcpy(&raw, in, sizeof raw);
  reinterpret_cast<uint4 *>(base)[k] = raw;
}

// dst = op(src_0, ..., src_{m-1}), left fold. A thread reads all sources of an element
// before it writes it, so dst may be any of the sources (the same elements; the two-shot
// allreduce in place reduces into its own input slice, which is source local_rank).
template <class T, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(T *dst, const __grid_constant__ Sources<T> src, int m, Split sp,
                  std::size_t count) {
  constexpr int kPer = static_cast<int>(kVecBytes / sizeof(T));
  static_assert(kVecBytes % sizeof(T) == 0, "element size must divide 16");
  const Op op;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  // 16-byte packs, from the first aligned element on
  T *vdst = dst + sp.head;
  for (std::size_t k = tid; k < sp.nvec; k += stride) {
    T acc[kPer];
    load_pack(src.p[0] + sp.head, k, acc);
#pragma unroll 4
    for (int s = 1; s < m; ++s) {
      T x[kPer];
      load_pack(src.p[s] + sp.head, k, x);
#pragma unroll
      for (int e = 0; e < kPer; ++e) acc[e] = op(acc[e], x[e]);
    }
    store_pack(vdst, k, acc);
  }
  // the scalar head and tail, numbered as one range
  const std::size_t tail_start = sp.head + sp.nvec * kPer;
  const std::size_t scalar = sp.head + (count - tail_start);
  for (std::size_t r = tid; r < scalar; r += stride) {
    const std::size_t i = r < sp.head ? r : tail_start + (r - sp.head);
    T acc = src.p[0][i];
    for (int s = 1; s < m; ++s) acc = op(acc, src.p[s][i]);
    dst[i] = acc;
  }
}

template <class T, class Op>
cudaError_t launch_reduce(const Job &j) {
  Sources<T> src{};
  for (int s = 0; s < j.m; ++s) {
    if (reinterpret_cast<std::uintptr_t>(j.srcs[s]) % alignof(T) != 0) return cudaErrorInvalidValue;
    src.p[s] = static_cast<const T *>(j.srcs[s]);
  }
  if (reinterpret_cast<std::uintptr_t>(j.dst) % alignof(T) != 0) return cudaErrorInvalidValue;
  // dst and the sources must share one offset within 16 bytes for the vector loop
  const void *ptrs[kCudaMaxSources + 1];
  ptrs[0] = j.dst;
  for (int s = 0; s < j.m; ++s) ptrs[s + 1] = j.srcs[s];
  const Split sp = plan_split(ptrs, j.m + 1, j.count, sizeof(T));
  const std::size_t per = kVecBytes / sizeof(T);
  const std::size_t work = sp.nvec + (j.count - sp.nvec * per);
  reduce_kernel<T, Op><<<grid_for(work), kThreads, 0, j.stream>>>(static_cast<T *>(j.dst), src,
                                                                  j.m, sp, j.count);
  return cudaGetLastError();
}

// The device's element type for the list's host type: CUDA's own 16-bit floats (the same
// bits, converted by the device's instructions) for the host's storage types.
template <class T>
struct OnDevice {
  using type = T;
};
template <>
struct OnDevice<HalfBits> {
  using type = __half;
};
template <>
struct OnDevice<BF16Bits> {
  using type = __nv_bfloat16;
};

// nvcc silently computes long double as double on the device: the list gives such types
// CUDA unit None.
template <class T>
constexpr bool kHasLongDouble = std::is_same_v<T, long double>;
template <class V, class I>
constexpr bool kHasLongDouble<Pair<V, I>> = kHasLongDouble<V> || kHasLongDouble<I>;

// The dispatch from (DType, ROp) to a kernel template, for any launcher: L<T, Op>::run(j)
// launches the kernel of device element type T and functor Op (LaunchReduce below, the
// fused one-shot's LaunchFused in cuda_fused_kernels.cuh).
template <class T, class Op>
struct LaunchReduce {
  static cudaError_t run(const Job &j) { return launch_reduce<T, Op>(j); }
};

// The kernels of device element type T: one per op of the type's op set kOps.
template <template <class, class> class L, class T, OpSet kOps, class J>
cudaError_t run_ops(ROp op, const J &j) {
  switch (op) {
#define GCOLL_X(rop, ...)                                                        \
  case ROp::rop:                                                                \
    if constexpr ((kOps & op_bit(ROp::rop)) != 0) return L<T, rop<T>>::run(j); \
    break;
    GCOLL_ROPS(GCOLL_X)
#undef GCOLL_X
    case ROp::kCount: break;
  }
  return cudaErrorNotSupported;
}

// A list entry's kernels when its unit is kUnit, nothing otherwise (a template, so that
// the other units' types are never instantiated in this file).
template <template <class, class> class L, CudaUnit kUnit, CudaUnit kTypeUnit, class HostT, OpSet kOps,
          class J>
cudaError_t run_if_unit(ROp op, const J &j) {
  if constexpr (kUnit == kTypeUnit) {
    static_assert(!kHasLongDouble<HostT>, "no long double on the device: give it CUDA unit None");
    return run_ops<L, typename OnDevice<HostT>::type, kOps>(op, j);
  } else {
    return cudaErrorNotSupported;
  }
}

// The launcher of the .cu file of unit kUnit: the kernels of the list's types of that unit.
template <template <class, class> class L, CudaUnit kUnit, class J>
cudaError_t run_unit(DType t, ROp op, const J &j) {
  switch (t) {
#define GCOLL_X(dtype, name, ops, unit, mpi, ...) \
  case DType::dtype: return run_if_unit<L, kUnit, CudaUnit::unit, __VA_ARGS__, ops>(op, j);
    GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
    case DType::kCount: break;
  }
  return cudaErrorNotSupported;
}

template <CudaUnit kUnit>
cudaError_t reduce_unit(DType t, ROp op, const Job &j) {
  return run_unit<LaunchReduce, kUnit>(t, op, j);
}

}  // namespace gpu
}  // namespace gcoll
