// gcoll_gpu_colls_test: the collectives of issue 23 (MPI_Reduce, MPI_Reduce_scatter,
// MPI_Gather, MPI_Scatter, MPI_Alltoall, MPI_Allgatherv, MPI_Gatherv, MPI_Scatterv,
// ../coll_cases.h) on device buffers: through the engine where it has an algorithm
// (reduce, reduce_scatter, alltoall, allgatherv: @direct on one node, @hier / @ring /
// @bruck on the banks and across virtual nodes), else staged (copied to pinned host
// memory, given to the MPI, copied back), each call compared with PMPI_* on HOST copies of the
// same inputs, the whole receive allocation byte for byte (gpu_util.h: dev_check_case),
// so a byte the MPI does not write (gaps between a v-form's blocks, holes, a non-root's
// buffer, the root's own block in place) must stay as it was. On the emulated GPU device
// memory is not readable by the CPU: a device pointer reaching the MPI crashes the call.
//
// Tests:
//   GpuCollsReductions  Reduce and Reduce_scatter: a few types and ops per class, counts
//                       0 to 65539 (uneven blocks), in place and not, roots moving
//   GpuCollsMovements   Gather, Scatter, Alltoall and the v-forms: several types, derived
//                       datatypes with holes, counts 0 to 65539, in place and not
//   GpuCollsRoots       every root, in place and not
//   GpuCollsMixed       odd ranks on host memory, even ones on device memory; send and
//                       receive buffers of different kinds; buffers at odd offsets
//   GpuCollsUserOp      MPI_Reduce and MPI_Reduce_scatter with a user-defined op
#include "gpu_util.h"

namespace gct {
namespace gpu {
namespace {

struct RedCase {
  MPI_Datatype type;
  MPI_Op op;
};
const std::vector<RedCase> &reductions() {
  static const std::vector<RedCase> v = {
      {MPI_FLOAT, MPI_SUM},    {MPI_DOUBLE, MPI_SUM},        {MPI_INT, MPI_MAX},
      {MPI_UINT8_T, MPI_BXOR}, {MPI_DOUBLE_INT, MPI_MINLOC}, {MPI_C_FLOAT_COMPLEX, MPI_PROD}};
  return v;
}

const std::vector<size_t> &counts() {
  static const std::vector<size_t> v = {0, 1, 7, 1001, 65539};
  return v;
}

struct Rotation {
  int i = 0;
  bool in_place() const { return i % 2 == 1; }
  int root(const TestComm &c) const { return (i / 2) % c.size; }
};

std::string comm_id(CommKind k) { return comm_kind_name(k); }

class GpuCollsReductions : public ::testing::TestWithParam<CommKind> {};

TEST_P(GpuCollsReductions, TypesOpsCounts) {
  ScopedComm c(GetParam());
  bool ok = true;
  Rotation r;
  for (Coll2 k : {Coll2::Reduce, Coll2::ReduceScatter})
    for (const RedCase &rc : reductions())
      for (size_t count : counts()) {
        ok = dev_check_case(*c, reduction_case(k, *c, find_type(rc.type), rc.op, count, r.root(*c), r.in_place(),
                                               next_seed())) && ok;
        ++r.i;
      }
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuCollsReductions, ::testing::Values(CommKind::World, CommKind::SplitReversed),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_id(info.param); });

class GpuCollsMovements : public ::testing::TestWithParam<CommKind> {};

TEST_P(GpuCollsMovements, TypesCounts) {
  ScopedComm c(GetParam());
  bool ok = true;
  Rotation r;
  for (Coll2 k : all_coll2()) {
    if (is_reduction(k)) continue;
    for (MPI_Datatype t : {MPI_INT, MPI_DOUBLE, MPI_UINT8_T, MPI_DOUBLE_INT})
      for (size_t count : counts()) {
        ok = dev_check_case(*c, movement_case(k, *c, spec_of(find_type(t)), count, r.root(*c), r.in_place(),
                                              next_seed())) && ok;
        ++r.i;
      }
  }
  EXPECT_ALL_RANKS(ok);
}

TEST_P(GpuCollsMovements, DerivedDatatypes) {
  ScopedComm c(GetParam());
  auto dt = make_derived_types();
  bool ok = true;
  Rotation r;
  for (Coll2 k : all_coll2()) {
    if (is_reduction(k)) continue;
    for (const auto &d : dt)
      for (size_t count : {size_t{1}, size_t{101}}) {
        ok = dev_check_case(*c, movement_case(k, *c, spec_of_derived(d.type, d.name), count, r.root(*c),
                                              r.in_place(), next_seed())) && ok;
        ++r.i;
      }
  }
  // Send and receive datatypes differ (same type signature).
  const DataSpec ints = spec_of(find_type(MPI_INT));
  const DataSpec contig3 = spec_of_derived(dt[0].type, dt[0].name);
  for (Coll2 k : {Coll2::Gather, Coll2::Scatter, Coll2::Alltoall}) {
    ok = dev_check_case(*c, movement_case(k, *c, ints, 3 * 17, contig3, 17, r.root(*c), false, next_seed())) && ok;
    ok = dev_check_case(*c, movement_case(k, *c, contig3, 17, ints, 3 * 17, r.root(*c), false, next_seed())) && ok;
    ++r.i;
  }
  free_derived_types(dt);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuCollsMovements, ::testing::Values(CommKind::World, CommKind::SplitOddEven),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_id(info.param); });

TEST(GpuCollsRoots, EveryRoot) {
  ScopedComm c(CommKind::World);
  bool ok = true;
  const TypeDesc &t = find_type(MPI_INT);
  for (int root = 0; root < c->size; ++root)
    for (bool in_place : {false, true}) {
      ok = dev_check_case(*c, reduction_case(Coll2::Reduce, *c, t, MPI_SUM, 33, root, in_place, next_seed())) && ok;
      for (Coll2 k : {Coll2::Gather, Coll2::Scatter, Coll2::Gatherv, Coll2::Scatterv})
        ok = dev_check_case(*c, movement_case(k, *c, spec_of(t), 33, root, in_place, next_seed())) && ok;
    }
  EXPECT_ALL_RANKS(ok);
}

// Odd ranks pass host memory, even ones device memory (each rank stages its own); then
// send and receive buffers of different kinds, and buffers at odd offsets.
TEST(GpuCollsMixed, HostAndDeviceRanks) {
  ScopedComm c(CommKind::World);
  bool ok = true;
  Layout odd_host = c->rank % 2 ? layout_of(Mem::Host, Mem::Host) : Layout{};
  Layout split = c->rank % 2 ? layout_of(Mem::Device, Mem::Host) : layout_of(Mem::Host, Mem::Device);
  Layout offsets;
  offsets.send_off = 3;
  offsets.recv_off = 13;
  Rotation r;
  for (const Layout &l : {odd_host, split, offsets})
    for (Coll2 k : all_coll2()) {
      for (size_t count : {size_t{5}, size_t{4099}}) {
        const CollCase cs = is_reduction(k)
                                ? reduction_case(k, *c, find_type(MPI_DOUBLE), MPI_SUM, count, r.root(*c),
                                                 r.in_place(), next_seed())
                                : movement_case(k, *c, spec_of(find_type(MPI_INT)), count, r.root(*c), r.in_place(),
                                                next_seed());
        ok = dev_check_case(*c, cs, l) && ok;
        ++r.i;
      }
    }
  EXPECT_ALL_RANKS(ok);
}

void int_sum(void *in, void *inout, int *len, MPI_Datatype *) {
  const int *a = static_cast<const int *>(in);
  int *b = static_cast<int *>(inout);
  for (int i = 0; i < *len; ++i) b[i] = static_cast<int>(static_cast<unsigned>(b[i]) + static_cast<unsigned>(a[i]));
}

TEST(GpuCollsUserOp, ReduceAndReduceScatter) {
  ScopedComm c(CommKind::World);
  MPI_Op op;
  PMPI_Op_create(int_sum, 1, &op);
  bool ok = true;
  Rotation r;
  for (Coll2 k : {Coll2::Reduce, Coll2::ReduceScatter})
    for (size_t count : {size_t{1}, size_t{1001}}) {
      ok = dev_check_case(*c, reduction_case(k, *c, find_type(MPI_INT), op, count, r.root(*c), r.in_place(),
                                             next_seed())) && ok;
      ++r.i;
    }
  PMPI_Op_free(&op);
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gpu
}  // namespace gct
