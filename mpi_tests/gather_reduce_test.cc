// The collectives of issue 23 (coll_cases.h; through the MPI, or the engine's @hier,
// @ring, @bruck where GCOLL_HOST_BUFFERS=engine: mpi_tests/CMakeLists.txt): MPI_Reduce,
// MPI_Reduce_scatter, MPI_Gather, MPI_Scatter, MPI_Alltoall, MPI_Allgatherv, MPI_Gatherv,
// MPI_Scatterv on host buffers, each call against PMPI_* on copies of the same inputs,
// byte for byte over the whole receive buffer. Every predefined datatype (reductions:
// with every op defined for it), counts 0, 1, 7 and 1001 (the v-forms and
// Reduce_scatter: uneven blocks, some empty, out of order with gaps), MPI_IN_PLACE where
// MPI allows it, the root moving from case to case and every root in a test of its own,
// on four kinds of communicator; derived datatypes (holes) and different send and
// receive datatypes of one type signature; a few calls above 100k elements.
#include "coll_cases.h"

namespace gct {
namespace {

// in place every other case, the root moving: every combination comes up.
struct Rotation {
  int i = 0;
  bool in_place() const { return i % 2 == 1; }
  int root(const TestComm &c) const { return (i / 2) % c.size; }
};

class Reductions : public ::testing::TestWithParam<CommKind> {};

TEST_P(Reductions, AllTypesOpsCounts) {
  ScopedComm c(GetParam());
  bool ok = true;
  Rotation r;
  for (Coll2 k : {Coll2::Reduce, Coll2::ReduceScatter})
    for (const TypeDesc &t : all_types())
      for (MPI_Op op : tested_ops(t))
        for (size_t count : small_counts()) {
          ok = check_case(*c, reduction_case(k, *c, t, op, count, r.root(*c), r.in_place(), next_seed())) && ok;
          ++r.i;
        }
  EXPECT_GT(r.i, 0);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, Reductions, ::testing::Values(CommKind::World, CommKind::SplitReversed),
                         [](const ::testing::TestParamInfo<CommKind> &info) {
                           return std::string(comm_kind_name(info.param));
                         });

class Movements : public ::testing::TestWithParam<CommKind> {};

TEST_P(Movements, AllTypesCounts) {
  ScopedComm c(GetParam());
  bool ok = true;
  Rotation r;
  for (Coll2 k : all_coll2()) {
    if (is_reduction(k)) continue;
    for (const TypeDesc &t : all_types()) {
      const DataSpec d = spec_of(t);
      for (size_t count : small_counts()) {
        ok = check_case(*c, movement_case(k, *c, d, count, r.root(*c), r.in_place(), next_seed())) && ok;
        ++r.i;
      }
    }
  }
  EXPECT_ALL_RANKS(ok);
}

// Derived datatypes (holes: the MPI leaves them, so must gcoll), and different send and
// receive datatypes of the same type signature.
TEST_P(Movements, DerivedDatatypes) {
  ScopedComm c(GetParam());
  auto dt = make_derived_types();
  bool ok = true;
  Rotation r;
  for (Coll2 k : all_coll2()) {
    if (is_reduction(k)) continue;
    for (const auto &d : dt)
      for (size_t count : {size_t{1}, size_t{5}, size_t{101}}) {
        ok = check_case(*c, movement_case(k, *c, spec_of_derived(d.type, d.name), count, r.root(*c), r.in_place(),
                                          next_seed())) && ok;
        ++r.i;
      }
  }
  const DataSpec ints = spec_of(find_type(MPI_INT));
  const DataSpec contig3 = spec_of_derived(dt[0].type, dt[0].name);
  for (Coll2 k : {Coll2::Gather, Coll2::Scatter, Coll2::Alltoall})
    for (size_t n : {size_t{1}, size_t{33}}) {
      ok = check_case(*c, movement_case(k, *c, ints, 3 * n, contig3, n, r.root(*c), false, next_seed())) && ok;
      ok = check_case(*c, movement_case(k, *c, contig3, n, ints, 3 * n, r.root(*c), false, next_seed())) && ok;
      ++r.i;
    }
  free_derived_types(dt);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, Movements, ::testing::ValuesIn(all_comm_kinds()),
                         [](const ::testing::TestParamInfo<CommKind> &info) {
                           return std::string(comm_kind_name(info.param));
                         });

// Every root, in place and not.
TEST(RootedCollectives, EveryRoot) {
  ScopedComm c(CommKind::World);
  bool ok = true;
  const TypeDesc &t = find_type(MPI_INT);
  for (int root = 0; root < c->size; ++root)
    for (bool in_place : {false, true}) {
      ok = check_case(*c, reduction_case(Coll2::Reduce, *c, t, MPI_SUM, 7, root, in_place, next_seed())) && ok;
      for (Coll2 k : {Coll2::Gather, Coll2::Scatter, Coll2::Gatherv, Coll2::Scatterv})
        ok = check_case(*c, movement_case(k, *c, spec_of(t), 7, root, in_place, next_seed())) && ok;
    }
  EXPECT_ALL_RANKS(ok);
}

TEST(GatherReduceLarge, RepresentativeSubset) {
  ScopedComm c(CommKind::SplitReversed);
  bool ok = true;
  const size_t large = 100003;
  ok = check_case(*c, reduction_case(Coll2::Reduce, *c, find_type(MPI_DOUBLE), MPI_SUM, large, 0, false,
                                     next_seed())) && ok;
  ok = check_case(*c, reduction_case(Coll2::ReduceScatter, *c, find_type(MPI_INT), MPI_MAX, large, 0, true,
                                     next_seed())) && ok;
  Rotation r;
  for (Coll2 k : all_coll2()) {
    if (is_reduction(k)) continue;
    ok = check_case(*c, movement_case(k, *c, spec_of(find_type(MPI_FLOAT)), large, r.root(*c), r.in_place(),
                                      next_seed())) && ok;
    ++r.i;
  }
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
