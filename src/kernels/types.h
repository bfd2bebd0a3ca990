// Element types and reduction ops the engine works with (no MPI here: src/pmpi maps MPI
// handles onto these). One vocabulary for the host and the CUDA kernels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gcoll {

enum class DType : std::uint8_t {
  Int8, Int16, Int32, Int64,
  Uint8, Uint16, Uint32, Uint64,
  Float, Double, LongDouble,
  Half, BFloat16,                  // extension API only (no predefined MPI type)
  CFloatComplex, CDoubleComplex,   // {float re, im}, {double re, im}
  Bool,                            // C _Bool / MPI_C_BOOL (1 byte)
  // MINLOC/MAXLOC pairs, laid out as the MPI C structs {value; index}:
  FloatInt, DoubleInt, LongInt, IntInt, ShortInt, LongDoubleInt,
  FloatFloat, DoubleDouble,        // Fortran MPI_2REAL, MPI_2DOUBLE_PRECISION
  kCount
};

enum class ROp : std::uint8_t {
  Sum, Prod, Max, Min,
  Land, Lor, Lxor,
  Band, Bor, Bxor,
  Minloc, Maxloc,
  kCount
};

constexpr int kNumDTypes = static_cast<int>(DType::kCount);
constexpr int kNumROps = static_cast<int>(ROp::kCount);

const char *dtype_name(DType t);
const char *rop_name(ROp o);
std::size_t dtype_size(DType t);  // bytes of one element (a pair counts as one element)

// Whether the engine implements `op` on `t` on the host (the MPI-defined combinations:
// SUM/PROD on integers, floats, complex; MAX/MIN on integers and floats; logical ops on
// integers and Bool; bitwise ops on integers (Uint8 covers MPI_BYTE); MINLOC/MAXLOC on
// pairs).
bool op_supported(ROp op, DType t);

}  // namespace gcoll
