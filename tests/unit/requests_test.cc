// When a completion call may hand a request of gcoll's to the MPI's own wait
// (pmpi/requests.h: engine_pending). The MPI never completes such a request by itself:
// gcoll does, in Watch::settle, once the engine op has run. So the op must count as
// pending until it is settled, not merely until it has run: the progress thread may finish
// it between a completion call's settle() and its look at what is pending, and the call
// then waited in PMPI_Wait for a generalized request nobody would complete (the hang of
// mpi.nonblocking.engine.np3 under MPICH 4.0.2, 2026-11-27).
#include <gtest/gtest.h>

#include <memory>

#include "pmpi/requests.h"

namespace gcoll {
namespace {

TEST(Requests, NonblockingEngineOpPendingUntilSettled) {
  RequestOp op;
  op.active = true;
  op.engine = std::make_shared<EngineOp>();
  EXPECT_TRUE(engine_pending(op)) << "queued, not yet run";
  op.engine->done.store(true);
  EXPECT_TRUE(engine_pending(op)) << "run by the progress thread, its generalized request not yet complete";
  op.greq_done = true;
  EXPECT_FALSE(engine_pending(op)) << "settled: the MPI's wait completes it";
}

TEST(Requests, PersistentHandlePendingWhileActiveAndNotSignalled) {
  RequestOp op;
  op.persistent = true;
  op.self_tag = 7;
  EXPECT_FALSE(engine_pending(op)) << "inactive";
  op.active = true;
  op.engine = std::make_shared<EngineOp>();
  op.engine->done.store(true);
  EXPECT_TRUE(engine_pending(op)) << "this start's engine op run, its end not yet signalled";
  op.greq_done = true;
  EXPECT_FALSE(engine_pending(op));
  op.greq_done = false;
  op.engine.reset();
  EXPECT_TRUE(engine_pending(op)) << "active, its end not yet signalled";
}

TEST(Requests, MpisOwnRequestsAreNeverPending) {
  RequestOp op;  // a staged or host call: the request is the MPI's, its wait completes it
  op.active = true;
  EXPECT_FALSE(engine_pending(op));
}

}  // namespace
}  // namespace gcoll
