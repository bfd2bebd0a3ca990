// The compressed allreduce's formats on device memory (cuda_compress.cuh): encode, decode,
// decode-and-add. The same bits as the host loops of compress.cc, element by element:
//   - a double is rounded to float by __double2float_rn (the host's static_cast);
//   - bf16, fp16: the conversions of kernels/elements.h;
//   - fp8: one thread block of kFp8Block threads per scale block: the largest finite |x|
//     by a max tree (max is exact, so the order does not matter), s = amax / 448 and
//     1 / s by __fdiv_rn, the code of x * (1 / s) (__fmul_rn) by e4m3_encode; decoding
//     e4m3_decode(code) * s (__fmul_rn);
//   - decode-and-add: dst + decoded by __fadd_rn / __dadd_rn (no contraction into an FMA).
// Untested on a GPU so far: the emulated GPU runs the host loops (docs/compression.md).
#include <cfloat>
#include <cstdint>

#include "kernels/compress_elements.h"
#include "kernels/cuda_compress.cuh"

namespace gcoll {
namespace {

constexpr int kThreads = 256;
static_assert(kThreads == static_cast<int>(kFp8Block), "one thread per element of an fp8 block");

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(double x) { return __double2float_rn(x); }

__device__ __forceinline__ void put(float *o, float v, bool add) { *o = add ? __fadd_rn(*o, v) : v; }
__device__ __forceinline__ void put(double *o, float v, bool add) {
  const double d = static_cast<double>(v);
  *o = add ? __dadd_rn(*o, d) : d;
}

unsigned grid_for(std::size_t work) {
  const std::size_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    encode16_kernel(const T *src, std::size_t n, std::uint16_t *out, bool bf16) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float f = to_float(src[i]);
    out[i] = bf16 ? float_to_bf16(f).bits : float_to_half(f).bits;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    decode16_kernel(const std::uint16_t *in, std::size_t n, T *out, bool bf16, bool add) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    put(out + i, bf16 ? bf16_to_float(BF16Bits{in[i]}) : half_to_float(HalfBits{in[i]}), add);
}

// The scales are stored as 4 bytes each at dst + 4 b (any alignment).
__device__ __forceinline__ void store_scale(unsigned char *p, float s) {
  const std::uint32_t u = float_bits(s);
  for (int k = 0; k < 4; ++k) p[k] = static_cast<unsigned char>(u >> (8 * k));
}
__device__ __forceinline__ float load_scale(const unsigned char *p) {
  std::uint32_t u = 0;
  for (int k = 0; k < 4; ++k) u |= static_cast<std::uint32_t>(p[k]) << (8 * k);
  return bits_float(u);
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    encode_fp8_kernel(const T *src, std::size_t n, std::size_t nb, unsigned char *dst) {
  __shared__ float amax[kThreads];
  unsigned char *codes = dst + 4 * nb;
  for (std::size_t b = blockIdx.x; b < nb; b += gridDim.x) {
    const std::size_t i = b * kFp8Block + threadIdx.x;
    float v = 0, a = 0;
    if (i < n) {
      v = to_float(src[i]);
      a = fabsf(v);
      if (!(a <= FLT_MAX)) a = 0;  // finite only (inf, NaN: not part of the scale)
    }
    amax[threadIdx.x] = a;
    __syncthreads();
    for (int h = kThreads / 2; h > 0; h >>= 1) {
      if (threadIdx.x < h) amax[threadIdx.x] = fmaxf(amax[threadIdx.x], amax[threadIdx.x + h]);
      __syncthreads();
    }
    float s = __fdiv_rn(amax[0], 448.0f);
    if (!(s >= FLT_MIN)) s = FLT_MIN;  // all-zero, tiny or subnormal blocks: 2^-126
    const float inv = __fdiv_rn(1.0f, s);
    if (threadIdx.x == 0) store_scale(dst + 4 * b, s);
    if (i < n) codes[i] = e4m3_encode(__fmul_rn(v, inv));
    __syncthreads();  // amax[0] is read by every thread before the next block overwrites it
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    decode_fp8_kernel(const unsigned char *in, std::size_t n, std::size_t nb, T *out, bool add) {
  const unsigned char *codes = in + 4 * nb;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    put(out + i, __fmul_rn(e4m3_decode(codes[i]), load_scale(in + 4 * (i / kFp8Block))), add);
}

bool valid(Compress c, DType t) { return c != Compress::Off && (t == DType::Float || t == DType::Double); }

template <class T>
void encode(Compress c, const void *src, std::size_t n, void *dst, cudaStream_t stream) {
  const T *s = static_cast<const T *>(src);
  if (c == Compress::Fp8) {
    const std::size_t nb = (n + kFp8Block - 1) / kFp8Block;
    encode_fp8_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(s, n, nb, static_cast<unsigned char *>(dst));
  } else {
    encode16_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(s, n, static_cast<std::uint16_t *>(dst),
                                                             c == Compress::Bf16);
  }
}

template <class T>
void decode(Compress c, const void *src, std::size_t n, void *dst, bool add, cudaStream_t stream) {
  T *o = static_cast<T *>(dst);
  if (c == Compress::Fp8) {
    const std::size_t nb = (n + kFp8Block - 1) / kFp8Block;
    decode_fp8_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const unsigned char *>(src), n, nb, o,
                                                                add);
  } else {
    decode16_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const std::uint16_t *>(src), n, o,
                                                             c == Compress::Bf16, add);
  }
}

}  // namespace

cudaError_t cuda_compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst,
                                 cudaStream_t stream) {
  if (!valid(c, t)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  if (t == DType::Double) encode<double>(c, src, n, dst, stream);
  else encode<float>(c, src, n, dst, stream);
  return cudaGetLastError();
}

cudaError_t cuda_compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst, bool add,
                                 cudaStream_t stream) {
  if (!valid(c, t)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  if (t == DType::Double) decode<double>(c, src, n, dst, add, stream);
  else decode<float>(c, src, n, dst, add, stream);
  return cudaGetLastError();
}

}  // namespace gcoll
