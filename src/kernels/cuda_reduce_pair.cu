// Device MINLOC / MAXLOC on the pair types: the kernels of the list's types of CUDA
// unit Pair (type_op_list.h).
#include "kernels/cuda_kernels.cuh"

namespace gcoll {
namespace gpu {

cudaError_t reduce_pair(DType t, ROp op, const Job &j) {
  return reduce_unit<CudaUnit::Pair>(t, op, j);
}

}  // namespace gpu
}  // namespace gcoll
