// The emulated GPU (src/cuda/emulate.h): memory kinds and classification, device memory
// the CPU cannot touch, streams whose work really runs later, work ordered with the host
// (host functions, stream memory operations, the C API's streams), IPC between processes,
// reductions, process exit with streams still busy, and the machine of a topology file
// (GCOLL_TOPO_FILE): several devices, current devices per thread, peer access and IPC
// between devices as the file has them.
//
// Asynchrony is checked deterministically: with a large delay, kSlowOps operations are
// queued ahead of the one under test, then the delay is lowered to 0 and the state is
// read through another stream, whose copy runs at once. The queued work takes 0 to
// kSlowOps * 20 ms, 240 ms on average; the chance that it is all done within 50 ms is
// about 1e-14.
//
// Tests that need a second process run this binary again (posix_spawn, safe with the
// worker threads of this one) with a filter naming an EmuChild test and its inputs in
// the environment; without those, the EmuChild tests skip. Settings (GCOLL_TOPO_FILE) are
// read once per process from its environment: the tests of a topology file run in such
// children.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/stats.h"
#include "cuda/device.h"
#include "cuda/emulate.h"
#include "gcoll/gcoll_emulate.h"
#include "kernels/compress.h"
#include "kernels/host_reduce.h"
#include "topo/topo_xml.h"

extern char **environ;

namespace gcoll {
namespace cuda {
namespace {

constexpr int kSlowUs = 20000;
constexpr int kSlowOps = 24;
constexpr std::size_t kBytes = 4096;

// Small delays by default so that the suite is fast but work still runs later.
class Emu : public ::testing::Test {
 protected:
  void SetUp() override { emu::set_delay_for_testing(50); }
  void TearDown() override { emu::set_delay_for_testing(-1); }
};

// ---- helpers -------------------------------------------------------------------------

// Memory from the emulation, freed at scope exit.
struct Buffer {
  Buffer(std::size_t bytes, int kind) {
    rc = emu::malloc(&p, bytes, kind);
  }
  ~Buffer() {
    if (p) emu::free(p);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  unsigned char *bytes() const { return static_cast<unsigned char *>(p); }
  void *p = nullptr;
  int rc;
};

struct StreamGuard {
  StreamGuard() { EXPECT_EQ(emulated_runtime().stream_create(&s), Status::Ok); }
  ~StreamGuard() { emulated_runtime().stream_destroy(s); }
  Stream s = nullptr;
};

struct EventGuard {
  EventGuard() { EXPECT_EQ(emulated_runtime().event_create(&e), Status::Ok); }
  ~EventGuard() { emulated_runtime().event_destroy(e); }
  Event e = nullptr;
};

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + 1) & 0xff);
  return v;
}

bool all_equal(const unsigned char *p, std::size_t n, unsigned char value) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != value) return false;
  return true;
}

// Queues kSlowOps operations, each with a delay of up to kSlowUs, ahead of what the caller
// queues next on the same stream. `enqueue_one` queues one (small) operation.
template <class F>
void queue_slow_work(F enqueue_one) {
  emu::set_delay_for_testing(kSlowUs);
  for (int i = 0; i < kSlowOps; ++i) enqueue_one();
}

// Copies device memory out through stream s (delay 0: runs at once) and returns it.
std::vector<unsigned char> peek(const void *dev, std::size_t n, Stream s, void *pinned) {
  Runtime &rt = emulated_runtime();
  emu::set_delay_for_testing(0);
  EXPECT_EQ(rt.memcpy_async(pinned, dev, n, s), Status::Ok);
  EXPECT_EQ(rt.stream_synchronize(s), Status::Ok);
  const auto *b = static_cast<const unsigned char *>(pinned);
  return std::vector<unsigned char>(b, b + n);
}

std::string to_hex(const IpcHandle &h) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (unsigned char c : h.bytes) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

IpcHandle from_hex(const std::string &s) {
  IpcHandle h{};
  for (std::size_t i = 0; i < sizeof h.bytes && 2 * i + 1 < s.size(); ++i)
    h.bytes[i] = static_cast<unsigned char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
  return h;
}

// Runs this test binary's EmuChild.<test> in a child process with `env` added to the
// environment ("NAME=value" replaces an inherited NAME; "-NAME" removes it). Returns its
// wait status, or -1 when it ran past timeout_s (then killed).
int run_child(const std::string &test, const std::vector<std::string> &env, int timeout_s) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) return -2;
  exe[n] = '\0';
  std::string filter = "--gtest_filter=EmuChild." + test;
  std::vector<char *> argv{exe, filter.data(), nullptr};
  std::vector<std::string> env_storage;
  std::vector<std::string> names;
  for (const std::string &e : env) {
    if (!e.empty() && e[0] == '-') {
      names.push_back(e.substr(1));
    } else {
      names.push_back(e.substr(0, e.find('=')));
      env_storage.push_back(e);
    }
  }
  const auto overridden = [&](const char *e) {
    for (const std::string &n : names)
      if (std::strncmp(e, n.c_str(), n.size()) == 0 && e[n.size()] == '=') return true;
    return false;
  };
  std::vector<char *> envp;
  for (char **e = environ; *e; ++e)
    if (!overridden(*e)) envp.push_back(*e);
  for (std::string &e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, exe, nullptr, nullptr, argv.data(), envp.data()) != 0) return -2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

::testing::AssertionResult exited_ok(int status) {
  if (status == -1) return ::testing::AssertionFailure() << "the child process hung (killed)";
  if (status == -2) return ::testing::AssertionFailure() << "cannot start the child process";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ::testing::AssertionSuccess();
  if (WIFSIGNALED(status)) return ::testing::AssertionFailure() << "the child died of signal " << WTERMSIG(status);
  return ::testing::AssertionFailure() << "the child exited with " << WEXITSTATUS(status);
}

// ---- memory ------------------------------------------------------------------------

TEST_F(Emu, ClassifiesEveryKind) {
  Driver &d = emulated_driver();
  EXPECT_TRUE(d.usable());
  const int kinds[] = {GCOLL_EMU_MEM_DEVICE, GCOLL_EMU_MEM_ASYNC, GCOLL_EMU_MEM_MANAGED, GCOLL_EMU_MEM_PINNED};
  for (int kind : kinds) {
    SCOPED_TRACE(kind);
    Buffer b(100, kind);
    ASSERT_EQ(b.rc, GCOLL_EMU_OK);
    EXPECT_EQ(emu::pointer_kind(b.p), kind);
    EXPECT_EQ(emu::pointer_kind(b.bytes() + 99), kind);
    PtrInfo info;
    ASSERT_EQ(d.query(b.bytes() + 40, &info), Status::Ok);
    const bool device = kind == GCOLL_EMU_MEM_DEVICE || kind == GCOLL_EMU_MEM_ASYNC;
    EXPECT_EQ(info.device, device);
    if (device) {
      EXPECT_EQ(info.ordinal, 0);
      EXPECT_EQ(info.base, reinterpret_cast<std::uintptr_t>(b.p));
      EXPECT_EQ(info.size, 100u);
      EXPECT_NE(info.buffer_id, 0u);
      EXPECT_EQ(info.ipc_capable, kind == GCOLL_EMU_MEM_DEVICE);
    } else {
      // Managed and pinned memory are host memory: the CPU (and so the MPI) may use them.
      std::memset(b.p, 7, 100);
      EXPECT_EQ(b.bytes()[99], 7);
    }
  }
  int local = 0;
  PtrInfo info;
  EXPECT_EQ(emu::pointer_kind(&local), -1);
  ASSERT_EQ(d.query(&local, &info), Status::Ok);
  EXPECT_FALSE(info.device);
}

// ---- the memory-kind cache (cuda/device.h: classify) on the emulated GPU -------------
// Every answer of the emulation is cacheable; its allocations and frees move the epoch on,
// so a buffer freed and reallocated as another kind, at the same address or not, is
// classified afresh. The address is reused when the kernel hands the same range back
// (usual for equal sizes right after a free): each test says whether it was.

class EmuCache : public Emu {
 protected:
  void SetUp() override {
    Emu::SetUp();
    set_driver_for_testing(&emulated_driver());
  }
  void TearDown() override {
    set_driver_for_testing(nullptr);
    Emu::TearDown();
  }
  static std::uint64_t queries() { return process_stats().total(Counter::PointerQueries); }
};

TEST_F(EmuCache, SeenBuffersCostNoQuery) {
  Buffer d(1 << 16, GCOLL_EMU_MEM_DEVICE);
  ASSERT_EQ(d.rc, GCOLL_EMU_OK);
  std::vector<char> h(64);
  EXPECT_TRUE(classify(d.p).device);
  EXPECT_FALSE(classify(h.data()).device);
  const std::uint64_t q = queries();
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(classify(d.p).device);
    EXPECT_FALSE(classify(h.data()).device);
  }
  EXPECT_EQ(queries(), q);
  // An unrelated allocation moves the epoch on: asked again, same answers.
  Buffer other(100, GCOLL_EMU_MEM_PINNED);
  EXPECT_TRUE(classify(d.p).device);
  EXPECT_FALSE(classify(h.data()).device);
  EXPECT_EQ(queries(), q + 2);
}

TEST_F(EmuCache, DeviceFreedAndReallocatedAsHost) {
  constexpr std::size_t kLen = 1 << 20;
  void *d = nullptr;
  ASSERT_EQ(emu::malloc(&d, kLen, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK);
  const PtrInfo before = classify(d);
  ASSERT_TRUE(before.device);
  EXPECT_TRUE(classify(d).device);
  ASSERT_EQ(emu::free(d), GCOLL_EMU_OK);
  for (int kind : {GCOLL_EMU_MEM_PINNED, GCOLL_EMU_MEM_MANAGED}) {
    void *h = nullptr;
    ASSERT_EQ(emu::malloc(&h, kLen, kind), GCOLL_EMU_OK);
    std::printf("device -> kind %d: address %s\n", kind, h == d ? "reused" : "not reused");
    EXPECT_FALSE(classify(h).device);
    EXPECT_FALSE(classify(d).device);  // whatever lies there now, it is not device memory
    ASSERT_EQ(emu::free(h), GCOLL_EMU_OK);
  }
  // And plain memory (mmap) where the device buffer was.
  void *m = mmap(d, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  std::printf("device -> mmap: address %s\n", m == d ? "reused" : "not reused");
  EXPECT_FALSE(classify(m).device);
  munmap(m, kLen);
}

TEST_F(EmuCache, HostFreedAndReallocatedAsDevice) {
  constexpr std::size_t kLen = 1 << 20;
  // Plain host memory, classified (and cached), then unmapped behind the emulation's back.
  void *m = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  EXPECT_FALSE(classify(m).device);
  EXPECT_FALSE(classify(m).device);
  munmap(m, kLen);
  void *d = nullptr;
  ASSERT_EQ(emu::malloc(&d, kLen, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK);
  std::printf("mmap -> device: address %s\n", d == m ? "reused" : "not reused");
  PtrInfo i = classify(d);
  EXPECT_TRUE(i.device);
  EXPECT_EQ(i.base, reinterpret_cast<std::uintptr_t>(d));
  const std::uint64_t id = i.buffer_id;
  // Pinned memory freed and reallocated as pool memory (no IPC): a new buffer.
  ASSERT_EQ(emu::free(d), GCOLL_EMU_OK);
  void *p = nullptr;
  ASSERT_EQ(emu::malloc(&p, kLen, GCOLL_EMU_MEM_PINNED), GCOLL_EMU_OK);
  EXPECT_FALSE(classify(p).device);
  ASSERT_EQ(emu::free(p), GCOLL_EMU_OK);
  void *a = nullptr;
  ASSERT_EQ(emu::malloc(&a, kLen, GCOLL_EMU_MEM_ASYNC), GCOLL_EMU_OK);
  std::printf("pinned -> async device: address %s\n", a == p ? "reused" : "not reused");
  i = classify(a);
  EXPECT_TRUE(i.device);
  EXPECT_FALSE(i.ipc_capable);
  EXPECT_NE(i.buffer_id, id);
  ASSERT_EQ(emu::free(a), GCOLL_EMU_OK);
}

// A device allocation's padding (past its size, inside its pages) is host memory to the
// query, and the cache must not let one answer stand for the other.
TEST_F(EmuCache, PaddingAndAllocationAreToldApart) {
  Buffer d(100, GCOLL_EMU_MEM_DEVICE);
  ASSERT_EQ(d.rc, GCOLL_EMU_OK);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(classify(d.bytes()).device);
    EXPECT_TRUE(classify(d.bytes() + 99).device);
    EXPECT_FALSE(classify(d.bytes() + 100).device);
    EXPECT_FALSE(classify(d.bytes() + 4000).device);
  }
}

TEST_F(Emu, ZeroByteAllocationsAreDistinct) {
  Buffer a(0, GCOLL_EMU_MEM_DEVICE), b(0, GCOLL_EMU_MEM_DEVICE), c(0, GCOLL_EMU_MEM_PINNED);
  ASSERT_EQ(a.rc, GCOLL_EMU_OK);
  ASSERT_EQ(b.rc, GCOLL_EMU_OK);
  ASSERT_EQ(c.rc, GCOLL_EMU_OK);
  ASSERT_NE(a.p, nullptr);
  EXPECT_NE(a.p, b.p);
  EXPECT_NE(a.p, c.p);
  EXPECT_EQ(emu::pointer_kind(a.p), GCOLL_EMU_MEM_DEVICE);
  EXPECT_EQ(emu::pointer_kind(c.p), GCOLL_EMU_MEM_PINNED);
}

TEST_F(Emu, RejectsBadArguments) {
  void *p = nullptr;
  EXPECT_EQ(emu::malloc(&p, 8, 4), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::malloc(&p, 8, -1), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::malloc(nullptr, 8, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::malloc(&p, SIZE_MAX, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_ERR_NOMEM);
  Buffer b(64, GCOLL_EMU_MEM_DEVICE);
  ASSERT_EQ(b.rc, GCOLL_EMU_OK);
  int local = 0;
  EXPECT_EQ(emu::free(b.bytes() + 1), GCOLL_EMU_ERR_INVALID);  // not the start
  EXPECT_EQ(emu::free(&local), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::free(nullptr), GCOLL_EMU_OK);  // as cudaFree
  EXPECT_EQ(emu::memset(&local, 0, sizeof local), GCOLL_EMU_ERR_INVALID);  // pageable memory
  // Bytes past the end of an allocation are a bug, not a copy.
  std::vector<unsigned char> host(128);
  EXPECT_EQ(emu::memcpy(b.p, host.data(), 65), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::memcpy(host.data(), b.bytes() + 8, 57), GCOLL_EMU_ERR_INVALID);
  StreamGuard s;
  EXPECT_EQ(emulated_runtime().memcpy_async(host.data(), b.bytes() + 64, 1, s.s), Status::ErrArg);
  EXPECT_EQ(emulated_runtime().memcpy_async(host.data(), b.bytes() + 63, 1, s.s), Status::Ok);
  EXPECT_EQ(emulated_runtime().stream_synchronize(s.s), Status::Ok);
  EXPECT_EQ(emulated_runtime().set_device(0), Status::Ok);
  EXPECT_EQ(emulated_runtime().set_device(1), Status::ErrArg);
  EXPECT_NE(std::string(emulated_runtime().last_error()), "");
  EXPECT_EQ(std::string(emulated_runtime().last_error()), "");  // cleared
}

// The kernel usually hands the freed range back to the next mmap of the same size: the
// buffer ID is what tells the new allocation from the old one.
TEST_F(Emu, BufferIdsAreNeverReused) {
  Driver &d = emulated_driver();
  std::uint64_t last = 0;
  for (int i = 0; i < 8; ++i) {
    void *p = nullptr;
    ASSERT_EQ(emu::malloc(&p, 1000, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK);
    PtrInfo info;
    ASSERT_EQ(d.query(p, &info), Status::Ok);
    EXPECT_GT(info.buffer_id, last);
    last = info.buffer_id;
    ASSERT_EQ(emu::free(p), GCOLL_EMU_OK);
    EXPECT_EQ(emu::pointer_kind(p), -1);
  }
}

TEST_F(Emu, OnlyDeviceAllocationBasesExport) {
  Driver &d = emulated_driver();
  Buffer dev(256, GCOLL_EMU_MEM_DEVICE), pool(256, GCOLL_EMU_MEM_ASYNC), pinned(256, GCOLL_EMU_MEM_PINNED);
  IpcHandle h;
  EXPECT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(dev.p), &h), Status::Ok);
  EXPECT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(dev.bytes() + 8), &h), Status::ErrInternal);
  EXPECT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(pool.p), &h), Status::ErrInternal);
  EXPECT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(pinned.p), &h), Status::ErrInternal);
}

TEST_F(Emu, OwnHandleDoesNotOpen) {
  Driver &d = emulated_driver();
  Buffer dev(256, GCOLL_EMU_MEM_DEVICE);
  IpcHandle h;
  ASSERT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(dev.p), &h), Status::Ok);
  void *p = reinterpret_cast<void *>(1);
  EXPECT_EQ(d.ipc_open(h, &p), Status::ErrInternal);  // CUDA IPC is between processes
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(d.ipc_close(dev.p), Status::Ok);  // not a mapping
}

using EmuDeathTest = Emu;

TEST_F(EmuDeathTest, CpuAccessToDeviceMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (int kind : {GCOLL_EMU_MEM_DEVICE, GCOLL_EMU_MEM_ASYNC}) {
    Buffer b(64, kind);
    ASSERT_EQ(b.rc, GCOLL_EMU_OK);
    auto *v = static_cast<volatile unsigned char *>(b.p);
    EXPECT_DEATH(v[3] = 1, "");
    EXPECT_DEATH((void)v[0], "");
  }
}

// ---- streams and events ------------------------------------------------------------

// What every stream test needs: a device buffer that holds zeros, pinned source, output
// and scratch buffers, two streams.
class EmuStreams : public Emu {
 protected:
  void SetUp() override {
    Emu::SetUp();
    ASSERT_EQ(dev_.rc, GCOLL_EMU_OK);
    ASSERT_EQ(src_.rc, GCOLL_EMU_OK);
    ASSERT_EQ(out_.rc, GCOLL_EMU_OK);
    ASSERT_EQ(scratch_.rc, GCOLL_EMU_OK);
    const std::vector<unsigned char> zeros(kBytes, 0);
    ASSERT_EQ(emu::memcpy(dev_.p, zeros.data(), kBytes), GCOLL_EMU_OK);
    ASSERT_EQ(emu::device_synchronize(), GCOLL_EMU_OK);
    const std::vector<unsigned char> pat = pattern(kBytes, 1);
    std::memcpy(src_.p, pat.data(), kBytes);
  }
  // Queues slow filler work on stream s (see the file comment).
  void slow(Stream s) {
    queue_slow_work([&] { EXPECT_EQ(rt_.memcpy_async(scratch_.bytes() + 64, scratch_.p, 64, s), Status::Ok); });
  }
  bool holds_source(const std::vector<unsigned char> &v) const {
    return std::memcmp(v.data(), src_.p, kBytes) == 0;
  }
  Runtime &rt_ = emulated_runtime();
  Buffer dev_{kBytes, GCOLL_EMU_MEM_DEVICE};
  Buffer src_{kBytes, GCOLL_EMU_MEM_PINNED};
  Buffer out_{kBytes, GCOLL_EMU_MEM_PINNED};
  Buffer scratch_{128, GCOLL_EMU_MEM_PINNED};
  StreamGuard a_, b_;
};

TEST_F(EmuStreams, CopyLandsOnlyAfterItsStreamGetsThere) {
  EventGuard e;
  bool done = true;
  EXPECT_EQ(rt_.event_query(e.e, &done), Status::Ok);
  EXPECT_TRUE(done);  // never recorded
  slow(a_.s);
  ASSERT_EQ(rt_.memcpy_async(dev_.p, src_.p, kBytes, a_.s), Status::Ok);
  ASSERT_EQ(rt_.event_record(e.e, a_.s), Status::Ok);
  emu::set_delay_for_testing(0);
  EXPECT_EQ(rt_.event_query(e.e, &done), Status::Ok);
  EXPECT_FALSE(done);
  const std::vector<unsigned char> early = peek(dev_.p, kBytes, b_.s, out_.p);
  EXPECT_TRUE(all_equal(early.data(), kBytes, 0)) << "the copy landed before its stream got to it";
  ASSERT_EQ(rt_.stream_synchronize(a_.s), Status::Ok);
  EXPECT_EQ(rt_.event_query(e.e, &done), Status::Ok);
  EXPECT_TRUE(done);
  EXPECT_TRUE(holds_source(peek(dev_.p, kBytes, b_.s, out_.p)));
}

TEST_F(EmuStreams, WaitEventOrdersStreams) {
  EventGuard e, never;
  slow(a_.s);
  ASSERT_EQ(rt_.memcpy_async(dev_.p, src_.p, kBytes, a_.s), Status::Ok);
  ASSERT_EQ(rt_.event_record(e.e, a_.s), Status::Ok);
  emu::set_delay_for_testing(0);
  ASSERT_EQ(rt_.stream_wait_event(b_.s, never.e), Status::Ok);  // never recorded: no wait
  ASSERT_EQ(rt_.stream_wait_event(b_.s, e.e), Status::Ok);
  EXPECT_TRUE(holds_source(peek(dev_.p, kBytes, b_.s, out_.p)));
  bool done = false;
  EXPECT_EQ(rt_.event_query(e.e, &done), Status::Ok);
  EXPECT_TRUE(done);
}

TEST_F(EmuStreams, EventOutlivesItsHandle) {
  Event e = nullptr;
  ASSERT_EQ(rt_.event_create(&e), Status::Ok);
  slow(a_.s);
  ASSERT_EQ(rt_.event_record(e, a_.s), Status::Ok);
  ASSERT_EQ(rt_.stream_wait_event(b_.s, e), Status::Ok);
  rt_.event_destroy(e);  // the queued record and wait still hold its state
  ASSERT_EQ(rt_.stream_synchronize(b_.s), Status::Ok);
  ASSERT_EQ(rt_.stream_synchronize(a_.s), Status::Ok);
}

TEST_F(EmuStreams, MemcpyFromHostReturnsBeforeLanding) {
  Buffer scratch_dev(128, GCOLL_EMU_MEM_DEVICE);
  ASSERT_EQ(scratch_dev.rc, GCOLL_EMU_OK);
  queue_slow_work([&] { EXPECT_EQ(emu::memset(scratch_dev.p, 1, 128), GCOLL_EMU_OK); });
  std::vector<unsigned char> host(static_cast<unsigned char *>(src_.p), src_.bytes() + kBytes);
  ASSERT_EQ(emu::memcpy(dev_.p, host.data(), kBytes), GCOLL_EMU_OK);
  std::fill(host.begin(), host.end(), 0xee);  // reused at once: the copy was staged
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0))
      << "cudaMemcpy from pageable memory landed before the legacy stream got to it";
  EventGuard scratch;
  ASSERT_EQ(rt_.order_after_default_streams(b_.s, scratch.e), Status::Ok);
  EXPECT_TRUE(holds_source(peek(dev_.p, kBytes, b_.s, out_.p)));

  // Into host memory, emu::memcpy returns only when the bytes are there.
  queue_slow_work([&] { EXPECT_EQ(emu::memset(scratch_dev.p, 1, 128), GCOLL_EMU_OK); });
  std::vector<unsigned char> back(kBytes, 0);
  ASSERT_EQ(emu::memcpy(back.data(), dev_.p, kBytes), GCOLL_EMU_OK);
  EXPECT_TRUE(holds_source(back));
}

TEST_F(EmuStreams, MemsetAndDeviceSynchronize) {
  queue_slow_work([&] { EXPECT_EQ(emu::memset(scratch_.p, 1, 128), GCOLL_EMU_OK); });
  ASSERT_EQ(emu::memset(dev_.bytes() + 16, 0x5a, kBytes - 32), GCOLL_EMU_OK);
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0)) << "memset ran at once, not on the legacy stream";
  ASSERT_EQ(emu::device_synchronize(), GCOLL_EMU_OK);
  const std::vector<unsigned char> v = peek(dev_.p, kBytes, b_.s, out_.p);
  EXPECT_TRUE(all_equal(v.data(), 16, 0));
  EXPECT_TRUE(all_equal(v.data() + 16, kBytes - 32, 0x5a));
  EXPECT_TRUE(all_equal(v.data() + kBytes - 16, 16, 0));
}

TEST_F(EmuStreams, DeviceToDeviceAndSameStreamOrder) {
  Buffer dev2(kBytes, GCOLL_EMU_MEM_DEVICE);
  ASSERT_EQ(dev2.rc, GCOLL_EMU_OK);
  emu::set_delay_for_testing(200);
  // Copies on one stream run in order: the second reads what the first wrote.
  ASSERT_EQ(rt_.memcpy_async(dev_.p, src_.p, kBytes, a_.s), Status::Ok);
  ASSERT_EQ(rt_.memcpy_async(dev2.p, dev_.p, kBytes, a_.s), Status::Ok);
  ASSERT_EQ(rt_.memcpy_async(out_.p, dev2.p, kBytes, a_.s), Status::Ok);
  ASSERT_EQ(rt_.stream_synchronize(a_.s), Status::Ok);
  EXPECT_TRUE(holds_source(std::vector<unsigned char>(out_.bytes(), out_.bytes() + kBytes)));
}

TEST_F(EmuStreams, FreeWaitsForQueuedWork) {
  void *p = nullptr;
  ASSERT_EQ(emu::malloc(&p, kBytes, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK);
  EventGuard e;
  slow(a_.s);
  ASSERT_EQ(rt_.memcpy_async(p, src_.p, kBytes, a_.s), Status::Ok);
  ASSERT_EQ(rt_.event_record(e.e, a_.s), Status::Ok);
  // Were the copy still queued after the unmap, the worker would write to freed pages.
  ASSERT_EQ(emu::free(p), GCOLL_EMU_OK);
  bool done = false;
  EXPECT_EQ(rt_.event_query(e.e, &done), Status::Ok);
  EXPECT_TRUE(done);
}

// ---- work ordered with the host: host functions, stream memory operations ---------------
// (runtime.h: launch_host_func, stream_wait_value32, stream_write_value32; the streams of
// the C API, emulate.h). A wait that does not hold its stream would let the work behind it
// run before the word is set; each test looks before it sets the word.

// A 32-bit word of mapped pinned memory (malloc_host_mapped), 0 at first, freed at scope
// exit; set() stores a value as another host thread would.
struct MappedWord {
  MappedWord() {
    EXPECT_EQ(emulated_runtime().malloc_host_mapped(&p, 64), Status::Ok);
    if (p) std::memset(p, 0, 64);
  }
  ~MappedWord() { emulated_runtime().free_host(p); }
  volatile std::uint32_t *word() const { return static_cast<volatile std::uint32_t *>(p); }
  void set(std::uint32_t v) const { __atomic_store_n(word(), v, __ATOMIC_RELEASE); }
  std::uint32_t get() const { return __atomic_load_n(word(), __ATOMIC_ACQUIRE); }
  void *p = nullptr;
};

// Runs f on a thread of its own while a stream is held by `w`'s wait: true when f
// finished within `limit` (a deadlocked or blocking f gives false rather than a hung
// test: w is set to `release` either way before the thread is joined).
template <class F>
bool finishes_while_held(F f, const MappedWord &w, std::uint32_t release,
                         std::chrono::milliseconds limit = std::chrono::milliseconds(2000)) {
  std::atomic<bool> done{false};
  std::thread t([&] {
    f();
    done.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool in_time = done.load();
  w.set(release);
  t.join();
  return in_time;
}

void create_and_destroy_a_stream() {
  void *c = nullptr;
  EXPECT_EQ(emu::stream_create(&c), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_destroy(c), GCOLL_EMU_OK);
}

// Whether an event recorded now (behind what is queued) completes within `ms`.
bool completes_within(Runtime &rt, Event e, int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    bool done = false;
    EXPECT_EQ(rt.event_query(e, &done), Status::Ok);
    if (done) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

struct HostFuncProbe {
  const void *expect = nullptr;  // what `seen` must hold when fn runs
  const void *seen = nullptr;
  std::size_t bytes = 0;
  std::atomic<bool> ran{false};
  bool saw_earlier_work = false;
  std::atomic<bool> release{false};  // fn returns once set (or after 5 s: a host function
                                     // wrongly run by the caller itself fails, not hangs)
};

void host_func_probe(void *arg) {
  auto *p = static_cast<HostFuncProbe *>(arg);
  p->saw_earlier_work = std::memcmp(p->seen, p->expect, p->bytes) == 0;
  p->ran.store(true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!p->release.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

TEST_F(EmuStreams, HostFuncRunsAfterEarlierWorkAndHoldsLaterWork) {
  Buffer seen(kBytes, GCOLL_EMU_MEM_PINNED);
  ASSERT_EQ(seen.rc, GCOLL_EMU_OK);
  std::memset(seen.p, 0, kBytes);
  HostFuncProbe probe;
  probe.expect = src_.p;
  probe.seen = seen.p;
  probe.bytes = kBytes;
  EventGuard after;
  slow(a_.s);
  ASSERT_EQ(rt_.memcpy_async(seen.p, src_.p, kBytes, a_.s), Status::Ok);  // earlier work
  ASSERT_EQ(rt_.launch_host_func(a_.s, host_func_probe, &probe), Status::Ok);
  emu::set_delay_for_testing(0);
  ASSERT_EQ(rt_.memcpy_async(dev_.p, src_.p, kBytes, a_.s), Status::Ok);  // later work
  ASSERT_EQ(rt_.event_record(after.e, a_.s), Status::Ok);
  EXPECT_FALSE(probe.ran.load()) << "the host function ran before the work queued ahead of it";
  // It runs once the filler is through, and the later copy waits for it to return.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!probe.ran.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(probe.ran.load()) << "the host function never ran";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  bool done = true;
  EXPECT_EQ(rt_.event_query(after.e, &done), Status::Ok);
  EXPECT_FALSE(done) << "work queued after the host function completed while it ran";
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0))
      << "the copy behind the host function landed while it ran";
  probe.release.store(true);
  ASSERT_EQ(rt_.stream_synchronize(a_.s), Status::Ok);
  EXPECT_TRUE(probe.saw_earlier_work) << "the host function ran before the copy ahead of it landed";
  std::vector<unsigned char> back(kBytes);
  ASSERT_EQ(emu::memcpy(back.data(), dev_.p, kBytes), GCOLL_EMU_OK);
  EXPECT_TRUE(holds_source(back));
}

TEST_F(EmuStreams, WaitValueHoldsLaterWorkUntilTheWordIsSet) {
  MappedWord w;
  ASSERT_NE(w.p, nullptr);
  EXPECT_TRUE(rt_.stream_memops_supported());
  EXPECT_FALSE(rt_.stream_capturing(a_.s));
  emu::set_delay_for_testing(0);
  EventGuard e;
  ASSERT_EQ(rt_.stream_wait_value32(a_.s, w.word(), 1), Status::Ok);
  ASSERT_EQ(emu::memset_async(dev_.p, 0x77, kBytes, a_.s), GCOLL_EMU_OK);
  ASSERT_EQ(rt_.event_record(e.e, a_.s), Status::Ok);
  w.set(2);  // not the value waited for
  EXPECT_FALSE(completes_within(rt_, e.e, 30)) << "work behind the wait ran before the word was set";
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0));
  EXPECT_EQ(emu::stream_query(a_.s), GCOLL_EMU_ERR_NOT_READY);
  w.set(1);
  EXPECT_TRUE(completes_within(rt_, e.e, 2000)) << "the wait did not pass once the word was set";
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0x77));
  EXPECT_EQ(emu::stream_query(a_.s), GCOLL_EMU_OK);
}

TEST_F(EmuStreams, WriteValueLandsInStreamOrder) {
  MappedWord w;
  ASSERT_NE(w.p, nullptr);
  // a: filler, the copy, then the write; b: waits for the write, then reads the copy.
  slow(a_.s);
  ASSERT_EQ(rt_.memcpy_async(dev_.p, src_.p, kBytes, a_.s), Status::Ok);
  ASSERT_EQ(rt_.stream_write_value32(a_.s, w.word(), 7), Status::Ok);
  emu::set_delay_for_testing(0);
  EXPECT_EQ(w.get(), 0u) << "the write landed before the work queued ahead of it";
  ASSERT_EQ(rt_.stream_wait_value32(b_.s, w.word(), 7), Status::Ok);
  ASSERT_EQ(rt_.memcpy_async(out_.p, dev_.p, kBytes, b_.s), Status::Ok);
  ASSERT_EQ(rt_.stream_synchronize(b_.s), Status::Ok);
  EXPECT_EQ(w.get(), 7u);
  EXPECT_TRUE(holds_source(std::vector<unsigned char>(out_.bytes(), out_.bytes() + kBytes)))
      << "the stream that waited for the write read the buffer before the copy ahead of the write";
  // Words with no place to be refused.
  EXPECT_EQ(rt_.stream_write_value32(a_.s, nullptr, 1), Status::ErrArg);
  EXPECT_EQ(rt_.stream_wait_value32(a_.s, reinterpret_cast<volatile std::uint32_t *>(static_cast<char *>(w.p) + 1), 1),
            Status::ErrArg);
}

TEST_F(EmuStreams, MemOpsAndHostFuncsOnTheLegacyStream) {
  MappedWord w;
  ASSERT_NE(w.p, nullptr);
  volatile std::uint32_t *word2 = w.word() + 1;
  HostFuncProbe probe;
  probe.expect = probe.seen = src_.p;  // (nothing to check before it)
  probe.bytes = 1;
  probe.release.store(true);
  emu::set_delay_for_testing(0);
  ASSERT_EQ(rt_.stream_wait_value32(nullptr, w.word(), 1), Status::Ok);
  ASSERT_EQ(emu::memset(dev_.p, 0x33, kBytes), GCOLL_EMU_OK);  // the legacy stream's
  ASSERT_EQ(rt_.launch_host_func(nullptr, host_func_probe, &probe), Status::Ok);
  ASSERT_EQ(rt_.stream_write_value32(nullptr, word2, 5), Status::Ok);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(probe.ran.load()) << "the legacy stream ran past its wait";
  EXPECT_EQ(__atomic_load_n(word2, __ATOMIC_ACQUIRE), 0u);
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0));
  EXPECT_EQ(emu::stream_query(nullptr), GCOLL_EMU_ERR_NOT_READY);
  w.set(1);
  // cudaStreamPerThread (0x2) is the emulation's one default stream too.
  ASSERT_EQ(rt_.stream_synchronize(reinterpret_cast<Stream>(2)), Status::Ok);
  EXPECT_TRUE(probe.ran.load());
  EXPECT_EQ(__atomic_load_n(word2, __ATOMIC_ACQUIRE), 5u);
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0x33));
}

TEST_F(EmuStreams, StreamBlockedInAWaitHoldsOnlyItself) {
  MappedWord w;
  ASSERT_NE(w.p, nullptr);
  emu::set_delay_for_testing(0);
  ASSERT_EQ(rt_.stream_wait_value32(a_.s, w.word(), 1), Status::Ok);
  ASSERT_EQ(emu::memset_async(dev_.p, 0x44, kBytes, a_.s), GCOLL_EMU_OK);
  // Other streams (b, the legacy one, a new one) run, and the stream list stays free.
  EXPECT_TRUE(finishes_while_held(
      [&] {
        EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0));
        ASSERT_EQ(emu::memset(scratch_.p, 1, 128), GCOLL_EMU_OK);
        ASSERT_EQ(emu::stream_synchronize(nullptr), GCOLL_EMU_OK);
        void *c = nullptr;
        ASSERT_EQ(emu::stream_create(&c), GCOLL_EMU_OK);
        ASSERT_EQ(emu::memcpy_async(out_.p, src_.p, kBytes, c), GCOLL_EMU_OK);
        ASSERT_EQ(emu::stream_synchronize(c), GCOLL_EMU_OK);
        ASSERT_EQ(emu::stream_destroy(c), GCOLL_EMU_OK);
      },
      w, 1))
      << "a stream blocked in a wait held up other streams or the stream list";
  ASSERT_EQ(rt_.stream_synchronize(a_.s), Status::Ok);
  w.set(0);
  // device_synchronize and free wait for a blocked stream, as on a GPU, and go on once its
  // wait passes; meanwhile other threads still create and use streams.
  ASSERT_EQ(rt_.stream_wait_value32(a_.s, w.word(), 2), Status::Ok);
  void *p = nullptr;
  ASSERT_EQ(emu::malloc(&p, 64, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK);
  std::atomic<bool> synced{false}, freed{false};
  std::thread sync([&] {
    EXPECT_EQ(emu::device_synchronize(), GCOLL_EMU_OK);
    synced.store(true);
  });
  std::thread fr([&] {
    EXPECT_EQ(emu::free(p), GCOLL_EMU_OK);
    freed.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(synced.load()) << "device_synchronize returned while a stream was blocked in a wait";
  EXPECT_FALSE(freed.load()) << "free returned while a stream was blocked in a wait";
  EXPECT_TRUE(finishes_while_held(
      create_and_destroy_a_stream,
      w, 2))
      << "device_synchronize or free held the stream list while a stream was blocked in a wait";
  sync.join();
  fr.join();
  EXPECT_TRUE(synced.load());
  EXPECT_TRUE(freed.load());
}

TEST_F(EmuStreams, ParkThreadsWaitsForABlockedStream) {
  MappedWord w;
  ASSERT_NE(w.p, nullptr);
  emu::set_delay_for_testing(0);
  ASSERT_EQ(rt_.stream_wait_value32(a_.s, w.word(), 1), Status::Ok);
  std::atomic<bool> parked{false};
  std::thread t([&] {
    emu::park_threads();
    parked.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(parked.load()) << "park_threads ended a stream's worker with a wait still queued";
  EXPECT_TRUE(finishes_while_held(
      create_and_destroy_a_stream,
      w, 1))
      << "park_threads held the stream list while a stream was blocked in a wait";
  t.join();
  EXPECT_TRUE(parked.load());
  // Parked streams get a worker again when used.
  EXPECT_TRUE(holds_source(peek(src_.p, kBytes, a_.s, out_.p)));
}

// The C API's events (gcoll_emu_event_*): a record on a busy stream completes only when
// the stream gets there (event_synchronize waits for it), and another stream that waits
// for the event runs its next work only after it (a copy there sees the first stream's
// memset); bad handles are refused.
TEST_F(EmuStreams, EventsOrderStreamsAndTheHost) {
  void *a = nullptr, *b = nullptr, *e = nullptr;
  ASSERT_EQ(emu::stream_create(&a), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_create(&b), GCOLL_EMU_OK);
  ASSERT_EQ(emu::event_create(&e), GCOLL_EMU_OK);
  emu::set_delay_for_testing(0);
  ASSERT_EQ(emu::memset_async(dev_.p, 0, kBytes, a), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_synchronize(a), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_sleep(a, 50000), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memset_async(dev_.p, 0x3d, kBytes, a), GCOLL_EMU_OK);
  ASSERT_EQ(emu::event_record(e, a), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_wait_event(b, e), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memcpy_async(out_.p, dev_.p, kBytes, b), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_query(a), GCOLL_EMU_ERR_NOT_READY) << "the sleep should still run";
  ASSERT_EQ(emu::event_synchronize(e), GCOLL_EMU_OK);
  Buffer look(kBytes, GCOLL_EMU_MEM_PINNED);
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, look.p).data(), kBytes, 0x3d)) << "event done before the memset";
  ASSERT_EQ(emu::stream_synchronize(b), GCOLL_EMU_OK);
  EXPECT_TRUE(all_equal(out_.bytes(), kBytes, 0x3d)) << "b's copy ran before the event";
  EXPECT_EQ(emu::event_record(nullptr, a), GCOLL_EMU_ERR_INVALID);
  int not_a_stream = 0;
  EXPECT_EQ(emu::event_record(e, &not_a_stream), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::event_destroy(e), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_destroy(a), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_destroy(b), GCOLL_EMU_OK);
}

TEST_F(EmuStreams, SleepKeepsAStreamBusyAndQueryTellsIt) {
  void *s = nullptr;
  ASSERT_EQ(emu::stream_create(&s), GCOLL_EMU_OK);
  emu::set_delay_for_testing(0);
  EXPECT_EQ(emu::stream_query(s), GCOLL_EMU_OK);  // nothing queued
  ASSERT_EQ(emu::stream_sleep(s, 50000), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memset_async(dev_.p, 0x5c, kBytes, s), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_query(s), GCOLL_EMU_ERR_NOT_READY);
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0)) << "the memset did not wait for the sleep";
  ASSERT_EQ(emu::stream_synchronize(s), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_query(s), GCOLL_EMU_OK);
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0x5c));
  // Asynchronous copies between pinned and device memory return at once.
  ASSERT_EQ(emu::stream_sleep(s, 30000), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memcpy_async(dev_.p, src_.p, kBytes, s), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_query(s), GCOLL_EMU_ERR_NOT_READY);
  ASSERT_EQ(emu::stream_synchronize(s), GCOLL_EMU_OK);
  EXPECT_TRUE(holds_source(peek(dev_.p, kBytes, b_.s, out_.p)));
  ASSERT_EQ(emu::stream_destroy(s), GCOLL_EMU_OK);
  // Handles that are not streams of the emulation.
  int not_a_stream = 0;
  EXPECT_EQ(emu::stream_query(&not_a_stream), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::stream_sleep(&not_a_stream, 1), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::stream_destroy(nullptr), GCOLL_EMU_ERR_INVALID);  // the legacy stream
  EXPECT_EQ(emu::stream_create(nullptr), GCOLL_EMU_ERR_INVALID);
}

// ---- graph capture ----------------------------------------------------------------------
// (emulate.h: stream_begin_capture ... graph_destroy.) What a capturing stream is given
// must not run until the graph is launched, must run in full at every launch, reading
// the memory as it is then, and what cannot be replayed must be refused, not recorded.

constexpr unsigned kGraphSleepUs = 50000;  // a graph's long "kernel": launches are seen
                                           // to return before their work runs

bool capturing(Stream s) {
  int c = -1;
  EXPECT_EQ(emu::stream_is_capturing(s, &c), GCOLL_EMU_OK);
  return c == 1;
}

// Ends the capture open on s: its graph (nullptr, and the test fails, when there is none).
void *end_capture(Stream s) {
  void *g = nullptr;
  EXPECT_EQ(emu::stream_end_capture(s, &g), GCOLL_EMU_OK) << emulated_runtime().last_error();
  EXPECT_FALSE(capturing(s));
  return g;
}

// The capture open on s was invalidated by a refused operation: its end gives no graph,
// and the stream captures no more.
void expect_invalidated(Stream s, const char *what) {
  void *g = reinterpret_cast<void *>(1);
  EXPECT_EQ(emu::stream_end_capture(s, &g), GCOLL_EMU_ERR_CAPTURE) << what << " did not invalidate the capture";
  EXPECT_EQ(g, nullptr);
  EXPECT_NE(std::string(emulated_runtime().last_error()).find(what), std::string::npos)
      << "the end of the capture does not name what invalidated it";
  EXPECT_FALSE(capturing(s));
}

bool holds(const Buffer &b, const std::vector<unsigned char> &v) { return std::memcmp(b.p, v.data(), v.size()) == 0; }

void count_run(void *arg) { static_cast<std::atomic<int> *>(arg)->fetch_add(1); }

TEST_F(EmuStreams, CaptureRecordsAndEveryLaunchReplaysIt) {
  Buffer seen(kBytes, GCOLL_EMU_MEM_PINNED);
  ASSERT_EQ(seen.rc, GCOLL_EMU_OK);
  emu::set_delay_for_testing(0);
  std::memset(out_.p, 0xee, kBytes);
  EXPECT_FALSE(capturing(a_.s));
  EXPECT_FALSE(rt_.stream_capturing(a_.s));
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  EXPECT_TRUE(capturing(a_.s));
  EXPECT_TRUE(rt_.stream_capturing(a_.s));
  EXPECT_FALSE(rt_.stream_capturing(b_.s));
  EXPECT_FALSE(rt_.stream_capturing(nullptr));
  // A memset, a long kernel, the pinned source into the device, the device out to pinned.
  ASSERT_EQ(emu::memset_async(dev_.p, 0x11, kBytes, a_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_sleep(a_.s, kGraphSleepUs), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memcpy_async(dev_.p, src_.p, kBytes, a_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memcpy_async(out_.p, dev_.p, kBytes, a_.s), GCOLL_EMU_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, seen.p).data(), kBytes, 0)) << "captured work ran at capture";
  EXPECT_TRUE(all_equal(out_.bytes(), kBytes, 0xee)) << "captured work ran at capture";
  void *g = end_capture(a_.s);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(all_equal(out_.bytes(), kBytes, 0xee)) << "ending the capture ran its work";
  // Every launch copies the source as it is at that launch, on any stream.
  for (unsigned i = 0; i < 4; ++i) {
    const std::vector<unsigned char> now = pattern(kBytes, 10 + i);
    std::memcpy(src_.p, now.data(), kBytes);
    Stream on = i % 2 ? b_.s : a_.s;
    ASSERT_EQ(emu::graph_launch(g, on), GCOLL_EMU_OK);
    EXPECT_FALSE(holds(out_, now)) << "launch " << i << " ran its work before returning";
    ASSERT_EQ(emu::stream_synchronize(on), GCOLL_EMU_OK);
    EXPECT_TRUE(holds(out_, now)) << "launch " << i << " did not copy the source as it is now";
  }
  EXPECT_TRUE(holds_source(peek(dev_.p, kBytes, b_.s, seen.p)));
  EXPECT_EQ(emu::graph_destroy(g), GCOLL_EMU_OK);
}

TEST_F(EmuStreams, GraphLaunchKeepsItsPlaceOnItsStream) {
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memcpy_async(out_.p, dev_.p, kBytes, a_.s), GCOLL_EMU_OK);  // reads dev_
  void *g = end_capture(a_.s);
  ASSERT_NE(g, nullptr);
  // b: slow filler, dev_ = 0x21, the graph, dev_ = 0x42: the graph reads 0x21.
  slow(b_.s);
  ASSERT_EQ(emu::memset_async(dev_.p, 0x21, kBytes, b_.s), GCOLL_EMU_OK);
  emu::set_delay_for_testing(0);
  ASSERT_EQ(emu::graph_launch(g, b_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memset_async(dev_.p, 0x42, kBytes, b_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_synchronize(b_.s), GCOLL_EMU_OK);
  EXPECT_FALSE(all_equal(out_.bytes(), kBytes, 0)) << "the graph ran before the work queued ahead of it";
  EXPECT_FALSE(all_equal(out_.bytes(), kBytes, 0x42)) << "the graph ran after the work queued behind it";
  EXPECT_TRUE(all_equal(out_.bytes(), kBytes, 0x21));
  EXPECT_EQ(emu::graph_destroy(g), GCOLL_EMU_OK);
}

TEST_F(EmuStreams, CaptureRefusesWhatItCannotReplay) {
  // The default stream cannot be captured, in any of its spellings.
  EXPECT_EQ(emu::stream_begin_capture(nullptr), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::stream_begin_capture(reinterpret_cast<void *>(2)), GCOLL_EMU_ERR_INVALID);
  EXPECT_FALSE(capturing(nullptr));
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_ERR_CAPTURE);  // open already
  // Synchronizing or querying a capturing stream (CUDA refuses both).
  EXPECT_EQ(emu::stream_synchronize(a_.s), GCOLL_EMU_ERR_CAPTURE);
  EXPECT_NE(std::string(rt_.last_error()).find("capturing"), std::string::npos);
  expect_invalidated(a_.s, "cudaStreamSynchronize");
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  EXPECT_EQ(rt_.stream_synchronize(a_.s), Status::ErrArg);
  expect_invalidated(a_.s, "cudaStreamSynchronize");
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_query(a_.s), GCOLL_EMU_ERR_CAPTURE);
  expect_invalidated(a_.s, "cudaStreamQuery");
  // Copies to and from pageable memory: staged or waited for when queued, never replayed.
  std::vector<unsigned char> host(kBytes, 0x99);
  for (int c = 0; c < 3; ++c) {
    ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
    if (c == 0) EXPECT_EQ(emu::memcpy_async(dev_.p, host.data(), kBytes, a_.s), GCOLL_EMU_ERR_CAPTURE);
    if (c == 1) EXPECT_EQ(emu::memcpy_async(host.data(), dev_.p, kBytes, a_.s), GCOLL_EMU_ERR_CAPTURE);
    if (c == 2) EXPECT_EQ(rt_.memcpy_async(dev_.p, host.data(), kBytes, a_.s), Status::ErrArg);
    EXPECT_NE(std::string(rt_.last_error()).find("pageable"), std::string::npos);
    expect_invalidated(a_.s, "pageable");
  }
  EXPECT_TRUE(all_equal(host.data(), kBytes, 0x99)) << "a refused copy ran";
  // Events on a capturing stream: not emulated.
  EventGuard e;
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  EXPECT_EQ(rt_.event_record(e.e, a_.s), Status::ErrArg);
  expect_invalidated(a_.s, "cudaEventRecord");
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  EXPECT_EQ(rt_.stream_wait_event(a_.s, e.e), Status::ErrArg);
  expect_invalidated(a_.s, "cudaStreamWaitEvent");
  // Nothing refused outside a capture; no capture to end; handles that are not graphs.
  EXPECT_EQ(emu::stream_synchronize(a_.s), GCOLL_EMU_OK);
  void *g = nullptr;
  EXPECT_EQ(emu::stream_end_capture(a_.s, &g), GCOLL_EMU_ERR_CAPTURE);
  EXPECT_EQ(emu::stream_end_capture(nullptr, &g), GCOLL_EMU_ERR_CAPTURE);
  EXPECT_EQ(emu::stream_end_capture(a_.s, nullptr), GCOLL_EMU_ERR_INVALID);
  int not_a_graph = 0;
  EXPECT_EQ(emu::graph_launch(&not_a_graph, a_.s), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(emu::graph_destroy(&not_a_graph), GCOLL_EMU_ERR_INVALID);
  // A capture after the refused ones is whole.
  emu::set_delay_for_testing(0);
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memcpy_async(out_.p, src_.p, kBytes, a_.s), GCOLL_EMU_OK);
  g = end_capture(a_.s);
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(emu::graph_launch(g, a_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_synchronize(a_.s), GCOLL_EMU_OK);
  EXPECT_TRUE(holds_source(std::vector<unsigned char>(out_.bytes(), out_.bytes() + kBytes)));
  EXPECT_EQ(emu::graph_destroy(g), GCOLL_EMU_OK);
}

TEST_F(EmuStreams, DestroyLeavesQueuedLaunchesAndDiscardsOpenCaptures) {
  std::atomic<int> runs{0};
  emu::set_delay_for_testing(0);
  ASSERT_EQ(emu::stream_begin_capture(a_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_sleep(a_.s, kGraphSleepUs / 2), GCOLL_EMU_OK);
  ASSERT_EQ(rt_.launch_host_func(a_.s, count_run, &runs), Status::Ok);
  ASSERT_EQ(emu::memcpy_async(out_.p, src_.p, kBytes, a_.s), GCOLL_EMU_OK);
  void *g = end_capture(a_.s);
  ASSERT_NE(g, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(emu::graph_launch(g, b_.s), GCOLL_EMU_OK);
  ASSERT_EQ(emu::graph_destroy(g), GCOLL_EMU_OK);
  EXPECT_EQ(emu::graph_launch(g, b_.s), GCOLL_EMU_ERR_INVALID);  // gone
  EXPECT_EQ(emu::graph_destroy(g), GCOLL_EMU_ERR_INVALID);
  ASSERT_EQ(emu::stream_synchronize(b_.s), GCOLL_EMU_OK);
  EXPECT_EQ(runs.load(), 3) << "destroying the graph dropped launches already queued";
  EXPECT_TRUE(holds_source(std::vector<unsigned char>(out_.bytes(), out_.bytes() + kBytes)));
  // A stream destroyed while capturing: its capture is discarded, never run.
  void *c = nullptr;
  ASSERT_EQ(emu::stream_create(&c), GCOLL_EMU_OK);
  ASSERT_EQ(emu::stream_begin_capture(c), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memset_async(dev_.p, 0x5d, kBytes, c), GCOLL_EMU_OK);
  ASSERT_EQ(rt_.launch_host_func(c, count_run, &runs), Status::Ok);
  ASSERT_EQ(emu::stream_destroy(c), GCOLL_EMU_OK);
  EXPECT_EQ(emu::stream_is_capturing(c, nullptr), GCOLL_EMU_ERR_INVALID);
  int cap = -1;
  EXPECT_EQ(emu::stream_is_capturing(c, &cap), GCOLL_EMU_ERR_INVALID);  // not a stream any more
  EXPECT_EQ(emu::device_synchronize(), GCOLL_EMU_OK);
  EXPECT_EQ(runs.load(), 3) << "the capture of a destroyed stream ran";
  EXPECT_TRUE(all_equal(peek(dev_.p, kBytes, b_.s, out_.p).data(), kBytes, 0)) << "the capture of a destroyed stream ran";
}

// A stand-in for the proxy of the stream-ordered collectives (coll/stream_queue.h): a
// host function on the stream hands each call over; this thread runs it (adds `addend`
// to the pinned staging buffer, what an allreduce with a peer would do) and sets the word
// the stream waits on.
class Proxy {
 public:
  Proxy(const MappedWord &w, std::int32_t *stage, std::size_t n, std::int32_t addend)
      : w_(w), stage_(stage), n_(n), addend_(addend), thread_([this] { loop(); }) {}
  ~Proxy() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  static void hand_over(void *arg) {  // on the stream's worker: must not call the runtime
    auto *p = static_cast<Proxy *>(arg);
    {
      std::lock_guard<std::mutex> lk(p->m_);
      ++p->handed_;
    }
    p->cv_.notify_all();
  }
  int served() {
    std::lock_guard<std::mutex> lk(m_);
    return served_;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || handed_ > served_; });
      if (handed_ == served_) return;
      lk.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a collective's time
      for (std::size_t i = 0; i < n_; ++i) stage_[i] += addend_;
      w_.set(1);
      lk.lock();
      ++served_;
    }
  }
  const MappedWord &w_;
  std::int32_t *stage_;
  std::size_t n_;
  std::int32_t addend_;
  std::mutex m_;
  std::condition_variable cv_;
  int handed_ = 0, served_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// Issue 30's training step: a kernel, an enqueued allreduce (a host function handing it
// to the proxy, a wait for its word, the word's reset), a kernel, captured once with the
// runtime gcoll uses and replayed with new input every time.
TEST_F(EmuStreams, TrainingStepCapturedOnceIsRightAtEveryReplay) {
  constexpr std::size_t n = kBytes / sizeof(std::int32_t);
  constexpr std::int32_t kPeer = 1000;
  MappedWord w;
  ASSERT_NE(w.p, nullptr);
  Buffer x(kBytes, GCOLL_EMU_MEM_DEVICE), y(kBytes, GCOLL_EMU_MEM_DEVICE), z(kBytes, GCOLL_EMU_MEM_DEVICE);
  Buffer stage(kBytes, GCOLL_EMU_MEM_PINNED);
  ASSERT_EQ(x.rc, GCOLL_EMU_OK);
  ASSERT_EQ(y.rc, GCOLL_EMU_OK);
  ASSERT_EQ(z.rc, GCOLL_EMU_OK);
  ASSERT_EQ(stage.rc, GCOLL_EMU_OK);
  auto *in = static_cast<std::int32_t *>(src_.p);
  auto *out = static_cast<std::int32_t *>(out_.p);
  Proxy proxy(w, static_cast<std::int32_t *>(stage.p), n, kPeer);
  const void *twice_x[] = {x.p, x.p};
  const void *y_and_x[] = {y.p, x.p};
  Stream s = a_.s;
  ASSERT_EQ(emu::stream_begin_capture(s), GCOLL_EMU_OK);
  ASSERT_EQ(rt_.memcpy_async(x.p, in, kBytes, s), Status::Ok);
  ASSERT_EQ(rt_.reduce(DType::Int32, ROp::Sum, y.p, twice_x, 2, n, s), Status::Ok);  // y = 2x
  ASSERT_EQ(rt_.memcpy_async(stage.p, y.p, kBytes, s), Status::Ok);
  ASSERT_EQ(rt_.launch_host_func(s, &Proxy::hand_over, &proxy), Status::Ok);  // stage += kPeer
  ASSERT_EQ(rt_.stream_wait_value32(s, w.word(), 1), Status::Ok);
  ASSERT_EQ(rt_.stream_write_value32(s, w.word(), 0), Status::Ok);
  ASSERT_EQ(rt_.memcpy_async(y.p, stage.p, kBytes, s), Status::Ok);
  ASSERT_EQ(rt_.reduce(DType::Int32, ROp::Sum, z.p, y_and_x, 2, n, s), Status::Ok);  // z = y + x
  ASSERT_EQ(rt_.memcpy_async(out, z.p, kBytes, s), Status::Ok);
  void *g = end_capture(s);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(proxy.served(), 0) << "the captured host function ran at capture";
  for (int step = 0; step < 8; ++step) {
    for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::int32_t>(i * 7) - 3000 + step * 11;
    ASSERT_EQ(emu::graph_launch(g, s), GCOLL_EMU_OK);
    ASSERT_EQ(rt_.stream_synchronize(s), Status::Ok);
    EXPECT_EQ(proxy.served(), step + 1);
    EXPECT_EQ(w.get(), 0u) << "step " << step << ": the word was not reset";
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += out[i] != 3 * in[i] + kPeer;
    EXPECT_EQ(wrong, 0u) << "step " << step << ": " << wrong << " elements are not 3x + " << kPeer
                         << " (out[0] = " << out[0] << ", in[0] = " << in[0] << ")";
  }
  EXPECT_EQ(emu::graph_destroy(g), GCOLL_EMU_OK);
}

// ---- reductions ------------------------------------------------------------------------

struct ReduceCase {
  DType t;
  ROp op;
  int m;
  bool in_place;
};

// Values that make every op well defined (no NaN, no overflow trap).
void fill(DType t, unsigned char *p, std::size_t count, unsigned seed) {
  for (std::size_t i = 0; i < count; ++i) {
    const int v = static_cast<int>((i * 37 + seed * 101) % 200) - 100;
    switch (t) {
      case DType::Float: reinterpret_cast<float *>(p)[i] = static_cast<float>(v) * 0.375f; break;
      case DType::Double: reinterpret_cast<double *>(p)[i] = static_cast<double>(v) * 0.1; break;
      case DType::Int32: reinterpret_cast<std::int32_t *>(p)[i] = v * 1000003; break;
      case DType::Int64: reinterpret_cast<std::int64_t *>(p)[i] = std::int64_t{v} * (std::int64_t{1} << 40); break;
      case DType::Uint8: p[i] = static_cast<unsigned char>(v); break;
      default: FAIL() << "no filler for this type";
    }
  }
}

TEST_F(Emu, ReduceEqualsHostReduce) {
  Runtime &rt = emulated_runtime();
  StreamGuard s;
  const ReduceCase cases[] = {
      {DType::Int32, ROp::Sum, 3, false}, {DType::Double, ROp::Max, 2, true}, {DType::Float, ROp::Sum, 16, false},
      {DType::Uint8, ROp::Bxor, 4, true}, {DType::Int64, ROp::Min, 1, false}, {DType::Float, ROp::Prod, 5, true},
  };
  constexpr std::size_t count = 1001;
  for (const ReduceCase &c : cases) {
    SCOPED_TRACE(std::string(rop_name(c.op)) + " on " + dtype_name(c.t) + ", m=" + std::to_string(c.m));
    const std::size_t bytes = count * dtype_size(c.t);
    std::vector<std::vector<unsigned char>> host(c.m, std::vector<unsigned char>(bytes));
    std::vector<const void *> host_ptrs;
    std::vector<std::unique_ptr<Buffer>> dev;
    std::vector<const void *> dev_ptrs;
    for (int i = 0; i < c.m; ++i) {
      fill(c.t, host[i].data(), count, static_cast<unsigned>(i));
      host_ptrs.push_back(host[i].data());
      dev.push_back(std::make_unique<Buffer>(bytes, GCOLL_EMU_MEM_DEVICE));
      ASSERT_EQ(dev.back()->rc, GCOLL_EMU_OK);
      ASSERT_EQ(rt.memcpy_async(dev.back()->p, host[i].data(), bytes, s.s), Status::Ok);
      dev_ptrs.push_back(dev.back()->p);
    }
    Buffer dst(bytes, GCOLL_EMU_MEM_DEVICE), out(bytes, GCOLL_EMU_MEM_PINNED);
    void *d = c.in_place ? dev[0]->p : dst.p;
    ASSERT_TRUE(rt.reduce_supported(c.op, c.t));
    ASSERT_EQ(rt.reduce(c.t, c.op, d, dev_ptrs.data(), c.m, count, s.s), Status::Ok);
    ASSERT_EQ(rt.memcpy_async(out.p, d, bytes, s.s), Status::Ok);
    ASSERT_EQ(rt.stream_synchronize(s.s), Status::Ok);
    std::vector<unsigned char> expected(bytes);
    ASSERT_TRUE(ok(host_reduce(c.t, c.op, expected.data(), host_ptrs.data(), c.m, count)));
    EXPECT_EQ(std::memcmp(out.p, expected.data(), bytes), 0);
  }
}

// The compressed allreduce's formats on device memory (runtime.h: compress_encode,
// compress_decode, compress_decode_add): queued on a stream, the same bytes and values as
// the host functions of kernels/compress.h; nothing queued for what they cannot do.
TEST_F(Emu, CompressEqualsHostFunctions) {
  Runtime &rt = emulated_runtime();
  StreamGuard s;
  constexpr std::size_t n = 1000;  // fp8: three full blocks and a partial one
  for (Compress c : {Compress::Bf16, Compress::Fp16, Compress::Fp8})
    for (DType t : {DType::Float, DType::Double}) {
      SCOPED_TRACE(std::string(compress_name(c)) + " on " + dtype_name(t));
      const std::size_t raw = n * dtype_size(t), packed = compressed_bytes(c, n);
      std::vector<unsigned char> in(raw), acc(raw);
      for (std::size_t i = 0; i < n; ++i) {
        const double v =
            std::ldexp(static_cast<double>(static_cast<int>(i * 7919 % 2001) - 1000), static_cast<int>(i % 13) - 8);
        const double w = static_cast<double>(i % 17) / 3.0;
        if (t == DType::Double) {
          std::memcpy(&in[8 * i], &v, 8);
          std::memcpy(&acc[8 * i], &w, 8);
        } else {
          const float fv = static_cast<float>(v), fw = static_cast<float>(w);
          std::memcpy(&in[4 * i], &fv, 4);
          std::memcpy(&acc[4 * i], &fw, 4);
        }
      }
      std::vector<unsigned char> enc(packed), dec(raw), dec_add(acc);
      compress_encode(c, t, in.data(), n, enc.data());
      compress_decode(c, t, enc.data(), n, dec.data());
      compress_decode_add(c, t, enc.data(), n, dec_add.data());
      Buffer src(raw, GCOLL_EMU_MEM_DEVICE), code(packed, GCOLL_EMU_MEM_DEVICE), out(raw, GCOLL_EMU_MEM_DEVICE),
          sum(raw, GCOLL_EMU_MEM_DEVICE), back(2 * raw + packed, GCOLL_EMU_MEM_PINNED);
      ASSERT_EQ(rt.memcpy_async(src.p, in.data(), raw, s.s), Status::Ok);
      ASSERT_EQ(rt.memcpy_async(sum.p, acc.data(), raw, s.s), Status::Ok);
      ASSERT_EQ(rt.compress_encode(c, t, src.p, n, code.p, s.s), Status::Ok);
      ASSERT_EQ(rt.compress_decode(c, t, code.p, n, out.p, s.s), Status::Ok);
      ASSERT_EQ(rt.compress_decode_add(c, t, code.p, n, sum.p, s.s), Status::Ok);
      ASSERT_EQ(rt.memcpy_async(back.bytes(), code.p, packed, s.s), Status::Ok);
      ASSERT_EQ(rt.memcpy_async(back.bytes() + packed, out.p, raw, s.s), Status::Ok);
      ASSERT_EQ(rt.memcpy_async(back.bytes() + packed + raw, sum.p, raw, s.s), Status::Ok);
      ASSERT_EQ(rt.stream_synchronize(s.s), Status::Ok);
      EXPECT_EQ(std::memcmp(back.bytes(), enc.data(), packed), 0);
      EXPECT_EQ(std::memcmp(back.bytes() + packed, dec.data(), raw), 0);
      EXPECT_EQ(std::memcmp(back.bytes() + packed + raw, dec_add.data(), raw), 0);
    }
  Buffer a(64, GCOLL_EMU_MEM_DEVICE), b(64, GCOLL_EMU_MEM_DEVICE);
  EXPECT_EQ(rt.compress_encode(Compress::Off, DType::Float, a.p, 4, b.p, s.s), Status::ErrArg);
  EXPECT_EQ(rt.compress_encode(Compress::Bf16, DType::Int32, a.p, 4, b.p, s.s), Status::ErrArg);
  EXPECT_EQ(rt.compress_decode(Compress::Bf16, DType::Float, a.p, 17, b.p, s.s), Status::ErrArg);  // 68 bytes > 64
  EXPECT_EQ(rt.compress_decode_add(Compress::Fp8, DType::Double, a.p, 0, b.p, s.s), Status::Ok);
  EXPECT_EQ(rt.stream_synchronize(s.s), Status::Ok);
}

TEST_F(Emu, ReduceRejectsWhatItCannotDo) {
  Runtime &rt = emulated_runtime();
  StreamGuard s;
  Buffer a(64, GCOLL_EMU_MEM_DEVICE), b(64, GCOLL_EMU_MEM_DEVICE);
  const void *srcs[17] = {};
  for (const void *&p : srcs) p = a.p;
  EXPECT_EQ(rt.max_sources(), 16);
  EXPECT_FALSE(rt.reduce_supported(ROp::Band, DType::Float));
  EXPECT_EQ(rt.reduce(DType::Float, ROp::Band, b.p, srcs, 2, 16, s.s), Status::NotSupported);
  EXPECT_EQ(rt.reduce(DType::Float, ROp::Sum, b.p, srcs, 0, 16, s.s), Status::ErrArg);
  EXPECT_EQ(rt.reduce(DType::Float, ROp::Sum, b.p, srcs, 17, 16, s.s), Status::ErrArg);
  EXPECT_EQ(rt.reduce(DType::Float, ROp::Sum, b.p, srcs, 2, 17, s.s), Status::ErrArg);  // 68 bytes > 64
  EXPECT_EQ(rt.reduce(DType::Float, ROp::Sum, b.p, srcs, 16, 16, s.s), Status::Ok);
  EXPECT_EQ(rt.stream_synchronize(s.s), Status::Ok);
}

// ---- IPC between processes ------------------------------------------------------------

TEST_F(Emu, PeerProcessWritesThroughHandle) {
  Driver &d = emulated_driver();
  Buffer dev(kBytes, GCOLL_EMU_MEM_DEVICE);
  ASSERT_EQ(dev.rc, GCOLL_EMU_OK);
  const std::vector<unsigned char> before = pattern(kBytes, 2), after = pattern(kBytes, 3);
  ASSERT_EQ(emu::memcpy(dev.p, before.data(), kBytes), GCOLL_EMU_OK);
  ASSERT_EQ(emu::device_synchronize(), GCOLL_EMU_OK);
  IpcHandle h;
  ASSERT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(dev.p), &h), Status::Ok);
  ASSERT_TRUE(exited_ok(run_child("IpcPeer", {"EMU_TEST_IPC_HANDLE=" + to_hex(h),
                                              "EMU_TEST_IPC_BYTES=" + std::to_string(kBytes)},
                                  60)));
  std::vector<unsigned char> now(kBytes);
  ASSERT_EQ(emu::memcpy(now.data(), dev.p, kBytes), GCOLL_EMU_OK);
  EXPECT_EQ(now, after) << "the peer's writes did not reach this process's allocation";
}

TEST_F(Emu, StaleHandleDoesNotOpen) {
  Driver &d = emulated_driver();
  IpcHandle stale, fresh;
  void *p = nullptr;
  ASSERT_EQ(emu::malloc(&p, kBytes, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK);
  ASSERT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(p), &stale), Status::Ok);
  ASSERT_EQ(emu::free(p), GCOLL_EMU_OK);
  // The next allocation most likely gets the freed memfd's descriptor number: the peer
  // must tell the two apart by more than /proc/<pid>/fd/<n>.
  Buffer dev(kBytes, GCOLL_EMU_MEM_DEVICE);
  ASSERT_EQ(dev.rc, GCOLL_EMU_OK);
  ASSERT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(dev.p), &fresh), Status::Ok);
  const std::vector<unsigned char> before = pattern(kBytes, 2);
  ASSERT_EQ(emu::memcpy(dev.p, before.data(), kBytes), GCOLL_EMU_OK);
  ASSERT_EQ(emu::device_synchronize(), GCOLL_EMU_OK);
  ASSERT_TRUE(exited_ok(run_child("IpcPeer", {"EMU_TEST_IPC_STALE=" + to_hex(stale),
                                              "EMU_TEST_IPC_HANDLE=" + to_hex(fresh),
                                              "EMU_TEST_IPC_BYTES=" + std::to_string(kBytes)},
                                  60)));
}

// ---- the machine of a topology file ---------------------------------------------------
// Four GPUs: 07 and 0a joined by NVLink, 0f beside them on the same CPU (PCIe) but with
// peer access between it and 0a marked broken, 87 alone on the other CPU (SYS: no peer
// access to any other). The `dev` attributes are informational: the emulation numbers the
// GPUs as the model lists them, so the tests find each GPU's ordinal by its bus id.

constexpr char kA[] = "0000:07:00.0", kB[] = "0000:0a:00.0", kC[] = "0000:87:00.0", kD[] = "0000:0f:00.0";

constexpr char kTopoXml[] = R"(<system version="1">
  <cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:07:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="0" gdr="1">
        <nvlink target="0000:0a:00.0" count="4" tclass="0x030200"/>
      </gpu>
    </pci>
    <pci busid="0000:0a:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="90" rank="1" gdr="1">
        <nvlink target="0000:07:00.0" count="4" tclass="0x030200"/>
        <gcoll_p2p target="0000:0f:00.0" state="broken"/>
      </gpu>
    </pci>
    <pci busid="0000:0f:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="3" sm="90" rank="3" gdr="1">
        <gcoll_p2p target="0000:0a:00.0" state="broken"/>
      </gpu>
    </pci>
  </cpu>
  <cpu numaid="1" affinity="ffff0000" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:87:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="2" sm="90" rank="2" gdr="1"/>
    </pci>
  </cpu>
</system>
)";

// What cudaDeviceCanAccessPeer answers on that machine.
bool expected_peer(const std::string &a, const std::string &b) { return a == b || (a != kC && b != kC); }

// The launchers' local rank variables: the children start without any of the parent's.
std::vector<std::string> without_local_ranks() {
  return {"-OMPI_COMM_WORLD_LOCAL_RANK", "-MV2_COMM_WORLD_LOCAL_RANK", "-MPI_LOCALRANKID", "-SLURM_LOCALID",
          "-PMI_LOCAL_RANK"};
}

// The topology file in a temporary directory, removed at the end.
class EmuTopo : public Emu {
 protected:
  void SetUp() override {
    Emu::SetUp();
    const char *tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/gcoll-emu-topo-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    path_ = dir_ + "/topo.xml";
    std::ofstream(path_) << kTopoXml;
  }
  void TearDown() override {
    if (!path_.empty()) unlink(path_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
    Emu::TearDown();
  }
  // The children's environment: the file, the given variables, no other local rank.
  std::vector<std::string> env(std::vector<std::string> extra) const {
    std::vector<std::string> e = without_local_ranks();
    e.push_back("GCOLL_TOPO_FILE=" + path_);
    e.insert(e.end(), extra.begin(), extra.end());
    return e;
  }
  std::string dir_, path_;
};

TEST_F(Emu, OneDeviceWithoutATopologyFile) {
  if (!config().topo_file.empty()) GTEST_SKIP() << "GCOLL_TOPO_FILE is set for this process";
  Runtime &rt = emulated_runtime();
  EXPECT_EQ(rt.device_count(), 1);
  EXPECT_EQ(emu::device_count(), 1);
  EXPECT_EQ(rt.current_device(), 0);
  EXPECT_TRUE(rt.can_access_peer(0, 0));
  EXPECT_FALSE(rt.can_access_peer(0, 1));
  DeviceInfo info;
  ASSERT_EQ(rt.device_info(0, &info), Status::Ok);
  EXPECT_EQ(std::memcmp(info.uuid, "gcoll-emu-gpu-0", 16), 0);
  EXPECT_STREQ(info.pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(info.sm_count, 16);
  EXPECT_EQ(rt.device_info(1, &info), Status::ErrArg);
  Buffer b(64, GCOLL_EMU_MEM_DEVICE);
  EXPECT_EQ(emu::pointer_device(b.p), 0);
  EXPECT_EQ(emu::denied_ipc_opens(), 0);
  EXPECT_EQ(emu::broken_ipc_opens(), 0);
}

TEST_F(EmuTopo, DevicesOfTheFile) {
  // OMPI_COMM_WORLD_LOCAL_RANK=6 of 4 GPUs: device 2.
  EXPECT_TRUE(exited_ok(run_child("TopoDevices", env({"EMU_TEST_TOPO=1", "EMU_TEST_DEFAULT=2",
                                                      "OMPI_COMM_WORLD_LOCAL_RANK=6"}),
                                  60)));
}

TEST_F(EmuTopo, DefaultDeviceFromTheFirstLocalRankSet) {
  // MPI_LOCALRANKID comes before SLURM_LOCALID: 7 % 4.
  EXPECT_TRUE(exited_ok(run_child("TopoDevices", env({"EMU_TEST_TOPO=1", "EMU_TEST_DEFAULT=3",
                                                      "MPI_LOCALRANKID=7", "SLURM_LOCALID=1"}),
                                  60)));
  // None set: device 0.
  EXPECT_TRUE(exited_ok(run_child("TopoDevices", env({"EMU_TEST_TOPO=1", "EMU_TEST_DEFAULT=0"}), 60)));
}

TEST_F(EmuTopo, UnreadableFileMeansOneDevice) {
  std::vector<std::string> e = without_local_ranks();
  e.push_back("GCOLL_TOPO_FILE=" + dir_ + "/no-such-file.xml");
  e.push_back("OMPI_COMM_WORLD_LOCAL_RANK=3");
  e.push_back("EMU_TEST_TOPO_ONE=1");
  EXPECT_TRUE(exited_ok(run_child("TopoOneDevice", e, 60)));
}

// An exporter process with a buffer on each GPU, and an importer that opens them into
// other GPUs: allowed, denied, broken, the same GPU (EmuChild.TopoExporter / TopoImporter).
TEST_F(EmuTopo, IpcFollowsPeerAccess) {
  EXPECT_TRUE(exited_ok(run_child("TopoExporter", env({"EMU_TEST_TOPO_EXPORT=1"}), 120)));
}

// ---- process exit ------------------------------------------------------------------------

TEST_F(Emu, ExitWithBusyStreamsDoesNotHang) {
  // The child leaves about 10 s of queued work behind; exit must not wait for it.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(exited_ok(run_child("ExitWithBusyStreams", {"EMU_TEST_EXIT=1"}, 30)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
}

// ---- the child processes' halves ------------------------------------------------------

// Maps the parent's allocation, checks what it holds, writes pattern 3 into it. With
// EMU_TEST_IPC_STALE, first checks that the handle of a freed allocation fails to open.
TEST(EmuChild, IpcPeer) {
  const char *handle = std::getenv("EMU_TEST_IPC_HANDLE");
  if (!handle) GTEST_SKIP() << "run by Emu.PeerProcessWritesThroughHandle / Emu.StaleHandleDoesNotOpen";
  emu::set_delay_for_testing(100);
  Driver &d = emulated_driver();
  Runtime &rt = emulated_runtime();
  const std::size_t n = std::stoul(std::getenv("EMU_TEST_IPC_BYTES"));
  void *p = nullptr;
  if (const char *stale = std::getenv("EMU_TEST_IPC_STALE")) {
    EXPECT_EQ(d.ipc_open(from_hex(stale), &p), Status::ErrInternal);
    EXPECT_EQ(p, nullptr);
  }
  const IpcHandle h = from_hex(handle);
  ASSERT_EQ(d.ipc_open(h, &p), Status::Ok);
  void *again = nullptr;
  ASSERT_EQ(d.ipc_open(h, &again), Status::Ok);
  EXPECT_EQ(again, p);  // one mapping, counted
  PtrInfo info;
  ASSERT_EQ(d.query(static_cast<unsigned char *>(p) + 10, &info), Status::Ok);
  EXPECT_TRUE(info.device);
  EXPECT_EQ(info.base, reinterpret_cast<std::uintptr_t>(p));
  EXPECT_EQ(info.size, n);
  EXPECT_FALSE(info.ipc_capable);

  StreamGuard s;
  Buffer pinned(n, GCOLL_EMU_MEM_PINNED);
  ASSERT_EQ(rt.memcpy_async(pinned.p, p, n, s.s), Status::Ok);
  ASSERT_EQ(rt.stream_synchronize(s.s), Status::Ok);
  EXPECT_EQ(std::vector<unsigned char>(pinned.bytes(), pinned.bytes() + n), pattern(n, 2));
  const std::vector<unsigned char> after = pattern(n, 3);
  std::memcpy(pinned.p, after.data(), n);
  ASSERT_EQ(rt.memcpy_async(p, pinned.p, n, s.s), Status::Ok);
  ASSERT_EQ(rt.stream_synchronize(s.s), Status::Ok);

  EXPECT_EQ(d.ipc_close(p), Status::Ok);
  EXPECT_EQ(emu::pointer_kind(p), GCOLL_EMU_MEM_DEVICE);  // still mapped: one reference left
  EXPECT_EQ(d.ipc_close(p), Status::Ok);
  EXPECT_EQ(emu::pointer_kind(p), -1);
  EXPECT_NE(d.ipc_close(p), Status::Ok);
}

// ---- the topology file's children -------------------------------------------------------

// The ordinal of the device with this bus id, or -1.
int ordinal_of(const std::string &bus) {
  Runtime &rt = emulated_runtime();
  for (int i = 0; i < rt.device_count(); ++i) {
    DeviceInfo info;
    if (ok(rt.device_info(i, &info)) && bus == info.pci_bus_id) return i;
  }
  return -1;
}

std::string uuid_hex(int dev) {
  DeviceInfo info;
  EXPECT_EQ(emulated_runtime().device_info(dev, &info), Status::Ok);
  IpcHandle h{};
  std::memcpy(h.bytes, info.uuid, sizeof info.uuid);
  return to_hex(h).substr(0, 32);
}

// Device memory of `dev` read back through a stream.
std::vector<unsigned char> read_device(const void *p, std::size_t n) {
  Runtime &rt = emulated_runtime();
  StreamGuard s;
  Buffer pinned(n, GCOLL_EMU_MEM_PINNED);
  EXPECT_EQ(rt.memcpy_async(pinned.p, p, n, s.s), Status::Ok);
  EXPECT_EQ(rt.stream_synchronize(s.s), Status::Ok);
  return std::vector<unsigned char>(pinned.bytes(), pinned.bytes() + n);
}

void write_device(void *p, const std::vector<unsigned char> &v) {
  Runtime &rt = emulated_runtime();
  StreamGuard s;
  Buffer pinned(v.size(), GCOLL_EMU_MEM_PINNED);
  std::memcpy(pinned.p, v.data(), v.size());
  EXPECT_EQ(rt.memcpy_async(p, pinned.p, v.size(), s.s), Status::Ok);
  EXPECT_EQ(rt.stream_synchronize(s.s), Status::Ok);
}

TEST(EmuChild, TopoDevices) {
  if (!std::getenv("EMU_TEST_TOPO")) GTEST_SKIP() << "run by EmuTopo.*";
  Runtime &rt = emulated_runtime();
  Driver &d = emulated_driver();
  ASSERT_EQ(rt.device_count(), 4);
  EXPECT_EQ(emu::device_count(), 4);
  // Ordinal i is the model's i-th GPU, with its bus id.
  topo::NodeTopo t;
  std::string error;
  ASSERT_TRUE(topo::read_topo_file(config().topo_file, &t, &error)) << error;
  ASSERT_EQ(t.gpus.size(), 4u);
  std::vector<std::string> bus(4);
  std::vector<std::string> uuids;
  for (int i = 0; i < 4; ++i) {
    DeviceInfo info;
    ASSERT_EQ(rt.device_info(i, &info), Status::Ok);
    bus[static_cast<std::size_t>(i)] = info.pci_bus_id;
    EXPECT_EQ(bus[static_cast<std::size_t>(i)], t.gpus[static_cast<std::size_t>(i)].bus_id);
    EXPECT_EQ(info.sm_count, 16);
    EXPECT_EQ(info.mps, 1);
    EXPECT_STREQ(emu::device_pci_bus_id(i), info.pci_bus_id);
    uuids.push_back(uuid_hex(i));
  }
  for (const char *b : {kA, kB, kC, kD}) EXPECT_GE(ordinal_of(b), 0) << b;
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = i + 1; j < 4; ++j) EXPECT_NE(uuids[i], uuids[j]) << "devices " << i << " and " << j;
  DeviceInfo info;
  EXPECT_EQ(rt.device_info(4, &info), Status::ErrArg);
  EXPECT_EQ(rt.device_info(-1, &info), Status::ErrArg);
  EXPECT_EQ(emu::device_pci_bus_id(4), nullptr);

  // Peer access as the file has it.
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      const auto &ba = bus[static_cast<std::size_t>(a)], &bb = bus[static_cast<std::size_t>(b)];
      EXPECT_EQ(rt.can_access_peer(a, b), expected_peer(ba, bb)) << ba << " -> " << bb;
      EXPECT_EQ(emu::can_access_peer(a, b), expected_peer(ba, bb));
    }
  EXPECT_FALSE(rt.can_access_peer(0, 4));
  EXPECT_FALSE(rt.can_access_peer(-1, 0));

  // The process's default device: local rank % 4, on every thread that sets none.
  const int def = std::atoi(std::getenv("EMU_TEST_DEFAULT"));
  EXPECT_EQ(rt.current_device(), def);
  EXPECT_EQ(emu::current_device(), def);
  EXPECT_EQ(rt.set_device(4), Status::ErrArg);
  EXPECT_NE(std::string(rt.last_error()), "");
  EXPECT_EQ(emu::set_device(-1), GCOLL_EMU_ERR_INVALID);
  EXPECT_EQ(rt.current_device(), def);

  // Current device per thread; allocations remember theirs.
  const int mine = (def + 1) % 4, theirs = (def + 2) % 4;
  ASSERT_EQ(rt.set_device(mine), Status::Ok);
  EXPECT_EQ(rt.current_device(), mine);
  int seen_default = -1, seen_after = -1, seen_ordinal = -1, seen_pointer = -1;
  std::thread th([&] {
    seen_default = emulated_runtime().current_device();
    if (emu::set_device(theirs) != GCOLL_EMU_OK) return;
    seen_after = emu::current_device();
    void *p = nullptr;
    if (emu::malloc(&p, 256, GCOLL_EMU_MEM_DEVICE) != GCOLL_EMU_OK) return;
    PtrInfo pi;
    if (ok(emulated_driver().query(p, &pi))) seen_ordinal = pi.ordinal;
    seen_pointer = emu::pointer_device(p);
    emu::free(p);
  });
  th.join();
  EXPECT_EQ(seen_default, def) << "a new thread did not start on the process's device";
  EXPECT_EQ(seen_after, theirs);
  EXPECT_EQ(seen_ordinal, theirs);
  EXPECT_EQ(seen_pointer, theirs);
  EXPECT_EQ(rt.current_device(), mine) << "another thread's set_device changed this thread's device";
  for (int kind : {GCOLL_EMU_MEM_DEVICE, GCOLL_EMU_MEM_ASYNC}) {
    Buffer b(128, kind);
    ASSERT_EQ(b.rc, GCOLL_EMU_OK);
    PtrInfo pi;
    ASSERT_EQ(d.query(b.p, &pi), Status::Ok);
    EXPECT_TRUE(pi.device);
    EXPECT_EQ(pi.ordinal, mine);
    EXPECT_EQ(emu::pointer_device(b.p), mine);
  }
  void *dev_p = nullptr;
  ASSERT_EQ(rt.malloc_device(&dev_p, 64), Status::Ok);
  EXPECT_EQ(emu::pointer_device(dev_p), mine);
  rt.free_device(dev_p);
  Buffer pinned(64, GCOLL_EMU_MEM_PINNED);
  EXPECT_EQ(emu::pointer_device(pinned.p), -1);
  // Copies between devices of the process work (cudaMemcpyDefault between GPUs).
  Buffer on_mine(kBytes, GCOLL_EMU_MEM_DEVICE);
  ASSERT_EQ(rt.set_device(theirs), Status::Ok);
  Buffer on_theirs(kBytes, GCOLL_EMU_MEM_DEVICE);
  EXPECT_EQ(emu::pointer_device(on_theirs.p), theirs);
  const std::vector<unsigned char> pat = pattern(kBytes, 5);
  ASSERT_EQ(emu::memcpy(on_mine.p, pat.data(), kBytes), GCOLL_EMU_OK);
  ASSERT_EQ(emu::memcpy(on_theirs.p, on_mine.p, kBytes), GCOLL_EMU_OK);
  std::vector<unsigned char> back(kBytes);
  ASSERT_EQ(emu::memcpy(back.data(), on_theirs.p, kBytes), GCOLL_EMU_OK);
  EXPECT_EQ(back, pat);
}

TEST(EmuChild, TopoOneDevice) {
  if (!std::getenv("EMU_TEST_TOPO_ONE")) GTEST_SKIP() << "run by EmuTopo.UnreadableFileMeansOneDevice";
  Runtime &rt = emulated_runtime();
  EXPECT_FALSE(config().topo_file.empty());
  EXPECT_EQ(rt.device_count(), 1);
  EXPECT_EQ(rt.current_device(), 0);  // local rank 3 % 1
  EXPECT_EQ(rt.set_device(1), Status::ErrArg);
  EXPECT_EQ(rt.set_device(0), Status::Ok);
  EXPECT_TRUE(rt.can_access_peer(0, 0));
  EXPECT_FALSE(rt.can_access_peer(0, 1));
  DeviceInfo info;
  ASSERT_EQ(rt.device_info(0, &info), Status::Ok);
  EXPECT_EQ(std::memcmp(info.uuid, "gcoll-emu-gpu-0", 16), 0);
  Buffer b(64, GCOLL_EMU_MEM_DEVICE);
  EXPECT_EQ(emu::pointer_device(b.p), 0);
}

// A buffer on each GPU (pattern 10 + i, in the order A B C D), their handles and the
// GPUs' uuids to an importer process; then what the importer's writes did to them.
TEST(EmuChild, TopoExporter) {
  if (!std::getenv("EMU_TEST_TOPO_EXPORT")) GTEST_SKIP() << "run by EmuTopo.IpcFollowsPeerAccess";
  Runtime &rt = emulated_runtime();
  Driver &d = emulated_driver();
  ASSERT_EQ(rt.device_count(), 4);
  const char *const names[] = {kA, kB, kC, kD};
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<std::string> env = {"-EMU_TEST_TOPO_EXPORT", "EMU_TEST_TOPO_IMPORT=1"};
  std::string uuids;
  for (int i = 0; i < 4; ++i) {
    const int dev = ordinal_of(names[i]);
    ASSERT_GE(dev, 0) << names[i];
    ASSERT_EQ(rt.set_device(dev), Status::Ok);
    bufs.push_back(std::make_unique<Buffer>(kBytes, GCOLL_EMU_MEM_DEVICE));
    ASSERT_EQ(bufs.back()->rc, GCOLL_EMU_OK);
    EXPECT_EQ(emu::pointer_device(bufs.back()->p), dev);
    const std::vector<unsigned char> pat = pattern(kBytes, 10 + static_cast<unsigned>(i));
    ASSERT_EQ(emu::memcpy(bufs.back()->p, pat.data(), kBytes), GCOLL_EMU_OK);
    IpcHandle h;
    ASSERT_EQ(d.ipc_export(reinterpret_cast<std::uintptr_t>(bufs.back()->p), &h), Status::Ok);
    env.push_back("EMU_TEST_H" + std::to_string(i) + "=" + to_hex(h));
    uuids += uuid_hex(dev);
  }
  ASSERT_EQ(emu::device_synchronize(), GCOLL_EMU_OK);
  env.push_back("EMU_TEST_UUIDS=" + uuids);
  env.push_back("EMU_TEST_IPC_BYTES=" + std::to_string(kBytes));
  ASSERT_TRUE(exited_ok(run_child("TopoImporter", env, 90)));
  std::vector<unsigned char> now(kBytes);
  // A: never opened. B: opened into A (NVLink): the importer's writes are here. C: refused
  // into A, then opened into C itself: written. D: opened into B, a broken pair: the
  // importer wrote into its private copy only.
  const unsigned expect[] = {10, 20, 21, 13};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(names[i]);
    ASSERT_EQ(emu::memcpy(now.data(), bufs[static_cast<std::size_t>(i)]->p, kBytes), GCOLL_EMU_OK);
    EXPECT_EQ(now, pattern(kBytes, expect[i]));
  }
  EXPECT_EQ(emu::denied_ipc_opens(), 0);
  EXPECT_EQ(emu::broken_ipc_opens(), 0);
}

TEST(EmuChild, TopoImporter) {
  if (!std::getenv("EMU_TEST_TOPO_IMPORT")) GTEST_SKIP() << "run by EmuChild.TopoExporter";
  emu::set_delay_for_testing(100);
  Runtime &rt = emulated_runtime();
  Driver &d = emulated_driver();
  ASSERT_EQ(rt.device_count(), 4);
  const int A = ordinal_of(kA), B = ordinal_of(kB), C = ordinal_of(kC), D = ordinal_of(kD);
  ASSERT_TRUE(A >= 0 && B >= 0 && C >= 0 && D >= 0);
  // Every process derives the same uuid for a GPU.
  EXPECT_EQ(uuid_hex(A) + uuid_hex(B) + uuid_hex(C) + uuid_hex(D), std::string(std::getenv("EMU_TEST_UUIDS")));
  const auto handle = [](int i) { return from_hex(std::getenv(("EMU_TEST_H" + std::to_string(i)).c_str())); };
  ASSERT_EQ(std::stoul(std::getenv("EMU_TEST_IPC_BYTES")), kBytes);

  // B's buffer into A (NVLink): the owner's bytes, and the writes reach it.
  ASSERT_EQ(rt.set_device(A), Status::Ok);
  void *p = nullptr;
  ASSERT_EQ(d.ipc_open(handle(1), &p), Status::Ok);
  PtrInfo pi;
  ASSERT_EQ(d.query(p, &pi), Status::Ok);
  EXPECT_EQ(pi.ordinal, A);
  EXPECT_EQ(read_device(p, kBytes), pattern(kBytes, 11));
  write_device(p, pattern(kBytes, 20));
  EXPECT_EQ(d.ipc_close(p), Status::Ok);
  EXPECT_EQ(emu::denied_ipc_opens(), 0);
  EXPECT_EQ(emu::broken_ipc_opens(), 0);

  // C's buffer into A (across the sockets, no peer access): refused, as CUDA refuses it.
  (void)rt.last_error();
  p = reinterpret_cast<void *>(1);
  EXPECT_EQ(d.ipc_open(handle(2), &p), Status::ErrInternal);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(std::string(rt.last_error()), std::string("emulated GPU: peer access is not supported between GPU ") +
                                              kA + " and GPU " + kC + " (topology file)");
  EXPECT_EQ(emu::denied_ipc_opens(), 1);
  // ... and into C itself: the same bytes.
  ASSERT_EQ(rt.set_device(C), Status::Ok);
  ASSERT_EQ(d.ipc_open(handle(2), &p), Status::Ok);
  EXPECT_EQ(read_device(p, kBytes), pattern(kBytes, 12));
  write_device(p, pattern(kBytes, 21));
  EXPECT_EQ(d.ipc_close(p), Status::Ok);
  EXPECT_EQ(emu::denied_ipc_opens(), 1);

  // D's buffer into B (a broken pair): it opens and reads the owner's bytes of the moment,
  // but they are a private copy: the writes stay here.
  ASSERT_EQ(rt.set_device(B), Status::Ok);
  void *copy = nullptr;
  ASSERT_EQ(d.ipc_open(handle(3), &copy), Status::Ok);
  EXPECT_EQ(emu::broken_ipc_opens(), 1);
  ASSERT_EQ(d.query(copy, &pi), Status::Ok);
  EXPECT_TRUE(pi.device);
  EXPECT_EQ(pi.ordinal, B);
  EXPECT_EQ(read_device(copy, kBytes), pattern(kBytes, 13));
  write_device(copy, pattern(kBytes, 22));
  EXPECT_EQ(read_device(copy, kBytes), pattern(kBytes, 22));  // its own writes, in its copy
  // Opened into D itself meanwhile: the owner's memory, another mapping, untouched.
  ASSERT_EQ(rt.set_device(D), Status::Ok);
  void *real = nullptr;
  ASSERT_EQ(d.ipc_open(handle(3), &real), Status::Ok);
  EXPECT_NE(real, copy);
  EXPECT_EQ(read_device(real, kBytes), pattern(kBytes, 13));
  EXPECT_EQ(d.ipc_close(real), Status::Ok);
  EXPECT_EQ(d.ipc_close(copy), Status::Ok);
  EXPECT_EQ(emu::broken_ipc_opens(), 1);
  EXPECT_EQ(emu::denied_ipc_opens(), 1);
}

// Leaves streams with plenty of queued work (one blocked on an event of another) and
// returns: static destruction and exit run while the workers sleep, wait or copy.
TEST(EmuChild, ExitWithBusyStreams) {
  if (!std::getenv("EMU_TEST_EXIT")) GTEST_SKIP() << "run by Emu.ExitWithBusyStreams";
  Runtime &rt = emulated_runtime();
  Stream a = nullptr, b = nullptr;
  Event e = nullptr;
  ASSERT_EQ(rt.stream_create(&a), Status::Ok);
  ASSERT_EQ(rt.stream_create(&b), Status::Ok);
  ASSERT_EQ(rt.event_create(&e), Status::Ok);
  // Each stream writes its own buffer: the streams are not ordered with each other.
  void *dev = nullptr, *dev2 = nullptr, *pinned = nullptr, *out = nullptr;
  ASSERT_EQ(emu::malloc(&dev, kBytes, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK);
  ASSERT_EQ(emu::malloc(&dev2, kBytes, GCOLL_EMU_MEM_DEVICE), GCOLL_EMU_OK);
  ASSERT_EQ(emu::malloc(&pinned, kBytes, GCOLL_EMU_MEM_PINNED), GCOLL_EMU_OK);
  ASSERT_EQ(emu::malloc(&out, kBytes, GCOLL_EMU_MEM_PINNED), GCOLL_EMU_OK);
  emu::set_delay_for_testing(200000);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(rt.memcpy_async(dev, pinned, kBytes, a), Status::Ok);
  ASSERT_EQ(rt.event_record(e, a), Status::Ok);
  ASSERT_EQ(rt.stream_wait_event(b, e), Status::Ok);
  ASSERT_EQ(rt.memcpy_async(out, dev, kBytes, b), Status::Ok);
  rt.event_destroy(e);  // the queued record and wait keep its state
  for (int i = 0; i < 20; ++i) ASSERT_EQ(emu::memset(dev2, i, kBytes), GCOLL_EMU_OK);
}

}  // namespace
}  // namespace cuda
}  // namespace gcoll
