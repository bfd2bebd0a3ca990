// Type signatures, not datatype handles: MPI requires only that the type signatures of a
// broadcast's buffers (and of every block of an allgather) match between ranks, so one
// rank may pass 12 x MPI_INT while another passes 4 x contiguous(3 x MPI_INT), 3 x a
// vector of ints with gaps, or 3 x an indexed type whose ints lie out of order in memory
// (MPICH's own tests do this). Every rank must then take the same path: before gcoll
// decided by the type signature, a rank with a predefined type entered the engine and
// one with a derived type called PMPI_Bcast, and the job hung (the watchdog ends it).
//
// Each rank uses its own type (by its rank in the communicator); the reference is
// PMPI_* on copies with the same per-rank types, compared on every byte of the rank's
// buffer (holes must be left as they were).
#include "checks.h"

namespace gct {
namespace {

// Ints per rank and call: a multiple of every layout's ints (12), from none to above the
// engine's small-message sizes (240 KB).
const std::vector<size_t> &signature_ints() {
  static const std::vector<size_t> v = {0, 12, 60, 1200, 60000};
  return v;
}

class Signatures : public ::testing::TestWithParam<CommKind> {};

TEST_P(Signatures, BcastDatatypesDifferBetweenRanks) {
  ScopedComm c(GetParam());
  auto layouts = int_layouts();
  const int nl = static_cast<int>(layouts.size());
  bool ok = true;
  // Two assignments of layouts to ranks: rank r, and rank r shifted (so that the root's
  // layout changes too).
  for (int shift : {0, 1}) {
    const IntLayout &mine = layouts[static_cast<size_t>((c->rank + shift) % nl)];
    const DataSpec d = spec_of_layout(mine);
    for (size_t ints : signature_ints())
      for (int root = 0; root < c->size; ++root)
        ok = check_bcast(*c, d, ints / static_cast<size_t>(mine.ints), root, next_seed()) && ok;
  }
  free_layouts(layouts);
  EXPECT_ALL_RANKS(ok);
}

TEST_P(Signatures, AllgatherDatatypesDifferBetweenRanks) {
  ScopedComm c(GetParam());
  auto layouts = int_layouts();
  const int nl = static_cast<int>(layouts.size());
  bool ok = true;
  for (int shift : {0, 1, 2}) {
    // Send and receive layouts differ on each rank and between ranks.
    const IntLayout &s = layouts[static_cast<size_t>((c->rank + shift) % nl)];
    const IntLayout &r = layouts[static_cast<size_t>((c->rank + shift + 1) % nl)];
    const DataSpec sd = spec_of_layout(s);
    const DataSpec rd = spec_of_layout(r);
    for (size_t ints : signature_ints()) {
      const size_t sc = ints / static_cast<size_t>(s.ints), rc = ints / static_cast<size_t>(r.ints);
      ok = check_allgather(*c, sd, sc, rd, rc, false, next_seed()) && ok;
      ok = check_allgather(*c, rd, rc, rd, rc, true, next_seed()) && ok;  // in place
    }
  }
  free_layouts(layouts);
  EXPECT_ALL_RANKS(ok);
}

INSTANTIATE_TEST_SUITE_P(, Signatures, ::testing::Values(CommKind::World, CommKind::SplitOddEven),
                         [](const ::testing::TestParamInfo<CommKind> &info) {
                           return std::string(comm_kind_name(info.param));
                         });

}  // namespace
}  // namespace gct
