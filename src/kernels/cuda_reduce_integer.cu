// Device reductions on the integer types and Bool: the kernels of the list's types of
// CUDA unit Integer (type_op_list.h).
#include "kernels/cuda_kernels.cuh"

namespace gcoll {
namespace gpu {

cudaError_t reduce_integer(DType t, ROp op, const Job &j) {
  return reduce_unit<CudaUnit::Integer>(t, op, j);
}

}  // namespace gpu
}  // namespace gcoll
