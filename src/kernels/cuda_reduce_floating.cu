// Device reductions on float, double, half, bfloat16 and the complex types: the kernels
// of the list's types of CUDA unit Floating (type_op_list.h).
#include "kernels/cuda_kernels.cuh"

namespace gcoll {
namespace gpu {

cudaError_t reduce_floating(DType t, ROp op, const Job &j) {
  return reduce_unit<CudaUnit::Floating>(t, op, j);
}

}  // namespace gpu
}  // namespace gcoll
