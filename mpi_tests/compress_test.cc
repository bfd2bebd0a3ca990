// The opt-in compressed allreduce (docs/compression.md; issue 32 item 4), on virtual nodes
// with GCOLL_HOST_BUFFERS=engine:
//   - the info key gcoll_allreduce_compress (MPI_Comm_dup_with_info, MPI_Comm_set_info,
//     inherited by MPI_Comm_dup, reported by MPI_Comm_get_info) in every format, MPI_FLOAT
//     and MPI_DOUBLE, several sizes (one to several pipeline chunks), in place and not:
//     each element within the documented bound of the double-precision sum, the same bits
//     on every rank (a hash of the result, allgathered), and the stats' compressed bytes
//     between nodes at the format's share of the uncompressed ones;
//   - never compressed unless asked: integers, MPI_MAX, a communicator without the key
//     (unless GCOLL_ALLREDUCE_COMPRESS says so: MPI_COMM_WORLD follows it) and ranks that
//     disagree on the key give PMPI's exact results and no compressed call;
//   - device buffers (GCOLLTEST_COMPRESS_DEVICE=1: every checked allreduce on device
//     buffers, allocated and copied through gpu/gpu_api.h: a real GPU through the CUDA
//     runtime, or the emulated GPU under GCOLL_CUDA=emulate): the same checks (bound, same
//     bits, stats), encoded and decoded on the device, through either way across nodes
//     (GCOLL_DEVICE_NET); exact and uncompressed where not asked (key off, MPI_INT, MPI_MAX,
//     one node). GCOLLTEST_COMPRESS_DEVICE=gpu: the same on a real GPU only (the emulated
//     GPU, or no device: "SKIPPED", exit 77 on every rank before MPI_Init). Without a
//     device at all, =1 skips alike. Each rank takes device local_rank % count before
//     MPI_Init (the launcher's local rank), as the gpu/ programs do.
// The expected number of nodes comes from GCOLL_RANKS_PER_NODE (virtual nodes of k ranks).
#include <gcoll/gcoll.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_api.h"
#include "harness.h"

namespace gct {
namespace {

int world_rank() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// GCOLLTEST_COMPRESS_DEVICE: unset (or anything else): host buffers; 1: check_sum's
// allreduces on device buffers of gpu_api.h's mode (copied in and out around the call);
// gpu: the same, on a real GPU only.
enum class DeviceMode { Host, Any, RealGpu };
DeviceMode device_mode() {
  const char *v = std::getenv("GCOLLTEST_COMPRESS_DEVICE");
  if (v && std::strcmp(v, "1") == 0) return DeviceMode::Any;
  if (v && std::strcmp(v, "gpu") == 0) return DeviceMode::RealGpu;
  return DeviceMode::Host;
}
bool device_buffers() { return device_mode() != DeviceMode::Host; }

int env_local_rank() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "SLURM_LOCALID", "PMI_LOCAL_RANK"}) {
    const char *v = std::getenv(name);
    if (v && *v) return std::atoi(v);
  }
  return -1;
}

// Before main() (hence before MPI_Init), device modes only: without a device (or on the
// emulated GPU under GCOLLTEST_COMPRESS_DEVICE=gpu) every rank prints the skip line and
// exits 77 (CTest's SKIP_RETURN_CODE); else the rank's device is made current, so that the
// MPI and gcoll initialize on it. Host mode makes no gpu_api call (no CUDA in the process).
int g_device = -1;
struct EarlyDevice {
  EarlyDevice() {
    const DeviceMode m = device_mode();
    if (m == DeviceMode::Host) return;
    int n = 0;
    const int e = gpu_device_count(&n);
    if (e != 0 || n < 1) {
      std::printf("SKIPPED: no GPU (%s: %s)\n", gpu_mode_name(), e ? gpu_error_string(e) : "no device");
      std::fflush(stdout);
      _exit(77);
    }
    if (m == DeviceMode::RealGpu && gpu_emulated()) {
      std::printf("SKIPPED: GCOLLTEST_COMPRESS_DEVICE=gpu: a real GPU only, not the %s\n", gpu_mode_name());
      std::fflush(stdout);
      _exit(77);
    }
    const int local = env_local_rank();
    g_device = (local >= 0 ? local : 0) % n;
    const int s = gpu_set_device(g_device);
    if (s != 0) {
      std::fprintf(stderr, "compress test: device %d: %s (%s)\n", g_device, gpu_error_string(s), gpu_mode_name());
      _exit(1);
    }
  }
} g_early_device;

// After MPI_Init: what the device mode runs on, one line from rank 0 (the GPU logs say
// whether a real GPU ran the checks).
class DeviceReport : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!device_buffers() || world_rank() != 0) return;
    char name[256] = "?";
    gpu_device_name(g_device, name, sizeof name);
    int n = 0;
    gpu_device_count(&n);
    std::printf("compress test: device buffers on %s: %s, %d device(s), rank 0 on device %d\n", gpu_mode_name(),
                name, n, g_device);
    std::fflush(stdout);
  }
};
::testing::Environment *const g_device_report = ::testing::AddGlobalTestEnvironment(new DeviceReport);

// A failed gpu_api call is a broken environment, not a verdict: end the job (a rank that
// left the collective would hang the others).
void gpu_or_abort(int err, const char *what) {
  if (err == 0) return;
  std::fprintf(stderr, "compress test: %s failed: %s (%s, error %d)\n", what, gpu_error_string(err), gpu_mode_name(),
               err);
  std::fflush(stderr);
  PMPI_Abort(MPI_COMM_WORLD, 1);
}

// MPI_Allreduce of `count` elements (host in/out), on device buffers (gpu_malloc,
// GPU_MEM_DEVICE: cudaMalloc or the emulated GPU's) where device_buffers().
int allreduce_on(const void *in, void *out, std::size_t count, MPI_Datatype dt, std::size_t size, MPI_Op op,
                 MPI_Comm comm, bool in_place) {
  if (!device_buffers()) return MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, static_cast<int>(count), dt, op, comm);
  const std::size_t bytes = count * size ? count * size : 1;
  void *ds = nullptr, *dr = nullptr;
  gpu_or_abort(gpu_malloc(&dr, bytes, GPU_MEM_DEVICE), "gpu_malloc (receive buffer)");
  if (!in_place) gpu_or_abort(gpu_malloc(&ds, bytes, GPU_MEM_DEVICE), "gpu_malloc (send buffer)");
  gpu_or_abort(gpu_memcpy(in_place ? dr : ds, in_place ? out : in, count * size), "gpu_memcpy (input)");
  const int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : ds, dr, static_cast<int>(count), dt, op, comm);
  gpu_or_abort(gpu_memcpy(out, dr, count * size), "gpu_memcpy (result)");
  gpu_or_abort(gpu_free(dr, GPU_MEM_DEVICE), "gpu_free");
  if (ds) gpu_or_abort(gpu_free(ds, GPU_MEM_DEVICE), "gpu_free");
  return rc;
}

// Several (virtual) nodes: compression applies.
bool several_nodes() {
  const char *k = std::getenv("GCOLL_RANKS_PER_NODE");
  const int rpn = k ? std::atoi(k) : 0;
  return rpn > 0 && world_size() > rpn;
}

struct Format {
  const char *name;
  double u;  // unit roundoff of one encoding
};
const Format kFormats[] = {{"bf16", 0x1p-8}, {"fp16", 0x1p-11}, {"fp8", 0x1p-4}};

const Format *format_named(const char *name) {
  for (const Format &f : kFormats)
    if (name && std::strcmp(f.name, name) == 0) return &f;
  return nullptr;
}

// Rank r's element i: mixed signs, magnitudes over 2^-4 .. 2^4, some zeros.
double value(int r, std::size_t i) {
  const std::uint64_t h = (static_cast<std::uint64_t>(r) * 2654435761u + i * 40503u) % 10007u;
  if (h % 17 == 0) return 0;
  return (static_cast<double>(h) - 5003.0) / 997.0 * std::ldexp(1.0, static_cast<int>(h % 9) - 4);
}

std::uint64_t fnv(const void *p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char *>(p)[i]) * 1099511628211ull;
  return h;
}

// The same bits on every rank of WORLD.
bool same_on_every_rank(const void *p, std::size_t bytes) {
  const std::uint64_t h = fnv(p, bytes);
  std::vector<std::uint64_t> all(world_size());
  PMPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (std::uint64_t x : all)
    if (x != h) return false;
  return true;
}

long long counter(const char *name) { return gcoll_library_counter(name); }

long long sum_over_ranks(long long v) {
  long long s = 0;
  PMPI_Allreduce(&v, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

// One allreduce of `count` elements of T on `comm` in format f (nullptr: uncompressed
// expected): within the bound, the same bits everywhere, counted as compressed or not.
template <class T>
bool check_sum(MPI_Comm comm, const Format *f, std::size_t count, bool in_place, std::string *why) {
  const int P = world_size(), me = world_rank();
  const MPI_Datatype dt = sizeof(T) == 4 ? MPI_FLOAT : MPI_DOUBLE;
  std::vector<T> in(count), out(count);
  for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<T>(value(me, i));
  const long long calls0 = counter("compressed_allreduce_calls");
  if (in_place) out = in;
  const int rc = allreduce_on(in.data(), out.data(), count, dt, sizeof(T), MPI_SUM, comm, in_place);
  bool ok = rc == MPI_SUCCESS;
  const bool compressed = f && several_nodes();
  const long long dcalls = counter("compressed_allreduce_calls") - calls0;
  if (dcalls != (compressed ? 1 : 0)) {
    ok = false;
    *why += " compressed calls " + std::to_string(dcalls);
  }
  // The bound (docs/compression.md): P (u S + a)(1 + P u) + P eps S, S = sum of |x|; a: fp16
  // 2^-25, fp8 2^-10 x the largest block scale the element's block can have.
  std::vector<double> S(count), sum(count);
  for (std::size_t i = 0; i < count; ++i)
    for (int r = 0; r < P; ++r) {
      const double x = static_cast<double>(static_cast<T>(value(r, i)));
      sum[i] += x;
      S[i] += std::fabs(x);
    }
  std::vector<double> G((count + 255) / 256);
  for (std::size_t i = 0; i < count; ++i) G[i / 256] = std::max(G[i / 256], S[i]);
  const double u = compressed ? f->u : 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double a = 0;
    if (compressed && std::strcmp(f->name, "fp16") == 0) a = 0x1p-25;
    if (compressed && std::strcmp(f->name, "fp8") == 0) {
      // The largest S of the 256-aligned groups the window [i - 255, i + 255] touches.
      double m = 0;
      for (std::size_t g = (i >= 255 ? i - 255 : 0) / 256; g <= std::min(count - 1, i + 255) / 256; ++g)
        m = std::max(m, G[g]);
      a = std::ldexp(m / 448, -10);
    }
    const double eps = sizeof(T) == 4 ? 0x1p-23 : 0x1p-52;
    const double bound = P * (u * S[i] + a) * (1 + P * u) * 1.001 + P * eps * S[i];
    if (!(std::fabs(static_cast<double>(out[i]) - sum[i]) <= bound)) {
      if (bad++ < 3)
        std::fprintf(stderr, "[rank %d] %s element %zu: %.9g, sum %.9g, bound %.3g\n", me, f ? f->name : "off", i,
                     static_cast<double>(out[i]), sum[i], bound);
    }
  }
  if (bad) {
    ok = false;
    *why += " " + std::to_string(bad) + " elements beyond the bound";
  }
  if (!same_on_every_rank(out.data(), count * sizeof(T))) {
    ok = false;
    *why += " results differ between ranks";
  }
  return ok;
}

MPI_Comm dup_with_key(const char *value) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (value) MPI_Info_set(info, "gcoll_allreduce_compress", value);
  MPI_Comm c;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
  MPI_Info_free(&info);
  return c;
}

TEST(Compress, EveryFormatWithinTheBoundSameBitsEverywhere) {
  for (const Format &f : kFormats) {
    MPI_Comm c = dup_with_key(f.name);
    for (std::size_t count : {std::size_t{1}, std::size_t{777}, std::size_t{70001}, std::size_t{300001}})
      for (bool in_place : {false, true}) {
        std::string why;
        bool ok = check_sum<float>(c, &f, count, in_place, &why);
        if (!ok) std::fprintf(stderr, "[rank %d] %s float count %zu in_place %d:%s\n", world_rank(), f.name, count, in_place, why.c_str());
        EXPECT_ALL_RANKS(ok);
        why.clear();
        ok = check_sum<double>(c, &f, count, in_place, &why);
        if (!ok) std::fprintf(stderr, "[rank %d] %s double count %zu in_place %d:%s\n", world_rank(), f.name, count, in_place, why.c_str());
        EXPECT_ALL_RANKS(ok);
      }
    MPI_Comm_free(&c);
  }
}

// The stats: compressed bytes between nodes at the format's share of the uncompressed.
TEST(Compress, StatsCountTheCompressedBytes) {
  const std::size_t count = 1 << 19;  // 2 MiB of float: two pipeline chunks
  for (const Format &f : kFormats)
    for (int elem : {4, 8}) {
      MPI_Comm c = dup_with_key(f.name);
      const long long b0 = counter("compressed_inter_node_bytes"), r0 = counter("compressed_inter_node_bytes_uncompressed");
      std::string why;
      const bool sum_ok = elem == 4 ? check_sum<float>(c, &f, count, false, &why) : check_sum<double>(c, &f, count, false, &why);
      const long long b = sum_over_ranks(counter("compressed_inter_node_bytes") - b0);
      const long long r = sum_over_ranks(counter("compressed_inter_node_bytes_uncompressed") - r0);
      // bf16, fp16: 2 bytes an element; fp8: 1 + 4/256 (and a scale per message at most).
      const double share = std::strcmp(f.name, "fp8") == 0 ? (1.0 + 4.0 / 256) / elem : 2.0 / elem;
      bool ok = sum_ok;
      if (several_nodes()) ok = ok && r > 0 && b > 0 && b <= share * r * 1.001 + 4096 && b >= share * r * 0.98;
      else ok = ok && r == 0 && b == 0;
      if (world_rank() == 0)
        std::fprintf(stderr, "%s, %d-byte elements: %lld bytes between nodes compressed, %lld uncompressed (%.3f)%s\n",
                     f.name, elem, b, r, r ? static_cast<double>(b) / r : 0.0, why.c_str());
      EXPECT_ALL_RANKS(ok);
      MPI_Comm_free(&c);
    }
}

// Exact where not asked: integers, MAX, and float sums on a communicator without the key
// (integer-valued floats: every order of summation gives the exact sum).
TEST(Compress, NeverCompressedUnlessAsked) {
  const int P = world_size(), me = world_rank();
  const std::size_t count = 100000;
  MPI_Comm c = dup_with_key("fp8");
  std::vector<int> iv(count), iout(count), iref(count);
  std::vector<float> fv(count), fout(count), fref(count);
  for (std::size_t i = 0; i < count; ++i) {
    iv[i] = static_cast<int>((i * 7 + me * 13) % 100000) - 50000;
    fv[i] = static_cast<float>(value(me, i) * 1000.0 + me);  // not bf16/fp8-representable
  }
  const long long calls0 = counter("compressed_allreduce_calls");
  MPI_Allreduce(iv.data(), iout.data(), static_cast<int>(count), MPI_INT, MPI_SUM, c);
  PMPI_Allreduce(iv.data(), iref.data(), static_cast<int>(count), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  bool ok = iout == iref;
  MPI_Allreduce(fv.data(), fout.data(), static_cast<int>(count), MPI_FLOAT, MPI_MAX, c);
  PMPI_Allreduce(fv.data(), fref.data(), static_cast<int>(count), MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  ok = ok && std::memcmp(fout.data(), fref.data(), count * sizeof(float)) == 0;
  ok = ok && counter("compressed_allreduce_calls") == calls0;
  EXPECT_ALL_RANKS(ok);
  MPI_Comm_free(&c);

  // No key: compressed only where GCOLL_ALLREDUCE_COMPRESS says so (MPI_COMM_WORLD and a
  // dup without info follow it).
  const Format *setting = format_named(std::getenv("GCOLL_ALLREDUCE_COMPRESS"));
  for (std::size_t i = 0; i < count; ++i) fv[i] = static_cast<float>((i * 31 + me * 7) % 4001) + 0.5f * static_cast<float>(me % 2);
  MPI_Comm d = dup_with_key(nullptr);
  std::string why;
  ok = check_sum<float>(MPI_COMM_WORLD, setting, 5000, false, &why) && check_sum<float>(d, setting, 5000, true, &why);
  if (!ok) std::fprintf(stderr, "[rank %d] no key:%s\n", me, why.c_str());
  EXPECT_ALL_RANKS(ok);
  if (!setting) {  // exact: integer-valued floats sum exactly in any order
    const long long c0 = counter("compressed_allreduce_calls");
    MPI_Allreduce(fv.data(), fout.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, d);
    PMPI_Allreduce(fv.data(), fref.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    ok = std::memcmp(fout.data(), fref.data(), count * sizeof(float)) == 0 && counter("compressed_allreduce_calls") == c0;
    EXPECT_ALL_RANKS(ok);
  }
  (void)P;
  MPI_Comm_free(&d);
}

// Ranks that disagree on the key: uncompressed (one warning), exact results.
TEST(Compress, RanksThatDisagreeGoUncompressed) {
  MPI_Comm c = dup_with_key(world_rank() == 0 ? "bf16" : "fp8");
  const Format *setting = format_named(std::getenv("GCOLL_ALLREDUCE_COMPRESS"));
  std::string why;
  // The disagreement makes the key off (uncompressed), whatever the setting says.
  bool ok = check_sum<float>(c, nullptr, 3000, false, &why);
  if (!ok) std::fprintf(stderr, "[rank %d] disagreeing ranks:%s\n", world_rank(), why.c_str());
  EXPECT_ALL_RANKS(ok);
  (void)setting;
  MPI_Comm_free(&c);
}

// MPI_Comm_set_info on a communicator in use; MPI_Comm_get_info reports the key;
// MPI_Comm_dup inherits it; set_info back to off.
TEST(Compress, SetInfoGetInfoAndDup) {
  const Format *setting = format_named(std::getenv("GCOLL_ALLREDUCE_COMPRESS"));
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  std::string why;
  bool ok = check_sum<float>(c, setting, 2000, false, &why);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "gcoll_allreduce_compress", "fp16");
  MPI_Comm_set_info(c, info);
  MPI_Info_free(&info);
  ok = check_sum<float>(c, &kFormats[1], 2000, false, &why) && ok;
  MPI_Info used;
  MPI_Comm_get_info(c, &used);
  char v[32] = {0};
  int flag = 0;
  MPI_Info_get(used, "gcoll_allreduce_compress", 31, v, &flag);
  MPI_Info_free(&used);
  if (!flag || std::strcmp(v, "fp16") != 0) {
    ok = false;
    why += " get_info: '" + std::string(v) + "'";
  }
  MPI_Comm d;
  MPI_Comm_dup(c, &d);
  ok = check_sum<double>(d, &kFormats[1], 2000, true, &why) && ok;
  MPI_Info_create(&info);
  MPI_Info_set(info, "gcoll_allreduce_compress", "off");
  MPI_Comm_set_info(d, info);
  MPI_Info_free(&info);
  ok = check_sum<double>(d, nullptr, 2000, true, &why) && ok;
  if (!ok) std::fprintf(stderr, "[rank %d] set_info:%s\n", world_rank(), why.c_str());
  EXPECT_ALL_RANKS(ok);
  MPI_Comm_free(&d);
  MPI_Comm_free(&c);
}

// Device buffers (a GPU or the emulated GPU) where nothing is compressed: the key off, MPI_INT and
// MPI_MAX with the key set, and a communicator on one node with the key set. Exact (PMPI's
// results; integer-valued floats sum exactly in any order), no compressed call.
TEST(Compress, DeviceBuffersExactWhereNotCompressed) {
  if (!device_buffers()) GTEST_SKIP() << "GCOLLTEST_COMPRESS_DEVICE=1 or gpu only";
  const int me = world_rank();
  const std::size_t count = 100000;
  std::vector<float> h(count), out(count), ref(count);
  std::vector<int> iv(count), iout(count), iref(count);
  for (std::size_t i = 0; i < count; ++i) {
    h[i] = static_cast<float>((i * 31 + me * 7) % 4001) + 0.5f * static_cast<float>(me % 2);
    iv[i] = static_cast<int>((i * 7 + me * 13) % 100000) - 50000;
  }
  const long long c0 = counter("compressed_allreduce_calls");
  bool ok = true;
  // The key off: the float sum exact.
  MPI_Comm off = dup_with_key("off");
  PMPI_Allreduce(h.data(), ref.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  ok = allreduce_on(h.data(), out.data(), count, MPI_FLOAT, sizeof(float), MPI_SUM, off, false) == MPI_SUCCESS && ok;
  ok = ok && out == ref;
  MPI_Comm_free(&off);
  // The key set: integers and MAX exact.
  MPI_Comm c = dup_with_key("fp8");
  ok = allreduce_on(iv.data(), iout.data(), count, MPI_INT, sizeof(int), MPI_SUM, c, false) == MPI_SUCCESS && ok;
  PMPI_Allreduce(iv.data(), iref.data(), static_cast<int>(count), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  ok = ok && iout == iref;
  out = h;
  ok = allreduce_on(h.data(), out.data(), count, MPI_FLOAT, sizeof(float), MPI_MAX, c, true) == MPI_SUCCESS && ok;
  PMPI_Allreduce(h.data(), ref.data(), static_cast<int>(count), MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  ok = ok && out == ref;
  // One (virtual) node with the key set: the float sum exact.
  const char *k = std::getenv("GCOLL_RANKS_PER_NODE");
  const int rpn = k && std::atoi(k) > 0 ? std::atoi(k) : world_size();
  MPI_Comm node, keyed;
  MPI_Comm_split(MPI_COMM_WORLD, me / rpn, me, &node);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "gcoll_allreduce_compress", "fp8");
  MPI_Comm_dup_with_info(node, info, &keyed);
  MPI_Info_free(&info);
  ok = allreduce_on(h.data(), out.data(), count, MPI_FLOAT, sizeof(float), MPI_SUM, keyed, false) == MPI_SUCCESS && ok;
  PMPI_Allreduce(h.data(), ref.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, node);
  ok = ok && out == ref;
  MPI_Comm_free(&keyed);
  MPI_Comm_free(&node);
  MPI_Comm_free(&c);
  ok = ok && counter("compressed_allreduce_calls") == c0;
  if (!ok) std::fprintf(stderr, "[rank %d] device buffers not compressed: wrong result or a compressed call\n", me);
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
