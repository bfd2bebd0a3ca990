// The one list of element types and reduction ops. Everything that enumerates them is
// expanded from here, so adding a type or an op is one line below:
//   types.h            the DType and ROp enums (in list order) and the op sets
//   types.cc           dtype_name, rop_name, dtype_size, op_supported
//   host_reduce.cc     the host kernels, one per (type, op) the list allows
//   cuda_reduce*.cu    the device kernels, each in its type's .cu file; cuda_op_supported
//   pmpi/mpi_types.cc  the MPI handles of the types and ops
// A new op also needs its functor in functors.h (a template named as the ROp); a new type
// whose device storage differs from the host's, an OnDevice entry in cuda_kernels.cuh.
//
// X-macros: a user defines X to take the columns it needs and expands the list with it.
// Columns the user's X does not use are never expanded, so the MPI names below are only
// tokens to the kernels (which have no MPI); only mpi_types.cc expands that column.
#pragma once

// GCOLL_ROPS(X): X(ROp, name, OpGroup, MPI op)
//   OpGroup: which group of the MPI standard the op is in; a type supports whole groups
//   (the op sets in types.h), so a new op reaches every type of its group.
#define GCOLL_ROPS(X)                   \
  X(Sum, "sum", Arithmetic, MPI_SUM)    \
  X(Prod, "prod", Arithmetic, MPI_PROD) \
  X(Max, "max", Order, MPI_MAX)         \
  X(Min, "min", Order, MPI_MIN)         \
  X(Land, "land", Logical, MPI_LAND)    \
  X(Lor, "lor", Logical, MPI_LOR)       \
  X(Lxor, "lxor", Logical, MPI_LXOR)    \
  X(Band, "band", Bitwise, MPI_BAND)    \
  X(Bor, "bor", Bitwise, MPI_BOR)       \
  X(Bxor, "bxor", Bitwise, MPI_BXOR)    \
  X(Minloc, "minloc", Loc, MPI_MINLOC)  \
  X(Maxloc, "maxloc", Loc, MPI_MAXLOC)

// GCOLL_DTYPES(X): X(DType, name, op set, CUDA unit, MPI datatype, host type)
//   op set: the ops defined on the type, one of the type classes of types.h.
//   CUDA unit: the .cu file that instantiates the type's device kernels (Integer,
//     Floating or Pair: one file per family so that they compile side by side), or None
//     for no device kernels (the device has no long double).
//   MPI datatype: the type's own predefined handle, MPI_DATATYPE_NULL for none. Other
//     handles of the same type (MPI_INT, the Fortran names, MPI_BYTE) are aliases listed
//     in mpi_types.cc.
//   host type: the element as the host stores and computes it (the C layout MPI uses);
//     last, because it may contain commas (Pair<float, int>): X takes it as `...`.
// Half and BFloat16 are for the extension API only (no predefined MPI type). Bool is C
// _Bool (1 byte, nonzero is true), reduced by the uint8 kernels. The pairs are the MPI C
// structs {value; index} of MINLOC/MAXLOC, and Fortran's MPI_2REAL, MPI_2DOUBLE_PRECISION.
#define GCOLL_DTYPES(X)                                                                     \
  X(Int8, "int8", kIntegerOps, Integer, MPI_INT8_T, std::int8_t)                            \
  X(Int16, "int16", kIntegerOps, Integer, MPI_INT16_T, std::int16_t)                        \
  X(Int32, "int32", kIntegerOps, Integer, MPI_INT32_T, std::int32_t)                        \
  X(Int64, "int64", kIntegerOps, Integer, MPI_INT64_T, std::int64_t)                        \
  X(Uint8, "uint8", kIntegerOps, Integer, MPI_UINT8_T, std::uint8_t)                        \
  X(Uint16, "uint16", kIntegerOps, Integer, MPI_UINT16_T, std::uint16_t)                    \
  X(Uint32, "uint32", kIntegerOps, Integer, MPI_UINT32_T, std::uint32_t)                    \
  X(Uint64, "uint64", kIntegerOps, Integer, MPI_UINT64_T, std::uint64_t)                    \
  X(Float, "float", kFloatingOps, Floating, MPI_FLOAT, float)                               \
  X(Double, "double", kFloatingOps, Floating, MPI_DOUBLE, double)                           \
  X(LongDouble, "long_double", kFloatingOps, None, MPI_LONG_DOUBLE, long double)            \
  X(Half, "half", kFloatingOps, Floating, MPI_DATATYPE_NULL, HalfBits)                      \
  X(BFloat16, "bfloat16", kFloatingOps, Floating, MPI_DATATYPE_NULL, BF16Bits)              \
  X(CFloatComplex, "c_float_complex", kComplexOps, Floating, MPI_C_FLOAT_COMPLEX,           \
    Complex<float>)                                                                         \
  X(CDoubleComplex, "c_double_complex", kComplexOps, Floating, MPI_C_DOUBLE_COMPLEX,        \
    Complex<double>)                                                                        \
  X(Bool, "bool", kBoolOps, Integer, MPI_C_BOOL, std::uint8_t)                              \
  X(FloatInt, "float_int", kPairOps, Pair, MPI_FLOAT_INT, Pair<float, int>)                 \
  X(DoubleInt, "double_int", kPairOps, Pair, MPI_DOUBLE_INT, Pair<double, int>)             \
  X(LongInt, "long_int", kPairOps, Pair, MPI_LONG_INT, Pair<long, int>)                     \
  X(IntInt, "2int", kPairOps, Pair, MPI_2INT, Pair<int, int>)                               \
  X(ShortInt, "short_int", kPairOps, Pair, MPI_SHORT_INT, Pair<short, int>)                 \
  X(LongDoubleInt, "long_double_int", kPairOps, None, MPI_LONG_DOUBLE_INT,                  \
    Pair<long double, int>)                                                                 \
  X(FloatFloat, "2real", kPairOps, Pair, MPI_2REAL, Pair<float, float>)                     \
  X(DoubleDouble, "2double_precision", kPairOps, Pair, MPI_2DOUBLE_PRECISION,               \
    Pair<double, double>)
