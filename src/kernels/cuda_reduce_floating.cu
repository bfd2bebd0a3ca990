// Device reductions on float, double, half, bfloat16 and the complex types: the
// instantiation list (no long double on the device).
#include "kernels/cuda_kernels.cuh"

namespace gcoll {
namespace gpu {
namespace {

template <class T>
cudaError_t floating_ops(ROp op, const Job &j) {
  switch (op) {
    case ROp::Sum: return launch_reduce<T, Sum<T>>(j);
    case ROp::Prod: return launch_reduce<T, Prod<T>>(j);
    case ROp::Max: return launch_reduce<T, Max<T>>(j);
    case ROp::Min: return launch_reduce<T, Min<T>>(j);
    default: return cudaErrorNotSupported;
  }
}

template <class T>
cudaError_t complex_ops(ROp op, const Job &j) {
  switch (op) {
    case ROp::Sum: return launch_reduce<T, Sum<T>>(j);
    case ROp::Prod: return launch_reduce<T, Prod<T>>(j);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace

cudaError_t reduce_floating(DType t, ROp op, const Job &j) {
  switch (t) {
    case DType::Float: return floating_ops<float>(op, j);
    case DType::Double: return floating_ops<double>(op, j);
    case DType::Half: return floating_ops<__half>(op, j);
    case DType::BFloat16: return floating_ops<__nv_bfloat16>(op, j);
    case DType::CFloatComplex: return complex_ops<Complex<float>>(op, j);
    case DType::CDoubleComplex: return complex_ops<Complex<double>>(op, j);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace gpu
}  // namespace gcoll
