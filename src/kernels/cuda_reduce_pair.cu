// Device MINLOC / MAXLOC on the pair types: the instantiation list (no long double
// on the device, so no LongDoubleInt).
#include "kernels/cuda_kernels.cuh"

namespace gcoll {
namespace gpu {
namespace {

template <class T>
cudaError_t pair_ops(ROp op, const Job &j) {
  switch (op) {
    case ROp::Minloc: return launch_reduce<T, Minloc<T>>(j);
    case ROp::Maxloc: return launch_reduce<T, Maxloc<T>>(j);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace

cudaError_t reduce_pair(DType t, ROp op, const Job &j) {
  switch (t) {
    case DType::FloatInt: return pair_ops<Pair<float, int>>(op, j);
    case DType::DoubleInt: return pair_ops<Pair<double, int>>(op, j);
    case DType::LongInt: return pair_ops<Pair<long, int>>(op, j);
    case DType::IntInt: return pair_ops<Pair<int, int>>(op, j);
    case DType::ShortInt: return pair_ops<Pair<short, int>>(op, j);
    case DType::FloatFloat: return pair_ops<Pair<float, float>>(op, j);
    case DType::DoubleDouble: return pair_ops<Pair<double, double>>(op, j);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace gpu
}  // namespace gcoll
