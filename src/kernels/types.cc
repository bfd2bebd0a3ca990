#include "kernels/types.h"

#include "kernels/elements.h"

namespace gcoll {

namespace {

// The MPI classes of element types; each has one set of defined ops.
enum class Family { Integer, Floating, Complex, Bool, Pair, Invalid };

Family family(DType t) {
  switch (t) {
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Uint8: case DType::Uint16: case DType::Uint32: case DType::Uint64:
      return Family::Integer;
    case DType::Float: case DType::Double: case DType::LongDouble:
    case DType::Half: case DType::BFloat16:
      return Family::Floating;
    case DType::CFloatComplex: case DType::CDoubleComplex:
      return Family::Complex;
    case DType::Bool:
      return Family::Bool;
    case DType::FloatInt: case DType::DoubleInt: case DType::LongInt: case DType::IntInt:
    case DType::ShortInt: case DType::LongDoubleInt: case DType::FloatFloat:
    case DType::DoubleDouble:
      return Family::Pair;
    case DType::kCount: break;
  }
  return Family::Invalid;
}

}  // namespace

const char *dtype_name(DType t) {
  switch (t) {
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Uint8: return "uint8";
    case DType::Uint16: return "uint16";
    case DType::Uint32: return "uint32";
    case DType::Uint64: return "uint64";
    case DType::Float: return "float";
    case DType::Double: return "double";
    case DType::LongDouble: return "long_double";
    case DType::Half: return "half";
    case DType::BFloat16: return "bfloat16";
    case DType::CFloatComplex: return "c_float_complex";
    case DType::CDoubleComplex: return "c_double_complex";
    case DType::Bool: return "bool";
    case DType::FloatInt: return "float_int";
    case DType::DoubleInt: return "double_int";
    case DType::LongInt: return "long_int";
    case DType::IntInt: return "2int";
    case DType::ShortInt: return "short_int";
    case DType::LongDoubleInt: return "long_double_int";
    case DType::FloatFloat: return "2real";
    case DType::DoubleDouble: return "2double_precision";
    case DType::kCount: break;
  }
  return "?";
}

const char *rop_name(ROp o) {
  switch (o) {
    case ROp::Sum: return "sum";
    case ROp::Prod: return "prod";
    case ROp::Max: return "max";
    case ROp::Min: return "min";
    case ROp::Land: return "land";
    case ROp::Lor: return "lor";
    case ROp::Lxor: return "lxor";
    case ROp::Band: return "band";
    case ROp::Bor: return "bor";
    case ROp::Bxor: return "bxor";
    case ROp::Minloc: return "minloc";
    case ROp::Maxloc: return "maxloc";
    case ROp::kCount: break;
  }
  return "?";
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::Int8: case DType::Uint8: case DType::Bool: return 1;
    case DType::Int16: case DType::Uint16: case DType::Half: case DType::BFloat16: return 2;
    case DType::Int32: case DType::Uint32: case DType::Float: return 4;
    case DType::Int64: case DType::Uint64: case DType::Double: return 8;
    case DType::LongDouble: return sizeof(long double);
    case DType::CFloatComplex: return sizeof(Complex<float>);
    case DType::CDoubleComplex: return sizeof(Complex<double>);
    case DType::FloatInt: return sizeof(Pair<float, int>);
    case DType::DoubleInt: return sizeof(Pair<double, int>);
    case DType::LongInt: return sizeof(Pair<long, int>);
    case DType::IntInt: return sizeof(Pair<int, int>);
    case DType::ShortInt: return sizeof(Pair<short, int>);
    case DType::LongDoubleInt: return sizeof(Pair<long double, int>);
    case DType::FloatFloat: return sizeof(Pair<float, float>);
    case DType::DoubleDouble: return sizeof(Pair<double, double>);
    case DType::kCount: break;
  }
  return 0;
}

bool op_supported(ROp op, DType t) {
  const bool arith = op == ROp::Sum || op == ROp::Prod;
  const bool order = op == ROp::Max || op == ROp::Min;
  const bool logical = op == ROp::Land || op == ROp::Lor || op == ROp::Lxor;
  const bool bitwise = op == ROp::Band || op == ROp::Bor || op == ROp::Bxor;
  const bool loc = op == ROp::Minloc || op == ROp::Maxloc;
  switch (family(t)) {
    case Family::Integer: return arith || order || logical || bitwise;
    case Family::Floating: return arith || order;
    case Family::Complex: return arith;
    case Family::Bool: return logical;
    case Family::Pair: return loc;
    case Family::Invalid: break;
  }
  return false;
}

}  // namespace gcoll
