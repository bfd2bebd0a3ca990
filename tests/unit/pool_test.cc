// The buffer pool behind the staging buffers and the deviators' device scratch
// (mem/pool.h), over a counting allocator.
#include <cstdlib>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "mem/pool.h"

namespace gcoll {
namespace {

std::map<void *, std::size_t> g_live;  // allocations not freed: address -> bytes
int g_allocs = 0;

bool fake_alloc(int, std::size_t bytes, void **p, bool *tag) {
  *p = std::malloc(1);
  *tag = bytes > (1u << 20);
  g_live[*p] = bytes;
  ++g_allocs;
  return true;
}
void fake_free(int, void *p, bool) {
  g_live.erase(p);
  std::free(p);
}

struct PoolTest : ::testing::Test {
  void SetUp() override {
    g_live.clear();
    g_allocs = 0;
  }
};

TEST_F(PoolTest, PowersOfTwoFrom64KAndTheSmallestIdleThatFits) {
  BufferPool pool(fake_alloc, fake_free);
  std::size_t got = 0;
  void *a = pool.get(0, 1, &got);
  EXPECT_EQ(got, 65536u);
  void *b = pool.get(0, 100000, &got);
  EXPECT_EQ(got, 131072u);
  void *c = pool.get(0, 1 << 20, &got);
  EXPECT_EQ(got, 1u << 20);
  pool.put(a);
  pool.put(b);
  pool.put(c);
  EXPECT_EQ(pool.get(0, 70000, &got), b);  // not c: the smallest that fits
  EXPECT_EQ(got, 131072u);
  EXPECT_EQ(pool.get(0, 10, &got), a);
  EXPECT_EQ(g_allocs, 3);
  pool.put(a);
  pool.put(b);
  void *in_use = pool.get(0, 1 << 20);  // c again
  EXPECT_EQ(in_use, c);
  pool.clear();  // frees the idle ones only
  EXPECT_EQ(g_live.size(), 1u);
  EXPECT_EQ(g_live.count(c), 1u);
  pool.put(c);
  pool.clear();
  EXPECT_TRUE(g_live.empty());
}

TEST_F(PoolTest, KeysAreSeparateAndForeignPointersIgnored) {
  BufferPool pool(fake_alloc, fake_free);
  void *g0 = pool.get(0, 1000);
  pool.put(g0);
  void *g1 = pool.get(1, 1000);  // another GPU: a new buffer
  EXPECT_NE(g1, g0);
  EXPECT_EQ(g_allocs, 2);
  int local = 0;
  pool.put(&local);  // not the pool's: nothing happens
  pool.put(g1);
  pool.clear();
  EXPECT_TRUE(g_live.empty());
}

TEST_F(PoolTest, AtMostOneGibibyteIdleTheSmallestFreedFirst) {
  BufferPool pool(fake_alloc, fake_free);
  std::vector<void *> bufs;
  for (int i = 0; i < 3; ++i) bufs.push_back(pool.get(0, std::size_t{512} << 20));  // 3 x 512 MiB
  void *small = pool.get(0, 1);
  pool.put(small);
  for (void *p : bufs) pool.put(p);
  // 3 x 512 MiB + 64 KiB idle: the 64 KiB one and one 512 MiB buffer go.
  EXPECT_EQ(g_live.size(), 2u);
  EXPECT_EQ(g_live.count(small), 0u);
  pool.clear();
  EXPECT_TRUE(g_live.empty());
}

}  // namespace
}  // namespace gcoll
