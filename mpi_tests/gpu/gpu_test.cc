// gcoll_gpu_mpi_test: MPI_Allreduce / MPI_Bcast / MPI_Allgather on CUDA device buffers,
// each compared with PMPI_* run on HOST copies of the same inputs (the MPI is not
// CUDA-aware: only host memory may reach PMPI_*). See gpu_util.h for what is compared.
//
// Runs under the shared harness (mpi_tests/harness.h: rank-agreed verdicts, watchdog).
// Each rank selects device local_rank % device_count before MPI_Init (gpu_util.cc), so
// several ranks may share one GPU. Without a usable GPU every rank prints
// "SKIPPED: no GPU" and exits 77 before MPI_Init. With GCOLL_CUDA=emulate the same
// tests run on gcoll's emulated GPU (one device shared by all ranks; gpu_api.h).
//
// Tests:
//   GpuSetup            device chosen; cudaMalloc/cudaMallocAsync memory is device memory
//   GpuAllreduceMatrix  every predefined type x op of the host matrix (types.h), counts
//                       0, 1, 7, 1001, in place and not, on MPI_COMM_WORLD and a split
//                       communicator in reversed rank order
//   GpuAllreduceComms   common types, all their ops, on dup and odd/even split
//   GpuAllreduceLarge   1M+3 elements: float sum, int max, double sum (in place too)
//   GpuBcast            every root, several sizes and types; large
//   GpuAllgather        several types and counts, in place and not; large
//   GpuDerived          derived datatypes (contiguous, vector, resized, struct) on device
//                       buffers: allreduce (with a user-defined op: Open MPI takes
//                       predefined ops on predefined types only), bcast, allgather
//                       (also with different send and receive types)
//   GpuReduceScatterBlock  reduce_scatter_block, several types, ops and sizes, in place and
//                       not, mixed host and device ranks
//   GpuSignatures       bcast and allgather with another datatype on every rank (the same
//                       type signature), device and host buffers
//   GpuUserOp           MPI_Op_create ops (commutative and not) on device buffers
//   GpuStale            buffers freed and reallocated between calls (often at the same
//                       address), on all ranks or on some only
//   GpuReuse            the same buffers for many calls with new data each time
//   GpuOrdering         buffers written with cudaMemset on the default stream right before
//                       the call, with no synchronisation (the library must wait for it)
//   GpuBackToBack       long chains of allreduce / bcast / allgather of mixed sizes on two
//                       communicators, in place and not, each call's input the previous
//                       calls' results, default-stream writes right before many calls and
//                       no host synchronisation between calls (the fused one-shot's flags
//                       and double-buffered banks, the final syncs the engine skips)
//   GpuAsync            cudaMallocAsync (stream-ordered pool) buffers, alone and mixed
//   GpuMixed            ranks (and send/recv) with different memory kinds in one call
//   GpuOffsets          buffers at odd element / byte offsets inside larger allocations
//   GpuManaged          cudaMallocManaged buffers (run apart: see the test)
//   GpuEngineEvery      the engine's eight collectives, predefined types and ops, none of
//                       them staged on any machine of tests/topo (gpu_engine_every_test.cc)
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>

#include "gpu_util.h"

namespace gct {
namespace gpu {
namespace {

std::vector<Group> reducible_groups() {
  return {Group::CInteger, Group::FortranInteger, Group::MultiLanguage, Group::Char,
          Group::Floating, Group::Complex,        Group::Logical,       Group::Byte,
          Group::Pair};
}

std::string group_id(Group g) {
  switch (g) {
    case Group::CInteger: return "CInteger";
    case Group::FortranInteger: return "FortranInteger";
    case Group::MultiLanguage: return "MultiLanguage";
    case Group::Char: return "Char";
    case Group::Floating: return "Floating";
    case Group::Complex: return "Complex";
    case Group::Logical: return "Logical";
    case Group::Byte: return "Byte";
    case Group::Pair: return "Pair";
    case Group::NoReduce: return "NoReduce";
  }
  return "X";
}

// Types the non-matrix tests use: one or two per family.
const std::vector<MPI_Datatype> &common_reduce_types() {
  static const std::vector<MPI_Datatype> v = {MPI_FLOAT,   MPI_DOUBLE,  MPI_INT,
                                              MPI_LONG_LONG, MPI_UINT8_T, MPI_C_DOUBLE_COMPLEX,
                                              MPI_C_BOOL,  MPI_DOUBLE_INT};
  return v;
}

const std::vector<MPI_Datatype> &data_types() {
  static const std::vector<MPI_Datatype> v = {MPI_BYTE, MPI_INT, MPI_DOUBLE, MPI_DOUBLE_INT,
                                              MPI_C_DOUBLE_COMPLEX};
  return v;
}

// A few reductions for tests about buffers rather than types.
struct RedCase {
  MPI_Datatype type;
  MPI_Op op;
};
const std::vector<RedCase> &few_reductions() {
  static const std::vector<RedCase> v = {
      {MPI_FLOAT, MPI_SUM}, {MPI_DOUBLE, MPI_SUM},   {MPI_INT, MPI_MAX},
      {MPI_UINT8_T, MPI_BXOR}, {MPI_DOUBLE_INT, MPI_MINLOC}, {MPI_C_FLOAT_COMPLEX, MPI_PROD}};
  return v;
}

std::string comm_id(CommKind k) { return comm_kind_name(k); }

// ---- setup ---------------------------------------------------------------------------

TEST(GpuSetup, DeviceSelectedAndBuffersAreDeviceMemory) {
  bool ok = true;
  int cur = -1;
  GCT_GPU(gpu_get_device(&cur));
  if (cur != device()) {
    report("current device %d, expected %d", cur, device());
    ok = false;
  }
  const int lr = local_rank_from_env();
  if (lr >= 0 && cur != lr % device_count()) {
    report("device %d, expected local rank %d %% %d devices", cur, lr, device_count());
    ok = false;
  }
  // cudaPointerGetAttributes on a GPU, gcoll_emu_pointer_kind on the emulated one.
  for (Mem m : {Mem::Device, Mem::Async}) {
    Buf b(m, 4096);
    int dev = -1;
    GCT_GPU(gpu_pointer_device(b.at(0), &dev));
    if (dev != cur) {
      report("%s buffer: %s says device memory of device %d (-1: not device memory), expected "
             "device %d", mem_name(m), gpu_mode_name(), dev, cur);
      ok = false;
    }
  }
  EXPECT_ALL_RANKS(ok);
}

// ---- allreduce -------------------------------------------------------------------------

class GpuAllreduceMatrix : public ::testing::TestWithParam<std::tuple<CommKind, Group>> {};

TEST_P(GpuAllreduceMatrix, AllTypesOpsCounts) {
  ScopedComm c(std::get<0>(GetParam()));
  const Group g = std::get<1>(GetParam());
  bool ok = true;
  int cases = 0;
  for (const TypeDesc &t : matrix_types()) {
    if (t.group != g) continue;
    for (MPI_Op op : tested_ops(t)) {
      for (size_t count : small_counts()) {
        for (bool in_place : {false, true}) {
          ok = dev_allreduce(*c, t, op, count, in_place, next_seed()) && ok;
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 0);
  if (verbose() && world_rank() == 0) printf("%d device cases on %s\n", cases, c->name.c_str());
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(
    , GpuAllreduceMatrix,
    ::testing::Combine(::testing::Values(CommKind::World, CommKind::SplitReversed),
                       ::testing::ValuesIn(reducible_groups())),
    [](const ::testing::TestParamInfo<std::tuple<CommKind, Group>> &info) {
      return comm_id(std::get<0>(info.param)) + "_" + group_id(std::get<1>(info.param));
    });

class GpuAllreduceComms : public ::testing::TestWithParam<CommKind> {};

TEST_P(GpuAllreduceComms, CommonTypesAllOps) {
  ScopedComm c(GetParam());
  bool ok = true;
  for (MPI_Datatype type : common_reduce_types()) {
    const TypeDesc &t = find_type(type);
    for (MPI_Op op : tested_ops(t))
      for (size_t count : small_counts())
        for (bool in_place : {false, true})
          ok = dev_allreduce(*c, t, op, count, in_place, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuAllreduceComms,
                         ::testing::Values(CommKind::Dup, CommKind::SplitOddEven),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_id(info.param); });

TEST(GpuAllreduceLarge, FloatSumIntMaxDoubleSum) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  ok = dev_allreduce(*w, find_type(MPI_FLOAT), MPI_SUM, kLargeCount, false, next_seed()) && ok;
  ok = dev_allreduce(*w, find_type(MPI_FLOAT), MPI_SUM, kLargeCount, true, next_seed()) && ok;
  ok = dev_allreduce(*w, find_type(MPI_INT), MPI_MAX, kLargeCount, false, next_seed()) && ok;
  ok = dev_allreduce(*w, find_type(MPI_DOUBLE), MPI_SUM, kLargeCount, false, next_seed()) && ok;
  ok = dev_allreduce(*w, find_type(MPI_DOUBLE), MPI_SUM, kLargeCount, true, next_seed()) && ok;
  ScopedComm r(CommKind::SplitReversed);
  ok = dev_allreduce(*r, find_type(MPI_FLOAT), MPI_SUM, kLargeCount, false, next_seed()) && ok;
  ok = dev_allreduce(*r, find_type(MPI_INT), MPI_MAX, kLargeCount, true, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

// Counts around powers of two and chunk-like sizes (pipelines, vector widths).
TEST(GpuAllreduceLarge, AwkwardCounts) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  const size_t counts[] = {2, 3, 31, 32, 33, 255, 256, 257, 4095, 4097, 65535, 65537, 262143, 262145};
  for (size_t count : counts) {
    ok = dev_allreduce(*w, find_type(MPI_FLOAT), MPI_SUM, count, false, next_seed()) && ok;
    ok = dev_allreduce(*w, find_type(MPI_INT64_T), MPI_BXOR, count, true, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

// ---- bcast -------------------------------------------------------------------------------

class GpuBcast : public ::testing::TestWithParam<CommKind> {};

TEST_P(GpuBcast, EveryRootSizesTypes) {
  ScopedComm c(GetParam());
  bool ok = true;
  std::vector<size_t> counts = small_counts();
  counts.push_back(65537);
  for (MPI_Datatype type : data_types()) {
    const DataSpec d = spec_of(find_type(type));
    for (size_t count : counts)
      for (int root = 0; root < c->size; ++root)
        ok = dev_bcast(*c, d, count, root, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuBcast,
                         ::testing::Values(CommKind::World, CommKind::SplitReversed, CommKind::SplitOddEven),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_id(info.param); });

TEST(GpuBcastLarge, BytesAndDoubles) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  const DataSpec bytes = spec_of(find_type(MPI_BYTE));
  const DataSpec dbl = spec_of(find_type(MPI_DOUBLE));
  ok = dev_bcast(*w, bytes, (size_t{4} << 20) + 3, 0, next_seed()) && ok;
  ok = dev_bcast(*w, bytes, (size_t{4} << 20) + 3, w->size - 1, next_seed()) && ok;
  ok = dev_bcast(*w, dbl, kLargeCount, 1 % w->size, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

// ---- allgather -------------------------------------------------------------------------------

class GpuAllgather : public ::testing::TestWithParam<CommKind> {};

TEST_P(GpuAllgather, TypesCountsInPlace) {
  ScopedComm c(GetParam());
  bool ok = true;
  std::vector<size_t> counts = small_counts();
  counts.push_back(4099);
  for (MPI_Datatype type : data_types()) {
    const DataSpec d = spec_of(find_type(type));
    for (size_t count : counts)
      for (bool in_place : {false, true}) ok = dev_allgather(*c, d, count, in_place, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuAllgather,
                         ::testing::Values(CommKind::World, CommKind::SplitReversed, CommKind::SplitOddEven),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_id(info.param); });

TEST(GpuAllgatherLarge, Floats) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  const DataSpec f = spec_of(find_type(MPI_FLOAT));
  ok = dev_allgather(*w, f, (size_t{1} << 18) + 3, false, next_seed()) && ok;
  ok = dev_allgather(*w, f, (size_t{1} << 18) + 3, true, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

// ---- derived datatypes (the staged path) ---------------------------------------------------

// Open MPI 4.1 accepts predefined ops on predefined datatypes only (MPI_ERR_OP on a
// derived one), so the derived-datatype reductions use a user-defined op that knows
// each type's layout: it combines the data elements and never touches the holes.
enum class DerivedOpKind { IntSum, DoubleMax, IntBor, Uint8Min };

struct DerivedReduce {
  MPI_Datatype type;
  std::string name;
  MPI_Datatype base;
  MPI_Op fill_op;              // input values as for this predefined op
  DerivedOpKind kind;
  size_t extent;               // bytes
  std::vector<size_t> offsets; // byte offsets of the data elements in one extent
};

std::vector<DerivedReduce> &derived_reductions() {
  static std::vector<DerivedReduce> v;
  return v;
}

template <class T, class F>
void combine(const unsigned char *in, unsigned char *inout, F f) {
  T a, b;
  memcpy(&a, in, sizeof a);
  memcpy(&b, inout, sizeof b);
  b = f(a, b);
  memcpy(inout, &b, sizeof b);
}

void derived_user_op(void *in, void *inout, int *len, MPI_Datatype *type) {
  const DerivedReduce *d = nullptr;
  for (const auto &x : derived_reductions())
    if (x.type == *type) d = &x;
  if (!d) {
    fprintf(stderr, "derived_user_op: unexpected datatype\n");
    PMPI_Abort(MPI_COMM_WORLD, 2);
    return;
  }
  auto *a = static_cast<const unsigned char *>(in);
  auto *b = static_cast<unsigned char *>(inout);
  for (int i = 0; i < *len; ++i, a += d->extent, b += d->extent) {
    for (size_t off : d->offsets) {
      switch (d->kind) {
        case DerivedOpKind::IntSum: combine<int>(a + off, b + off, [](int x, int y) { return x + y; }); break;
        case DerivedOpKind::DoubleMax: combine<double>(a + off, b + off, [](double x, double y) { return std::max(x, y); }); break;
        case DerivedOpKind::IntBor: combine<int>(a + off, b + off, [](int x, int y) { return x | y; }); break;
        case DerivedOpKind::Uint8Min: combine<uint8_t>(a + off, b + off, [](uint8_t x, uint8_t y) { return std::min(x, y); }); break;
      }
    }
  }
}

void make_derived_reductions() {
  auto &v = derived_reductions();
  v.clear();
  MPI_Datatype t;
  PMPI_Type_contiguous(3, MPI_INT, &t);
  PMPI_Type_commit(&t);
  v.push_back({t, "contiguous(3 x MPI_INT)", MPI_INT, MPI_SUM, DerivedOpKind::IntSum, 12, {0, 4, 8}});
  PMPI_Type_vector(3, 2, 4, MPI_DOUBLE, &t);  // gaps between the blocks
  PMPI_Type_commit(&t);
  v.push_back({t, "vector(3 blocks of 2 MPI_DOUBLE, stride 4)", MPI_DOUBLE, MPI_MAX, DerivedOpKind::DoubleMax, 80,
               {0, 8, 32, 40, 64, 72}});
  PMPI_Type_create_resized(MPI_INT, 0, 12, &t);  // a gap after each element
  PMPI_Type_commit(&t);
  v.push_back({t, "resized(MPI_INT, extent 12)", MPI_INT, MPI_BOR, DerivedOpKind::IntBor, 12, {0}});
  PMPI_Type_contiguous(4, MPI_UINT8_T, &t);
  PMPI_Type_commit(&t);
  v.push_back({t, "contiguous(4 x MPI_UINT8_T)", MPI_UINT8_T, MPI_MIN, DerivedOpKind::Uint8Min, 4, {0, 1, 2, 3}});
}

void free_derived_reductions() {
  for (auto &d : derived_reductions()) PMPI_Type_free(&d.type);
  derived_reductions().clear();
}

class GpuDerived : public ::testing::TestWithParam<CommKind> {};

TEST_P(GpuDerived, AllreduceUserOp) {
  ScopedComm c(GetParam());
  make_derived_reductions();
  MPI_Op op;
  PMPI_Op_create(derived_user_op, 1, &op);
  bool ok = true;
  for (const auto &d : derived_reductions()) {
    MPI_Aint lb = 0, extent = 0;
    PMPI_Type_get_extent(d.type, &lb, &extent);
    if (static_cast<size_t>(extent) != d.extent) {
      report("%s: extent %ld, the test's layout says %zu", d.name.c_str(), static_cast<long>(extent), d.extent);
      ok = false;
    }
  }
  std::vector<size_t> counts = small_counts();
  counts.push_back(100003);
  for (const auto &d : derived_reductions())
    for (size_t count : counts)
      for (bool in_place : {false, true})
        ok = dev_allreduce_derived(*c, d.type, d.name, find_type(d.base), op, d.fill_op, count, in_place,
                                   next_seed()) && ok;
  PMPI_Op_free(&op);
  free_derived_reductions();
  EXPECT_ALL_RANKS(ok);
}

TEST_P(GpuDerived, Bcast) {
  ScopedComm c(GetParam());
  auto types = make_derived_types();
  bool ok = true;
  std::vector<size_t> counts = small_counts();
  counts.push_back(50001);
  for (const auto &d : types) {
    const DataSpec s = spec_of_derived(d.type, d.name);
    for (size_t count : counts)
      for (int root : {0, c->size - 1}) ok = dev_bcast(*c, s, count, root, next_seed()) && ok;
  }
  free_derived_types(types);
  EXPECT_ALL_RANKS(ok);
}

TEST_P(GpuDerived, Allgather) {
  ScopedComm c(GetParam());
  auto types = make_derived_types();
  bool ok = true;
  std::vector<size_t> counts = small_counts();
  counts.push_back(5003);
  for (const auto &d : types) {
    const DataSpec s = spec_of_derived(d.type, d.name);
    for (size_t count : counts)
      for (bool in_place : {false, true}) ok = dev_allgather(*c, s, count, in_place, next_seed()) && ok;
  }
  free_derived_types(types);
  // Send and receive types differ (same type signature): 2n x MPI_INT <-> n x contiguous(2).
  MPI_Datatype pair;
  PMPI_Type_contiguous(2, MPI_INT, &pair);
  PMPI_Type_commit(&pair);
  const DataSpec ints = spec_of(find_type(MPI_INT));
  const DataSpec pairs = spec_of_derived(pair, "contiguous(2 x MPI_INT)");
  for (size_t count : {size_t{1}, size_t{7}, size_t{1001}}) {
    ok = dev_allgather(*c, ints, 2 * count, pairs, count, false, next_seed()) && ok;
    ok = dev_allgather(*c, pairs, count, ints, 2 * count, false, next_seed()) && ok;
  }
  PMPI_Type_free(&pair);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuDerived, ::testing::Values(CommKind::World, CommKind::SplitReversed),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_id(info.param); });

// ---- reduce_scatter_block --------------------------------------------------------------------
// A few types and ops per class, blocks of 0 to 100k elements, in place and not: through
// the device engine (zero-copy @twoshot, or the banks' @node) on one node, staged across
// nodes; mixed host and device ranks (deviators).

class GpuReduceScatterBlock : public ::testing::TestWithParam<CommKind> {};

TEST_P(GpuReduceScatterBlock, TypesOpsCounts) {
  ScopedComm c(GetParam());
  bool ok = true;
  for (const RedCase &rc : few_reductions()) {
    const TypeDesc &t = find_type(rc.type);
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}, size_t{65539}})
      for (bool in_place : {false, true})
        ok = dev_reduce_scatter_block(*c, t, rc.op, count, in_place, next_seed()) && ok;
  }
  // Odd ranks pass host memory: they deviate (device engine) or everybody stages.
  const Layout mixed = c->rank % 2 ? layout_of(Mem::Host, Mem::Host) : Layout{};
  for (size_t count : {size_t{7}, size_t{4099}})
    ok = dev_reduce_scatter_block(*c, find_type(MPI_DOUBLE), MPI_SUM, count, false, next_seed(), mixed) && ok;
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuReduceScatterBlock, ::testing::Values(CommKind::World, CommKind::SplitReversed),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_id(info.param); });

// ---- type signatures, not datatype handles --------------------------------------------------
// Each rank its own datatype, the same type signature (checks.h: int_layouts): every rank
// must take the same path (a rank with a derived datatype packs its own buffer); before
// the path was decided by signature, a rank with MPI_INT took the device engine and one
// with a derived type the staged path: a hang (the watchdog ends it). Host buffers on
// some ranks too (the fourth assignment): deviators and packing at once.

class GpuSignatures : public ::testing::TestWithParam<CommKind> {};

TEST_P(GpuSignatures, DatatypesDifferBetweenRanks) {
  ScopedComm c(GetParam());
  auto layouts = int_layouts();
  const int nl = static_cast<int>(layouts.size());
  bool ok = true;
  for (int shift : {0, 1, 3}) {
    const IntLayout &s = layouts[static_cast<size_t>((c->rank + shift) % nl)];
    const IntLayout &r = layouts[static_cast<size_t>((c->rank + shift + 1) % nl)];
    const DataSpec sd = spec_of_layout(s), rd = spec_of_layout(r);
    // shift 3: odd ranks pass host memory
    const Layout l = shift == 3 && c->rank % 2 ? layout_of(Mem::Host, Mem::Host) : Layout{};
    for (size_t ints : {size_t{0}, size_t{12}, size_t{1200}, size_t{120000}}) {
      for (int root : {0, c->size - 1})
        ok = dev_bcast(*c, rd, ints / static_cast<size_t>(r.ints), root, next_seed(), l) && ok;
      const size_t sc = ints / static_cast<size_t>(s.ints), rc = ints / static_cast<size_t>(r.ints);
      ok = dev_allgather(*c, sd, sc, rd, rc, false, next_seed(), l) && ok;
      ok = dev_allgather(*c, rd, rc, rd, rc, true, next_seed(), l) && ok;
    }
  }
  free_layouts(layouts);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuSignatures, ::testing::Values(CommKind::World, CommKind::SplitOddEven),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_id(info.param); });

// ---- user-defined ops (the staged path) -------------------------------------------------------

// Commutative: wrapping sum on unsigned 32-bit, maximum on double.
void user_sum_or_max(void *in, void *inout, int *len, MPI_Datatype *type) {
  if (*type == MPI_UINT32_T) {
    auto *a = static_cast<const uint32_t *>(in);
    auto *b = static_cast<uint32_t *>(inout);
    for (int i = 0; i < *len; ++i) b[i] = a[i] + b[i];
  } else if (*type == MPI_DOUBLE) {
    auto *a = static_cast<const double *>(in);
    auto *b = static_cast<double *>(inout);
    for (int i = 0; i < *len; ++i) b[i] = std::max(a[i], b[i]);
  } else {
    fprintf(stderr, "user_sum_or_max: unexpected datatype\n");
    PMPI_Abort(MPI_COMM_WORLD, 2);
  }
}

// Not commutative: 2x2 matrix product modulo 2^32 on contiguous(4 x MPI_UINT32_T)
// (inout = in x inout; MPI reduces in rank order, so both runs agree bit for bit).
void user_matmul(void *in, void *inout, int *len, MPI_Datatype *) {
  auto *a = static_cast<const uint32_t *>(in);
  auto *b = static_cast<uint32_t *>(inout);
  for (int i = 0; i < *len; ++i, a += 4, b += 4) {
    const uint32_t r0 = a[0] * b[0] + a[1] * b[2], r1 = a[0] * b[1] + a[1] * b[3];
    const uint32_t r2 = a[2] * b[0] + a[3] * b[2], r3 = a[2] * b[1] + a[3] * b[3];
    b[0] = r0;
    b[1] = r1;
    b[2] = r2;
    b[3] = r3;
  }
}

// Not commutative: the left operand (the result is the lowest rank's value).
void user_first(void *in, void *inout, int *len, MPI_Datatype *) {
  memcpy(inout, in, static_cast<size_t>(*len) * sizeof(int));
}

TEST(GpuUserOp, CommutativeAndNot) {
  ScopedComm w(CommKind::World);
  ScopedComm r(CommKind::SplitReversed);
  MPI_Op sum_max, matmul, first;
  PMPI_Op_create(user_sum_or_max, 1, &sum_max);
  PMPI_Op_create(user_matmul, 0, &matmul);
  PMPI_Op_create(user_first, 0, &first);
  MPI_Datatype mat;
  PMPI_Type_contiguous(4, MPI_UINT32_T, &mat);
  PMPI_Type_commit(&mat);
  bool ok = true;
  std::vector<size_t> counts = small_counts();
  counts.push_back(100003);
  for (const TestComm *c : {&*w, &*r}) {
    for (size_t count : counts) {
      for (bool in_place : {false, true}) {
        ok = dev_allreduce_derived(*c, MPI_UINT32_T, "MPI_UINT32_T", find_type(MPI_UINT32_T), sum_max,
                                   MPI_BXOR, count, in_place, next_seed()) && ok;
        ok = dev_allreduce_derived(*c, MPI_DOUBLE, "MPI_DOUBLE", find_type(MPI_DOUBLE), sum_max, MPI_MAX,
                                   count, in_place, next_seed()) && ok;
        ok = dev_allreduce_derived(*c, mat, "contiguous(4 x MPI_UINT32_T) 2x2 matrix", find_type(MPI_UINT32_T),
                                   matmul, MPI_BXOR, count, in_place, next_seed()) && ok;
        ok = dev_allreduce_derived(*c, MPI_INT, "MPI_INT", find_type(MPI_INT), first, MPI_BXOR, count,
                                   in_place, next_seed()) && ok;
      }
    }
  }
  PMPI_Type_free(&mat);
  PMPI_Op_free(&sum_max);
  PMPI_Op_free(&matmul);
  PMPI_Op_free(&first);
  EXPECT_ALL_RANKS(ok);
}

// ---- stale buffers --------------------------------------------------------------------------

// Host reference and device run of one allreduce (int sum), bcast and allgather on the
// given device buffers; data from `seed`.
bool stale_round(const TestComm &c, Buf &send, Buf &recv, Buf &gather, size_t count, uint32_t seed,
                 int root) {
  const TypeDesc &t = find_type(MPI_INT);
  const size_t bytes = count * sizeof(int);
  const int n = static_cast<int>(count);
  char ctxbuf[160];
  snprintf(ctxbuf, sizeof ctxbuf, "count=%zu send=%p recv=%p gather=%p", count,
           static_cast<void *>(send.at(0)), static_cast<void *>(recv.at(0)), static_cast<void *>(gather.at(0)));
  const std::string ctx = ctxbuf;
  bool ok = true;

  std::vector<int> in(count), ref(count), got(count);
  t.fill(in.data(), count, world_rank(), seed, MPI_SUM);
  set_phase("stale allreduce %s", ctx.c_str());
  PMPI_Allreduce(in.data(), ref.data(), n, MPI_INT, MPI_SUM, c.comm);
  send.put(0, in.data(), bytes);
  int rc = MPI_Allreduce(send.at(0), recv.at(0), n, MPI_INT, MPI_SUM, c.comm);
  recv.get(0, got.data(), bytes);
  if (rc != MPI_SUCCESS || got != ref) {
    size_t i = 0;
    while (i < count && got[i] == ref[i]) ++i;
    report("stale buffers: MPI_Allreduce rc=%d %s: first difference at %zu", rc, ctx.c_str(), i);
    ok = false;
  }

  // Bcast from root on the receive buffer (new data on the root, old on the others).
  std::vector<int> b(count);
  t.fill(b.data(), count, c.rank == root ? -1 : world_rank(), seed + 1, MPI_MAX);
  std::vector<int> bref = b;
  set_phase("stale bcast %s root=%d", ctx.c_str(), root);
  PMPI_Bcast(bref.data(), n, MPI_INT, root, c.comm);
  recv.put(0, b.data(), bytes);
  rc = MPI_Bcast(recv.at(0), n, MPI_INT, root, c.comm);
  recv.get(0, got.data(), bytes);
  if (rc != MPI_SUCCESS || got != bref) {
    report("stale buffers: MPI_Bcast rc=%d %s root=%d: wrong data", rc, ctx.c_str(), root);
    ok = false;
  }

  // Allgather of the send buffer (the allreduce's input) into `gather`.
  std::vector<int> gref(count * static_cast<size_t>(c.size)), ggot(gref.size());
  set_phase("stale allgather %s", ctx.c_str());
  PMPI_Allgather(in.data(), n, MPI_INT, gref.data(), n, MPI_INT, c.comm);
  rc = MPI_Allgather(send.at(0), n, MPI_INT, gather.at(0), n, MPI_INT, c.comm);
  gather.get(0, ggot.data(), ggot.size() * sizeof(int));
  if (rc != MPI_SUCCESS || ggot != gref) {
    report("stale buffers: MPI_Allgather rc=%d %s: wrong data", rc, ctx.c_str());
    ok = false;
  }
  return ok;
}

// Every rank frees its buffers and allocates new ones of another (or the same) size
// between calls; the allocator often returns the same address, and a peer's cached
// IPC mapping of the old buffer must not be used.
TEST(GpuStale, FreeAndReallocateEveryRank) {
  ScopedComm w(CommKind::World);
  const size_t sizes[] = {1000, 1000, 4099, 17, 1000, 262147, 1000, 65536, 65536, 3, 1 << 20};
  bool ok = true;
  int same_addr = 0, rounds = 0;
  uintptr_t prev = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    const size_t count = sizes[i];
    Buf send(Mem::Device, count * sizeof(int));
    Buf recv(Mem::Device, count * sizeof(int));
    Buf gather(Mem::Device, count * sizeof(int) * static_cast<size_t>(w->size));
    const uintptr_t addr = reinterpret_cast<uintptr_t>(send.at(0));
    same_addr += addr == prev;
    prev = addr;
    ++rounds;
    ok = stale_round(*w, send, recv, gather, count, next_seed(), static_cast<int>(i) % w->size) && ok;
  }  // freed here, every round
  if (world_rank() == 0)
    printf("stale buffers: the send buffer came back at the previous address in %d of %d rounds "
           "(rank 0)\n", same_addr, rounds);
  EXPECT_ALL_RANKS(ok);
}

// Only odd ranks reallocate (same size, new data); even ranks keep their buffers.
TEST(GpuStale, FreeAndReallocateSomeRanks) {
  ScopedComm w(CommKind::World);
  const size_t count = 10007;
  bool ok = true;
  Buf send(Mem::Device, count * sizeof(int)), recv(Mem::Device, count * sizeof(int));
  Buf gather(Mem::Device, count * sizeof(int) * static_cast<size_t>(w->size));
  for (int i = 0; i < 8; ++i) {
    if (w->rank % 2 == 1) {
      send = Buf();  // free first: the new allocation may take the same address
      recv = Buf();
      gather = Buf();
      send = Buf(Mem::Device, count * sizeof(int));
      recv = Buf(Mem::Device, count * sizeof(int));
      gather = Buf(Mem::Device, count * sizeof(int) * static_cast<size_t>(w->size));
    }
    ok = stale_round(*w, send, recv, gather, count, next_seed(), i % w->size) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

// The same buffers for many calls, new data each time (cached handles, changed data).
TEST(GpuReuse, SameBuffersManyCalls) {
  ScopedComm w(CommKind::World);
  const size_t max_count = 70001;
  bool ok = true;
  Buf send(Mem::Device, max_count * sizeof(int)), recv(Mem::Device, max_count * sizeof(int));
  Buf gather(Mem::Device, max_count * sizeof(int) * static_cast<size_t>(w->size));
  for (int i = 0; i < 40; ++i) {
    const size_t count = 1 + (static_cast<size_t>(i) * 7919) % max_count;
    ok = stale_round(*w, send, recv, gather, count, next_seed(), i % w->size) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

// ---- ordering with the application's default-stream work --------------------------------

// The buffers are written with cudaMemset on the legacy default stream right before each
// call, without a synchronisation: cudaMemset returns at once (and cudaMemcpy from
// pageable memory before the data lands), and an application may rely on the MPI call
// seeing the bytes, as the MPI call comes after the write in the stream of the program.
// The library must read the inputs only after the writes land, and write its results
// after them. On the first GPU run, missing this ordering returned zeros (issue 10).
// Bytes: MPI_UNSIGNED_CHAR sums (mod 256), bcast and allgather of byte patterns, each
// checked against PMPI_* on host copies of the same bytes.
bool ordering_round(const TestComm &c, size_t bytes, bool in_place, int root) {
  bool ok = true;
  const int n = static_cast<int>(bytes);
  const unsigned char mine = static_cast<unsigned char>(1 + c.rank * 7);
  const std::string what = std::to_string(bytes) + " bytes" + (in_place ? ", in place" : "") + " on " + c.name;
  std::vector<unsigned char> got;
  auto read = [&](const Buf &b, size_t len) {
    got.assign(len, 0);
    GCT_GPU(gpu_memcpy(got.data(), b.at(0), len));
  };
  auto expect = [&](const char *coll, const std::vector<unsigned char> &want) {
    for (size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i]) {
        report("%s right after cudaMemset (%s): byte %zu is 0x%02x, PMPI on host copies gives 0x%02x", coll,
               what.c_str(), i, got[i], want[i]);
        return false;
      }
    return true;
  };
  {  // allreduce
    Buf send(Mem::Device, bytes), recv(Mem::Device, bytes);
    std::vector<unsigned char> ref(bytes, 0), hsend(bytes, mine);
    if (PMPI_Allreduce(hsend.data(), ref.data(), n, MPI_UNSIGNED_CHAR, MPI_SUM, c.comm) != MPI_SUCCESS) return false;
    GCT_GPU(gpu_memset(recv.at(0), in_place ? mine : 0xEE, bytes));
    if (!in_place) GCT_GPU(gpu_memset(send.at(0), mine, bytes));
    const int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : send.at(0), recv.at(0), n, MPI_UNSIGNED_CHAR, MPI_SUM, c.comm);
    ok = check_rc(rc, "MPI_Allreduce", what) && ok;
    read(recv, bytes);
    ok = expect("MPI_Allreduce", ref) && ok;
  }
  {  // bcast: the root's bytes replace everybody's
    Buf b(Mem::Device, bytes);
    const unsigned char v = c.rank == root ? 0x5A : static_cast<unsigned char>(0x11 + c.rank);
    std::vector<unsigned char> ref(bytes, v);
    if (PMPI_Bcast(ref.data(), n, MPI_UNSIGNED_CHAR, root, c.comm) != MPI_SUCCESS) return false;
    GCT_GPU(gpu_memset(b.at(0), v, bytes));
    ok = check_rc(MPI_Bcast(b.at(0), n, MPI_UNSIGNED_CHAR, root, c.comm), "MPI_Bcast", what) && ok;
    read(b, bytes);
    ok = expect("MPI_Bcast", ref) && ok;
  }
  {  // allgather
    const size_t total = bytes * static_cast<size_t>(c.size);
    Buf send(Mem::Device, bytes), recv(Mem::Device, total);
    std::vector<unsigned char> ref(total, 0), hsend(bytes, mine);
    if (PMPI_Allgather(hsend.data(), n, MPI_UNSIGNED_CHAR, ref.data(), n, MPI_UNSIGNED_CHAR, c.comm) != MPI_SUCCESS)
      return false;
    GCT_GPU(gpu_memset(recv.at(0), 0xEE, total));
    if (in_place) GCT_GPU(gpu_memset(recv.at(bytes * static_cast<size_t>(c.rank)), mine, bytes));
    else GCT_GPU(gpu_memset(send.at(0), mine, bytes));
    const int rc = in_place ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.at(0), n, MPI_UNSIGNED_CHAR, c.comm)
                            : MPI_Allgather(send.at(0), n, MPI_UNSIGNED_CHAR, recv.at(0), n, MPI_UNSIGNED_CHAR, c.comm);
    ok = check_rc(rc, "MPI_Allgather", what) && ok;
    read(recv, total);
    ok = expect("MPI_Allgather", ref) && ok;
  }
  return ok;
}

TEST(GpuOrdering, DefaultStreamWritesRightBeforeTheCall) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  // Small (one-shot, banks), 64 KiB (two-shot), 16 MiB (two-shot; a memset long enough
  // on a real GPU to be still running when the call starts).
  for (size_t bytes : {size_t{4096}, size_t{65536}, size_t{16} << 20})
    for (bool in_place : {false, true}) ok = ordering_round(*w, bytes, in_place, static_cast<int>(bytes % w->size)) && ok;
  EXPECT_ALL_RANKS(ok);
}

// ---- back to back ----------------------------------------------------------------------------

// One communicator's state in a chain: device buffers A, B (kMaxBytes) and G (size x
// kMaxBytes), a log where every call's result is copied (device to device, on the
// default stream: later calls may overwrite the result, the log keeps it), and the host
// mirrors of all of them.
struct Chain {
  static constexpr size_t kMaxBytes = 70001;
  const TestComm *c = nullptr;
  size_t slot = 0;  // log bytes per step
  Buf a, b, g, log;
  std::vector<unsigned char> ha, hb, hg, hlog;

  Chain(const TestComm &comm, int steps)
      : c(&comm),
        slot(kMaxBytes * static_cast<size_t>(comm.size)),
        a(Mem::Device, kMaxBytes),
        b(Mem::Device, kMaxBytes),
        g(Mem::Device, slot),
        log(Mem::Device, slot * static_cast<size_t>(steps)),
        ha(kMaxBytes),
        hb(kMaxBytes),
        hg(slot),
        hlog(slot * static_cast<size_t>(steps)) {}

  bool check(const char *when) const {
    bool ok = true;
    const struct {
      const char *name;
      const Buf *d;
      const std::vector<unsigned char> *h;
    } bufs[] = {{"A", &a, &ha}, {"B", &b, &hb}, {"G", &g, &hg}, {"log of the results", &log, &hlog}};
    for (const auto &x : bufs) {
      const std::vector<unsigned char> got = x.d->image();
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != (*x.h)[i]) {
          report("back to back on %s, %s: buffer %s byte %zu is 0x%02x, the PMPI mirror says 0x%02x", c->name.c_str(),
                 when, x.name, i, got[i], (*x.h)[i]);
          ok = false;
          break;
        }
    }
    return ok;
  }
};

// One step of a chain, drawn from `r` (the same on every rank).
struct Step {
  Chain *ch = nullptr;
  int kind = 0;         // 0 allreduce in place on A, 1 A->B, 2 B+1->A, 3 bcast A, 4 allgather A->G,
                        // 5 allgather in place in G
  size_t n = 0;         // bytes (per rank for allgather)
  MPI_Op op = MPI_SUM;
  int root = 0;
  bool write = false;   // a default-stream write of the input right before the call
  bool memset = false;  // ... with cudaMemset (else cudaMemcpy from pageable memory)
  uint32_t x = 0;       // the written bytes (with the rank: the ranks' inputs differ)
  size_t log_at = 0;    // where the result goes in the log
  std::string what;

  Step(Chain &chain, uint32_t r, int k, int index) : ch(&chain), log_at(chain.slot * static_cast<size_t>(index)) {
    static const size_t sizes[] = {1, 8, 100, 4096, 16384, 16385, 40000, 65539, Chain::kMaxBytes};
    // No SUM: Open MPI 4.1's vectorised MPI_SUM on 8-bit types saturates where it should
    // wrap (the reference would be wrong), and 8-bit sums of these inputs overflow.
    static const MPI_Op ops[] = {MPI_BXOR, MPI_MAX, MPI_MIN};
    n = sizes[r % (sizeof sizes / sizeof sizes[0])];
    op = ops[(r >> 4) % 3];
    root = static_cast<int>((r >> 8) % static_cast<uint32_t>(chain.c->size));
    memset = (r >> 12) & 1;
    write = ((r >> 13) & 7) != 0;
    kind = static_cast<int>((r >> 16) % 6);
    x = r * 2654435761u + static_cast<uint32_t>(k);
    static const char *names[] = {"allreduce in place on A", "allreduce A->B", "allreduce B+1->A",
                                  "bcast of A", "allgather A->G", "allgather in place in G"};
    what = "step " + std::to_string(k) + ": " + names[kind] + " of " + std::to_string(n) + " bytes";
    if (kind <= 2) what += std::string(" (") + op_name(op) + ")";
    if (kind == 3) what += " from " + std::to_string(root);
    if (write) what += memset ? ", input written by cudaMemset" : ", input written by cudaMemcpy";
  }

  // Where the write goes: the call's input on this rank (the root's only, for bcast).
  bool writes_here() const { return write && kind != 2 && (kind != 3 || ch->c->rank == root); }
  size_t write_off() const { return kind == 5 ? n * static_cast<size_t>(ch->c->rank) : 0; }
  unsigned char fill() const { return static_cast<unsigned char>(x + 37u * static_cast<uint32_t>(ch->c->rank)); }
  std::vector<unsigned char> bytes() const {
    std::vector<unsigned char> v(n, fill());
    if (!memset)
      for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((x >> (i % 24)) + i * 131 + ch->c->rank * 17);
    return v;
  }

  // On the device: the write (if any) and the call, nothing waited for.
  bool device() const {
    Chain &c = *ch;
    const int ni = static_cast<int>(n);
    if (writes_here()) {
      Buf &d = kind == 5 ? c.g : c.a;
      if (memset)
        GCT_GPU(gpu_memset(d.at(write_off()), fill(), n));
      else
        GCT_GPU(gpu_memcpy(d.at(write_off()), bytes().data(), n));  // returns before the bytes land
    }
    set_phase("back to back on %s, %s", c.c->name.c_str(), what.c_str());
    int rc = MPI_SUCCESS;
    switch (kind) {
      case 0: rc = MPI_Allreduce(MPI_IN_PLACE, c.a.at(0), ni, MPI_UNSIGNED_CHAR, op, c.c->comm); break;
      case 1: rc = MPI_Allreduce(c.a.at(0), c.b.at(0), ni, MPI_UNSIGNED_CHAR, op, c.c->comm); break;
      case 2: rc = MPI_Allreduce(c.b.at(1), c.a.at(0), ni - 1, MPI_UNSIGNED_CHAR, op, c.c->comm); break;
      case 3: rc = MPI_Bcast(c.a.at(0), ni, MPI_UNSIGNED_CHAR, root, c.c->comm); break;
      case 4: rc = MPI_Allgather(c.a.at(0), ni, MPI_UNSIGNED_CHAR, c.g.at(0), ni, MPI_UNSIGNED_CHAR, c.c->comm); break;
      default:
        rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c.g.at(0), ni, MPI_UNSIGNED_CHAR, c.c->comm);
        break;
    }
    // The result, into the log (a device-to-device cudaMemcpy returns before it is done).
    if (result_bytes()) GCT_GPU(gpu_memcpy(c.log.at(log_at), result(c.a, c.b, c.g), result_bytes()));
    return check_rc(rc, "the collective", what + " on " + c.c->name);
  }

  size_t result_bytes() const {
    const size_t m = kind == 2 ? n - 1 : n;
    return kind >= 4 ? m * static_cast<size_t>(ch->c->size) : m;
  }
  const unsigned char *result(const Buf &a, const Buf &b, const Buf &g) const {
    return (kind == 1 ? b : kind >= 4 ? g : a).at(0);
  }

  // The same on the host mirrors, with PMPI_*.
  void mirror() const {
    Chain &c = *ch;
    const int ni = static_cast<int>(n);
    if (writes_here()) {
      const std::vector<unsigned char> v = bytes();
      std::copy(v.begin(), v.end(), (kind == 5 ? c.hg : c.ha).begin() + static_cast<long>(write_off()));
    }
    switch (kind) {
      case 0: PMPI_Allreduce(MPI_IN_PLACE, c.ha.data(), ni, MPI_UNSIGNED_CHAR, op, c.c->comm); break;
      case 1: PMPI_Allreduce(c.ha.data(), c.hb.data(), ni, MPI_UNSIGNED_CHAR, op, c.c->comm); break;
      case 2: PMPI_Allreduce(c.hb.data() + 1, c.ha.data(), ni - 1, MPI_UNSIGNED_CHAR, op, c.c->comm); break;
      case 3: PMPI_Bcast(c.ha.data(), ni, MPI_UNSIGNED_CHAR, root, c.c->comm); break;
      case 4: PMPI_Allgather(c.ha.data(), ni, MPI_UNSIGNED_CHAR, c.hg.data(), ni, MPI_UNSIGNED_CHAR, c.c->comm); break;
      default:
        PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c.hg.data(), ni, MPI_UNSIGNED_CHAR, c.c->comm);
        break;
    }
    const std::vector<unsigned char> &out = kind == 1 ? c.hb : kind >= 4 ? c.hg : c.ha;
    std::copy(out.begin(), out.begin() + static_cast<long>(result_bytes()), c.hlog.begin() + static_cast<long>(log_at));
  }
};

// Chains on two communicators interleaved (their device spaces are independent), in
// batches: the batch's device calls back to back, with nothing between them that
// synchronises the ranks or waits for a GPU (ranks run ahead of each other as far as the
// collectives let them), then the same steps on the mirrors, then a check of every
// buffer. A failed batch ends the chain (the mirrors no longer say anything).
bool back_to_back(const TestComm &c1, const TestComm &c2, int batches, int per_batch, uint32_t seed) {
  Chain ch1(c1, per_batch), ch2(c2, per_batch);
  for (Chain *ch : {&ch1, &ch2}) {
    const struct {
      Buf *d;
      std::vector<unsigned char> *h;
    } init[] = {{&ch->a, &ch->ha}, {&ch->b, &ch->hb}, {&ch->g, &ch->hg}, {&ch->log, &ch->hlog}};
    for (const auto &i : init) {
      for (size_t k = 0; k < i.h->size(); ++k) (*i.h)[k] = static_cast<unsigned char>(k * 7 + seed + ch->c->rank * 29);
      i.d->put(0, i.h->data(), i.h->size());
    }
  }
  uint32_t r = seed;
  int k = 0;
  bool ok = true;
  for (int batch = 0; batch < batches && ok; ++batch) {
    std::vector<Step> steps;
    for (int i = 0; i < per_batch; ++i, ++k) {
      r = r * 1664525u + 1013904223u;
      steps.emplace_back((r >> 30) & 1 ? ch2 : ch1, r ^ (r >> 7), k, i);
    }
    for (const Step &s : steps) ok = s.device() && ok;
    for (const Step &s : steps) s.mirror();
    const std::string when = "after steps " + std::to_string(k - per_batch) + " to " + std::to_string(k - 1);
    ok = ch1.check(when.c_str()) && ok;
    ok = ch2.check(when.c_str()) && ok;
    ok = all_ranks(ok);
  }
  return ok;
}

TEST(GpuBackToBack, MixedCollectivesNoSyncBetween) {
  ScopedComm w(CommKind::World);
  ScopedComm r(CommKind::SplitReversed);
  EXPECT_ALL_RANKS(back_to_back(*w, *r, 20, 24, next_seed()));
}

// ---- cudaMallocAsync -----------------------------------------------------------------------

void buffer_suite(const TestComm &c, const std::function<Layout(int rank)> &layout_of_rank, bool large,
                  bool *ok) {
  const Layout l = layout_of_rank(world_rank());
  std::vector<size_t> counts = {0, 1, 7, 1001, 65539};
  if (large) counts.push_back(kLargeCount);
  for (const RedCase &rc : few_reductions()) {
    const TypeDesc &t = find_type(rc.type);
    for (size_t count : counts) {
      if (count == kLargeCount && rc.type != MPI_FLOAT) continue;
      for (bool in_place : {false, true})
        *ok = dev_allreduce(c, t, rc.op, count, in_place, next_seed(), l) && *ok;
    }
  }
  for (MPI_Datatype type : {MPI_BYTE, MPI_DOUBLE}) {
    const DataSpec d = spec_of(find_type(type));
    for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, size_t{65539}}) {
      for (int root = 0; root < c.size; ++root) *ok = dev_bcast(c, d, count, root, next_seed(), l) && *ok;
      for (bool in_place : {false, true}) *ok = dev_allgather(c, d, count, in_place, next_seed(), l) && *ok;
    }
  }
}

TEST(GpuAsync, StreamOrderedPoolBuffers) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  buffer_suite(*w, [](int) { return layout_of(Mem::Async, Mem::Async); }, true, &ok);
  ScopedComm r(CommKind::SplitReversed);
  buffer_suite(*r, [](int) { return layout_of(Mem::Async, Mem::Async); }, false, &ok);
  EXPECT_ALL_RANKS(ok);
}

TEST(GpuAsync, MixedWithCudaMalloc) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  buffer_suite(*w, [](int r) { return r % 2 ? layout_of(Mem::Async, Mem::Async) : layout_of(Mem::Device, Mem::Device); },
               false, &ok);
  // one rank's send buffer from the pool, its receive buffer from cudaMalloc, and back
  buffer_suite(*w, [](int r) { return r % 2 ? layout_of(Mem::Async, Mem::Device) : layout_of(Mem::Device, Mem::Async); },
               false, &ok);
  EXPECT_ALL_RANKS(ok);
}

// ---- mixed memory kinds ------------------------------------------------------------------

struct Mix {
  const char *name;
  Layout (*of)(int rank);
};

const std::vector<Mix> &mixes() {
  static const std::vector<Mix> v = {
      {"EvenHost_OddDevice", [](int r) { return r % 2 ? layout_of(Mem::Device, Mem::Device) : layout_of(Mem::Host, Mem::Host); }},
      {"EvenDevice_OddHost", [](int r) { return r % 2 ? layout_of(Mem::Host, Mem::Host) : layout_of(Mem::Device, Mem::Device); }},
      {"Rank0Device_RestHost", [](int r) { return r == 0 ? layout_of(Mem::Device, Mem::Device) : layout_of(Mem::Host, Mem::Host); }},
      {"SendHost_RecvDevice", [](int) { return layout_of(Mem::Host, Mem::Device); }},
      {"SendDevice_RecvHost", [](int) { return layout_of(Mem::Device, Mem::Host); }},
      {"PinnedHostDevice", [](int r) {
         const Mem k[3] = {Mem::Pinned, Mem::Device, Mem::Host};
         return layout_of(k[r % 3], k[(r + 1) % 3]);
       }},
  };
  return v;
}

class GpuMixed : public ::testing::TestWithParam<size_t> {};

TEST_P(GpuMixed, AllreduceBcastAllgather) {
  const Mix &m = mixes()[GetParam()];
  bool ok = true;
  ScopedComm w(CommKind::World);
  buffer_suite(*w, m.of, GetParam() < 2, &ok);
  ScopedComm s(CommKind::SplitOddEven);
  buffer_suite(*s, m.of, false, &ok);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuMixed, ::testing::Range(size_t{0}, mixes().size()),
                         [](const ::testing::TestParamInfo<size_t> &info) { return std::string(mixes()[info.param].name); });

// ---- managed memory --------------------------------------------------------------------------
// cudaMallocManaged memory is readable by the CPU, so the library may hand it to the MPI
// as host memory; whether the MPI's shared-memory transport (single-copy reads of a
// peer's pages) copes with it depends on the driver. Kept apart: the default test runs
// filter GpuManaged.* out, gpu.mpi.managed.np4 runs it alone.
TEST(GpuManaged, AllRanksManaged) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  buffer_suite(*w, [](int) { return layout_of(Mem::Managed, Mem::Managed); }, true, &ok);
  EXPECT_ALL_RANKS(ok);
}

TEST(GpuManaged, MixedWithDeviceAndHost) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  buffer_suite(*w, [](int r) {
    const Mem k[3] = {Mem::Managed, Mem::Device, Mem::Host};
    return layout_of(k[r % 3], k[(r + 1) % 3]);
  }, false, &ok);
  EXPECT_ALL_RANKS(ok);
}

// ---- offsets inside allocations ------------------------------------------------------------------

void offsets_suite(const TestComm &c, bool shared, bool *ok) {
  const int r = world_rank();
  for (const RedCase &rc : few_reductions()) {
    const TypeDesc &t = find_type(rc.type);
    Layout l;
    l.shared = shared;
    l.send_off = static_cast<size_t>(2 * r + 1) * t.extent;  // odd element offsets, per rank
    l.recv_off = static_cast<size_t>(r + 3) * t.extent;
    for (size_t count : {size_t{1}, size_t{7}, size_t{1001}, size_t{65539}})
      for (bool in_place : {false, true}) *ok = dev_allreduce(c, t, rc.op, count, in_place, next_seed(), l) && *ok;
  }
  for (MPI_Datatype type : {MPI_INT, MPI_DOUBLE_INT}) {
    const DataSpec d = spec_of(find_type(type));
    Layout l;
    l.shared = shared;
    l.send_off = static_cast<size_t>(2 * r + 3) * d.extent;
    l.recv_off = static_cast<size_t>(5 - r % 5) * d.extent;
    for (size_t count : {size_t{1}, size_t{1001}, size_t{65539}}) {
      *ok = dev_bcast(c, d, count, c.size - 1, next_seed(), l) && *ok;
      for (bool in_place : {false, true}) *ok = dev_allgather(c, d, count, in_place, next_seed(), l) && *ok;
    }
  }
}

TEST(GpuOffsets, OddElementOffsetsSeparateAllocations) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  offsets_suite(*w, false, &ok);
  EXPECT_ALL_RANKS(ok);
}

TEST(GpuOffsets, SendAndRecvInOneAllocation) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  offsets_suite(*w, true, &ok);
  ScopedComm r(CommKind::SplitReversed);
  offsets_suite(*r, true, &ok);
  EXPECT_ALL_RANKS(ok);
}

// One-byte types at odd byte offsets (buffers not aligned to anything).
TEST(GpuOffsets, OddByteOffsets) {
  ScopedComm w(CommKind::World);
  bool ok = true;
  const int r = world_rank();
  Layout l;
  l.send_off = static_cast<size_t>(2 * r + 1);
  l.recv_off = static_cast<size_t>(2 * r + 3);
  for (size_t count : {size_t{1}, size_t{7}, size_t{1001}, size_t{65539}, size_t{1} << 20}) {
    ok = dev_allreduce(*w, find_type(MPI_UINT8_T), MPI_BXOR, count, false, next_seed(), l) && ok;
    ok = dev_allreduce(*w, find_type(MPI_INT8_T), MPI_MAX, count, true, next_seed(), l) && ok;
    ok = dev_allreduce(*w, find_type(MPI_C_BOOL), MPI_LOR, count, false, next_seed(), l) && ok;
    const DataSpec b = spec_of(find_type(MPI_BYTE));
    ok = dev_bcast(*w, b, count, 0, next_seed(), l) && ok;
    ok = dev_allgather(*w, b, count, false, next_seed(), l) && ok;
    ok = dev_allgather(*w, b, count, true, next_seed(), l) && ok;
  }
  l.shared = true;
  for (size_t count : {size_t{7}, size_t{65539}})
    ok = dev_allreduce(*w, find_type(MPI_UINT8_T), MPI_SUM, count, false, next_seed(), l) && ok;
  EXPECT_ALL_RANKS(ok);
}

// The P2P verdicts and the data probe's outcomes are kept per process for the GPU pair
// (coll/device_topo.cc): communicators made after one that probed its node's pairs (a
// duplicate of the world: every pair of every node) probe nothing, find the pairs in both
// processes' caches, and still compute right; a pair the probe caught (broken4.xml) stays
// without P2P: no IPC open across it after the first probe (the emulation counts them), the
// results right. On one GPU or without P2P nothing is probed and the counts stay 0.
TEST(GpuTopology, P2pProbedOncePerPairPerProcess) {
  using Counter = long long (*)(const char *);
  using Count = int (*)(void);
  const auto counter = reinterpret_cast<Counter>(dlsym(RTLD_DEFAULT, "gcoll_library_counter"));
  const auto broken = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "gcoll_emu_broken_ipc_opens"));
  ASSERT_NE(counter, nullptr) << "gcoll_library_counter not found";
  bool ok = true;
  const TypeDesc &f = find_type(MPI_FLOAT);
  const auto calls = [&](const TestComm &c) {
    ok = dev_allreduce(c, f, MPI_SUM, 1001, false, next_seed()) && ok;
    ok = dev_bcast(c, spec_of(f), 4099, c.size - 1, next_seed()) && ok;
  };
  const long long seen0 = counter("p2p_probes") + counter("p2p_probe_cache_hits");
  ScopedComm first(CommKind::Dup);
  calls(*first);  // the device engine's setup: every pair of every node known after it
  const long long probes0 = counter("p2p_probes"), hits0 = counter("p2p_probe_cache_hits");
  const int broken0 = broken ? broken() : 0;
  for (int k = 0; k < 2; ++k) {
    ScopedComm again(CommKind::Dup);
    calls(*again);
  }
  const long long probes = counter("p2p_probes") - probes0, hits = counter("p2p_probe_cache_hits") - hits0;
  const int broken_opens = (broken ? broken() : 0) - broken0;
  if (probes != 0 || broken_opens != 0)
    std::printf("rank %d: %lld P2P probes, %d IPC opens across broken pairs on communicators made after the "
                "first (expected 0: probed once per pair and process); %lld probes, %lld cache hits in all\n",
                world_rank(), probes, broken_opens, counter("p2p_probes"), counter("p2p_probe_cache_hits"));
  ok = ok && probes == 0 && broken_opens == 0;
  // Where the first one had P2P pairs of this process's GPU to probe (or found them
  // known), the later ones found them known.
  if (probes0 + hits0 > seen0 && hits <= 0) {
    std::printf("rank %d: no P2P probe cache hits on the later communicators\n", world_rank());
    ok = false;
  }
  EXPECT_ALL_RANKS(ok);
}

// Across nodes the ranks that talk to the network are the ones nearest a NIC
// (coll/device_topo.h, step 6): where a node's lowest ranks are the farthest (nic_far4.xml
// under GCOLL_RANKS_PER_NODE=2: GPU0 and GPU2 NODE, GPU1 and GPU3 PIX to a NIC), the device
// engine runs on a topology whose local ranks go by that distance; the collectives whose
// inter-node steps use one rail (bcast binomial), every rail (allreduce, allgather,
// reduce_scatter_block) or ranks without one compute right on it, from roots on and off a
// leader, and on a reversed communicator (whose nodes are in order already) too; every rank
// counted a reordered topology
// (nic_ordered_topologies, include/gcoll/gcoll.h: gcoll_library_counter). Only under
// GCOLLTEST_EXPECT_NIC_ORDER=1 (gpu.topo.nic_far4.vnodes2): the other machines' runs keep
// their ranks' order, and 16 ranks on 2 cores would spend seconds on it.
TEST(GpuTopology, NetworkLeadersNearestNic) {
  const char *want = std::getenv("GCOLLTEST_EXPECT_NIC_ORDER");
  if (!want || std::strcmp(want, "1") != 0) GTEST_SKIP() << "GCOLLTEST_EXPECT_NIC_ORDER=1 not set";
  using Counter = long long (*)(const char *);
  const auto counter = reinterpret_cast<Counter>(dlsym(RTLD_DEFAULT, "gcoll_library_counter"));
  ASSERT_NE(counter, nullptr) << "gcoll_library_counter not found";
  const long long ordered0 = counter("nic_ordered_topologies");
  bool ok = true;
  const TypeDesc &f = find_type(MPI_FLOAT), &i = find_type(MPI_INT);
  for (CommKind k : {CommKind::Dup, CommKind::SplitReversed}) {
    ScopedComm c(k);
    for (size_t count : {size_t{1001}, size_t{1} << 18}) {
      ok = dev_allreduce(*c, f, MPI_SUM, count, false, next_seed()) && ok;
      ok = dev_allreduce(*c, i, MPI_MAX, count, true, next_seed()) && ok;
      ok = dev_reduce_scatter_block(*c, i, MPI_SUM, count, false, next_seed()) && ok;
      ok = dev_allgather(*c, spec_of(i), count, false, next_seed()) && ok;
      // Roots on a leader and off one, on the first node and the last.
      for (int root : {0, 1, c->size - 2, c->size - 1})
        if (root >= 0) ok = dev_bcast(*c, spec_of(f), count, root, next_seed()) && ok;
    }
  }
  const long long ordered = counter("nic_ordered_topologies") - ordered0;
  if (ordered < 1) {
    std::printf("rank %d: no device topology ordered by NIC distance (nic_ordered_topologies +%lld)\n", world_rank(),
                ordered);
    ok = false;
  }
  EXPECT_ALL_RANKS(ok);
}

// On an emulated multi-GPU node (GCOLL_TOPO_FILE, topo_check.py sets
// GCOLLTEST_NO_DENIED_IPC=1): gcoll never tried to map a peer's memory across a GPU pair
// that the topology says cannot P2P (the emulation counts such opens, as CUDA would fail
// them). Runs last (the file's last test), after every other test's calls.
TEST(GpuTopology, NoIpcOpenAcrossDeniedPairs) {
  const char *want = std::getenv("GCOLLTEST_NO_DENIED_IPC");
  if (!want || std::strcmp(want, "1") != 0) GTEST_SKIP() << "GCOLLTEST_NO_DENIED_IPC=1 not set";
  using Count = int (*)(void);
  const auto denied = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "gcoll_emu_denied_ipc_opens"));
  ASSERT_NE(denied, nullptr) << "gcoll_emu_denied_ipc_opens not found";
  const int n = denied();
  if (n != 0) std::printf("rank %d: %d IPC opens across denied GPU pairs\n", world_rank(), n);
  EXPECT_ALL_RANKS(n == 0);
}

}  // namespace
}  // namespace gpu
}  // namespace gct
