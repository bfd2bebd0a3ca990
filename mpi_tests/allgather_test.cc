// MPI_Allgather correctness: every predefined datatype, counts 0, 1, 7 and 1001 per
// rank, with and without MPI_IN_PLACE, on four kinds of communicator; send and receive
// datatypes that differ but have the same type signature (derived datatypes, holes in
// the receive buffer); a subset above 1M elements. The reference is PMPI_Allgather on
// copies of the same inputs; results must be bit-exact.
#include "checks.h"

namespace gct {
namespace {

class AllgatherMatrix : public ::testing::TestWithParam<CommKind> {};

TEST_P(AllgatherMatrix, AllTypesCounts) {
  ScopedComm c(GetParam());
  bool ok = true;
  int cases = 0;
  for (const TypeDesc &t : all_types()) {
    DataSpec d = spec_of(t);
    for (size_t count : small_counts()) {
      for (bool in_place : {false, true}) {
        ok = check_allgather(*c, d, count, in_place, next_seed()) && ok;
        ++cases;
      }
    }
  }
  if (verbose() && world_rank() == 0) printf("%d cases on %s\n", cases, c->name.c_str());
  EXPECT_ALL_RANKS(ok);
}

// Same type signature, different datatypes on the two sides.
TEST_P(AllgatherMatrix, MixedDatatypes) {
  ScopedComm c(GetParam());
  auto dt = make_derived_types();
  const DataSpec contig3 = spec_of_derived(dt[0].type, dt[0].name);  // 3 x MPI_INT
  const DataSpec vec = spec_of_derived(dt[1].type, dt[1].name);      // 6 x MPI_DOUBLE
  const DataSpec resized = spec_of_derived(dt[2].type, dt[2].name);  // 1 x MPI_INT, gap
  const DataSpec structd = spec_of_derived(dt[3].type, dt[3].name);  // char + double
  const DataSpec ints = spec_of(find_type(MPI_INT));
  const DataSpec doubles = spec_of(find_type(MPI_DOUBLE));
  bool ok = true;
  for (size_t n : {size_t{1}, size_t{4}, size_t{101}}) {
    ok = check_allgather(*c, ints, 3 * n, contig3, n, false, next_seed()) && ok;
    ok = check_allgather(*c, contig3, n, ints, 3 * n, false, next_seed()) && ok;
    ok = check_allgather(*c, doubles, 6 * n, vec, n, false, next_seed()) && ok;
    ok = check_allgather(*c, vec, n, doubles, 6 * n, false, next_seed()) && ok;
    ok = check_allgather(*c, ints, n, resized, n, false, next_seed()) && ok;
    ok = check_allgather(*c, vec, n, vec, n, false, next_seed()) && ok;
    ok = check_allgather(*c, structd, n, structd, n, false, next_seed()) && ok;
    ok = check_allgather(*c, vec, n, true, next_seed()) && ok;
    ok = check_allgather(*c, resized, n, true, next_seed()) && ok;
  }
  free_derived_types(dt);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, AllgatherMatrix, ::testing::ValuesIn(all_comm_kinds()),
                         [](const ::testing::TestParamInfo<CommKind> &info) {
                           return std::string(comm_kind_name(info.param));
                         });

// Above 1M elements per rank (MPI_BYTE, MPI_INT in place) and in total (MPI_DOUBLE_INT).
TEST(AllgatherLarge, RepresentativeSubset) {
  ScopedComm c(CommKind::World);
  bool ok = true;
  ok = check_allgather(*c, spec_of(find_type(MPI_BYTE)), kLargeCount, false, next_seed()) && ok;
  ok = check_allgather(*c, spec_of(find_type(MPI_INT)), kLargeCount, true, next_seed()) && ok;
  size_t per_rank = kLargeCount / static_cast<size_t>(c->size) + 1;
  ok = check_allgather(*c, spec_of(find_type(MPI_DOUBLE_INT)), per_rank, false, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

TEST(AllgatherSequence, ChangingCountsAndTypes) {
  ScopedComm c(CommKind::SplitReversed);
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_UINT8_T, MPI_SHORT_INT};
  bool ok = true;
  for (int i = 0; i < 200; ++i) {
    size_t count = static_cast<size_t>((i * 29) % 257);
    ok = check_allgather(*c, spec_of(find_type(types[i % 4])), count, i % 5 == 0, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
