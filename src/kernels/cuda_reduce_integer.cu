// Device reductions on the integer types and Bool: the instantiation list.
#include "kernels/cuda_kernels.cuh"

namespace gcoll {
namespace gpu {
namespace {

template <class T>
cudaError_t integer_ops(ROp op, const Job &j) {
  switch (op) {
    case ROp::Sum: return launch_reduce<T, Sum<T>>(j);
    case ROp::Prod: return launch_reduce<T, Prod<T>>(j);
    case ROp::Max: return launch_reduce<T, Max<T>>(j);
    case ROp::Min: return launch_reduce<T, Min<T>>(j);
    case ROp::Land: return launch_reduce<T, Land<T>>(j);
    case ROp::Lor: return launch_reduce<T, Lor<T>>(j);
    case ROp::Lxor: return launch_reduce<T, Lxor<T>>(j);
    case ROp::Band: return launch_reduce<T, Band<T>>(j);
    case ROp::Bor: return launch_reduce<T, Bor<T>>(j);
    case ROp::Bxor: return launch_reduce<T, Bxor<T>>(j);
    default: return cudaErrorNotSupported;
  }
}

// C _Bool as uint8_t (nonzero is true): the logical kernels of Uint8 serve it.
cudaError_t bool_ops(ROp op, const Job &j) {
  switch (op) {
    case ROp::Land: case ROp::Lor: case ROp::Lxor: return integer_ops<std::uint8_t>(op, j);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace

cudaError_t reduce_integer(DType t, ROp op, const Job &j) {
  switch (t) {
    case DType::Int8: return integer_ops<std::int8_t>(op, j);
    case DType::Int16: return integer_ops<std::int16_t>(op, j);
    case DType::Int32: return integer_ops<std::int32_t>(op, j);
    case DType::Int64: return integer_ops<std::int64_t>(op, j);
    case DType::Uint8: return integer_ops<std::uint8_t>(op, j);
    case DType::Uint16: return integer_ops<std::uint16_t>(op, j);
    case DType::Uint32: return integer_ops<std::uint32_t>(op, j);
    case DType::Uint64: return integer_ops<std::uint64_t>(op, j);
    case DType::Bool: return bool_ops(op, j);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace gpu
}  // namespace gcoll
