// gcoll_gpu_probe: is there a device this process can use?
//
// Exit 0 when the device count is at least one and device 0 accepts a context;
// otherwise print why on stdout and exit 1. gpu_or_skip.sh runs it (without
// GCOLL_CUDA=emulate, so on the CUDA runtime) before every `gpu` MPI test to choose
// between the real GPU and the emulated one. It touches no MPI. With -v it also prints
// one line per device (name, compute capability, memory, compute mode), which the GPU
// test logs then show. Through gpu_api.h like the tests: under GCOLL_CUDA=emulate (with
// libgcoll.so preloaded) it reports the emulated GPU. Built without CUDA (gpu_api.c
// without the CUDA runtime), it fails with "built without CUDA: ...": gpu_or_skip.sh
// then runs the test on the emulated GPU, the only one such a build has.
#include <cstdio>
#include <cstring>

#include "gpu_api.h"

int main(int argc, char **argv) {
  const bool verbose = argc > 1 && std::strcmp(argv[1], "-v") == 0;
  if (!gpu_have_cuda() && !gpu_emulated()) {
    std::printf("%s\n", gpu_error_string(GPU_API_ERR_NO_CUDA));
    return 1;
  }
  int n = 0;
  int e = gpu_device_count(&n);
  if (e != 0) {
    std::printf("%s device count failed: %s (error %d)\n", gpu_mode_name(), gpu_error_string(e), e);
    return 1;
  }
  if (n < 1) {
    std::printf("%s found no device\n", gpu_mode_name());
    return 1;
  }
  for (int d = 0; d < n && verbose; ++d) {
    char line[512];
    if (gpu_device_describe(d, line, sizeof line) == 0) std::printf("gpu %d: %s\n", d, line);
  }
  // A device can be listed yet unusable (prohibited compute mode, a broken driver).
  e = gpu_set_device(0);
  if (e != 0) {
    std::printf("device 0 is not usable: %s (%s error %d)\n", gpu_error_string(e), gpu_mode_name(), e);
    return 1;
  }
  if (verbose) std::printf("%d device(s) usable (%s)\n", n, gpu_mode_name());
  return 0;
}
