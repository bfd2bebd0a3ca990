// Staging memory on the GPU's NUMA node (mem/numa_place.h): the node read from sysfs, and
// the thread's memory policy preferring it only while the scope lives, never over a
// policy the thread already had.
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "mem/numa_place.h"

namespace gcoll::numa_place {
namespace {

constexpr int kDefault = 0, kPreferred = 1, kBind = 2;

// The calling thread's policy mode, or -1 where the system call is refused (a container's
// seccomp profile without CAP_SYS_NICE).
int policy_mode() {
  int mode = -1;
  unsigned long mask[16] = {};
  if (syscall(SYS_get_mempolicy, &mode, mask, 1024UL, nullptr, 0UL) != 0) return -1;
  return mode;
}

TEST(NumaPlace, NodeFromSysfs) {
  char tmpl[] = "/tmp/gcoll-numa-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const auto put = [&](const std::string &bus, const std::string &text) {
    const std::string dir = root + "/bus/pci/devices/" + bus;
    ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
    std::ofstream(dir + "/numa_node") << text << "\n";
  };
  put("0000:3b:00.0", "1");
  put("0000:86:00.0", "-1");
  EXPECT_EQ(sysfs_numa_node("0000:3b:00.0", root), 1);
  EXPECT_EQ(sysfs_numa_node("00000000:3B:00.0", root), 1);  // CUDA's spelling
  EXPECT_EQ(sysfs_numa_node("0000:86:00.0", root), -1);     // the kernel does not know
  EXPECT_EQ(sysfs_numa_node("0000:af:00.0", root), -1);     // no such device
  EXPECT_EQ(sysfs_numa_node("", root), -1);
  std::system(("rm -rf '" + root + "'").c_str());
}

TEST(NumaPlace, PrefersTheNodeOnlyInsideTheScope) {
  if (policy_mode() != kDefault) GTEST_SKIP() << "memory policy calls refused here, or a policy already set";
  {
    PreferNode near(0);  // node 0 exists on every Linux machine
    EXPECT_TRUE(near.active());
    EXPECT_EQ(policy_mode(), kPreferred);
  }
  EXPECT_EQ(policy_mode(), kDefault);
}

TEST(NumaPlace, UnknownOrAbsentNodesChangeNothing) {
  if (policy_mode() != kDefault) GTEST_SKIP() << "memory policy calls refused here, or a policy already set";
  PreferNode unknown(-1), absent(1000);
  EXPECT_FALSE(unknown.active());
  EXPECT_FALSE(absent.active());
  EXPECT_EQ(policy_mode(), kDefault);
}

TEST(NumaPlace, TheThreadsOwnPolicyWins) {
  if (policy_mode() != kDefault) GTEST_SKIP() << "memory policy calls refused here, or a policy already set";
  unsigned long node0 = 1;
  ASSERT_EQ(syscall(SYS_set_mempolicy, kBind, &node0, 64UL), 0);
  {
    PreferNode near(0);
    EXPECT_FALSE(near.active());
    EXPECT_EQ(policy_mode(), kBind);
  }
  EXPECT_EQ(policy_mode(), kBind);
  syscall(SYS_set_mempolicy, kDefault, nullptr, 0UL);
}

}  // namespace
}  // namespace gcoll::numa_place
