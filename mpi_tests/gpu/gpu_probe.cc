// gcoll_gpu_probe: is there a CUDA device this process can use?
//
// Exit 0 when cudaGetDeviceCount finds at least one device and device 0 accepts a
// context; otherwise print why on stdout and exit 1. gpu_or_skip.sh runs it before
// every `gpu` MPI test and turns a failure into CTest's skip code (77). It touches no
// MPI. With -v it also prints one line per device (name, compute capability, memory,
// compute mode), which the GPU test logs then show.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

static const char *compute_mode_name(int m) {
  switch (m) {
    case cudaComputeModeDefault: return "default";
    case cudaComputeModeProhibited: return "prohibited";
    case cudaComputeModeExclusiveProcess: return "exclusive-process";
    default: return "?";
  }
}

int main(int argc, char **argv) {
  const bool verbose = argc > 1 && std::strcmp(argv[1], "-v") == 0;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    std::printf("cudaGetDeviceCount failed: %s (CUDA error %d)\n", cudaGetErrorString(e),
                static_cast<int>(e));
    return 1;
  }
  if (n < 1) {
    std::printf("cudaGetDeviceCount found no device\n");
    return 1;
  }
  for (int d = 0; d < n && verbose; ++d) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    int mode = -1;
    cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, d);
    std::printf("gpu %d: %s, sm_%d%d, %.1f GiB, compute mode %s\n", d, p.name, p.major, p.minor,
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024 * 1024),
                compute_mode_name(mode));
  }
  // A device can be listed yet unusable (prohibited compute mode, a broken driver).
  e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaFree(nullptr);
  if (e != cudaSuccess) {
    std::printf("device 0 is not usable: %s (CUDA error %d)\n", cudaGetErrorString(e),
                static_cast<int>(e));
    return 1;
  }
  if (verbose) std::printf("%d CUDA device(s) usable\n", n);
  return 0;
}
