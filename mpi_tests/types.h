// Predefined MPI datatypes used by the gcoll MPI tests: how to fill buffers with test
// values, which reduction operations apply, and how to compare results.
//
// Input values (see types.cc) are chosen per operation so that no result overflows or
// becomes NaN/Inf for up to 16 ranks:
//   integers  MAX/MIN, bitwise: any bit pattern;  SUM: |x| <= max/16;
//             PROD: mostly 1, sometimes 2, -1 (3 for unsigned) or 0;
//             logical: 0 or a nonzero value from {1, 2, -1/max, min}, zeros at various
//             densities so that LAND/LOR/LXOR produce both 0 and 1;
//   floating  MAX/MIN: nonzero values in [-1000, 1000]; SUM: [-1, 1];
//             PROD: [0.9375, 1.0625];
//   complex   SUM: re, im in [-1, 1]; PROD: re in [0.95, 1.05], im in [-0.05, 0.05];
//   C_BOOL    false/true;  BYTE: any bit pattern;
//   pair types (MINLOC/MAXLOC): values from a set of 5 (so ties happen and the
//             smallest-index rule is exercised) and indices in [-500, 500).
//
// Comparison of an MPI_* reduction result with the PMPI_* reference:
//   - integer, bool, byte and pair types, and MAX/MIN on floating point: exact;
//   - floating SUM: |got - ref| <= 2 (p-1) eps * p * max|x| (max|x| = 1): both results
//     are sums of the same p values in some order, each with error <= (p-1) eps sum|x|;
//   - floating PROD: |got - ref| <= 4 (p-1) eps |ref| (products of p values near 1);
//   - complex SUM: per component as real SUM; complex PROD: |got - ref| <= 8 (p-1) eps
//     |ref| (each complex multiply is within sqrt(5) eps, normwise);
//   with p the communicator size and eps the machine epsilon of the component type.
//   For p = 1 every comparison is exact. long double is compared by value (its padding
//   bytes are not significant).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace gct {

// MPI's groups of datatypes for reductions (MPI-4.0 section 6.9.2), plus groups for the
// types Open MPI accepts beyond the standard.
enum class Group {
  CInteger,       // standard C integer types
  FortranInteger, // MPI_INTEGER, MPI_INTEGER1..8
  MultiLanguage,  // MPI_AINT, MPI_OFFSET, MPI_COUNT
  Char,           // MPI_CHAR: not a reduction type in the standard; Open MPI accepts it
  Floating,
  Complex,
  Logical,        // MPI_C_BOOL
  Byte,
  Pair,           // MINLOC/MAXLOC pair types
  NoReduce,       // predefined but no reduction defined (MPI_WCHAR)
};
const char *group_name(Group g);
inline void PrintTo(Group g, std::ostream *os) { *os << group_name(g); }

enum class OpClass { MinMax, Sum, Prod, Logical, Bitwise, Loc, Other };
OpClass op_class(MPI_Op op);

struct TypeDesc;
// Fills n elements with the values for `op` (see above); deterministic in (rank, seed, i).
using FillFn = void (*)(void *buf, size_t n, int rank, uint32_t seed, MPI_Op op);
// Compares a reduction result with the reference. Returns the number of differing
// elements; *first is the first differing index and *detail describes it.
using CompareFn = size_t (*)(const void *got, const void *ref, size_t n, MPI_Op op,
                             int comm_size, size_t *first, std::string *detail);
// Writes the value of element i (for messages).
using FormatFn = std::string (*)(const void *buf, size_t i);

struct TypeDesc {
  MPI_Datatype type;
  const char *name;
  Group group;
  size_t extent;  // sizeof the C element; a test checks it equals the MPI extent
  FillFn fill;
  CompareFn compare;
  FormatFn format;
  bool is_unsigned = false;  // unsigned integer (MPI_BYTE included)
};

// Every predefined datatype the tests use (C types, including the pair types).
const std::vector<TypeDesc> &all_types();
const TypeDesc &find_type(MPI_Datatype t);
// The types of a matrix test: all_types(), or with GCOLLTEST_TYPES=per_size (the GPU
// suites but gpu.mpi.default.np4, mpi_tests/gpu/CMakeLists.txt) the first of each group,
// element size and signedness: a call's schedule depends on the element size, not on
// which type of that size; every type runs on device buffers at gpu.mpi.default.np4, and
// through the engine with host buffers on every configuration (mpi.allreduce.*).
std::vector<TypeDesc> matrix_types();

// The reduction operations the MPI standard defines, and the extra ones Open MPI 4.1
// accepts, for a type (MPI_REPLACE and MPI_NO_OP are for one-sided only).
std::vector<MPI_Op> standard_ops(const TypeDesc &t);
std::vector<MPI_Op> ompi_extra_ops(const TypeDesc &t);
// standard_ops + ompi_extra_ops: the combinations the correctness matrix runs.
std::vector<MPI_Op> tested_ops(const TypeDesc &t);
// All predefined ops, for the acceptance cross product.
const std::vector<MPI_Op> &all_ops();

// The datatype the PMPI_Allreduce reference uses for (t, op): t itself, except where the
// MPI's own reduction is wrong. Open MPI 4.1.4 compares MPI_UNSIGNED_LONG as signed for
// MPI_MAX/MPI_MIN (found by these tests); that is detected at run time with
// PMPI_Reduce_local on a value with the top bit set, and the reference then uses a
// same-size unsigned type for which PMPI is right (MPI_UINT64_T). The reference is
// still PMPI's, on the same bytes; check_allreduce accepts either result (the MPI's
// own, for calls gcoll hands to the MPI, or the correct one).
MPI_Datatype reference_type(const TypeDesc &t, MPI_Op op);
// True when the MPI's own MPI_MAX / MPI_MIN on unsigned type t compare as signed
// (Open MPI 4.1 on some types, MPICH 4.0.2 on the 8-bit ones).
bool mpi_unsigned_minmax_wrong(const TypeDesc &t, MPI_Op op);

// Byte mask of one element: 0xff for bytes MPI transfers (from PMPI_Pack/Unpack of an
// all-ones element into a zeroed one), 0 for holes (e.g. padding in MPI_DOUBLE_INT).
std::vector<unsigned char> significant_bytes(MPI_Datatype t, int count = 1);

// Compares n elements of extent `extent` on the bytes set in `mask` (mask.size() ==
// extent). Returns the number of differing elements; *first is the first.
size_t compare_masked(const void *got, const void *ref, size_t n, size_t extent,
                      const std::vector<unsigned char> &mask, size_t *first);

// Hex dump of element i (extent bytes), for messages.
std::string hex_element(const void *buf, size_t i, size_t extent);

// Hash of the result values, for checking that every rank got the same bits
// (long double compared on its value bytes only).
uint64_t value_hash(const TypeDesc &t, const void *buf, size_t n);

}  // namespace gct
