// UCX's memory hooks as the real driver's memory-kind cache uses them (cuda/vm_hooks.h):
// they load in a plain process (UCX is a dependency of the build, so they must) and the
// epoch moves on before memory is unmapped. Registered only in builds with CUDA and
// UCX's ucm.h. Before 2026-11-26 gcoll loaded libucm.so.0 by itself, which fails
// (undefined symbol ucs_load_modules): on a real GPU every host buffer was then queried
// at every call.
#include <sys/mman.h>

#include <string>

#include <gtest/gtest.h>

#include "cuda/vm_hooks.h"

namespace {

TEST(VmHooks, InstallAndSeeUnmap) {
  std::string why;
  ASSERT_TRUE(gcoll::cuda::install_vm_hooks(&why)) << why;
  const std::uint64_t e0 = gcoll::cuda::vm_epoch().load();
  void *p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  static_cast<char *>(p)[0] = 1;
  ASSERT_EQ(munmap(p, 1 << 20), 0);
  EXPECT_GT(gcoll::cuda::vm_epoch().load(), e0) << "no map or unmap event reached the handler";
  // A second call answers as the first.
  EXPECT_TRUE(gcoll::cuda::install_vm_hooks(nullptr));
}

}  // namespace
