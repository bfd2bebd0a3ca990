// The per-element conversions of the fp8 (e4m3) format that the host loops
// (kernels/compress.cc) and the CUDA kernels (kernels/cuda_compress.cu) share, written on
// bits and exact float operations only, so that both give the same codes and values.
#pragma once

#include <cstdint>

#include "kernels/elements.h"

namespace gcoll {

// f (already divided by the block's scale) to its e4m3 code: round to nearest even,
// saturating at +-448; inf becomes NaN with its sign (0x7f, 0xff), NaN becomes 0x7f whatever
// its sign: a GPU's multiply by the scale returns its canonical NaN, the host's keeps the
// input's sign, and the codes must be the same bytes on both.
GCOLL_HD inline std::uint8_t e4m3_encode(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint8_t sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7fu;                                       // NaN
  if (ax == 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7fu);  // inf: NaN
  if (ax >= 0x43e00000u) return static_cast<std::uint8_t>(sign | 0x7eu);  // >= 448: saturate
  if (ax >= 0x3c800000u) {  // >= 2^-6: normal e4m3; round at bit 20, rebias 127 -> 7
    const std::uint32_t r = ax + 0x7ffffu + ((ax >> 20) & 1u);
    std::uint32_t code = (r - (120u << 23)) >> 20;
    if (code > 0x7eu) code = 0x7eu;  // [448, 464) rounds to 448 anyway; above: saturate
    return static_cast<std::uint8_t>(sign | code);
  }
  // Subnormal e4m3: units of 2^-9 (exact scaling: |f| < 2^-6), round to nearest even.
  const float m = bits_float(ax) * 512.0f;
  std::uint32_t r = static_cast<std::uint32_t>(m);
  const float rem = m - static_cast<float>(r);
  if (rem > 0.5f || (rem == 0.5f && (r & 1u))) ++r;  // 8: the smallest normal, 0x08
  return static_cast<std::uint8_t>(sign | r);
}

// An e4m3 code's value (exact): 0x7f / 0xff are NaN (0x7fc00000, signed).
GCOLL_HD inline float e4m3_decode(std::uint8_t c) {
  const std::uint32_t sign = static_cast<std::uint32_t>(c & 0x80u) << 24;
  const std::uint32_t e = (c >> 3) & 0xfu, m = c & 7u;
  if (e == 0xf && m == 7) return bits_float(sign | 0x7fc00000u);
  if (e != 0) return bits_float(sign | ((e + 120u) << 23) | (m << 20));  // rebias 7 -> 127
  return bits_float(sign | float_bits(static_cast<float>(m) * (1.0f / 512.0f)));  // m x 2^-9
}

}  // namespace gcoll
