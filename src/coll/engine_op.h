// One engine call of any form (coll/team_call.h): what the engine runs, entered on this
// rank's buffers (packed host scratch where a layout is not the signature's bytes in one
// run, pack.h; scratch of the agreed memory kind where this rank's buffers differ from it,
// deviate.h), run, and left (results copied back). The blocking form does the three in a
// row; the nonblocking form enters in the call, runs on the communicator's progress
// thread (coll/async_queue.h) and leaves when the application's completion call sees it done
// (pmpi/requests.h). One algorithm, one path: no step is written twice.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/stats.h"
#include "base/status.h"
#include "coll/deviate.h"
#include "coll/engine.h"
#include "coll/local_memory.h"
#include "coll/pack.h"

namespace gcoll {

struct Team;
struct CallMemory;

// The buffers of a call that carry bytes (nullptr: none, or MPI_IN_PLACE), for the
// memory classification.
struct Buffers {
  const void *send = nullptr;
  const void *recv = nullptr;
};

// This rank's memory kinds in an engine call whose packed sides (pack.h) are host
// scratch: the engine's view, for fits_agreed and the deviator.
LocalMemory packed_memory(const LocalMemory &lm, bool packed_send, bool packed_recv, const Buffers &b);

struct EngineOp {
  CollArgs args;
  PackPlan plan;  // this rank's layouts (prepare() fills it)

  // After prepare(): the arrays the op reads copied into it, for a call that returns
  // before the engine runs: those that live only during the call (allgatherv's block
  // sizes and offsets) and the application's (reduce_scatter's recvcounts, allgatherv's
  // receive counts and displacements), which it may free or reuse once the call returned.
  void keep_arrays(int comm_size);
  // A new op with the same arguments (after keep_arrays: its own copy of the arrays), for
  // each start of a persistent call.
  std::shared_ptr<EngineOp> fresh() const;
  // Points args at what this rank's part of the engine call runs on. A failure is this
  // rank's alone, before it joined the engine call (why() says what).
  Status enter(Team *cs, const LocalMemory &lm, const CallMemory &cm, const Buffers &bufs);
  // The engine call (Team::run_engine; on_app_thread: false on the progress thread).
  Status run(Team *cs, bool on_app_thread);
  // After run() returned `st`: the results into the application's buffers (deviator,
  // packer). Returns the call's outcome; why() is set where there is more to say.
  Status leave(Status st);
  const std::string &why() const { return why_; }

  EngineRecord rec;
  // The nonblocking form: the team whose progress thread runs it (set when queued), and
  // done once run() returned (on that thread, or in a completion call: AsyncQueue::run_here).
  Team *team = nullptr;
  std::atomic<bool> done{false};
  Status run_status = Status::Ok;

 private:
  int gpu_ = -1;
  Packer packer_;
  std::unique_ptr<Deviator> dev_;
  void point_arrays();  // args and plan at arrays_ / int_arrays_
  std::vector<std::size_t> arrays_;
  std::vector<int> int_arrays_;
  std::string why_;
};

}  // namespace gcoll
