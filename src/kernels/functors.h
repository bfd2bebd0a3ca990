// The reduction functors, one set for the host and the device: Op<T>{}(a, b) returns
// a (op) b, where a is the value accumulated so far and b the next source's value.
//
// Semantics (MPI's, with the choices MPI leaves open):
// - integer SUM/PROD wrap around (two's complement, computed in unsigned arithmetic);
// - MAX/MIN return a unless b compares strictly greater/smaller, so on NaN or on equal
//   values (-0.0 vs +0.0) the earlier operand is kept;
// - logical ops treat nonzero as true and return 0 or 1 in the element type;
// - 16-bit floats (HalfBits/BF16Bits on the host, __half/__nv_bfloat16 on the device)
//   compute each op in float and round the result to nearest even;
// - MINLOC/MAXLOC take the smaller/larger value, and on equal values the smaller index.
#pragma once

#include <type_traits>

#include "kernels/elements.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace gcoll {

// The type a value is computed in: itself, or float for 16-bit floats.
template <class T>
struct Widen {
  GCOLL_HD static T up(T x) { return x; }
  GCOLL_HD static T down(T x) { return x; }
};
template <>
struct Widen<HalfBits> {
  GCOLL_HD static float up(HalfBits x) { return half_to_float(x); }
  GCOLL_HD static HalfBits down(float x) { return float_to_half(x); }
};
template <>
struct Widen<BF16Bits> {
  GCOLL_HD static float up(BF16Bits x) { return bf16_to_float(x); }
  GCOLL_HD static BF16Bits down(float x) { return float_to_bf16(x); }
};
#if defined(__CUDACC__)
template <>
struct Widen<__half> {
  GCOLL_HD static float up(__half x) { return __half2float(x); }
  GCOLL_HD static __half down(float x) { return __float2half_rn(x); }
};
template <>
struct Widen<__nv_bfloat16> {
  GCOLL_HD static float up(__nv_bfloat16 x) { return __bfloat162float(x); }
  GCOLL_HD static __nv_bfloat16 down(float x) { return __float2bfloat16_rn(x); }
};
#endif

// Unsigned type of at least int's width for wrap-around integer arithmetic (so that
// uint16 * uint16 is not promoted to a signed int that could overflow).
template <class T>
using WrapType = std::make_unsigned_t<decltype(T() + T())>;

template <class T>
struct Sum {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return Widen<T>::down(Widen<T>::up(a) + Widen<T>::up(b));
    }
  }
};
template <class T>
struct Sum<Complex<T>> {
  GCOLL_HD Complex<T> operator()(const Complex<T> &a, const Complex<T> &b) const {
    return {a.re + b.re, a.im + b.im};
  }
};

template <class T>
struct Prod {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return Widen<T>::down(Widen<T>::up(a) * Widen<T>::up(b));
    }
  }
};
// (a+bi)(c+di) = (ac-bd) + (ad+bc)i; built without FMA contraction on both sides (see
// CMakeLists.txt) so that the host and the device give the same bits.
template <class T>
struct Prod<Complex<T>> {
  GCOLL_HD Complex<T> operator()(const Complex<T> &a, const Complex<T> &b) const {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  }
};

template <class T>
struct Max {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    return Widen<T>::up(b) > Widen<T>::up(a) ? b : a;
  }
};

template <class T>
struct Min {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    return Widen<T>::up(b) < Widen<T>::up(a) ? b : a;
  }
};

template <class T>
struct Land {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    return static_cast<T>(a != T(0) && b != T(0));
  }
};

template <class T>
struct Lor {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    return static_cast<T>(a != T(0) || b != T(0));
  }
};

template <class T>
struct Lxor {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    return static_cast<T>((a != T(0)) != (b != T(0)));
  }
};

template <class T>
struct Band {
  GCOLL_HD T operator()(const T &a, const T &b) const { return static_cast<T>(a & b); }
};

template <class T>
struct Bor {
  GCOLL_HD T operator()(const T &a, const T &b) const { return static_cast<T>(a | b); }
};

template <class T>
struct Bxor {
  GCOLL_HD T operator()(const T &a, const T &b) const { return static_cast<T>(a ^ b); }
};

// T is a Pair<V, I>.
template <class T>
struct Minloc {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    if (b.v < a.v) return b;
    if (a.v < b.v) return a;
    return {a.v, b.i < a.i ? b.i : a.i};  // equal (or unordered) values: smaller index
  }
};

template <class T>
struct Maxloc {
  GCOLL_HD T operator()(const T &a, const T &b) const {
    if (b.v > a.v) return b;
    if (a.v > b.v) return a;
    return {a.v, b.i < a.i ? b.i : a.i};
  }
};

}  // namespace gcoll
