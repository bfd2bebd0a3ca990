// The CUDA driver layer: classification and the IPC caches against a fake driver, and the
// real driver on this machine (no GPU on CI: it must say so silently).
#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/stats.h"
#include "cuda/device.h"
#include "cuda/driver_gate.h"

namespace gcoll {
namespace cuda {
namespace {

struct FakeAlloc {
  std::uintptr_t base;
  std::size_t size;
  std::uint64_t id;
  bool ipc_capable;
  int ordinal;
};

// Device allocations are address ranges nobody dereferences; handles carry a serial
// number so that two exports can be told apart; opened mappings are fake addresses,
// tracked so that closing one twice (or one never opened) is counted.
class FakeDriver final : public Driver {
 public:
  bool usable() override { return usable_; }

  Status query(const void *p, PtrInfo *out) override {
    ++queries;
    *out = PtrInfo{};
    if (!ok(query_result)) return query_result;
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    // With an epoch (with_epoch()), answers are cacheable: host ones for the pointer
    // alone, device ones for their allocation.
    out->cacheable = epoch_ != nullptr && cacheable;
    out->lo = a;
    out->hi = a + 1;
    for (const FakeAlloc &f : allocs) {
      if (a >= f.base && a < f.base + f.size) {
        out->device = true;
        out->ordinal = f.ordinal;
        out->base = f.base;
        out->size = f.size;
        out->buffer_id = f.id;
        out->ipc_capable = f.ipc_capable;
        out->lo = f.base;
        out->hi = f.base + f.size;
        break;
      }
    }
    return Status::Ok;
  }

  Status ipc_export(std::uintptr_t base, IpcHandle *out) override {
    ++exports;
    if (!ok(export_result)) return export_result;
    std::memset(out->bytes, 0, sizeof out->bytes);
    const std::uint64_t serial = next_serial++;
    std::memcpy(out->bytes, &serial, sizeof serial);
    std::memcpy(out->bytes + 8, &base, sizeof base);
    return Status::Ok;
  }

  Status ipc_open(const IpcHandle &, void **out) override {
    ++opens;
    *out = nullptr;
    if (!ok(open_result)) return open_result;
    // As the H200's driver did (CUDA_ERROR_ALREADY_MAPPED) while a stale mapping of the
    // exporter was still open: refused while any of these is mapped.
    for (void *b : refuse_while_mapped)
      if (mapped.count(b)) {
        ++refusals;
        return Status::ErrInternal;
      }
    void *p = reinterpret_cast<void *>(next_local);
    next_local += 1 << 20;
    mapped.insert(p);
    *out = p;
    return Status::Ok;
  }

  Status ipc_close(void *p) override {
    ++closes;
    if (!mapped.erase(p)) {
      ++bad_closes;
      return Status::ErrInternal;
    }
    return Status::Ok;
  }

  // Turns on the memory-kind cache for this driver: `epoch` is its kind_epoch().
  void with_epoch() { epoch_ = &epoch; }
  // The driver's part of a free or an unmap: the epoch moves on.
  void changed() { epoch.fetch_add(1); }

  std::atomic<std::uint64_t> epoch{1};
  bool cacheable = true;
  bool usable_ = true;
  Status query_result = Status::Ok, export_result = Status::Ok, open_result = Status::Ok;
  std::vector<FakeAlloc> allocs;
  std::set<void *> mapped;
  std::set<void *> refuse_while_mapped;
  int queries = 0, exports = 0, opens = 0, closes = 0, bad_closes = 0, refusals = 0;

 private:
  std::uint64_t next_serial = 1;
  std::uintptr_t next_local = 0x7f0000000000;
};

bool same(const IpcHandle &a, const IpcHandle &b) { return std::memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0; }

IpcHandle handle(unsigned char tag) {
  IpcHandle h;
  std::memset(h.bytes, tag, sizeof h.bytes);
  return h;
}

PtrInfo device_buf(std::uintptr_t base, std::uint64_t id, std::size_t size = 4096, bool ipc = true) {
  PtrInfo p;
  p.device = true;
  p.ordinal = 0;
  p.base = base;
  p.size = size;
  p.buffer_id = id;
  p.ipc_capable = ipc;
  return p;
}

// Every test leaves the process's driver as it found it.
class CudaDevice : public ::testing::Test {
 protected:
  void TearDown() override { set_driver_for_testing(nullptr); }
  FakeDriver fake;
};

// ---- classify ------------------------------------------------------------------

TEST_F(CudaDevice, ClassifyHostPointerIsHost) {
  fake.allocs.push_back({0x100000000, 1 << 20, 7, true, 1});
  set_driver_for_testing(&fake);
  EXPECT_EQ(&driver(), &fake);
  int local = 0;
  const PtrInfo i = classify(&local);
  EXPECT_FALSE(i.device);
  EXPECT_EQ(i.base, 0u);
  EXPECT_EQ(i.buffer_id, 0u);
  EXPECT_EQ(fake.queries, 1);
  EXPECT_FALSE(classify(nullptr).device);
  EXPECT_EQ(fake.queries, 1);  // nullptr is host without asking
}

TEST_F(CudaDevice, ClassifyDevicePointerFillsItsAllocation) {
  fake.allocs.push_back({0x100000000, 1 << 20, 7, true, 1});
  fake.allocs.push_back({0x200000000, 4096, 8, false, 0});
  set_driver_for_testing(&fake);
  PtrInfo i = classify(reinterpret_cast<const void *>(0x100000000 + 100));
  EXPECT_TRUE(i.device);
  EXPECT_EQ(i.base, 0x100000000u);
  EXPECT_EQ(i.size, std::size_t{1} << 20);
  EXPECT_EQ(i.buffer_id, 7u);
  EXPECT_TRUE(i.ipc_capable);
  EXPECT_EQ(i.ordinal, 1);
  i = classify(reinterpret_cast<const void *>(0x200000000));
  EXPECT_TRUE(i.device);
  EXPECT_EQ(i.base, 0x200000000u);
  EXPECT_EQ(i.buffer_id, 8u);
  EXPECT_FALSE(i.ipc_capable);
  EXPECT_EQ(i.ordinal, 0);
  // Just past the end: not the allocation.
  EXPECT_FALSE(classify(reinterpret_cast<const void *>(0x200000000 + 4096)).device);
}

TEST_F(CudaDevice, ClassifyDriverErrorIsHostAndWarnsOnce) {
  fake.allocs.push_back({0x100000000, 1 << 20, 7, true, 1});
  fake.query_result = Status::ErrInternal;
  set_driver_for_testing(&fake);
  testing::internal::CaptureStderr();
  const PtrInfo a = classify(reinterpret_cast<const void *>(0x100000000));
  const std::string first = testing::internal::GetCapturedStderr();
  testing::internal::CaptureStderr();
  const PtrInfo b = classify(reinterpret_cast<const void *>(0x100000000));
  const std::string second = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(a.device);
  EXPECT_FALSE(b.device);
  EXPECT_EQ(a.base, 0u);
  EXPECT_EQ(fake.queries, 2);
  EXPECT_NE(first.find("pointer query failed"), std::string::npos) << first;
  EXPECT_EQ(second, "");  // once per process
}

TEST_F(CudaDevice, ClassifyUnusableDriverDoesNotQuery) {
  fake.allocs.push_back({0x100000000, 1 << 20, 7, true, 1});
  fake.usable_ = false;
  set_driver_for_testing(&fake);
  EXPECT_FALSE(usable());
  EXPECT_FALSE(classify(reinterpret_cast<const void *>(0x100000000)).device);
  EXPECT_EQ(fake.queries, 0);
}

// ---- KindCache and classify's use of it -------------------------------------------

PtrInfo cacheable_host(std::uintptr_t p) {
  PtrInfo i;
  i.cacheable = true;
  i.lo = p;
  i.hi = p + 1;
  return i;
}

TEST(KindCache, HitsOnlyUnderTheSameEpochAndInsideTheRange) {
  KindCache c;
  PtrInfo out;
  EXPECT_FALSE(c.lookup(reinterpret_cast<const void *>(0x1000), 1, &out));
  c.insert(reinterpret_cast<const void *>(0x1000), 1, cacheable_host(0x1000));
  EXPECT_TRUE(c.lookup(reinterpret_cast<const void *>(0x1000), 1, &out));
  EXPECT_FALSE(out.device);
  EXPECT_FALSE(c.lookup(reinterpret_cast<const void *>(0x1000), 2, &out));  // the epoch moved on
  EXPECT_FALSE(c.lookup(reinterpret_cast<const void *>(0x1001), 1, &out));  // another pointer
  PtrInfo d = device_buf(0x100000000, 7, 1 << 20);
  d.cacheable = true;
  d.lo = d.base;
  d.hi = d.base + d.size;
  c.insert(reinterpret_cast<const void *>(0x100000000 + 64), 3, d);
  ASSERT_TRUE(c.lookup(reinterpret_cast<const void *>(0x100000000 + 64), 3, &out));
  EXPECT_TRUE(out.device);
  EXPECT_EQ(out.buffer_id, 7u);
  c.clear();
  EXPECT_FALSE(c.lookup(reinterpret_cast<const void *>(0x100000000 + 64), 3, &out));
}

TEST(KindCache, RefusesWhatTheDriverDoesNotVouchFor) {
  KindCache c;
  PtrInfo out, i = cacheable_host(0x1000);
  i.cacheable = false;
  c.insert(reinterpret_cast<const void *>(0x1000), 1, i);
  EXPECT_FALSE(c.lookup(reinterpret_cast<const void *>(0x1000), 1, &out));
  c.insert(reinterpret_cast<const void *>(0x2000), 1, cacheable_host(0x1000));  // p outside [lo, hi)
  EXPECT_FALSE(c.lookup(reinterpret_cast<const void *>(0x2000), 1, &out));
  c.insert(reinterpret_cast<const void *>(0x1000), 0, cacheable_host(0x1000));  // epoch 0: none
  EXPECT_FALSE(c.lookup(reinterpret_cast<const void *>(0x1000), 0, &out));
}

// The send and the receive buffer of a call, wherever they lie, never evict each other.
TEST(KindCache, AnyTwoPointersStayTogether) {
  KindCache c;
  PtrInfo out;
  for (std::uintptr_t a = 0x10000; a < 0x10000 + 64 * 8; a += 8) {
    const std::uintptr_t b = 0x7f0000001000;
    c.insert(reinterpret_cast<const void *>(a), 5, cacheable_host(a));
    c.insert(reinterpret_cast<const void *>(b), 5, cacheable_host(b));
    EXPECT_TRUE(c.lookup(reinterpret_cast<const void *>(a), 5, &out)) << a;
    EXPECT_TRUE(c.lookup(reinterpret_cast<const void *>(b), 5, &out)) << a;
  }
}

std::uint64_t counter(Counter c) { return process_stats().total(c); }

TEST_F(CudaDevice, ClassifyAsksOnceWhileTheEpochHolds) {
  fake.allocs.push_back({0x100000000, 1 << 20, 7, true, 1});
  fake.with_epoch();
  set_driver_for_testing(&fake);
  int local = 0;
  const std::uint64_t q0 = counter(Counter::PointerQueries), h0 = counter(Counter::KindCacheHits);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(classify(&local).device);
    const PtrInfo d = classify(reinterpret_cast<const void *>(0x100000000 + 8));
    EXPECT_TRUE(d.device);
    EXPECT_EQ(d.buffer_id, 7u);
  }
  EXPECT_EQ(fake.queries, 2);
  EXPECT_EQ(counter(Counter::PointerQueries) - q0, 2u);
  EXPECT_EQ(counter(Counter::KindCacheHits) - h0, 18u);
}

TEST_F(CudaDevice, ClassifyAsksAgainAfterTheEpochMoves) {
  fake.allocs.push_back({0x100000000, 1 << 20, 7, true, 1});
  fake.with_epoch();
  set_driver_for_testing(&fake);
  const void *p = reinterpret_cast<const void *>(0x100000000);
  EXPECT_TRUE(classify(p).device);
  EXPECT_TRUE(classify(p).device);
  EXPECT_EQ(fake.queries, 1);
  // Freed, and the address reused as host memory: the driver's epoch moved on.
  fake.allocs.clear();
  fake.changed();
  EXPECT_FALSE(classify(p).device);
  EXPECT_EQ(fake.queries, 2);
  // ... and then as another device allocation.
  fake.allocs.push_back({0x100000000, 4096, 9, false, 0});
  fake.changed();
  const PtrInfo i = classify(p);
  EXPECT_TRUE(i.device);
  EXPECT_EQ(i.buffer_id, 9u);
  EXPECT_FALSE(i.ipc_capable);
  EXPECT_EQ(fake.queries, 3);
}

TEST_F(CudaDevice, ClassifyAsksEveryTimeWithoutEpochOrCacheableAnswer) {
  int local = 0;
  set_driver_for_testing(&fake);  // no epoch
  classify(&local);
  classify(&local);
  EXPECT_EQ(fake.queries, 2);
  fake.with_epoch();
  fake.cacheable = false;  // e.g. device memory on the real driver
  classify(&local);
  classify(&local);
  EXPECT_EQ(fake.queries, 4);
}

// Each thread has its own cache; a driver replaced for a test starts from nothing.
TEST_F(CudaDevice, ClassifyCachesPerThreadAndPerDriver) {
  int local = 0;
  fake.with_epoch();
  set_driver_for_testing(&fake);
  classify(&local);
  classify(&local);
  EXPECT_EQ(fake.queries, 1);
  std::thread([&] {
    classify(&local);
    classify(&local);
  }).join();
  EXPECT_EQ(fake.queries, 2);
  FakeDriver other;
  other.with_epoch();  // the same epoch value (1) as `fake`
  other.allocs.push_back({reinterpret_cast<std::uintptr_t>(&local), 64, 3, true, 0});
  set_driver_for_testing(&other);
  EXPECT_TRUE(classify(&local).device);
  EXPECT_EQ(other.queries, 1);
}

// ---- IpcExportCache -------------------------------------------------------------

TEST_F(CudaDevice, ExportCacheHitDoesNotCallTheDriver) {
  IpcExportCache c(fake);
  IpcHandle h1, h2;
  ASSERT_EQ(c.get(device_buf(0x100000000, 7), &h1), Status::Ok);
  ASSERT_EQ(c.get(device_buf(0x100000000, 7), &h2), Status::Ok);
  EXPECT_EQ(fake.exports, 1);
  EXPECT_TRUE(same(h1, h2));
  EXPECT_EQ(c.size(), 1u);
}

TEST_F(CudaDevice, ExportCacheNewIdAtSameBaseGetsNewHandle) {
  IpcExportCache c(fake);
  IpcHandle h1, h2, h3;
  ASSERT_EQ(c.get(device_buf(0x100000000, 7), &h1), Status::Ok);
  ASSERT_EQ(c.get(device_buf(0x100000000, 9), &h2), Status::Ok);
  EXPECT_EQ(fake.exports, 2);
  EXPECT_FALSE(same(h1, h2));
  EXPECT_EQ(c.size(), 1u);  // the stale entry is gone
  ASSERT_EQ(c.get(device_buf(0x100000000, 9), &h3), Status::Ok);
  EXPECT_EQ(fake.exports, 2);
  EXPECT_TRUE(same(h2, h3));
}

TEST_F(CudaDevice, ExportCacheEvictsLeastRecentlyUsed) {
  IpcExportCache c(fake, 2);
  IpcHandle h;
  ASSERT_EQ(c.get(device_buf(0x1000000, 1), &h), Status::Ok);  // a
  ASSERT_EQ(c.get(device_buf(0x2000000, 2), &h), Status::Ok);  // b
  ASSERT_EQ(c.get(device_buf(0x1000000, 1), &h), Status::Ok);  // a again: b is now the oldest
  ASSERT_EQ(c.get(device_buf(0x3000000, 3), &h), Status::Ok);  // c evicts b
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(fake.exports, 3);
  ASSERT_EQ(c.get(device_buf(0x1000000, 1), &h), Status::Ok);  // a: still there
  ASSERT_EQ(c.get(device_buf(0x3000000, 3), &h), Status::Ok);  // c: still there
  EXPECT_EQ(fake.exports, 3);
  ASSERT_EQ(c.get(device_buf(0x2000000, 2), &h), Status::Ok);  // b: exported again
  EXPECT_EQ(fake.exports, 4);
  EXPECT_EQ(c.size(), 2u);
}

TEST_F(CudaDevice, ExportCacheRefusesNonIpcBuffersAndKeepsNoFailure) {
  IpcExportCache c(fake);
  IpcHandle h;
  EXPECT_EQ(c.get(device_buf(0x1000000, 1, 4096, false), &h), Status::NotSupported);
  EXPECT_EQ(c.get(PtrInfo{}, &h), Status::NotSupported);
  EXPECT_EQ(fake.exports, 0);
  fake.export_result = Status::ErrInternal;
  EXPECT_EQ(c.get(device_buf(0x1000000, 1), &h), Status::ErrInternal);
  EXPECT_EQ(c.size(), 0u);
  fake.export_result = Status::Ok;
  EXPECT_EQ(c.get(device_buf(0x1000000, 1), &h), Status::Ok);
  EXPECT_EQ(fake.exports, 2);
  EXPECT_EQ(c.size(), 1u);
}

// ---- IpcOpenCache ---------------------------------------------------------------

TEST_F(CudaDevice, OpenCacheReusesAMapping) {
  IpcOpenCache c(fake, 1 << 30);
  c.begin_call();
  void *a = nullptr, *b = nullptr, *other = nullptr;
  ASSERT_EQ(c.open(1, 0x1000000, 4096, 7, handle(1), &a), Status::Ok);
  c.begin_call();
  ASSERT_EQ(c.open(1, 0x1000000, 4096, 7, handle(1), &b), Status::Ok);
  EXPECT_EQ(a, b);
  EXPECT_EQ(fake.opens, 1);
  EXPECT_EQ(c.opens(), 1u);
  EXPECT_EQ(c.entries(), 1u);
  EXPECT_EQ(c.mapped_bytes(), 4096u);
  // Another peer's allocation at the same address is another mapping.
  ASSERT_EQ(c.open(2, 0x1000000, 4096, 7, handle(2), &other), Status::Ok);
  EXPECT_NE(other, a);
  EXPECT_EQ(c.entries(), 2u);
  EXPECT_EQ(fake.opens, 2);
}

TEST_F(CudaDevice, OpenCacheReplacesAStaleMapping) {
  IpcOpenCache c(fake, 1 << 30);
  c.begin_call();
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(c.open(1, 0x1000000, 4096, 7, handle(1), &a), Status::Ok);
  c.begin_call();
  ASSERT_EQ(c.open(1, 0x1000000, 8192, 8, handle(2), &b), Status::Ok);
  EXPECT_NE(a, b);
  EXPECT_EQ(c.stale(), 1u);
  EXPECT_EQ(fake.closes, 1);
  EXPECT_EQ(fake.bad_closes, 0);
  EXPECT_EQ(fake.mapped.count(a), 0u);  // the old mapping was the one closed
  EXPECT_EQ(fake.mapped.count(b), 1u);
  EXPECT_EQ(c.opens(), 2u);
  EXPECT_EQ(c.entries(), 1u);
  EXPECT_EQ(c.mapped_bytes(), 8192u);
  EXPECT_EQ(c.evictions(), 0u);
}

TEST_F(CudaDevice, OpenCacheByteBoundEvictsLeastRecentlyUsed) {
  IpcOpenCache c(fake, 300);
  void *a = nullptr, *b = nullptr, *p = nullptr;
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xa000, 100, 1, handle(1), &a), Status::Ok);
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xb000, 100, 2, handle(2), &b), Status::Ok);
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xc000, 100, 3, handle(3), &p), Status::Ok);
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xa000, 100, 1, handle(1), &p), Status::Ok);  // a used again: b is the oldest
  EXPECT_EQ(c.mapped_bytes(), 300u);
  EXPECT_EQ(c.evictions(), 0u);
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xd000, 100, 4, handle(4), &p), Status::Ok);  // 400 > 300: b goes
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_EQ(fake.closes, 1);
  EXPECT_EQ(fake.mapped.count(b), 0u);
  EXPECT_EQ(fake.mapped.count(a), 1u);
  EXPECT_EQ(c.mapped_bytes(), 300u);
  EXPECT_EQ(c.entries(), 3u);
  // b comes back through the driver; a is still mapped.
  const int before = fake.opens;
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xa000, 100, 1, handle(1), &p), Status::Ok);
  EXPECT_EQ(p, a);
  EXPECT_EQ(fake.opens, before);
  ASSERT_EQ(c.open(0, 0xb000, 100, 2, handle(2), &p), Status::Ok);
  EXPECT_EQ(fake.opens, before + 1);
  EXPECT_EQ(fake.bad_closes, 0);
}

TEST_F(CudaDevice, OpenCacheEntryBound) {
  IpcOpenCache c(fake, 1 << 30, 2);
  void *a = nullptr, *p = nullptr;
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xa000, 100, 1, handle(1), &a), Status::Ok);
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xb000, 100, 2, handle(2), &p), Status::Ok);
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xc000, 100, 3, handle(3), &p), Status::Ok);
  EXPECT_EQ(c.entries(), 2u);
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_EQ(fake.mapped.count(a), 0u);
  EXPECT_EQ(c.mapped_bytes(), 200u);
}

TEST_F(CudaDevice, OpenCacheKeepsMappingsOfTheCurrentCall) {
  IpcOpenCache c(fake, 200);
  void *a = nullptr, *b = nullptr, *cc = nullptr, *d = nullptr;
  c.begin_call();
  ASSERT_EQ(c.open(0, 0xa000, 100, 1, handle(1), &a), Status::Ok);
  ASSERT_EQ(c.open(0, 0xb000, 100, 2, handle(2), &b), Status::Ok);
  ASSERT_EQ(c.open(0, 0xc000, 100, 3, handle(3), &cc), Status::Ok);
  // The call holds all three: the bound is exceeded rather than a pointer closed.
  EXPECT_EQ(c.evictions(), 0u);
  EXPECT_EQ(c.mapped_bytes(), 300u);
  EXPECT_EQ(fake.closes, 0);
  // Next call: c is used first, so only a and b may go, oldest first.
  c.begin_call();
  void *p = nullptr;
  ASSERT_EQ(c.open(0, 0xc000, 100, 3, handle(3), &p), Status::Ok);
  EXPECT_EQ(p, cc);
  ASSERT_EQ(c.open(0, 0xd000, 100, 4, handle(4), &d), Status::Ok);
  EXPECT_EQ(c.evictions(), 2u);
  EXPECT_EQ(fake.mapped.count(a), 0u);
  EXPECT_EQ(fake.mapped.count(b), 0u);
  EXPECT_EQ(fake.mapped.count(cc), 1u);
  EXPECT_EQ(c.entries(), 2u);
  EXPECT_EQ(c.mapped_bytes(), 200u);
  // Still this call: c and d are pinned, so e exceeds the bound.
  ASSERT_EQ(c.open(0, 0xe000, 100, 5, handle(5), &p), Status::Ok);
  EXPECT_EQ(c.evictions(), 2u);
  EXPECT_EQ(c.mapped_bytes(), 300u);
  EXPECT_EQ(fake.mapped.count(cc), 1u);
  EXPECT_EQ(fake.mapped.count(d), 1u);
  EXPECT_EQ(fake.bad_closes, 0);
}

TEST_F(CudaDevice, OpenCacheClearClosesEveryMapping) {
  IpcOpenCache c(fake, 1 << 30);
  void *p = nullptr;
  c.begin_call();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(c.open(i, 0xa000, 100, 1, handle(1), &p), Status::Ok);
  c.clear();
  EXPECT_EQ(fake.closes, 3);
  EXPECT_EQ(fake.bad_closes, 0);
  EXPECT_TRUE(fake.mapped.empty());
  EXPECT_EQ(c.entries(), 0u);
  EXPECT_EQ(c.mapped_bytes(), 0u);
  // Usable again afterwards.
  ASSERT_EQ(c.open(0, 0xa000, 100, 1, handle(1), &p), Status::Ok);
  EXPECT_EQ(c.entries(), 1u);
  EXPECT_EQ(fake.opens, 4);
}

TEST_F(CudaDevice, OpenCacheDestructorClosesEveryMapping) {
  {
    IpcOpenCache c(fake, 1 << 30);
    void *p = nullptr;
    c.begin_call();
    for (int i = 0; i < 3; ++i) ASSERT_EQ(c.open(0, 0xa000 + i * 0x1000, 100, 1, handle(1), &p), Status::Ok);
    EXPECT_EQ(fake.mapped.size(), 3u);
  }
  EXPECT_EQ(fake.closes, 3);
  EXPECT_EQ(fake.bad_closes, 0);
  EXPECT_TRUE(fake.mapped.empty());
}

TEST_F(CudaDevice, OpenCacheFailureLeavesNoEntryAndRetries) {
  IpcOpenCache c(fake, 1 << 30);
  void *p = reinterpret_cast<void *>(1);
  c.begin_call();
  fake.open_result = Status::ErrInternal;
  EXPECT_EQ(c.open(0, 0xa000, 100, 1, handle(1), &p), Status::ErrInternal);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(c.entries(), 0u);
  EXPECT_EQ(c.mapped_bytes(), 0u);
  EXPECT_EQ(c.opens(), 0u);
  fake.open_result = Status::Ok;
  ASSERT_EQ(c.open(0, 0xa000, 100, 1, handle(1), &p), Status::Ok);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(fake.opens, 2);
  EXPECT_EQ(c.entries(), 1u);
  EXPECT_EQ(c.mapped_bytes(), 100u);
  // A failed replacement of a stale mapping: the old one is closed all the same.
  fake.open_result = Status::ErrInternal;
  c.begin_call();
  EXPECT_EQ(c.open(0, 0xa000, 100, 2, handle(2), &p), Status::ErrInternal);
  EXPECT_EQ(c.stale(), 1u);
  EXPECT_EQ(c.entries(), 0u);
  EXPECT_EQ(c.mapped_bytes(), 0u);
  EXPECT_TRUE(fake.mapped.empty());
  EXPECT_EQ(fake.bad_closes, 0);
}

TEST_F(CudaDevice, OpenCacheClosesOverlappingStaleMappings) {
  // The exporter freed [0x10000, +0x4000) and has a larger allocation at a lower address
  // that covers it: the old mapping is stale (live allocations never overlap).
  IpcOpenCache c(fake, 1 << 30);
  void *a = nullptr, *b = nullptr, *other = nullptr;
  c.begin_call();
  ASSERT_EQ(c.open(1, 0x10000, 0x4000, 7, handle(1), &a), Status::Ok);
  ASSERT_EQ(c.open(2, 0x10000, 0x4000, 3, handle(3), &other), Status::Ok);  // another exporter
  c.end_call();
  c.begin_call();
  ASSERT_EQ(c.open(1, 0x8000, 0x10000, 8, handle(2), &b), Status::Ok);
  EXPECT_EQ(c.stale(), 1u);
  EXPECT_EQ(fake.mapped.count(a), 0u);
  EXPECT_EQ(fake.mapped.count(other), 1u);
  EXPECT_EQ(c.entries(), 2u);
  EXPECT_EQ(fake.bad_closes, 0);
}

TEST_F(CudaDevice, OpenCacheRefusedOpenPurgesUnusedMappingsProcessWideAndRetries) {
  // Two communicators' caches; the first holds a stale mapping of exporter 1 (not
  // overlapping the new allocation), which makes the driver refuse the new one.
  IpcOpenCache world(fake, 1 << 30), split(fake, 1 << 30);
  void *old_one = nullptr, *keep = nullptr, *fresh = nullptr;
  world.begin_call();
  ASSERT_EQ(world.open(1, 0x100000, 0x1000, 5, handle(1), &old_one), Status::Ok);
  ASSERT_EQ(world.open(2, 0x100000, 0x1000, 6, handle(2), &keep), Status::Ok);  // exporter 2: untouched
  world.end_call();
  fake.refuse_while_mapped = {old_one};
  split.begin_call();
  ASSERT_EQ(split.open(1, 0x200000, 0x1000, 9, handle(3), &fresh), Status::Ok);
  EXPECT_EQ(fake.refusals, 1);
  EXPECT_EQ(split.retries(), 1u);
  EXPECT_EQ(world.purged(), 1u);
  EXPECT_EQ(fake.mapped.count(old_one), 0u);
  EXPECT_EQ(fake.mapped.count(keep), 1u);
  EXPECT_EQ(world.entries(), 1u);
  EXPECT_EQ(split.entries(), 1u);
  // The world communicator maps exporter 1's memory again when it needs it.
  void *again = nullptr;
  world.begin_call();
  ASSERT_EQ(world.open(1, 0x100000, 0x1000, 5, handle(1), &again), Status::Ok);
  EXPECT_EQ(fake.bad_closes, 0);
}

TEST_F(CudaDevice, OpenCacheNeverClosesAMappingACallUses) {
  // The stale-looking mapping is in use by the other cache's call: it stays, and the
  // refused open fails (the collective then fails on every rank) instead of pulling
  // memory from under a running kernel.
  IpcOpenCache world(fake, 1 << 30), split(fake, 1 << 30);
  void *busy = nullptr, *p = nullptr;
  world.begin_call();
  ASSERT_EQ(world.open(1, 0x100000, 0x1000, 5, handle(1), &busy), Status::Ok);  // no end_call: in use
  fake.refuse_while_mapped = {busy};
  split.begin_call();
  EXPECT_EQ(split.open(1, 0x200000, 0x1000, 9, handle(3), &p), Status::ErrInternal);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(fake.mapped.count(busy), 1u);
  EXPECT_EQ(world.purged(), 0u);
  EXPECT_EQ(split.entries(), 0u);
  // Once the world's call has ended, the same open succeeds.
  world.end_call();
  ASSERT_EQ(split.open(1, 0x200000, 0x1000, 9, handle(3), &p), Status::Ok);
  EXPECT_EQ(fake.mapped.count(busy), 0u);
  EXPECT_EQ(fake.bad_closes, 0);
}

// ---- the real driver --------------------------------------------------------------

// Whatever the machine has, asking is silent and a stack address is host memory.
TEST_F(CudaDevice, RealDriverIsQuiet) {
  set_driver_for_testing(nullptr);
  int local = 0;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  usable();
  const PtrInfo i = classify(&local);
  const PtrInfo n = classify(nullptr);
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(i.device);
  EXPECT_FALSE(n.device);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "");
}

// Whether the machine has an NVIDIA GPU, asked of the kernel driver, not of CUDA (the
// code under test): a GPU listed in /proc/driver/nvidia/gpus or a /dev/nvidiaN node.
bool machine_has_nvidia_gpu() {
  bool found = false;
  if (DIR *d = opendir("/proc/driver/nvidia/gpus")) {
    while (dirent *e = readdir(d)) found = found || e->d_name[0] != '.';
    closedir(d);
  }
  if (DIR *d = opendir("/dev")) {
    while (dirent *e = readdir(d))
      found = found || (std::strncmp(e->d_name, "nvidia", 6) == 0 &&
                        std::isdigit(static_cast<unsigned char>(e->d_name[6])));
    closedir(d);
  }
  return found;
}

// Without a GPU the real driver is not usable, and says nothing. Where the machine has a
// GPU (or GCOLL_TEST_HAVE_GPU is set) there is nothing to check: skipped.
TEST_F(CudaDevice, RealDriverNotUsableWithoutGpu) {
  if (std::getenv("GCOLL_TEST_HAVE_GPU")) GTEST_SKIP() << "GCOLL_TEST_HAVE_GPU is set";
  if (machine_has_nvidia_gpu()) GTEST_SKIP() << "this machine has an NVIDIA GPU";
  set_driver_for_testing(nullptr);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const bool u = usable();
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(u);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "");
}

// ---- when the real driver is loaded (driver_gate.h) ------------------------------------

TEST(LibraryWatch, NameRule) {
  EXPECT_TRUE(library_name_matches("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so"));
  EXPECT_TRUE(library_name_matches("libcuda.so", "libcuda.so"));
  EXPECT_TRUE(library_name_matches("/x/libcuda.so.580.95.05", "libcuda.so"));
  EXPECT_FALSE(library_name_matches("/x/libcudart.so.13", "libcuda.so"));
  EXPECT_FALSE(library_name_matches("/x/libcuda.sox", "libcuda.so"));
  EXPECT_FALSE(library_name_matches("/libcuda.so.1/libfoo.so", "libcuda.so"));
  EXPECT_FALSE(library_name_matches("", "libcuda.so"));
  EXPECT_FALSE(library_name_matches(nullptr, "libcuda.so"));
}

// Found where loaded; an absent one is listed once and then only after the loader loaded
// something; a library the process loads later is found at the next look.
TEST(LibraryWatch, FindsLoadedLibrariesAndListsOnlyAfterLoads) {
  LibraryWatch libc("libc.so");
  EXPECT_TRUE(libc.loaded());
  EXPECT_TRUE(libc.loaded());
  EXPECT_EQ(libc.scans(), 1u);  // found for good

  LibraryWatch none("libgcoll_no_such_library.so");
  EXPECT_FALSE(none.loaded());
  EXPECT_EQ(none.scans(), 1u);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(none.loaded());
  EXPECT_EQ(none.scans(), 1u);  // nothing loaded meanwhile: no listing

  // glibc's libanl: present wherever glibc is, loaded by nobody here.
  LibraryWatch anl("libanl.so");
  if (anl.loaded()) GTEST_SKIP() << "libanl is loaded in this process already";
  void *h = dlopen("libanl.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) GTEST_SKIP() << "no libanl.so.1 here";
  EXPECT_TRUE(anl.loaded());
  EXPECT_FALSE(none.loaded());  // the loader's counters moved: listed again
  EXPECT_EQ(none.scans(), 2u);
  dlclose(h);
}

// The gate's steps, counted.
struct FakeSteps {
  bool enabled = true, visible = false;
  std::atomic<bool> loaded{false};
  bool probe_result = true;
  std::atomic<int> probes{0}, dormants{0}, looks{0};
  DriverGate::Steps steps() {
    return DriverGate::Steps{[this] { return enabled; }, [this] { return visible; },
                             [this] {
                               ++looks;
                               return loaded.load();
                             },
                             [this] { ++dormants; },
                             [this] {
                               ++probes;
                               return probe_result;
                             }};
  }
};

using State = DriverGate::State;

TEST(DriverGate, OffNeverLooksNorProbes) {
  FakeSteps f;
  f.enabled = false;
  f.visible = true;
  f.loaded = true;
  DriverGate g(f.steps());
  EXPECT_FALSE(g.usable());
  EXPECT_FALSE(g.active());
  EXPECT_FALSE(g.load());
  EXPECT_EQ(g.state(), State::Absent);
  EXPECT_EQ(f.probes, 0);
  EXPECT_EQ(f.looks, 0);
}

// No GPU visible and no libcuda at the first question: host memory only, for good (the
// host fast path); only a tool's load() probes.
TEST(DriverGate, NoGpuVisibleIsAbsentForGood) {
  FakeSteps f;
  DriverGate g(f.steps());
  EXPECT_FALSE(g.usable());
  EXPECT_EQ(g.state(), State::Absent);
  f.loaded = true;
  EXPECT_FALSE(g.usable());
  EXPECT_FALSE(g.active());
  EXPECT_EQ(f.probes, 0);
  EXPECT_TRUE(g.load());
  EXPECT_EQ(f.probes, 1);
  EXPECT_EQ(g.state(), State::Active);
}

// A GPU visible, libcuda not loaded: usable (communicators classify), never probed, until
// the application loads libcuda; then one probe, at the next look.
TEST(DriverGate, DormantUntilTheApplicationLoadsTheDriver) {
  FakeSteps f;
  f.visible = true;
  DriverGate g(f.steps());
  EXPECT_TRUE(g.usable());
  EXPECT_EQ(g.state(), State::Dormant);
  EXPECT_EQ(f.dormants, 1);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(g.active());
  EXPECT_TRUE(g.usable());
  EXPECT_EQ(f.probes, 0);
  f.loaded = true;
  EXPECT_TRUE(g.active());
  EXPECT_EQ(g.state(), State::Active);
  EXPECT_TRUE(g.active());
  EXPECT_TRUE(g.usable());
  EXPECT_EQ(f.probes, 1);
  EXPECT_EQ(f.dormants, 1);
}

// The application's libcuda is no usable driver (the toolkit's stub, no device): not
// usable from then on, and never probed again.
TEST(DriverGate, AFailedProbeIsFinal) {
  FakeSteps f;
  f.visible = true;
  f.probe_result = false;
  DriverGate g(f.steps());
  EXPECT_TRUE(g.usable());
  f.loaded = true;
  EXPECT_FALSE(g.active());
  EXPECT_FALSE(g.usable());
  EXPECT_FALSE(g.active());
  EXPECT_FALSE(g.load());
  EXPECT_EQ(g.state(), State::Absent);
  EXPECT_EQ(f.probes, 1);
}

// Loaded before the first question: probed then (as before the gate existed).
TEST(DriverGate, LoadedAtTheFirstQuestionProbesAtOnce) {
  FakeSteps f;
  f.loaded = true;
  DriverGate g(f.steps());
  EXPECT_TRUE(g.usable());
  EXPECT_EQ(g.state(), State::Active);
  EXPECT_EQ(f.probes, 1);
  EXPECT_EQ(f.dormants, 0);
}

TEST(DriverGate, ManyThreadsWakeItOnce) {
  FakeSteps f;
  f.visible = true;
  DriverGate g(f.steps());
  ASSERT_TRUE(g.usable());
  f.loaded = true;
  std::vector<std::thread> ts;
  std::atomic<int> active{0};
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 100; ++i) active += g.active() ? 1 : 0;
    });
  for (std::thread &t : ts) t.join();
  EXPECT_EQ(active, 800);
  EXPECT_EQ(f.probes, 1);
}

// This process (a unit test) has not loaded libcuda: the real driver never maps it,
// whether or not it counts as usable here (a GPU visible: Dormant).
TEST_F(CudaDevice, RealDriverLeavesLibcudaUnloaded) {
  set_driver_for_testing(nullptr);
  if (LibraryWatch("libcuda.so").loaded()) GTEST_SKIP() << "libcuda is loaded in this process already";
  int local = 0;
  usable();
  (void)classify(&local);
  (void)driver().active();
  EXPECT_FALSE(LibraryWatch("libcuda.so").loaded());
}

}  // namespace
}  // namespace cuda
}  // namespace gcoll
