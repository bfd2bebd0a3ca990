// GpuEngineEvery (issue 31 item 2): each of the engine's eight collectives (allreduce,
// bcast, allgather, allgatherv, reduce_scatter_block, reduce, reduce_scatter, alltoall) on
// device buffers, predefined types and ops, contiguous, in place and not, a few counts
// (0, 1, odd, more than a bank of 4 MiB for allreduce and reduce), two roots, on
// MPI_COMM_WORLD and a split communicator in reversed rank order (the ring and the nodes
// in another order than the ranks); every call compared with PMPI_* on host copies
// (gpu_util.h). Part of gcoll_gpu_mpi_test; run alone by topo_check.py
// --expect-no-staged (gpu.topo.engine.<shape>, CMakeLists.txt), which fails when gcoll
// staged any of these calls: on every machine of tests/topo, one node and two virtual
// nodes, all of them run on the engine. Kept small: one run costs a second or two.
#include "gpu_util.h"

namespace gct {
namespace gpu {
namespace {

class GpuEngineEvery : public ::testing::TestWithParam<CommKind> {};

struct Red {
  MPI_Datatype type;
  MPI_Op op;
};
// A floating-point sum (results compared within tolerance), an exact integer op, a pair
// type (MINLOC) and a 16-byte element (double complex).
const std::vector<Red> &reds() {
  static const std::vector<Red> v = {
      {MPI_FLOAT, MPI_SUM}, {MPI_INT, MPI_MAX}, {MPI_DOUBLE_INT, MPI_MINLOC}, {MPI_C_DOUBLE_COMPLEX, MPI_SUM}};
  return v;
}
const std::vector<size_t> &counts() {
  static const std::vector<size_t> v = {0, 1, 7, 1001};
  return v;
}
// More than a bank of the default size (4 MiB) of floats.
constexpr size_t kLarge = (size_t{1} << 20) + 3;

TEST_P(GpuEngineEvery, Reductions) {
  ScopedComm c(GetParam());
  bool ok = true;
  int i = 0;
  for (const Red &r : reds()) {
    const TypeDesc &t = find_type(r.type);
    for (size_t count : counts())
      for (bool in_place : {false, true}) {
        const int root = i++ % 2 ? c->size - 1 : 0;
        ok = dev_allreduce(*c, t, r.op, count, in_place, next_seed()) && ok;
        ok = dev_reduce_scatter_block(*c, t, r.op, count, in_place, next_seed()) && ok;
        for (Coll2 k : {Coll2::Reduce, Coll2::ReduceScatter})
          ok = dev_check_case(*c, reduction_case(k, *c, t, r.op, count, root, in_place, next_seed())) && ok;
      }
  }
  const TypeDesc &f = find_type(MPI_FLOAT);
  ok = dev_allreduce(*c, f, MPI_SUM, kLarge, true, next_seed()) && ok;
  ok = dev_check_case(*c, reduction_case(Coll2::Reduce, *c, f, MPI_SUM, kLarge, c->size - 1, true, next_seed())) && ok;
  EXPECT_ALL_RANKS(ok);
}

TEST_P(GpuEngineEvery, Movements) {
  ScopedComm c(GetParam());
  bool ok = true;
  int i = 0;
  // Bytes, ints, and 16-byte elements.
  for (MPI_Datatype type : {MPI_UINT8_T, MPI_INT, MPI_C_DOUBLE_COMPLEX}) {
    const DataSpec d = spec_of(find_type(type));
    for (size_t count : counts())
      for (bool in_place : {false, true}) {
        const int root = i++ % 2 ? c->size - 1 : 0;
        if (!in_place) ok = dev_bcast(*c, d, count, root, next_seed()) && ok;
        ok = dev_allgather(*c, d, count, in_place, next_seed()) && ok;
        for (Coll2 k : {Coll2::Allgatherv, Coll2::Alltoall})
          ok = dev_check_case(*c, movement_case(k, *c, d, count, root, in_place, next_seed())) && ok;
      }
  }
  // A bcast of more than a bank; blocks of alltoall and allgatherv of several pieces
  // (the ring's alltoall cuts the bank into L - 1 pieces).
  const DataSpec bytes = spec_of(find_type(MPI_UINT8_T));
  ok = dev_bcast(*c, bytes, (size_t{4} << 20) + 5, c->size - 1, next_seed()) && ok;
  const size_t a2a = (size_t{4} << 20) / static_cast<size_t>(c->size > 1 ? c->size - 1 : 1) + 5;
  ok = dev_check_case(*c, movement_case(Coll2::Alltoall, *c, bytes, a2a, 0, true, next_seed())) && ok;
  ok = dev_check_case(*c, movement_case(Coll2::Allgatherv, *c, bytes, 65539, 0, false, next_seed())) && ok;
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, GpuEngineEvery, ::testing::Values(CommKind::World, CommKind::SplitReversed),
                         [](const ::testing::TestParamInfo<CommKind> &info) { return comm_kind_name(info.param); });

}  // namespace
}  // namespace gpu
}  // namespace gct
