// Element types the reduction functors work on, shared by the host and the CUDA code:
// MINLOC/MAXLOC pairs, complex numbers, and a host-side 16-bit float storage type.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GCOLL_HD __host__ __device__
#else
#define GCOLL_HD
#endif

namespace gcoll {

// {value; index}: the layout of MPI's C pair structs (MPI_FLOAT_INT is
// struct { float v; int i; }, natural padding included) and of Fortran MPI_2REAL.
template <class V, class I>
struct Pair {
  V v;
  I i;
};

// C float _Complex / double _Complex: {re, im}.
template <class T>
struct Complex {
  T re;
  T im;
};

// Host storage for IEEE binary16 and bfloat16: the bits only; arithmetic goes through
// float. Used by the host path whether or not CUDA is present (the device path uses
// __half / __nv_bfloat16, which have the same bits and the same rounding).
struct HalfBits {
  std::uint16_t bits;
};
struct BF16Bits {
  std::uint16_t bits;
};

GCOLL_HD inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

GCOLL_HD inline float bits_float(std::uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// binary16 -> float (exact).
GCOLL_HD inline float half_to_float(HalfBits h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exp = (h.bits >> 10) & 0x1fu;
  const std::uint32_t man = h.bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (man << 13));  // rebias 15 -> 127
  // zero or subnormal: man * 2^-24, exact in float
  const float mag = static_cast<float>(man) * (1.0f / 16777216.0f);
  return bits_float(sign | float_bits(mag));
}

// float -> binary16, round to nearest even; any NaN becomes 0x7fff (as CUDA's
// __float2half_rn does on the host and the device).
GCOLL_HD inline HalfBits float_to_half(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return {0x7fffu};
  if (ax >= 0x477ff000u) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // >= 65520: inf
  if (ax >= 0x38800000u) {  // normal half (>= 2^-14): round at bit 13, then rebias
    const std::uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
    return {static_cast<std::uint16_t>(sign | ((r - 0x38000000u) >> 13))};
  }
  if (ax <= 0x33000000u) return {static_cast<std::uint16_t>(sign)};  // <= 2^-25: zero
  // subnormal half: units of 2^-24 from the 24-bit significand
  const std::uint32_t shift = 126u - (ax >> 23);  // 14..24
  const std::uint32_t man = (ax & 0x7fffffu) | 0x800000u;
  std::uint32_t r = man >> shift;
  const std::uint32_t rem = man & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;  // may carry into the smallest normal
  return {static_cast<std::uint16_t>(sign | r)};
}

GCOLL_HD inline float bf16_to_float(BF16Bits h) {
  return bits_float(static_cast<std::uint32_t>(h.bits) << 16);
}

// float -> bfloat16, round to nearest even; any NaN becomes 0x7fff (as CUDA does).
GCOLL_HD inline BF16Bits float_to_bf16(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return {0x7fffu};
  return {static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}

}  // namespace gcoll
