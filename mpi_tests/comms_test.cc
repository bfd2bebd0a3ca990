// Communicators: a communicator created and freed 1000 times (each used for one
// collective before it is freed, alternating dup / split / reversed split / create, so
// handles get reused for communicators of other sizes and orders); interleaved use of
// two communicators; MPI_COMM_SELF; single-rank splits; splits where some ranks get
// MPI_COMM_NULL; intercommunicators. Every call is compared with PMPI_*.
#include <numeric>

#include "checks.h"

// From gcoll's public API (include/gcoll/gcoll.h). Weak, so that the tests also link
// and run without the library (against plain MPI) while they are developed.
extern "C" int gcoll_live_comm_states(void) __attribute__((weak));
extern "C" int gcoll_enabled(void) __attribute__((weak));

namespace gct {
namespace {

TestComm wrap(MPI_Comm comm, const std::string &name) {
  TestComm c;
  c.comm = comm;
  c.name = name;
  c.owned = comm != MPI_COMM_WORLD && comm != MPI_COMM_SELF && comm != MPI_COMM_NULL;
  if (comm != MPI_COMM_NULL) {
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);
    c.name += "[size=" + std::to_string(c.size) + "]";
  }
  return c;
}

// One collective on c, chosen by i.
bool one_collective(const TestComm &c, int i) {
  static const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_UINT8_T, MPI_FLOAT_INT};
  static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_BXOR, MPI_MINLOC};
  const size_t count = static_cast<size_t>(1 + (i * 13) % 97);
  const int k = (i / 3) % 4;
  switch (i % 3) {
    case 0: return check_allreduce(c, find_type(types[k]), ops[k], count, i % 2 == 0, next_seed());
    case 1: return check_bcast(c, spec_of(find_type(types[k])), count, i % c.size, next_seed());
    default: return check_allgather(c, spec_of(find_type(types[k])), count, i % 2 == 0, next_seed());
  }
}

int live_states() { return gcoll_live_comm_states ? gcoll_live_comm_states() : 0; }

TEST(CommLifecycle, CreateUseFree1000Times) {
  const int rank = world_rank(), size = world_size();
  bool ok = true;
  MPI_Group world_group, reversed_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  std::vector<int> reversed(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) reversed[static_cast<size_t>(r)] = size - 1 - r;
  MPI_Group_incl(world_group, size, reversed.data(), &reversed_group);
  // A long-lived communicator used now and then in between.
  MPI_Comm keep_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &keep_comm);
  TestComm keep = wrap(keep_comm, "long-lived dup");
  ok = one_collective(keep, 0) && ok;  // so that gcoll has its state before the baseline
  const int baseline = live_states();
  for (int i = 0; i < 1000; ++i) {
    MPI_Comm comm = MPI_COMM_NULL;
    std::string name;
    switch (i % 4) {
      case 0:
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        name = "dup";
        break;
      case 1:
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &comm);
        name = "split_odd_even";
        break;
      case 2:
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comm);
        name = "split_reversed";
        break;
      default:
        MPI_Comm_create(MPI_COMM_WORLD, reversed_group, &comm);
        name = "create(reversed group)";
        break;
    }
    TestComm c = wrap(comm, "#" + std::to_string(i) + " " + name);
    ok = one_collective(c, i) && ok;
    if (i % 50 == 0) ok = one_collective(keep, i / 50) && ok;
    MPI_Comm_free(&comm);
  }
  const int after = live_states();
  if (after != baseline) {
    report("gcoll holds %d communicator states after 1000 create/use/free cycles, %d before",
           after, baseline);
    ok = false;
  }
  free_comm(keep);
  MPI_Group_free(&reversed_group);
  MPI_Group_free(&world_group);
  EXPECT_ALL_RANKS(ok);
}

TEST(CommLifecycle, InterleavedCommunicators) {
  ScopedComm a(CommKind::Dup), b(CommKind::SplitReversed), s(CommKind::SplitOddEven);
  bool ok = true;
  for (int i = 0; i < 120; ++i) {
    const TestComm &c = (i % 3 == 0) ? *a : (i % 3 == 1) ? *b : *s;
    ok = one_collective(c, i / 3 + i) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

TEST(CommLifecycle, CommSelf) {
  TestComm self = wrap(MPI_COMM_SELF, "MPI_COMM_SELF");
  bool ok = true;
  for (int i = 0; i < 24; ++i) ok = one_collective(self, i) && ok;
  ok = check_allreduce(self, find_type(MPI_DOUBLE), MPI_SUM, kLargeCount, true, next_seed()) && ok;
  EXPECT_ALL_RANKS(ok);
}

TEST(CommLifecycle, SingleRankSplits) {
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank(), 0, &comm);
  TestComm c = wrap(comm, "split(color=rank)");
  bool ok = true;
  for (int i = 0; i < 24; ++i) ok = one_collective(c, i) && ok;
  free_comm(c);
  EXPECT_ALL_RANKS(ok);
}

// Every third rank gets MPI_COMM_NULL from the split; the others use the communicator.
TEST(CommLifecycle, SplitWithUndefinedColor) {
  MPI_Comm comm;
  const int rank = world_rank();
  MPI_Comm_split(MPI_COMM_WORLD, rank % 3 == 1 ? MPI_UNDEFINED : 0, -rank, &comm);
  bool ok = true;
  if (comm != MPI_COMM_NULL) {
    TestComm c = wrap(comm, "split(some ranks undefined, key=-rank)");
    for (int i = 0; i < 24; ++i) ok = one_collective(c, i) && ok;
    free_comm(c);
  }
  EXPECT_ALL_RANKS(ok);
}

// Intercommunicator between the even and the odd ranks of MPI_COMM_WORLD. Whatever gcoll
// does with them (likely hand them to the MPI), the results must be PMPI's.
TEST(CommLifecycle, Intercommunicator) {
  const int rank = world_rank(), size = world_size();
  if (size < 2) GTEST_SKIP() << "needs at least 2 ranks";
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 77, &inter);
  TestComm c = wrap(inter, "intercomm(even|odd)");
  int remote = 0, local_size = 0;
  MPI_Comm_remote_size(inter, &remote);
  MPI_Comm_size(local, &local_size);
  TestComm ag = c;
  ag.size = remote;  // allgather receives one block per remote rank
  ag.owned = false;
  bool ok = true;
  for (size_t count : {size_t{1}, size_t{7}, size_t{1001}}) {
    ok = check_allreduce(c, find_type(MPI_INT), MPI_SUM, count, false, next_seed()) && ok;
    ok = check_allreduce(c, find_type(MPI_LONG_LONG), MPI_MAX, count, false, next_seed()) && ok;
    ok = check_allreduce(c, find_type(MPI_2INT), MPI_MINLOC, count, false, next_seed()) && ok;
    ok = check_allgather(ag, spec_of(find_type(MPI_DOUBLE)), count, false, next_seed()) && ok;
    // Bcast from each rank of the even group, then of the odd group.
    for (int group = 0; group < 2; ++group) {
      const int group_size = group == 0 ? (size + 1) / 2 : size / 2;
      for (int r = 0; r < group_size; ++r) {
        int root;
        if (rank % 2 == group) root = (c.rank == r) ? MPI_ROOT : MPI_PROC_NULL;
        else root = r;
        ok = check_bcast(c, spec_of(find_type(MPI_INT)), count, root, next_seed()) && ok;
      }
    }
  }
  (void)local_size;
  free_comm(c);
  MPI_Comm_free(&local);
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
