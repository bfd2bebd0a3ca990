#include "pmpi/mpi_types.h"

#include <type_traits>

#include <climits>
#include <utility>
#include <vector>

namespace gcoll {

namespace {

// The MPI standard's groups of predefined types, for which ops it defines on them.
enum class TypeClass { CInt, FInt, Float, Complex, Bool, Byte, Pair, Char };

struct TypeEntry {
  MPI_Datatype handle;
  DType dtype;
  TypeClass cls;
};

bool class_allows(TypeClass c, ROp op) {
  switch (c) {
    case TypeClass::CInt: return op != ROp::Minloc && op != ROp::Maxloc;
    case TypeClass::FInt:
      return op == ROp::Sum || op == ROp::Prod || op == ROp::Max || op == ROp::Min || op == ROp::Band ||
             op == ROp::Bor || op == ROp::Bxor;
    case TypeClass::Float: return op == ROp::Sum || op == ROp::Prod || op == ROp::Max || op == ROp::Min;
    case TypeClass::Complex: return op == ROp::Sum || op == ROp::Prod;
    case TypeClass::Bool: return op == ROp::Land || op == ROp::Lor || op == ROp::Lxor;
    case TypeClass::Byte: return op == ROp::Band || op == ROp::Bor || op == ROp::Bxor;
    case TypeClass::Pair: return op == ROp::Minloc || op == ROp::Maxloc;
    case TypeClass::Char: return false;  // not a reduction type in the standard: leave it to the MPI
  }
  return false;
}

template <class T>
constexpr DType int_dtype() {
  if (sizeof(T) == 1) return std::is_signed<T>::value ? DType::Int8 : DType::Uint8;
  if (sizeof(T) == 2) return std::is_signed<T>::value ? DType::Int16 : DType::Uint16;
  if (sizeof(T) == 4) return std::is_signed<T>::value ? DType::Int32 : DType::Uint32;
  return std::is_signed<T>::value ? DType::Int64 : DType::Uint64;
}

// Built at first use (handles are not compile-time constants in every MPI).
const std::vector<TypeEntry> &datatypes() {
  static const std::vector<TypeEntry> table = {
      {MPI_CHAR, int_dtype<char>(), TypeClass::Char},
      {MPI_SIGNED_CHAR, DType::Int8, TypeClass::CInt},
      {MPI_UNSIGNED_CHAR, DType::Uint8, TypeClass::CInt},
      {MPI_BYTE, DType::Uint8, TypeClass::Byte},
      {MPI_SHORT, int_dtype<short>(), TypeClass::CInt},
      {MPI_UNSIGNED_SHORT, int_dtype<unsigned short>(), TypeClass::CInt},
      {MPI_INT, int_dtype<int>(), TypeClass::CInt},
      {MPI_UNSIGNED, int_dtype<unsigned>(), TypeClass::CInt},
      {MPI_LONG, int_dtype<long>(), TypeClass::CInt},
      {MPI_UNSIGNED_LONG, int_dtype<unsigned long>(), TypeClass::CInt},
      {MPI_LONG_LONG, int_dtype<long long>(), TypeClass::CInt},
      {MPI_UNSIGNED_LONG_LONG, int_dtype<unsigned long long>(), TypeClass::CInt},
      {MPI_INT8_T, DType::Int8, TypeClass::CInt},
      {MPI_INT16_T, DType::Int16, TypeClass::CInt},
      {MPI_INT32_T, DType::Int32, TypeClass::CInt},
      {MPI_INT64_T, DType::Int64, TypeClass::CInt},
      {MPI_UINT8_T, DType::Uint8, TypeClass::CInt},
      {MPI_UINT16_T, DType::Uint16, TypeClass::CInt},
      {MPI_UINT32_T, DType::Uint32, TypeClass::CInt},
      {MPI_UINT64_T, DType::Uint64, TypeClass::CInt},
      {MPI_FLOAT, DType::Float, TypeClass::Float},
      {MPI_DOUBLE, DType::Double, TypeClass::Float},
      {MPI_LONG_DOUBLE, DType::LongDouble, TypeClass::Float},
      {MPI_C_FLOAT_COMPLEX, DType::CFloatComplex, TypeClass::Complex},
      {MPI_C_DOUBLE_COMPLEX, DType::CDoubleComplex, TypeClass::Complex},
      {MPI_C_BOOL, DType::Bool, TypeClass::Bool},
      {MPI_FLOAT_INT, DType::FloatInt, TypeClass::Pair},
      {MPI_DOUBLE_INT, DType::DoubleInt, TypeClass::Pair},
      {MPI_LONG_INT, DType::LongInt, TypeClass::Pair},
      {MPI_2INT, DType::IntInt, TypeClass::Pair},
      {MPI_SHORT_INT, DType::ShortInt, TypeClass::Pair},
      {MPI_LONG_DOUBLE_INT, DType::LongDoubleInt, TypeClass::Pair},
      // Fortran types with a fixed C counterpart (Fortran callers use these handles).
      {MPI_INTEGER, DType::Int32, TypeClass::FInt},
      {MPI_REAL, DType::Float, TypeClass::Float},
      {MPI_DOUBLE_PRECISION, DType::Double, TypeClass::Float},
      {MPI_COMPLEX, DType::CFloatComplex, TypeClass::Complex},
      {MPI_DOUBLE_COMPLEX, DType::CDoubleComplex, TypeClass::Complex},
      {MPI_2REAL, DType::FloatFloat, TypeClass::Pair},
      {MPI_2DOUBLE_PRECISION, DType::DoubleDouble, TypeClass::Pair},
      {MPI_2INTEGER, DType::IntInt, TypeClass::Pair},
  };
  return table;
}

const std::vector<std::pair<MPI_Op, ROp>> &ops() {
  static const std::vector<std::pair<MPI_Op, ROp>> table = {
      {MPI_SUM, ROp::Sum},   {MPI_PROD, ROp::Prod}, {MPI_MAX, ROp::Max},       {MPI_MIN, ROp::Min},
      {MPI_LAND, ROp::Land}, {MPI_LOR, ROp::Lor},   {MPI_LXOR, ROp::Lxor},     {MPI_BAND, ROp::Band},
      {MPI_BOR, ROp::Bor},   {MPI_BXOR, ROp::Bxor}, {MPI_MINLOC, ROp::Minloc}, {MPI_MAXLOC, ROp::Maxloc},
  };
  return table;
}

const TypeEntry *find_type(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return nullptr;
  for (const auto &e : datatypes())
    if (e.handle == t) return &e;
  return nullptr;
}

}  // namespace

bool map_datatype(MPI_Datatype t, DType *out) {
  const TypeEntry *e = find_type(t);
  if (!e) return false;
  *out = e->dtype;
  return true;
}

bool map_reduction(MPI_Datatype t, MPI_Op op, DType *dt, ROp *rop) {
  const TypeEntry *e = find_type(t);
  ROp o;
  if (!e || !map_op(op, &o) || !class_allows(e->cls, o) || !op_supported(o, e->dtype)) return false;
  *dt = e->dtype;
  *rop = o;
  return true;
}

bool map_op(MPI_Op op, ROp *out) {
  if (op == MPI_OP_NULL) return false;
  for (const auto &e : ops())
    if (e.first == op) {
      *out = e.second;
      return true;
    }
  return false;
}

}  // namespace gcoll
