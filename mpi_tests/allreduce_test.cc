// MPI_Allreduce correctness: every predefined datatype with every reduction operation
// defined for it (plus the extra ones Open MPI accepts), counts 0, 1, 7 and 1001, with
// and without MPI_IN_PLACE, on four kinds of communicator; a representative subset at
// a count above 1M elements. The reference is PMPI_Allreduce on copies of the inputs.
#include <tuple>

#include "checks.h"

namespace gct {
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

class AllreduceMatrix : public ::testing::TestWithParam<std::tuple<CommKind, Group>> {};

TEST_P(AllreduceMatrix, AllTypesOpsCounts) {
  ScopedComm c(std::get<0>(GetParam()));
  const Group g = std::get<1>(GetParam());
  bool ok = true;
  int cases = 0;
  for (const TypeDesc &t : all_types()) {
    if (t.group != g) continue;
    for (MPI_Op op : tested_ops(t)) {
      for (size_t count : small_counts()) {
        for (bool in_place : {false, true}) {
          ok = check_allreduce(*c, t, op, count, in_place, next_seed()) && ok;
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 0);
  if (verbose() && world_rank() == 0) printf("%d cases on %s\n", cases, c->name.c_str());
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(
    , AllreduceMatrix,
    ::testing::Combine(::testing::ValuesIn(all_comm_kinds()),
                       ::testing::ValuesIn(reducible_groups())),
    [](const ::testing::TestParamInfo<std::tuple<CommKind, Group>> &info) {
      return std::string(comm_kind_name(std::get<0>(info.param))) + "_" +
             group_id(std::get<1>(info.param));
    });

// Above 1M elements: one or two types per group and per class of operation.
struct LargeCase {
  MPI_Datatype type;
  MPI_Op op;
  bool in_place;
};

const std::vector<LargeCase> &large_cases() {
  static const std::vector<LargeCase> cases = {
      {MPI_INT, MPI_SUM, false},           {MPI_INT, MPI_SUM, true},
      {MPI_INT64_T, MPI_PROD, false},      {MPI_UNSIGNED_CHAR, MPI_MAX, false},
      {MPI_SHORT, MPI_MIN, false},         {MPI_UNSIGNED, MPI_LOR, false},
      {MPI_LONG, MPI_BXOR, false},         {MPI_FLOAT, MPI_SUM, false},
      {MPI_DOUBLE, MPI_SUM, true},         {MPI_DOUBLE, MPI_PROD, false},
      {MPI_LONG_DOUBLE, MPI_SUM, false},   {MPI_C_DOUBLE_COMPLEX, MPI_PROD, false},
      {MPI_C_BOOL, MPI_LAND, false},       {MPI_BYTE, MPI_BAND, false},
      {MPI_DOUBLE_INT, MPI_MINLOC, false}, {MPI_2INT, MPI_MAXLOC, false},
  };
  return cases;
}

TEST(AllreduceLarge, RepresentativeSubset) {
  ScopedComm c(CommKind::World);
  bool ok = true;
  for (const LargeCase &lc : large_cases())
    ok = check_allreduce(*c, find_type(lc.type), lc.op, kLargeCount, lc.in_place, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

// A few large cases on a communicator whose rank order is reversed.
TEST(AllreduceLarge, ReversedCommunicator) {
  ScopedComm c(CommKind::SplitReversed);
  bool ok = true;
  ok = check_allreduce(*c, find_type(MPI_INT), MPI_SUM, kLargeCount, true, next_seed()) && ok;
  ok = check_allreduce(*c, find_type(MPI_DOUBLE), MPI_SUM, kLargeCount, false, next_seed()) && ok;
  ok = check_allreduce(*c, find_type(MPI_DOUBLE_INT), MPI_MAXLOC, kLargeCount, false, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

// The C layouts the tests use must match Open MPI's extents.
TEST(AllreduceTypes, TableExtentsMatchMpi) {
  bool ok = true;
  for (const TypeDesc &t : all_types()) {
    MPI_Aint lb = 0, extent = 0;
    PMPI_Type_get_extent(t.type, &lb, &extent);
    if (lb != 0 || static_cast<size_t>(extent) != t.extent) {
      report("%s: MPI lb %ld extent %ld, table extent %zu", t.name, static_cast<long>(lb),
             static_cast<long>(extent), t.extent);
      ok = false;
    }
  }
  EXPECT_ALL_RANKS(ok);
}

// Back-to-back calls with different datatypes, ops and counts on the same buffers
// (catches state kept from one call to the next).
TEST(AllreduceSequence, AlternatingTypesAndCounts) {
  ScopedComm c(CommKind::World);
  bool ok = true;
  const MPI_Datatype types[] = {MPI_DOUBLE, MPI_INT, MPI_FLOAT, MPI_UINT8_T, MPI_LONG_LONG};
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_BOR};
  for (int i = 0; i < 200; ++i) {
    const TypeDesc &t = find_type(types[i % 5]);
    MPI_Op op = ops[i % 4];
    if (op == MPI_BOR && t.group == Group::Floating) op = MPI_PROD;
    size_t count = static_cast<size_t>((i * 37) % 300);
    ok = check_allreduce(*c, t, op, count, i % 3 == 0, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
