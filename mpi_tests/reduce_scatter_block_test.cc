// MPI_Reduce_scatter_block correctness: every predefined datatype with every reduction
// operation defined for it, blocks of 0, 1, 7 and 1001 elements, with and without
// MPI_IN_PLACE, on four kinds of communicator; blocks above 100k elements (several of the
// engine's chunks per block, blocks across chunks); back-to-back calls. The reference is
// PMPI_Reduce_scatter_block on copies of the inputs.
#include "checks.h"

namespace gct {
namespace {

class ReduceScatterBlockMatrix : public ::testing::TestWithParam<CommKind> {};

TEST_P(ReduceScatterBlockMatrix, AllTypesOpsCounts) {
  ScopedComm c(GetParam());
  bool ok = true;
  int cases = 0;
  for (const TypeDesc &t : all_types()) {
    for (MPI_Op op : tested_ops(t)) {
      for (size_t count : small_counts()) {
        for (bool in_place : {false, true}) {
          ok = check_reduce_scatter_block(*c, t, op, count, in_place, next_seed()) && ok;
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 0);
  if (verbose() && world_rank() == 0) printf("%d cases on %s\n", cases, c->name.c_str());
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, ReduceScatterBlockMatrix, ::testing::ValuesIn(all_comm_kinds()),
                         [](const ::testing::TestParamInfo<CommKind> &info) {
                           return std::string(comm_kind_name(info.param));
                         });

TEST(ReduceScatterBlockLarge, RepresentativeSubset) {
  ScopedComm c(CommKind::World);
  bool ok = true;
  const size_t large = 100003;  // x the communicator's size in all
  ok = check_reduce_scatter_block(*c, find_type(MPI_INT), MPI_SUM, large, false, next_seed()) && ok;
  ok = check_reduce_scatter_block(*c, find_type(MPI_INT), MPI_SUM, large, true, next_seed()) && ok;
  ok = check_reduce_scatter_block(*c, find_type(MPI_DOUBLE), MPI_SUM, large, false, next_seed()) && ok;
  ok = check_reduce_scatter_block(*c, find_type(MPI_DOUBLE_INT), MPI_MINLOC, large, true, next_seed()) && ok;
  ok = check_reduce_scatter_block(*c, find_type(MPI_UNSIGNED_CHAR), MPI_MAX, 3 * large, false, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

TEST(ReduceScatterBlockLarge, ReversedCommunicator) {
  ScopedComm c(CommKind::SplitReversed);
  bool ok = true;
  ok = check_reduce_scatter_block(*c, find_type(MPI_FLOAT), MPI_SUM, 100003, true, next_seed()) && ok;
  ok = check_reduce_scatter_block(*c, find_type(MPI_LONG), MPI_BXOR, 100003, false, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

TEST(ReduceScatterBlockSequence, AlternatingTypesAndCounts) {
  ScopedComm c(CommKind::World);
  bool ok = true;
  const MPI_Datatype types[] = {MPI_DOUBLE, MPI_INT, MPI_FLOAT, MPI_UINT8_T, MPI_LONG_LONG};
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_BOR};
  for (int i = 0; i < 100; ++i) {
    const TypeDesc &t = find_type(types[i % 5]);
    MPI_Op op = ops[i % 4];
    if (op == MPI_BOR && t.group == Group::Floating) op = MPI_PROD;
    const size_t count = static_cast<size_t>((i * 37) % 300);
    ok = check_reduce_scatter_block(*c, t, op, count, i % 3 == 0, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
