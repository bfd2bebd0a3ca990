// gcoll_memkind_test: what the memory kinds of a call cost, and that the shortcuts that
// make them cheap stay correct (issue 12; docs/engine.md "Agreement", "Classification").
//
// The library counts its own costs (gcoll_library_counter, include/gcoll/gcoll.h): MPI
// calls it makes on its own (the memory-kind agreements among them), driver pointer
// queries, classifications answered by its memory-kind cache, and engine calls in which
// a rank's buffers differed from the agreed kind (deviations). Results are compared with
// PMPI_* on host copies of the same inputs.
//
// Tests (each on a fresh duplicate of MPI_COMM_WORLD, so that its agreements start anew):
//   SteadyState.*     the same buffers call after call: after the warm-up, no hidden MPI
//                     call and no pointer query per call; the agreements follow their
//                     schedule exactly (calls 0, 1, 3, 7, ..., 1023)
//   Mixed.*           host and device ranks in the same calls (allreduce, bcast,
//                     allgather), the kinds changing from call to call
//   Realloc.*         a buffer freed and reallocated as the other kind (device -> host
//                     -> device), at the same address where the allocator gives it
//                     (printed), between calls that reuse the agreed kind: correct
//                     results, and the deviation counted where the new kind deviates
//   Deviator.*        a rank whose buffers differ from the agreed kind between two
//                     agreements: host memory under an agreed device engine call, pool
//                     memory (no IPC) under a zero-copy one, device memory under an
//                     agreed host engine call (GCOLL_HOST_BUFFERS=engine)
// Device memory comes from gpu_api.h: the CUDA runtime, or the emulated GPU
// (GCOLL_CUDA=emulate) where there is no GPU (gpu_or_skip.sh).
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gcoll/gcoll.h"
#include "gpu_util.h"

namespace gct {
namespace gpu {
namespace {

struct Counters {
  long long hidden = 0, agreements = 0, queries = 0, hits = 0, deviations = 0;
  static Counters now() {
    Counters c;
    c.hidden = gcoll_library_counter("hidden_mpi_calls");
    c.agreements = gcoll_library_counter("memory_agreements");
    c.queries = gcoll_library_counter("pointer_queries");
    c.hits = gcoll_library_counter("kind_cache_hits");
    c.deviations = gcoll_library_counter("deviations");
    return c;
  }
  Counters operator-(const Counters &o) const {
    return {hidden - o.hidden, agreements - o.agreements, queries - o.queries, hits - o.hits,
            deviations - o.deviations};
  }
};

// A communicator of its own for a test (PMPI: the library never sees its creation).
struct FreshComm {
  MPI_Comm comm = MPI_COMM_NULL;
  FreshComm() { PMPI_Comm_dup(MPI_COMM_WORLD, &comm); }
  ~FreshComm() { PMPI_Comm_free(&comm); }
};

bool host_engine() {
  const char *v = getenv("GCOLL_HOST_BUFFERS");
  return v && strcasecmp(v, "engine") == 0;
}

// A buffer of `bytes` of a kind. Host memory is mapped with mmap (not malloc), so that
// freeing it unmaps it and the range can come back as device memory (and the reverse).
class Mem2 {
 public:
  Mem2(Mem kind, size_t bytes) : kind_(kind), bytes_(bytes) {
    if (kind == Mem::Host) {
      p_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p_ == MAP_FAILED) {
        fprintf(stderr, "[rank %d] mmap(%zu) failed\n", world_rank(), bytes);
        PMPI_Abort(MPI_COMM_WORLD, 1);
      }
    } else {
      GCT_GPU(gpu_malloc(&p_, bytes, kind == Mem::Async ? GPU_MEM_ASYNC : GPU_MEM_DEVICE));
    }
  }
  ~Mem2() {
    if (kind_ == Mem::Host) munmap(p_, bytes_);
    else GCT_GPU(gpu_free(p_, kind_ == Mem::Async ? GPU_MEM_ASYNC : GPU_MEM_DEVICE));
  }
  Mem2(const Mem2 &) = delete;
  Mem2 &operator=(const Mem2 &) = delete;
  void *p() const { return p_; }
  Mem kind() const { return kind_; }
  void put(const void *src, size_t n) {
    if (kind_ == Mem::Host) memcpy(p_, src, n);
    else GCT_GPU(gpu_memcpy(p_, src, n));
  }
  void get(void *dst, size_t n) const {
    if (kind_ == Mem::Host) memcpy(dst, p_, n);
    else GCT_GPU(gpu_memcpy(dst, p_, n));
  }

 private:
  Mem kind_;
  size_t bytes_;
  void *p_ = nullptr;
};

int rank_of(MPI_Comm c) {
  int r = 0;
  PMPI_Comm_rank(c, &r);
  return r;
}

int size_of(MPI_Comm c) {
  int n = 0;
  PMPI_Comm_size(c, &n);
  return n;
}

// Integer-valued floats: every summation order gives the same bits.
std::vector<float> values(int rank, size_t count, int seed) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1) + seed % 7);
  return v;
}

bool same(const std::vector<float> &a, const std::vector<float> &b, const char *what) {
  if (memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) return true;
  for (size_t i = 0; i < a.size(); ++i)
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      report("%s: element %zu is %g, the MPI says %g", what, i, a[i], b[i]);
      break;
    }
  return false;
}

// MPI_Allreduce (float sum) on `send` (nullptr: in place) and `recv`, against
// PMPI_Allreduce on host copies.
bool allreduce(MPI_Comm c, Mem2 *send, Mem2 &recv, size_t count, int seed) {
  const std::vector<float> in = values(rank_of(c), count, seed);
  std::vector<float> ref(count), out(count);
  (send ? *send : recv).put(in.data(), count * sizeof(float));
  const int rc = MPI_Allreduce(send ? send->p() : MPI_IN_PLACE, recv.p(), static_cast<int>(count), MPI_FLOAT,
                               MPI_SUM, c);
  PMPI_Allreduce(in.data(), ref.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, c);
  if (rc != MPI_SUCCESS) {
    report("MPI_Allreduce returned %d", rc);
    return false;
  }
  recv.get(out.data(), count * sizeof(float));
  return same(out, ref, "allreduce");
}

bool bcast(MPI_Comm c, Mem2 &buf, size_t count, int root, int seed) {
  const int r = rank_of(c);
  std::vector<float> ref = values(root, count, seed), out(count);
  std::vector<float> mine = r == root ? ref : std::vector<float>(count, -1.0f);
  buf.put(mine.data(), count * sizeof(float));
  const int rc = MPI_Bcast(buf.p(), static_cast<int>(count), MPI_FLOAT, root, c);
  if (r != root) std::fill(ref.begin(), ref.end(), -2.0f);
  PMPI_Bcast(ref.data(), static_cast<int>(count), MPI_FLOAT, root, c);
  if (rc != MPI_SUCCESS) {
    report("MPI_Bcast returned %d", rc);
    return false;
  }
  buf.get(out.data(), count * sizeof(float));
  return same(out, ref, "bcast");
}

bool allgather(MPI_Comm c, Mem2 &send, Mem2 &recv, size_t count, int seed) {
  const int n = size_of(c);
  const std::vector<float> in = values(rank_of(c), count, seed);
  std::vector<float> ref(count * n), out(count * n);
  send.put(in.data(), count * sizeof(float));
  const int rc = MPI_Allgather(send.p(), static_cast<int>(count), MPI_FLOAT, recv.p(), static_cast<int>(count),
                               MPI_FLOAT, c);
  PMPI_Allgather(in.data(), static_cast<int>(count), MPI_FLOAT, ref.data(), static_cast<int>(count), MPI_FLOAT, c);
  if (rc != MPI_SUCCESS) {
    report("MPI_Allgather returned %d", rc);
    return false;
  }
  recv.get(out.data(), count * n * sizeof(float));
  return same(out, ref, "allgather");
}

// ---- steady state -------------------------------------------------------------------------

// The calls of one key (collective, size class) at which the ranks agree: 0, 1, 3, 7, ...,
// 1023, then every 1024 (GCOLL_MEMORY_AGREE_INTERVAL's default): 11 in the first 1024.
constexpr int kWarmup = 1024, kSteady = 1000, kAgreementsInWarmup = 11;

void steady_state(Mem kind, size_t count) {
  FreshComm fc;
  MPI_Comm c = fc.comm;
  Mem2 send(kind, count * sizeof(float)), recv(kind, count * sizeof(float));
  bool ok = allreduce(c, &send, recv, count, 1);
  const Counters start = Counters::now();
  (void)start;
  for (int i = 1; i < kWarmup; ++i)
    MPI_Allreduce(send.p(), recv.p(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, c);
  const Counters warm = Counters::now();
  for (int i = 0; i < kSteady; ++i)
    MPI_Allreduce(send.p(), recv.p(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, c);
  const Counters d = Counters::now() - warm;
  ok &= allreduce(c, &send, recv, count, 2);  // call 2024 (not an agreement either)
  const Counters all = Counters::now() - start;
  // What each of the kSteady calls cost: nothing hidden, no query, two cache hits.
  if (d.hidden != 0 || d.agreements != 0 || d.queries != 0 || d.deviations != 0) {
    report("%s buffers, %d calls in steady state: %lld hidden MPI calls, %lld agreements, %lld pointer queries, "
           "%lld deviations (all should be 0)",
           mem_name(kind), kSteady, d.hidden, d.agreements, d.queries, d.deviations);
    ok = false;
  }
  if (d.hits < 2LL * kSteady) {
    report("%lld classifications from the cache in %d calls of two buffers", d.hits, kSteady);
    ok = false;
  }
  // From the first call's end: the remaining warm-up agreements (calls 1, 3, ..., 1023).
  if (all.agreements != kAgreementsInWarmup - 1) {
    report("%lld agreements in calls 1 to %d, expected %d", all.agreements, kWarmup + kSteady,
           kAgreementsInWarmup - 1);
    ok = false;
  }
  EXPECT_ALL_RANKS(ok);
}

TEST(SteadyState, HostAllreduceCostsNoHiddenCallAndNoQuery) { steady_state(Mem::Host, 2); }

TEST(SteadyState, DeviceAllreduceCostsNoHiddenCallAndNoQuery) {
  // On a real GPU device buffers are queried at every call (the driver reuses freed
  // ranges without unmapping them): only the emulated GPU promises no query.
  if (!gpu_emulated()) GTEST_SKIP() << "device buffers are queried at every call on a real GPU";
  steady_state(Mem::Device, 2);
}

// Bcast and allgather have their own keys: the same promise for each.
TEST(SteadyState, HostBcastAndAllgather) {
  FreshComm fc;
  MPI_Comm c = fc.comm;
  const int n = size_of(c);
  Mem2 a(Mem::Host, 64), b(Mem::Host, 64 * static_cast<size_t>(n));
  bool ok = bcast(c, a, 4, 0, 1) && allgather(c, a, b, 4, 1);
  for (int i = 1; i < kWarmup; ++i) {
    MPI_Bcast(a.p(), 4, MPI_FLOAT, 0, c);
    MPI_Allgather(a.p(), 4, MPI_FLOAT, b.p(), 4, MPI_FLOAT, c);
  }
  const Counters warm = Counters::now();
  for (int i = 0; i < kSteady; ++i) {
    MPI_Bcast(a.p(), 4, MPI_FLOAT, 0, c);
    MPI_Allgather(a.p(), 4, MPI_FLOAT, b.p(), 4, MPI_FLOAT, c);
  }
  const Counters d = Counters::now() - warm;
  ok &= bcast(c, a, 4, 1 % n, 3) && allgather(c, a, b, 4, 3);
  if (d.hidden != 0 || d.queries != 0) {
    report("%lld hidden MPI calls, %lld pointer queries in %d bcast+allgather pairs (should be 0)", d.hidden,
           d.queries, kSteady);
    ok = false;
  }
  EXPECT_ALL_RANKS(ok);
}

// ---- mixed host and device ranks -------------------------------------------------------------

// Rank r's kind at call i: patterns where kinds differ between ranks and change between
// calls, so that calls between agreements meet every combination of agreed and own kind.
Mem kind_at(int pattern, int rank, int i) {
  switch (pattern) {
    case 0: return rank % 2 ? Mem::Device : Mem::Host;               // fixed, mixed
    case 1: return (rank + i) % 2 ? Mem::Device : Mem::Host;          // alternating
    case 2: return i % 5 == 4 ? Mem::Host : Mem::Device;              // mostly device, all switch
    default: return (i / 3 + rank) % 3 == 0 ? Mem::Host : Mem::Device;  // drifting
  }
}

TEST(Mixed, AllreduceBcastAllgather) {
  bool ok = true;
  for (int pattern = 0; pattern < 4; ++pattern) {
    FreshComm fc;
    MPI_Comm c = fc.comm;
    const int r = rank_of(c), n = size_of(c);
    for (size_t count : {size_t{2}, size_t{4096}, size_t{20000}}) {
      for (int i = 0; i < 12; ++i) {
        set_phase("pattern %d, %zu floats, call %d", pattern, count, i);
        const Mem k = kind_at(pattern, r, i);
        Mem2 s(k, count * sizeof(float)), d(k, count * sizeof(float) * n);
        ok &= allreduce(c, &s, d, count, i);
        ok &= allreduce(c, nullptr, d, count, i + 1);
        ok &= bcast(c, d, count, i % n, i);
        ok &= allgather(c, s, d, count, i);
      }
    }
  }
  EXPECT_ALL_RANKS(ok);
}

// ---- a buffer freed and reallocated as the other kind ---------------------------------------

// Every rank alike, in place (one buffer per rank), 64 KiB (the zero-copy two-shot on
// device memory). The agreements of this key fall on calls 0, 1, 3, 7, then (the kind
// changed at 15) 15, 16, 18, 22, 30:
//   calls 0-7: device memory, agreed device;
//   the buffer is freed and host memory of the same size mapped (often at its address):
//   calls 8-14 run as agreed device calls in which every rank deviates (a stale
//   classification, device, would hand the engine a freed allocation); 15 agrees on host;
//   the host memory is unmapped and device memory allocated (again often at its address):
//   calls 24-29 run as agreed host calls (a stale classification, host, would hand the
//   MPI device memory): staged by the MPI's collective, or, with GCOLL_HOST_BUFFERS=engine,
//   an engine call in which every rank deviates.
TEST(Realloc, DeviceToHostToDevice) {
  FreshComm fc;
  MPI_Comm c = fc.comm;
  const size_t count = 16384, bytes = count * sizeof(float);
  bool ok = true;
  int reused[2] = {0, 0};
  void *old = nullptr;
  {
    Mem2 d(Mem::Device, bytes);
    old = d.p();
    for (int i = 0; i < 8; ++i) ok &= allreduce(c, nullptr, d, count, i);
  }
  void *host_at = nullptr;
  {
    Mem2 h(Mem::Host, bytes);
    host_at = h.p();
    reused[0] = h.p() == old;
    Counters before = Counters::now();
    for (int i = 8; i < 15; ++i) ok &= allreduce(c, nullptr, h, count, i);
    const Counters x = Counters::now() - before;
    if (x.deviations != 7 || x.agreements != 0) {
      report("calls 8-14 (host memory where device memory was agreed): %lld deviations, %lld agreements; "
             "expected 7 and 0", x.deviations, x.agreements);
      ok = false;
    }
    for (int i = 15; i < 24; ++i) ok &= allreduce(c, nullptr, h, count, i);
  }
  {
    Mem2 d(Mem::Device, bytes);
    reused[1] = d.p() == host_at;
    const Counters before = Counters::now();
    for (int i = 24; i < 30; ++i) ok &= allreduce(c, nullptr, d, count, i);
    const Counters x = Counters::now() - before;
    const long long want = host_engine() ? 6 : 0;
    if (x.deviations != want || x.agreements != 0) {
      report("calls 24-29 (device memory where host memory was agreed): %lld deviations, %lld agreements; "
             "expected %lld and 0", x.deviations, x.agreements, want);
      ok = false;
    }
    for (int i = 30; i < 34; ++i) ok &= allreduce(c, nullptr, d, count, i);
  }
  int sum[2] = {0, 0};
  PMPI_Reduce(reused, sum, 2, MPI_INT, MPI_SUM, 0, c);
  if (rank_of(c) == 0)
    printf("Realloc: device -> host at the same address on %d of %d ranks, host -> device on %d\n", sum[0],
           size_of(c), sum[1]);
  EXPECT_ALL_RANKS(ok);
}

// The same with separate send and receive buffers, each freed and reallocated as the
// other kind at every step, and some ranks only.
TEST(Realloc, SomeRanksSwitchEveryCall) {
  FreshComm fc;
  MPI_Comm c = fc.comm;
  const int r = rank_of(c);
  const size_t count = 8192;
  bool ok = true;
  for (int i = 0; i < 24; ++i) {
    set_phase("call %d", i);
    const Mem k = r % 2 == 0 || (i / 2) % 2 == 0 ? Mem::Device : Mem::Host;
    Mem2 s(k, count * sizeof(float)), d(k == Mem::Host ? Mem::Device : Mem::Host, count * sizeof(float));
    ok &= allreduce(c, &s, d, count, i);
  }
  EXPECT_ALL_RANKS(ok);
}

// ---- deviators --------------------------------------------------------------------------

// Calls 0 and 1 agree (every rank as `agreed`); call 2 (between agreements 1 and 3) has
// rank 1 pass `odd` instead. Its result must be right, and it must count as a deviation
// on rank 1 only when the agreed path is an engine call (`engine`).
bool deviator(MPI_Comm c, Mem agreed, Mem odd, size_t count, bool engine) {
  const int r = rank_of(c);
  bool ok = true;
  Mem2 a(agreed, count * sizeof(float)), b(agreed, count * sizeof(float));
  ok &= allreduce(c, &a, b, count, 0);
  ok &= allreduce(c, &a, b, count, 1);
  const Counters before = Counters::now();
  {
    const Mem k = r == 1 ? odd : agreed;
    Mem2 s(k, count * sizeof(float)), d(k, count * sizeof(float));
    ok &= allreduce(c, &s, d, count, 2);
  }
  const Counters x = Counters::now() - before;
  const long long want = r == 1 && engine ? 1 : 0;
  if (x.deviations != want || x.hidden != 0) {
    report("%s buffers where %s were agreed: %lld deviations (expected %lld), %lld hidden MPI calls (expected 0)",
           mem_name(r == 1 ? odd : agreed), mem_name(agreed), x.deviations, want, x.hidden);
    ok = false;
  }
  return ok;
}

TEST(Deviator, HostBuffersUnderAgreedDeviceEngine) {
  bool ok = true;
  for (size_t count : {size_t{2}, size_t{16384}}) {  // the bank one-shot, the zero-copy two-shot
    FreshComm fc;
    if (size_of(fc.comm) < 2) GTEST_SKIP() << "needs 2 ranks";
    ok &= deviator(fc.comm, Mem::Device, Mem::Host, count, true);
  }
  EXPECT_ALL_RANKS(ok);
}

TEST(Deviator, PoolMemoryUnderAgreedZeroCopy) {
  FreshComm fc;
  if (size_of(fc.comm) < 2) GTEST_SKIP() << "needs 2 ranks";
  // cudaMalloc on every rank (IPC: the two-shot reads peers' buffers in place), then
  // rank 1 passes pool memory, which has no IPC handle.
  EXPECT_ALL_RANKS(deviator(fc.comm, Mem::Device, Mem::Async, 16384, true));
}

TEST(Deviator, DeviceBuffersUnderAgreedHost) {
  FreshComm fc;
  if (size_of(fc.comm) < 2) GTEST_SKIP() << "needs 2 ranks";
  // With GCOLL_HOST_BUFFERS=engine the agreed host call is an engine call (rank 1 copies
  // to pinned memory); otherwise the MPI's, rank 1 staged (no deviation).
  bool ok = deviator(fc.comm, Mem::Host, Mem::Device, 2, host_engine());
  FreshComm fc2;
  ok &= deviator(fc2.comm, Mem::Host, Mem::Device, 16384, host_engine());
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gpu
}  // namespace gct
