// gcoll_mpi_space: the node memory space's protocol under mpirun, linked from
// gcoll_engine (not through libgcoll.so).
//   SpaceFailure.*  a rank whose part of a call failed (mark_failed) makes every rank's
//                   next sync of that call fail, at the same sync on every rank, and not
//                   earlier; the next call starts clean. (The device engine marks its own
//                   CUDA and IPC failures, so that its peers return an error instead of a
//                   result that lacks that rank's part.)
#include <memory>
#include <string>

#include "mem/host_space.h"
#include "harness.h"

namespace gct {
namespace {

// Every rank's status of a sync, as a verdict on this rank: `want` for all.
bool expect_sync(gcoll::MemSpace &s, gcoll::Status want, const char *what) {
  const gcoll::Status got = s.sync();
  if (got != want) {
    report("%s: sync returned %s, expected %s", what, gcoll::status_name(got), gcoll::status_name(want));
    return false;
  }
  return true;
}

TEST(SpaceFailure, EveryRankSeesAFailureAtTheSameSync) {
  gcoll::HostSpaceOptions opt;
  opt.bank_bytes = 4096;
  std::unique_ptr<gcoll::MemSpace> s;
  const gcoll::Status st = gcoll::create_host_space(MPI_COMM_WORLD, opt, &s);
  bool ok = gcoll::ok(st);
  if (!ok) report("create_host_space: %s", gcoll::status_name(st));
  if (all_ranks(ok)) {
    const int me = world_rank(), last = world_size() - 1;
    // A call in which rank 0 fails before its first sync: every sync of the call fails.
    s->begin_call();
    if (me == 0) s->mark_failed();
    ok = expect_sync(*s, gcoll::Status::ErrInternal, "call 1, sync 1 (rank 0 failed before it)") && ok;
    ok = expect_sync(*s, gcoll::Status::ErrInternal, "call 1, sync 2") && ok;
    // The next call starts clean.
    s->begin_call();
    ok = expect_sync(*s, gcoll::Status::Ok, "call 2, sync 1") && ok;
    ok = expect_sync(*s, gcoll::Status::Ok, "call 2, sync 2") && ok;
    // The last rank fails after the first sync: that sync still succeeds everywhere (a
    // rank that raced ahead must not make its peers leave one sync early), the second
    // fails everywhere.
    s->begin_call();
    ok = expect_sync(*s, gcoll::Status::Ok, "call 3, sync 1 (before the failure)") && ok;
    if (me == last) s->mark_failed();
    ok = expect_sync(*s, gcoll::Status::ErrInternal, "call 3, sync 2 (the last rank failed before it)") && ok;
    s->begin_call();
    ok = expect_sync(*s, gcoll::Status::Ok, "call 4") && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
