// Which UCX_TLS values let UCX load a transport (net/ucx_internal.h: tls_allows): gcoll
// sets a transport's keys on its own UCX configuration only where the transport loads,
// since UCX warns about keys nothing used ("invalid configuration").
#include <gtest/gtest.h>

#include "net/ucx_internal.h"

namespace {

using gcoll::ucx::tls_allows;

bool cuda_ipc(const char *tls) { return tls_allows(tls, {"cuda", "cuda_ipc"}, {}); }
bool mm(const char *tls) { return tls_allows(tls, {"shm", "sm", "mm"}, {"posix", "sysv", "xpmem"}); }

TEST(UcxTls, CudaIpc) {
  EXPECT_TRUE(cuda_ipc("all"));
  EXPECT_TRUE(cuda_ipc("cuda"));
  EXPECT_TRUE(cuda_ipc("rc,cuda_ipc,cuda_copy"));
  EXPECT_TRUE(cuda_ipc("cuda_ipc:aux"));
  EXPECT_TRUE(cuda_ipc("^tcp"));
  EXPECT_FALSE(cuda_ipc("^cuda_ipc"));
  EXPECT_FALSE(cuda_ipc("^tcp,cuda"));
  EXPECT_FALSE(cuda_ipc("tcp,self,cuda_copy"));
  EXPECT_FALSE(cuda_ipc("shm,self"));
}

TEST(UcxTls, SharedMemory) {
  EXPECT_TRUE(mm("all"));
  EXPECT_TRUE(mm("sm,self"));
  EXPECT_TRUE(mm("posix,tcp"));
  EXPECT_TRUE(mm("^tcp"));
  EXPECT_TRUE(mm("^posix"));  // an exclusion of one member leaves the others
  EXPECT_FALSE(mm("^shm"));
  EXPECT_FALSE(mm("tcp,self"));
}

}  // namespace
