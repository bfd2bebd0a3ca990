// MPI_Bcast correctness: every predefined datatype, counts 0, 1, 7 and 1001, from every
// root, on four kinds of communicator; derived datatypes with holes; a subset above 1M
// elements. The reference is PMPI_Bcast on a copy of the same buffer. Results must be
// bit-exact (on the bytes the datatype transfers).
#include "checks.h"

namespace gct {
namespace {

class BcastMatrix : public ::testing::TestWithParam<CommKind> {};

TEST_P(BcastMatrix, AllTypesCountsRoots) {
  ScopedComm c(GetParam());
  bool ok = true;
  int cases = 0;
  for (const TypeDesc &t : all_types()) {
    DataSpec d = spec_of(t);
    for (int root = 0; root < c->size; ++root) {
      for (size_t count : small_counts()) {
        ok = check_bcast(*c, d, count, root, next_seed()) && ok;
        ++cases;
      }
    }
  }
  if (verbose() && world_rank() == 0) printf("%d cases on %s\n", cases, c->name.c_str());
  EXPECT_ALL_RANKS(ok);
}

TEST_P(BcastMatrix, DerivedDatatypes) {
  ScopedComm c(GetParam());
  auto types = make_derived_types();
  bool ok = true;
  for (const DerivedType &dt : types) {
    DataSpec d = spec_of_derived(dt.type, dt.name);
    for (int root = 0; root < c->size; ++root)
      for (size_t count : {size_t{1}, size_t{5}, size_t{333}})
        ok = check_bcast(*c, d, count, root, next_seed()) && ok;
  }
  free_derived_types(types);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, BcastMatrix, ::testing::ValuesIn(all_comm_kinds()),
                         [](const ::testing::TestParamInfo<CommKind> &info) {
                           return std::string(comm_kind_name(info.param));
                         });

// Above 1M elements: a few types (small and large elements, holes) from the first, the
// last and a middle root.
class BcastLarge : public ::testing::TestWithParam<CommKind> {};

TEST_P(BcastLarge, RepresentativeSubset) {
  ScopedComm c(GetParam());
  const int last = c->size - 1, mid = c->size / 2;
  struct Case {
    MPI_Datatype type;
    int root;
  } const cases[] = {
      {MPI_BYTE, 0}, {MPI_INT, last}, {MPI_DOUBLE, mid}, {MPI_DOUBLE_INT, last},
      {MPI_C_LONG_DOUBLE_COMPLEX, 0},
  };
  bool ok = true;
  for (const Case &k : cases)
    ok = check_bcast(*c, spec_of(find_type(k.type)), kLargeCount, k.root, next_seed()) && ok;
  auto types = make_derived_types();
  // 6 doubles per vector element: above 1M doubles in all.
  DataSpec vec = spec_of_derived(types[1].type, types[1].name);
  ok = check_bcast(*c, vec, (kLargeCount / 6) | 1, mid, next_seed()) && ok;
  free_derived_types(types);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, BcastLarge, ::testing::Values(CommKind::World, CommKind::SplitOddEven),
                         [](const ::testing::TestParamInfo<CommKind> &info) {
                           return std::string(comm_kind_name(info.param));
                         });

// Many broadcasts in a row with changing roots, sizes and types.
TEST(BcastSequence, ChangingRootsSizesTypes) {
  ScopedComm c(CommKind::World);
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_LONG_DOUBLE_INT};
  bool ok = true;
  for (int i = 0; i < 200; ++i) {
    size_t count = static_cast<size_t>((i * 53) % 500);
    int root = (i * 7) % c->size;
    ok = check_bcast(*c, spec_of(find_type(types[i % 4])), count, root, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
