// Stream-ordered collectives (issue 30: MPICH's stream API, include/gcoll/mpix_stream.h):
// MPIX_<Name>_enqueue of the six collectives on device buffers (gpu_api.h: a GPU, or the
// emulated one), each result against the PMPI_* blocking reference on host copies.
//
// The ordering is what each case checks: the input reaches the device buffer by a copy
// queued on the stream just before the enqueue call, behind a stretch of busy stream
// (gpu_stream_sleep, emulated GPU) and a memset of garbage; the result is read back by a
// copy queued on the stream just after it, and only then is the stream synchronized. A
// collective that read its input before the stream's earlier work, or let the later copy
// run before it ended, gives a wrong result.
//
// GCOLLTEST_THREAD_MULTIPLE=1: the proxy thread (the call returns at once; checked where
// the emulated GPU can keep a stream busy). Without it: host-synchronous calls.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gcoll/gcoll.h"
#include "gcoll/mpix_stream.h"
#include "gpu/gpu_api.h"
#include "harness.h"
#include "checks.h"
#include "types.h"

using gct::world_rank;
using gct::world_size;

namespace {

// The stream API is gcoll's (Open MPI, MPICH 4.0, the standard ABI); else MPICH's, taken
// over by gcoll (pmpi/stream.cc), where what is not a GPU stream stays MPICH's.
#ifdef GCOLL_MPIX_STREAM
constexpr bool kGcollsApi = true;
#else
constexpr bool kGcollsApi = false;
#endif

bool thread_multiple() {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  return level == MPI_THREAD_MULTIPLE;
}

// GCOLLTEST_STREAM_DEVICE=1: the configuration has the device path (GCOLL_STREAM_DEVICE=on
// on one node), whose allreduce, bcast and allgather never wait on the host, with or
// without MPI_THREAD_MULTIPLE.
bool device_path() {
  const char *v = std::getenv("GCOLLTEST_STREAM_DEVICE");
  return v && std::strcmp(v, "1") == 0;
}

// A stream, its MPIX_Stream and a stream communicator over `comm`.
struct StreamComm {
  void *stream = nullptr;
  MPIX_Stream mpix = MPIX_STREAM_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  bool own_stream = false;
  StreamComm(MPI_Comm parent, bool legacy) {
    if (!legacy) {
      EXPECT_EQ(gpu_stream_create(&stream), 0);
      own_stream = true;
    }
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    EXPECT_EQ(MPIX_Info_set_hex(info, "value", &stream, sizeof stream), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Stream_create(info, &mpix), MPI_SUCCESS);
    MPI_Info_free(&info);
    EXPECT_EQ(MPIX_Stream_comm_create(parent, mpix, &comm), MPI_SUCCESS);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  }
  ~StreamComm() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    if (mpix != MPIX_STREAM_NULL) MPIX_Stream_free(&mpix);
    if (own_stream) gpu_stream_destroy(stream);
  }
};

// Device memory for the test's lifetime.
struct Dev {
  void *p = nullptr;
  explicit Dev(size_t bytes) { EXPECT_EQ(gpu_malloc(&p, bytes ? bytes : 1, GPU_MEM_DEVICE), 0); }
  ~Dev() {
    if (p) gpu_free(p, GPU_MEM_DEVICE);
  }
};

// Values of rank r's element i (exact in float and double sums of a few ranks).
template <class T>
T value_of(int r, size_t i, int salt) {
  return static_cast<T>(static_cast<int>((i * 7 + static_cast<size_t>(r) * 13 + static_cast<size_t>(salt)) % 61) - 20);
}

template <class T>
std::vector<T> pattern(int r, size_t n, int salt) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value_of<T>(r, i, salt);
  return v;
}

// The input's way onto the device: garbage, a busy stretch, then the data (all on `s`).
void late_input(void *dev, const void *host, size_t bytes, void *s, unsigned busy_us) {
  if (!bytes) return;
  EXPECT_EQ(gpu_memset_async(dev, 0x7f, bytes, s), 0);
  if (gpu_emulated()) EXPECT_EQ(gpu_stream_sleep(s, busy_us), 0);
  EXPECT_EQ(gpu_memcpy_async(dev, host, bytes, s), 0);
}

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <>
MPI_Datatype mpi_type<int>() { return MPI_INT; }

template <class T>
bool same(const std::vector<T> &got, const std::vector<T> &want, const char *what) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      gct::report("%s: element %zu: got %g, want %g", what, i, static_cast<double>(got[i]),
                  static_cast<double>(want[i]));
      return false;
    }
  return true;
}

const unsigned kBusyUs = 3000;

template <class T>
bool allreduce_case(const StreamComm &sc, size_t n, MPI_Op op, bool in_place, int salt) {
  const int r = world_rank();
  const size_t bytes = n * sizeof(T);
  std::vector<T> in = pattern<T>(r, n, salt), want(n), got(n, T(0));
  PMPI_Allreduce(in.data(), want.data(), static_cast<int>(n), mpi_type<T>(), op, MPI_COMM_WORLD);
  Dev din(bytes), dout(bytes);
  late_input(din.p, in.data(), bytes, sc.stream, kBusyUs);
  const int rc = MPIX_Allreduce_enqueue(in_place ? MPI_IN_PLACE : din.p, in_place ? din.p : dout.p,
                                        static_cast<int>(n), mpi_type<T>(), op, sc.comm);
  if (bytes) EXPECT_EQ(gpu_memcpy_async(got.data(), in_place ? din.p : dout.p, bytes, sc.stream), 0);
  EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
  return rc == MPI_SUCCESS && same(got, want, "MPIX_Allreduce_enqueue");
}

template <class T>
bool bcast_case(const StreamComm &sc, size_t n, int root, int salt) {
  const int r = world_rank();
  const size_t bytes = n * sizeof(T);
  std::vector<T> in = pattern<T>(r, n, salt), want = pattern<T>(root, n, salt), got(n, T(0));
  Dev d(bytes);
  late_input(d.p, in.data(), bytes, sc.stream, kBusyUs);
  const int rc = MPIX_Bcast_enqueue(d.p, static_cast<int>(n), mpi_type<T>(), root, sc.comm);
  if (bytes) EXPECT_EQ(gpu_memcpy_async(got.data(), d.p, bytes, sc.stream), 0);
  EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
  return rc == MPI_SUCCESS && same(got, want, "MPIX_Bcast_enqueue");
}

template <class T>
bool allgather_case(const StreamComm &sc, size_t n, int salt) {
  const int r = world_rank(), p = world_size();
  std::vector<T> in = pattern<T>(r, n, salt), want(n * p), got(n * p, T(0));
  PMPI_Allgather(in.data(), static_cast<int>(n), mpi_type<T>(), want.data(), static_cast<int>(n), mpi_type<T>(),
                 MPI_COMM_WORLD);
  Dev din(n * sizeof(T)), dout(n * p * sizeof(T));
  late_input(din.p, in.data(), n * sizeof(T), sc.stream, kBusyUs);
  const int rc = MPIX_Allgather_enqueue(din.p, static_cast<int>(n), mpi_type<T>(), dout.p, static_cast<int>(n),
                                        mpi_type<T>(), sc.comm);
  if (n) EXPECT_EQ(gpu_memcpy_async(got.data(), dout.p, n * p * sizeof(T), sc.stream), 0);
  EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
  return rc == MPI_SUCCESS && same(got, want, "MPIX_Allgather_enqueue");
}

template <class T>
bool reduce_scatter_block_case(const StreamComm &sc, size_t n, MPI_Op op, int salt) {
  const int r = world_rank(), p = world_size();
  std::vector<T> in = pattern<T>(r, n * p, salt), want(n), got(n, T(0));
  PMPI_Reduce_scatter_block(in.data(), want.data(), static_cast<int>(n), mpi_type<T>(), op, MPI_COMM_WORLD);
  Dev din(n * p * sizeof(T)), dout(n * sizeof(T));
  late_input(din.p, in.data(), n * p * sizeof(T), sc.stream, kBusyUs);
  const int rc = MPIX_Reduce_scatter_block_enqueue(din.p, dout.p, static_cast<int>(n), mpi_type<T>(), op, sc.comm);
  if (n) EXPECT_EQ(gpu_memcpy_async(got.data(), dout.p, n * sizeof(T), sc.stream), 0);
  EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
  return rc == MPI_SUCCESS && same(got, want, "MPIX_Reduce_scatter_block_enqueue");
}

template <class T>
bool reduce_case(const StreamComm &sc, size_t n, MPI_Op op, int root, int salt) {
  const int r = world_rank();
  const size_t bytes = n * sizeof(T);
  std::vector<T> in = pattern<T>(r, n, salt), want(n), got(n, T(0));
  PMPI_Reduce(in.data(), want.data(), static_cast<int>(n), mpi_type<T>(), op, root, MPI_COMM_WORLD);
  Dev din(bytes), dout(bytes);
  late_input(din.p, in.data(), bytes, sc.stream, kBusyUs);
  const int rc = MPIX_Reduce_enqueue(din.p, dout.p, static_cast<int>(n), mpi_type<T>(), op, root, sc.comm);
  if (bytes && r == root) EXPECT_EQ(gpu_memcpy_async(got.data(), dout.p, bytes, sc.stream), 0);
  EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
  return rc == MPI_SUCCESS && (r != root || same(got, want, "MPIX_Reduce_enqueue"));
}

template <class T>
bool alltoall_case(const StreamComm &sc, size_t n, int salt) {
  const int r = world_rank(), p = world_size();
  std::vector<T> in = pattern<T>(r, n * p, salt), want(n * p), got(n * p, T(0));
  PMPI_Alltoall(in.data(), static_cast<int>(n), mpi_type<T>(), want.data(), static_cast<int>(n), mpi_type<T>(),
                MPI_COMM_WORLD);
  Dev din(n * p * sizeof(T)), dout(n * p * sizeof(T));
  late_input(din.p, in.data(), n * p * sizeof(T), sc.stream, kBusyUs);
  const int rc = MPIX_Alltoall_enqueue(din.p, static_cast<int>(n), mpi_type<T>(), dout.p, static_cast<int>(n),
                                       mpi_type<T>(), sc.comm);
  if (n) EXPECT_EQ(gpu_memcpy_async(got.data(), dout.p, n * p * sizeof(T), sc.stream), 0);
  EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
  return rc == MPI_SUCCESS && same(got, want, "MPIX_Alltoall_enqueue");
}

const size_t kCounts[] = {1, 7, 1000, 65536 + 3};

// On the emulated GPU: whether gcoll made, on its proxy thread, none of the CUDA calls that
// can hang there on a GPU (emu::stream_ordered_device_waits: a wait for the whole device,
// or the driver's lock taken exclusively: allocating or freeing memory, making a stream or
// an event, opening an IPC mapping). On an H200 every rank hung in the proxy's
// cudaHostAlloc while the test's own thread waited in the copy of the result back to
// pageable memory (docs/gpu-validation.md, 2026-11-29). Process-wide, from the start.
bool no_stream_ordered_hazards() {
  if (!gpu_emulated()) return true;
  using Count = int (*)(void);
  static const auto count = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "gcoll_emu_stream_ordered_device_waits"));
  if (!count) {
    gct::report("gcoll_emu_stream_ordered_device_waits not found");
    return false;
  }
  const int n = count();
  if (n != 0) gct::report("%d CUDA calls that can hang on a GPU made on the proxy thread (see the warning)", n);
  return n == 0;
}

}  // namespace

// Every collective, several sizes, types and ops, on a stream of the test's.
TEST(Stream, EveryCollectiveInStreamOrder) {
  StreamComm sc(MPI_COMM_WORLD, false);
  bool ok = true;
  int salt = 0;
  for (size_t n : kCounts) {
    ++salt;
    gct::set_phase("allreduce n=%zu", n);
    ok = allreduce_case<float>(sc, n, MPI_SUM, false, salt) && ok;
    ok = allreduce_case<double>(sc, n, MPI_MAX, true, salt) && ok;
    ok = allreduce_case<int>(sc, n, MPI_MIN, false, salt) && ok;
    gct::set_phase("bcast n=%zu", n);
    ok = bcast_case<int>(sc, n, static_cast<int>(n % world_size()), salt) && ok;
    ok = bcast_case<double>(sc, n, world_size() - 1, salt) && ok;
    gct::set_phase("allgather n=%zu", n);
    ok = allgather_case<float>(sc, n, salt) && ok;
    gct::set_phase("reduce_scatter_block n=%zu", n);
    ok = reduce_scatter_block_case<float>(sc, n, MPI_SUM, salt) && ok;
    ok = reduce_scatter_block_case<int>(sc, n, MPI_MAX, salt) && ok;
    gct::set_phase("reduce n=%zu", n);
    ok = reduce_case<double>(sc, n, MPI_SUM, 0, salt) && ok;
    ok = reduce_case<int>(sc, n, MPI_MAX, world_size() - 1, salt) && ok;
    gct::set_phase("alltoall n=%zu", n);
    ok = alltoall_case<int>(sc, n, salt) && ok;
  }
  ok = no_stream_ordered_hazards() && ok;
  EXPECT_ALL_RANKS(ok);
}

// The allreduce on every predefined type and every op the blocking tests run on it
// (types.h: tested_ops), 1001 elements, against PMPI_Allreduce with the tests' tolerance
// (TypeDesc::compare); where the MPI's own MAX/MIN on an unsigned type is known wrong
// (mpi_unsigned_minmax_wrong) either its result or the right one is accepted, as in the
// blocking tests (a call gcoll stages goes to the MPI).
TEST(Stream, AllreduceEveryTypeAndOp) {
  StreamComm sc(MPI_COMM_WORLD, false);
  const size_t n = 1001;
  size_t max_extent = 0;
  for (const gct::TypeDesc &t : gct::all_types()) max_extent = std::max(max_extent, t.extent);
  Dev din(n * max_extent), dout(n * max_extent);
  std::vector<unsigned char> in(n * max_extent), ref(n * max_extent), ref_mpi(n * max_extent), got(n * max_extent);
  bool ok = true;
  int cases = 0;
  for (const gct::TypeDesc &t : gct::all_types()) {
    for (MPI_Op op : gct::tested_ops(t)) {
      gct::set_phase("allreduce %s %s", t.name, gct::op_name(op));
      const uint32_t seed = gct::next_seed();
      const size_t bytes = n * t.extent;
      t.fill(in.data(), n, world_rank(), seed, op);
      PMPI_Allreduce(in.data(), ref.data(), static_cast<int>(n), gct::reference_type(t, op), op, MPI_COMM_WORLD);
      const bool either = gct::mpi_unsigned_minmax_wrong(t, op);
      if (either) PMPI_Allreduce(in.data(), ref_mpi.data(), static_cast<int>(n), t.type, op, MPI_COMM_WORLD);
      late_input(din.p, in.data(), bytes, sc.stream, 500);
      const int rc = MPIX_Allreduce_enqueue(din.p, dout.p, static_cast<int>(n), t.type, op, sc.comm);
      EXPECT_EQ(gpu_memcpy_async(got.data(), dout.p, bytes, sc.stream), 0);
      EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
      size_t first = 0;
      std::string detail;
      bool good = rc == MPI_SUCCESS && t.compare(got.data(), ref.data(), n, op, world_size(), &first, &detail) == 0;
      if (!good && either && rc == MPI_SUCCESS)
        good = t.compare(got.data(), ref_mpi.data(), n, op, world_size(), &first, &detail) == 0;
      if (!good) gct::report("allreduce %s %s: rc %d, element %zu: %s", t.name, gct::op_name(op), rc, first, detail.c_str());
      ok = ok && good;
      ++cases;
    }
  }
  if (cases < 20) gct::report("only %d (type, op) cases", cases), ok = false;
  EXPECT_ALL_RANKS(ok);
}

// MPIX_Reduce_enqueue (the root moving with each case) and MPIX_Reduce_scatter_block_enqueue
// on every predefined type and op the blocking tests run (types.h: tested_ops), against
// PMPI_Reduce and PMPI_Reduce_scatter_block with the tests' tolerance, as the allreduce
// above (the MPI's known-wrong unsigned MAX/MIN accepted either way).
TEST(Stream, ReduceAndReduceScatterBlockEveryTypeAndOp) {
  StreamComm sc(MPI_COMM_WORLD, false);
  const int p = world_size(), r = world_rank();
  const size_t n = 257;  // per rank (reduce_scatter_block); the reduce's count
  size_t max_extent = 0;
  for (const gct::TypeDesc &t : gct::all_types()) max_extent = std::max(max_extent, t.extent);
  const size_t cap = n * static_cast<size_t>(p) * max_extent;
  Dev din(cap), dout(cap);
  std::vector<unsigned char> in(cap), ref(cap), ref_mpi(cap), got(cap);
  bool ok = true;
  int cases = 0;
  for (const gct::TypeDesc &t : gct::all_types()) {
    for (MPI_Op op : gct::tested_ops(t)) {
      const bool either = gct::mpi_unsigned_minmax_wrong(t, op);
      const auto judge = [&](const char *what, int rc, size_t count) {
        size_t first = 0;
        std::string detail;
        bool good = rc == MPI_SUCCESS && t.compare(got.data(), ref.data(), count, op, p, &first, &detail) == 0;
        if (!good && either && rc == MPI_SUCCESS)
          good = t.compare(got.data(), ref_mpi.data(), count, op, p, &first, &detail) == 0;
        if (!good) gct::report("%s %s %s: rc %d, element %zu: %s", what, t.name, gct::op_name(op), rc, first, detail.c_str());
        return good;
      };
      // reduce, to a root that moves with the cases
      gct::set_phase("reduce %s %s", t.name, gct::op_name(op));
      const int root = cases % p;
      uint32_t seed = gct::next_seed();
      t.fill(in.data(), n, r, seed, op);
      PMPI_Reduce(in.data(), ref.data(), static_cast<int>(n), gct::reference_type(t, op), op, root, MPI_COMM_WORLD);
      if (either) PMPI_Reduce(in.data(), ref_mpi.data(), static_cast<int>(n), t.type, op, root, MPI_COMM_WORLD);
      late_input(din.p, in.data(), n * t.extent, sc.stream, 300);
      int rc = MPIX_Reduce_enqueue(din.p, dout.p, static_cast<int>(n), t.type, op, root, sc.comm);
      if (r == root) EXPECT_EQ(gpu_memcpy_async(got.data(), dout.p, n * t.extent, sc.stream), 0);
      EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
      ok = (r != root ? rc == MPI_SUCCESS : judge("reduce", rc, n)) && ok;
      // reduce_scatter_block
      gct::set_phase("reduce_scatter_block %s %s", t.name, gct::op_name(op));
      seed = gct::next_seed();
      t.fill(in.data(), n * static_cast<size_t>(p), r, seed, op);
      PMPI_Reduce_scatter_block(in.data(), ref.data(), static_cast<int>(n), gct::reference_type(t, op), op,
                                MPI_COMM_WORLD);
      if (either)
        PMPI_Reduce_scatter_block(in.data(), ref_mpi.data(), static_cast<int>(n), t.type, op, MPI_COMM_WORLD);
      late_input(din.p, in.data(), n * static_cast<size_t>(p) * t.extent, sc.stream, 300);
      rc = MPIX_Reduce_scatter_block_enqueue(din.p, dout.p, static_cast<int>(n), t.type, op, sc.comm);
      EXPECT_EQ(gpu_memcpy_async(got.data(), dout.p, n * t.extent, sc.stream), 0);
      EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
      ok = judge("reduce_scatter_block", rc, n) && ok;
      ++cases;
    }
  }
  if (cases < 20) gct::report("only %d (type, op) cases", cases), ok = false;
  EXPECT_ALL_RANKS(ok);
}

// The legacy default stream (a NULL cudaStream_t).
TEST(Stream, LegacyDefaultStream) {
  StreamComm sc(MPI_COMM_WORLD, true);
  bool ok = allreduce_case<float>(sc, 1000, MPI_SUM, false, 5);
  ok = bcast_case<int>(sc, 77, 0, 6) && ok;
  EXPECT_ALL_RANKS(ok);
}

// Many calls back to back, one synchronization at the end: each reads what the one before
// it wrote (an allreduce in place, ten times: every element is multiplied by size^10 on
// the way, exact in doubles).
TEST(Stream, BackToBackWithOneSync) {
  StreamComm sc(MPI_COMM_WORLD, false);
  const size_t n = 4099;
  const int r = world_rank(), p = world_size();
  std::vector<double> in(n), got(n, 0.0), want(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<double>((i % 5) + 1);  // the same on every rank
  double f = 1;
  for (int k = 0; k < 10; ++k) f *= p;
  for (size_t i = 0; i < n; ++i) want[i] = in[i] * f;
  Dev d(n * sizeof(double));
  late_input(d.p, in.data(), n * sizeof(double), sc.stream, kBusyUs);
  int rc = MPI_SUCCESS;
  for (int k = 0; k < 10 && rc == MPI_SUCCESS; ++k)
    rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, sc.comm);
  EXPECT_EQ(gpu_memcpy_async(got.data(), d.p, n * sizeof(double), sc.stream), 0);
  EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
  (void)r;
  EXPECT_ALL_RANKS(rc == MPI_SUCCESS && same(got, want, "ten allreduces back to back") && no_stream_ordered_hazards());
}

// With the proxy thread or the device path, the call returns while the stream is still
// busy with earlier work (the emulated GPU keeps it busy for 300 ms); host-synchronous, it
// waits for it.
TEST(Stream, TheHostDoesNotWait) {
  if (!gpu_emulated()) GTEST_SKIP() << "needs gpu_stream_sleep (emulated GPU)";
  StreamComm sc(MPI_COMM_WORLD, false);
  Dev d(4096);
  EXPECT_EQ(gpu_memset_async(d.p, 0, 4096, sc.stream), 0);
  EXPECT_EQ(gpu_stream_sleep(sc.stream, 300000), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, 1024, MPI_INT, MPI_SUM, sc.comm);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int busy = gpu_stream_query(sc.stream);
  EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
  bool ok = rc == MPI_SUCCESS;
  if (thread_multiple() || device_path()) {
    // Returned before the stream's earlier work ended (and so before the collective ran).
    if (busy != 1 || ms > 250) gct::report("the call took %.1f ms; stream busy after it: %d", ms, busy);
    ok = ok && busy == 1 && ms < 250;
  } else {
    if (ms < 250) gct::report("host-synchronous, yet the call took only %.1f ms", ms);
    ok = ok && ms >= 250;
  }
  EXPECT_ALL_RANKS(ok);
}

// Two stream communicators on two streams progress independently: a call on the second
// completes while the first's stream is still busy (proxy thread or device path only).
TEST(Stream, TwoStreamsIndependent) {
  if (!gpu_emulated()) GTEST_SKIP() << "needs gpu_stream_sleep (emulated GPU)";
  if (!thread_multiple() && !device_path()) GTEST_SKIP() << "host-synchronous without MPI_THREAD_MULTIPLE";
  StreamComm a(MPI_COMM_WORLD, false), b(MPI_COMM_WORLD, false);
  // (Every buffer allocated first and freed last: cudaFree waits for the whole device.)
  Dev da(64), db(64);
  std::vector<int> in(16, world_rank() + 1), got(16, 0);
  EXPECT_EQ(gpu_memset_async(da.p, 0, 64, a.stream), 0);
  EXPECT_EQ(gpu_stream_sleep(a.stream, 400000), 0);
  EXPECT_EQ(MPIX_Allreduce_enqueue(MPI_IN_PLACE, da.p, 16, MPI_INT, MPI_SUM, a.comm), MPI_SUCCESS);
  late_input(db.p, in.data(), 64, b.stream, kBusyUs);
  const int rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, db.p, 16, MPI_INT, MPI_SUM, b.comm);
  EXPECT_EQ(gpu_memcpy_async(got.data(), db.p, 64, b.stream), 0);
  EXPECT_EQ(gpu_stream_synchronize(b.stream), 0);
  const int p = world_size();
  const bool ok_b = rc == MPI_SUCCESS && got == std::vector<int>(16, p * (p + 1) / 2);
  const int a_busy = gpu_stream_query(a.stream);
  EXPECT_EQ(gpu_stream_synchronize(a.stream), 0);
  if (a_busy != 1) gct::report("stream a was done (%d) before b's call completed", a_busy);
  EXPECT_ALL_RANKS(ok_b && a_busy == 1);
}

// Bad input: the standard's error classes through the communicator's error handler
// (MPI_ERRORS_RETURN here), nothing queued.
TEST(Stream, BadInput) {
  StreamComm sc(MPI_COMM_WORLD, false);
  Dev d(64);
  bool ok = true;
  const auto cls = [](int rc) { return gct::error_class(rc); };
  // A communicator without a stream: MPI_ERR_COMM from gcoll; under MPICH's API,
  // MPICH's own allreduce answers it (its error: MPI_ERR_OTHER in MPICH 5.0), gcoll the
  // calls MPICH lacks.
  int rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rc == MPI_SUCCESS || (kGcollsApi && cls(rc) != MPI_ERR_COMM))
    gct::report("no stream: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  rc = MPIX_Bcast_enqueue(d.p, 4, MPI_INT, 0, MPI_COMM_WORLD);
  if (cls(rc) != MPI_ERR_COMM) gct::report("bcast, no stream: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, -1, MPI_INT, MPI_SUM, sc.comm);
  if (cls(rc) != MPI_ERR_COUNT) gct::report("count -1: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  rc = MPIX_Bcast_enqueue(d.p, 4, MPI_INT, world_size(), sc.comm);
  if (cls(rc) != MPI_ERR_ROOT) gct::report("root = size: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, 4, MPI_DATATYPE_NULL, MPI_SUM, sc.comm);
  if (cls(rc) != MPI_ERR_TYPE) gct::report("null type: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  rc = MPIX_Reduce_enqueue(d.p, d.p, 4, MPI_INT, MPI_OP_NULL, 0, sc.comm);
  if (cls(rc) != MPI_ERR_OP) gct::report("null op: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  // A stream still attached to a communicator cannot be freed.
  MPIX_Stream s = sc.mpix;
  rc = MPIX_Stream_free(&s);
  if (cls(rc) != MPI_ERR_ARG || s != sc.mpix) gct::report("free of an attached stream: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  // A stream communicator without a GPU stream (info MPI_INFO_NULL: a general stream;
  // under MPICH's API MPICH's, which needs MPIR_CVAR_CH4_RESERVE_VCIS, CMakeLists.txt).
  MPIX_Stream general = MPIX_STREAM_NULL;
  EXPECT_EQ(MPIX_Stream_create(MPI_INFO_NULL, &general), MPI_SUCCESS);
  MPI_Comm gcomm = MPI_COMM_NULL;
  EXPECT_EQ(MPIX_Stream_comm_create(MPI_COMM_WORLD, general, &gcomm), MPI_SUCCESS);
  MPI_Comm_set_errhandler(gcomm, MPI_ERRORS_RETURN);
  rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, 4, MPI_INT, MPI_SUM, gcomm);
  if (rc == MPI_SUCCESS || (kGcollsApi && cls(rc) != MPI_ERR_COMM))
    gct::report("general stream: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  MPIX_Stream got = MPIX_STREAM_NULL;
  EXPECT_EQ(MPIX_Comm_get_stream(gcomm, 0, &got), MPI_SUCCESS);
  ok = ok && got == general;
  MPI_Comm_free(&gcomm);
  EXPECT_EQ(MPIX_Stream_free(&general), MPI_SUCCESS);
  // A value that is not a stream.
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "type", "cudaStream_t");
  MPI_Info_set(info, "value", "12zz");
  MPIX_Stream bad = MPIX_STREAM_NULL;
  rc = MPIX_Stream_create(info, &bad);
  MPI_Info_free(&info);
  if (cls(rc) != MPI_ERR_ARG) gct::report("bad hex value: %s", gct::error_class_name(cls(rc)).c_str()), ok = false;
  // The stream communicator still works after all that.
  ok = allreduce_case<int>(sc, 5, MPI_SUM, false, 3) && ok;
  EXPECT_ALL_RANKS(ok);
}

// GCOLLTEST_STREAM_DEVICE=1 (GCOLL_STREAM_DEVICE=on, one node): allreduce, bcast and
// allgather on a predefined type are kernels on the stream (stream_device_calls one more
// each), reduce and alltoall go to the proxy; without it, none is the device path's.
TEST(Stream, DevicePathTakesItsCalls) {
  const bool want = device_path();
  StreamComm sc(MPI_COMM_WORLD, false);
  const long long before = gcoll_library_counter("stream_device_calls");
  bool ok = allreduce_case<float>(sc, 100, MPI_SUM, false, 1);
  ok = bcast_case<int>(sc, 100, 0, 2) && ok;
  ok = allgather_case<double>(sc, 100, 3) && ok;
  const long long mid = gcoll_library_counter("stream_device_calls");
  ok = reduce_case<int>(sc, 100, MPI_SUM, 0, 4) && ok;
  ok = alltoall_case<int>(sc, 10, 5) && ok;
  const long long after = gcoll_library_counter("stream_device_calls");
  const long long taken = mid - before, proxied = after - mid;
  // On a GPU the ranks of a test share GPU 0: without MPS the path is refused (time-sliced),
  // with MPS it runs; all three calls or none, and the log says which (GCOLL_DEBUG=INFO).
  if (want && !gpu_emulated() && taken == 0 && proxied == 0) {
    if (world_rank() == 0) std::printf("note: the device path is not up (a GPU shared without MPS?)\n");
  } else if (taken != (want ? 3 : 0) || proxied != 0)
    gct::report("device path took %lld of 3 calls (want %d) and %lld of the proxy's 2", taken, want ? 3 : 0, proxied),
        ok = false;
  EXPECT_ALL_RANKS(ok);
}

// The device path reads bcast and allgather buffers as one run of bytes: a rank whose
// datatype is derived (legal MPI: the same signature as its peers' MPI_INT) gets
// MPI_ERR_TYPE, takes part as failed, and every rank's stream reports an error at its next
// synchronization (the kernel traps) instead of a wrong result; the communicator stays
// broken (the next call fails on every rank). Nothing hangs. Device path only, on the
// emulated GPU (on a GPU the trap ends the process's CUDA context: the other tests could
// not run after it).
TEST(Stream, DevicePathRefusesWhatItCannotReadLoudly) {
  if (!device_path()) GTEST_SKIP() << "the device path's refusal (GCOLLTEST_STREAM_DEVICE=1)";
  if (!gpu_emulated()) GTEST_SKIP() << "a trap ends the CUDA context on a GPU";
  StreamComm sc(MPI_COMM_WORLD, false);
  const int r = world_rank();
  const size_t n = 1024;
  Dev d(n * sizeof(int));
  std::vector<int> in = pattern<int>(r, n, 30);
  late_input(d.p, in.data(), n * sizeof(int), sc.stream, kBusyUs);
  MPI_Datatype four;
  MPI_Type_contiguous(4, MPI_INT, &four);
  MPI_Type_commit(&four);
  const int rc = r == 0 ? MPIX_Bcast_enqueue(d.p, static_cast<int>(n / 4), four, 0, sc.comm)
                        : MPIX_Bcast_enqueue(d.p, static_cast<int>(n), MPI_INT, 0, sc.comm);
  MPI_Type_free(&four);
  const int sync = gpu_stream_synchronize(sc.stream);
  const int next = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, static_cast<int>(n), MPI_INT, MPI_SUM, sc.comm);
  gpu_stream_synchronize(sc.stream);
  bool ok = true;
  if (r == 0 && gct::error_class(rc) != MPI_ERR_TYPE)
    gct::report("derived datatype: %s, want MPI_ERR_TYPE", gct::error_class_name(gct::error_class(rc)).c_str()), ok = false;
  if (r != 0 && rc != MPI_SUCCESS) gct::report("a predefined datatype's call: rc %d", rc), ok = false;
  if (sync == 0) gct::report("the stream's synchronization reported no error"), ok = false;
  if (next == MPI_SUCCESS) gct::report("the next call on the broken communicator succeeded"), ok = false;
  EXPECT_ALL_RANKS(ok);
}

// Calls larger than the device path's bank (4 MiB: several kernels, one per chunk; the
// allgather's pieces chunked at 4 MiB / ranks), host buffers (staged through the scratch
// in stream order), and device-path and proxy calls mixed on one stream, each reading what
// the one before wrote: allreduce in place (device path), reduce to rank 0 (proxy), bcast
// from rank 0 (device path).
TEST(Stream, ChunksHostBuffersAndMixedPaths) {
  StreamComm sc(MPI_COMM_WORLD, false);
  const int p = world_size(), r = world_rank();
  bool ok = true;
  gct::set_phase("chunks");
  const size_t big = (5u << 20) / sizeof(float) + 3;  // 5 MiB and 12 bytes
  ok = allreduce_case<float>(sc, big, MPI_SUM, false, 7) && ok;
  ok = bcast_case<int>(sc, big, p - 1, 8) && ok;
  ok = allgather_case<float>(sc, (1u << 20) / sizeof(float) + 5, 9) && ok;
  gct::set_phase("host buffers");
  {
    const size_t n = 3001;
    std::vector<double> in = pattern<double>(r, n, 10), out(n, 0.0), want(n);
    PMPI_Allreduce(in.data(), want.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int rc = MPIX_Allreduce_enqueue(in.data(), out.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, sc.comm);
    EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
    ok = rc == MPI_SUCCESS && same(out, want, "allreduce of host buffers") && ok;
    std::vector<int> all(n * static_cast<size_t>(p), -1), wall(n * static_cast<size_t>(p));
    std::vector<int> mine = pattern<int>(r, n, 11);
    PMPI_Allgather(mine.data(), static_cast<int>(n), MPI_INT, wall.data(), static_cast<int>(n), MPI_INT, MPI_COMM_WORLD);
    std::memcpy(all.data() + static_cast<size_t>(r) * n, mine.data(), n * sizeof(int));
    rc = MPIX_Allgather_enqueue(MPI_IN_PLACE, 0, MPI_INT, all.data(), static_cast<int>(n), MPI_INT, sc.comm);
    EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
    ok = rc == MPI_SUCCESS && same(all, wall, "allgather in place on host buffers") && ok;
  }
  gct::set_phase("mixed paths");
  {
    const size_t n = 2049;
    std::vector<double> in = pattern<double>(r, n, 12), sum(n), want(n), got(n, 0.0);
    PMPI_Allreduce(in.data(), sum.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; ++i) want[i] = sum[i] * p;
    Dev d(n * sizeof(double)), e(n * sizeof(double));
    late_input(d.p, in.data(), n * sizeof(double), sc.stream, kBusyUs);
    int rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, sc.comm);
    if (rc == MPI_SUCCESS)
      rc = MPIX_Reduce_enqueue(d.p, e.p, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, 0, sc.comm);
    if (rc == MPI_SUCCESS) rc = MPIX_Bcast_enqueue(e.p, static_cast<int>(n), MPI_DOUBLE, 0, sc.comm);
    EXPECT_EQ(gpu_memcpy_async(got.data(), e.p, n * sizeof(double), sc.stream), 0);
    EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
    ok = rc == MPI_SUCCESS && same(got, want, "allreduce, reduce, bcast on one stream") && ok;
  }
  ok = no_stream_ordered_hazards() && ok;
  EXPECT_ALL_RANKS(ok);
}

// A training step captured once into a CUDA graph and replayed (issue 30 item 4): the
// input copied from pinned memory (new values before each launch), an allreduce in place
// and a bcast from the last rank (the device path where it runs, else the proxy), a reduce
// to rank 0 and a bcast of it (proxy thread only: host-synchronous calls cannot be
// captured), the result copied back to pinned memory; every launch against the PMPI
// reference. Replays reuse the same parameters, banks and flags: a count kept on the host
// would go stale at the second launch.
TEST(Stream, GraphReplays) {
  // (On a GPU shared without MPS the device path is refused, and the calls would be
  // host-synchronous: only the emulated GPU vouches for it without the proxy.)
  if (!thread_multiple() && !(device_path() && gpu_emulated()))
    GTEST_SKIP() << "host-synchronous calls cannot be captured";
  StreamComm sc(MPI_COMM_WORLD, false);
  const int r = world_rank(), p = world_size();
  const size_t n = 3000, bytes = n * sizeof(double);
  void *hin = nullptr, *hout = nullptr;
  ASSERT_EQ(gpu_malloc(&hin, bytes, GPU_MEM_PINNED), 0);
  ASSERT_EQ(gpu_malloc(&hout, bytes, GPU_MEM_PINNED), 0);
  bool ok = true;
  {
    Dev d(bytes), e(bytes);
    const bool proxy = thread_multiple();
    void *graph = nullptr;
    ASSERT_EQ(gpu_stream_begin_capture(sc.stream), 0);
    EXPECT_EQ(gpu_memcpy_async(d.p, hin, bytes, sc.stream), 0);
    int rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, sc.comm);
    if (rc == MPI_SUCCESS) rc = MPIX_Bcast_enqueue(d.p, static_cast<int>(n), MPI_DOUBLE, p - 1, sc.comm);
    if (rc == MPI_SUCCESS && proxy) {
      rc = MPIX_Reduce_enqueue(d.p, e.p, static_cast<int>(n), MPI_DOUBLE, MPI_MAX, 0, sc.comm);
      if (rc == MPI_SUCCESS) rc = MPIX_Bcast_enqueue(e.p, static_cast<int>(n), MPI_DOUBLE, 0, sc.comm);
    }
    EXPECT_EQ(gpu_memcpy_async(hout, proxy ? e.p : d.p, bytes, sc.stream), 0);
    EXPECT_EQ(gpu_stream_end_capture(sc.stream, &graph), 0);
    if (rc != MPI_SUCCESS) gct::report("enqueue under capture: rc %d", rc), ok = false;
    for (int k = 0; k < 8 && ok && graph; ++k) {
      gct::set_phase("launch %d", k);
      std::vector<double> in = pattern<double>(r, n, 20 + k), want(n), got(n);
      PMPI_Allreduce(in.data(), want.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      std::memcpy(hin, in.data(), bytes);
      std::memset(hout, 0x7f, bytes);
      EXPECT_EQ(gpu_graph_launch(graph, sc.stream), 0);
      EXPECT_EQ(gpu_stream_synchronize(sc.stream), 0);
      std::memcpy(got.data(), hout, bytes);
      ok = same(got, want, "graph launch") && ok;
    }
    if (graph) EXPECT_EQ(gpu_graph_destroy(graph), 0);
    ok = ok && graph != nullptr;
  }
  gpu_free(hin, GPU_MEM_PINNED);
  gpu_free(hout, GPU_MEM_PINNED);
  ok = no_stream_ordered_hazards() && ok;
  EXPECT_ALL_RANKS(ok);
}

// A stream of another device than the current one: MPIX_Stream_comm_create refuses it on
// every rank (MPI_ERR_ARG; agreed, so that no rank is left in a collective), even where
// only one rank's stream is wrong; the current device's stream works after it. Where the
// process sees at least 2 devices (a GPU node, or the emulated GPU with a topology file).
TEST(Stream, StreamOfAnotherDevice) {
  int n = 0, cur = 0;
  if (gpu_device_count(&n) != 0 || n < 2) GTEST_SKIP() << "one device";
  ASSERT_EQ(gpu_get_device(&cur), 0);
  const int other = (cur + 1) % n;
  void *s_other = nullptr;
  ASSERT_EQ(gpu_set_device(other), 0);
  ASSERT_EQ(gpu_stream_create(&s_other), 0);
  ASSERT_EQ(gpu_set_device(cur), 0);
  // Every rank but the last passes a stream of another device.
  const bool wrong = world_rank() != world_size() - 1 || world_size() == 1;
  void *s_mine = nullptr;
  ASSERT_EQ(gpu_stream_create(&s_mine), 0);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "type", "cudaStream_t");
  void *use = wrong ? s_other : s_mine;
  EXPECT_EQ(MPIX_Info_set_hex(info, "value", &use, sizeof use), MPI_SUCCESS);
  MPIX_Stream ms = MPIX_STREAM_NULL;
  EXPECT_EQ(MPIX_Stream_create(info, &ms), MPI_SUCCESS);
  MPI_Info_free(&info);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm c = MPI_COMM_NULL;
  const int rc = MPIX_Stream_comm_create(MPI_COMM_WORLD, ms, &c);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  bool ok = true;
  if (gct::error_class(rc) != MPI_ERR_ARG || c != MPI_COMM_NULL)
    gct::report("a stream of another device: %s", gct::error_class_name(gct::error_class(rc)).c_str()), ok = false;
  EXPECT_EQ(MPIX_Stream_free(&ms), MPI_SUCCESS);  // attached to nothing
  ok = allreduce_case<int>(StreamComm(MPI_COMM_WORLD, false), 100, MPI_SUM, false, 40) && ok;
  gpu_stream_destroy(s_mine);
  ASSERT_EQ(gpu_set_device(other), 0);
  gpu_stream_destroy(s_other);
  ASSERT_EQ(gpu_set_device(cur), 0);
  EXPECT_ALL_RANKS(ok);
}

// MPICH's encoding with runs of zero bytes ("[n]", MPICH 4.2 and later) decodes to the
// same stream as the plain one.
TEST(Stream, HexWithZeroRuns) {
  void *s = nullptr;
  ASSERT_EQ(gpu_stream_create(&s), 0);
  unsigned char b[sizeof s];
  std::memcpy(b, &s, sizeof s);
  std::string hex;
  char two[3];
  for (size_t i = 0; i < sizeof s;) {
    if (b[i] == 0 && i + 1 < sizeof s && b[i + 1] == 0) {
      size_t j = i;
      while (j < sizeof s && b[j] == 0) ++j;
      hex += "[" + std::to_string(j - i) + "]";
      i = j;
    } else {
      std::snprintf(two, sizeof two, "%02X", b[i]);
      hex += two;
      ++i;
    }
  }
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "type", "cudaStream_t");
  MPI_Info_set(info, "value", hex.c_str());
  MPIX_Stream ms = MPIX_STREAM_NULL;
  EXPECT_EQ(MPIX_Stream_create(info, &ms), MPI_SUCCESS);
  MPI_Info_free(&info);
  MPI_Comm c = MPI_COMM_NULL;
  EXPECT_EQ(MPIX_Stream_comm_create(MPI_COMM_WORLD, ms, &c), MPI_SUCCESS);
  Dev d(16);
  std::vector<int> one(4, 1), got(4, 0);
  EXPECT_EQ(gpu_memcpy_async(d.p, one.data(), 16, s), 0);
  EXPECT_EQ(MPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, 4, MPI_INT, MPI_SUM, c), MPI_SUCCESS);
  EXPECT_EQ(gpu_memcpy_async(got.data(), d.p, 16, s), 0);
  EXPECT_EQ(gpu_stream_synchronize(s), 0);
  MPI_Comm_free(&c);
  EXPECT_EQ(MPIX_Stream_free(&ms), MPI_SUCCESS);
  gpu_stream_destroy(s);
  EXPECT_ALL_RANKS(got == std::vector<int>(4, world_size()));
}


// Under MPICH's API (MPICH >= 4.1), the program's calls are gcoll's, not MPICH's: each
// resolves into libgcoll.so (MPICH's MPIX_* are aliases of its PMPIX_*), and where MPICH
// has no CUDA (PyPI's wheel) MPICH's own allreduce refuses the stream communicator that
// gcoll's runs on (it has no MPICH stream: MPICH cannot take a cudaStream_t there).
TEST(Stream, TakesTheMpisApiOver) {
#ifdef GCOLL_MPIX_STREAM
  GTEST_SKIP() << "the stream API is gcoll's here";
#else
  bool ok = true;
  const auto in_gcoll = [&ok](void *f, void *mpich, const char *name) {
    Dl_info where{};
    if (f == mpich || !dladdr(f, &where) || !where.dli_fname || !std::strstr(where.dli_fname, "libgcoll"))
      gct::report("%s resolves to %s, not libgcoll.so", name, where.dli_fname ? where.dli_fname : "?"), ok = false;
  };
  in_gcoll(reinterpret_cast<void *>(&MPIX_Stream_create), reinterpret_cast<void *>(&PMPIX_Stream_create),
           "MPIX_Stream_create");
  in_gcoll(reinterpret_cast<void *>(&MPIX_Stream_comm_create), reinterpret_cast<void *>(&PMPIX_Stream_comm_create),
           "MPIX_Stream_comm_create");
  in_gcoll(reinterpret_cast<void *>(&MPIX_Allreduce_enqueue), reinterpret_cast<void *>(&PMPIX_Allreduce_enqueue),
           "MPIX_Allreduce_enqueue");
  int cuda = 0;
  MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &cuda);
  StreamComm sc(MPI_COMM_WORLD, false);
  ok = allreduce_case<int>(sc, 100, MPI_SUM, false, 50) && ok;
  if (!cuda) {
    Dev d(16);
    if (PMPIX_Allreduce_enqueue(MPI_IN_PLACE, d.p, 4, MPI_INT, MPI_SUM, sc.comm) == MPI_SUCCESS)
      gct::report("MPICH's own allreduce took gcoll's stream communicator"), ok = false;
  }
  EXPECT_ALL_RANKS(ok);
#endif
}
