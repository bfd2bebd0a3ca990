// The requests of the nonblocking and persistent forms (base/coll_list.h). The request
// the application gets is always the MPI's own: the MPI's nonblocking or persistent call
// on the application's buffers (host memory) or on host copies of them (device memory,
// coll/staged.h). So it mixes with any other request in any completion call, and the MPI
// progresses it. What gcoll adds is kept beside it, keyed by the handle (a RequestOp):
// the host copies and the copies back into device memory, which run when the
// application's MPI_Wait / Test / Waitall / Testall / Waitany / Testany / Waitsome /
// Testsome / Request_get_status sees the request complete (gcoll defines those entry
// points: pmpi/entry_c.cc, and Open MPI's Fortran ones, pmpi/entry_fortran.cc); the
// copies in of a persistent request at each MPI_Start / MPI_Startall; the stats line of
// each start. With no such request outstanding, every completion call goes straight to
// the MPI after one relaxed load.
//
// What the standard says is erroneous on a collective's request, gcoll refuses with
// MPI_ERR_REQUEST through the communicator's error handler: MPI_Cancel, MPI_Request_free
// of an active request (MPI-4.1 6.12), MPI_Start of an active persistent request.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/stats.h"
#include "coll/engine_op.h"
#include "coll/team.h"
#include "coll/team_call.h"
#include "coll/staged.h"

namespace gcoll {

struct RequestOp {
  MPI_Comm comm = MPI_COMM_NULL;  // whose error handler reports a failure
  Coll coll = Coll::Allreduce;    // the stats' line (the form's)
  Path path = Path::Passthrough;  // how each start is counted
  std::uint64_t bytes = 0;
  bool persistent = false;
  bool active = false;             // started and not yet seen complete
  bool finished = false;           // the copies back of this activation are done (MPI_Request_get_status)
  std::unique_ptr<Stager> stager;  // device buffers: the host copies; nullptr on host buffers
  // A nonblocking call the engine runs on the communicator's progress thread: the request
  // is a generalized request of gcoll's, completed (MPI_Grequest_complete, on the
  // application's thread, inside a completion call) once the thread has run the op.
  std::shared_ptr<EngineOp> engine;
  bool greq_done = false;          // MPI_Grequest_complete was called (nonblocking), or the
                                   // activation's end signalled (persistent, below)
  // A persistent call whose _init decided that the engine runs every start (call.h;
  // coll/team_call.h: team_persistent_init): each MPI_Start queues an EngineOp made from
  // engine_template with `persistent_path`'s memory kinds; the MPI has no request for it. The
  // application's handle is gcoll's: a persistent zero-byte receive on a private
  // duplicate of MPI_COMM_SELF with its own tag (`self_tag`), started at each MPI_Start
  // and matched by a zero-byte send of gcoll's once the start's engine op has run, inside
  // a completion call (Watch::settle). So the MPI itself completes and restarts it in
  // every completion call, mixed with any request.
  std::shared_ptr<EngineOp> engine_template;
  PersistentPath persistent_path;
  int self_tag = -1;
  struct Team *team = nullptr;
  Buffers bufs;
  std::mutex mu;                   // the copies back (completion calls of several threads)
};

// Whether a completion call must not yet hand `op`'s request to the MPI's own wait: its
// engine work is queued or running, or done but its end not yet given to the MPI
// (Watch::settle: MPI_Grequest_complete, or the persistent handle's matching send). An op
// is pending until it is settled, not merely until its engine op is done: the progress
// thread may finish the op between a completion call's settle() and its look here, and a
// look at `done` alone then sent the application's MPI_Wait into the MPI's wait on a
// generalized request that nobody would complete (the hang of 2026-11-27 under MPICH
// 4.0.2, ~1 run in 100 of mpi.nonblocking.engine.np3 on a loaded machine).
inline bool engine_pending(const RequestOp &op) {
  if (op.greq_done) return false;
  return op.self_tag >= 0 ? op.active : op.engine != nullptr;
}

// Keeps `op` beside the MPI's request `r` until the application frees or completes it.
void track_request(MPI_Request r, std::unique_ptr<RequestOp> op);

// Some request is tracked (relaxed; the completion calls' fast path).
bool requests_tracked();

// The implementations of the completion and persistent entry points (same parameters as
// the MPI's; C handles).
int wait(MPI_Request *request, MPI_Status *status);
int test(MPI_Request *request, int *flag, MPI_Status *status);
int waitall(int count, MPI_Request requests[], MPI_Status statuses[]);
int testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]);
int waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
int testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status);
int waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]);
int testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]);
int request_get_status(MPI_Request request, int *flag, MPI_Status *status);
int request_free(MPI_Request *request);
int start(MPI_Request *request);
int startall(int count, MPI_Request requests[]);
int cancel(MPI_Request *request);

// The same around another binding of the MPI's (Open MPI's Fortran ones): the ops behind
// `n` requests, looked up before the MPI's call, and what happens after it.
class Watch {
 public:
  Watch() = default;
  Watch(int n, const MPI_Request *requests);
  Watch(const Watch &) = delete;
  Watch &operator=(const Watch &) = delete;
  bool any() const { return !ops_.empty(); }
  // Engine ops (RequestOp::engine): before any MPI call on the requests, complete the
  // generalized requests of the ops the progress thread has run (settle); engines_pending:
  // some op of the array is not settled yet (engine_pending); wait_engines: wait until
  // every one has run and is settled (the MPI progressing meanwhile). A blocking completion call of one or all
  // requests waits for them first (the MPI's own call would never see them complete);
  // Waitany / Waitsome poll instead (another request may complete first).
  void settle();
  bool engines_pending() const;
  void wait_engines();
  // Request i (an index of the array given) is complete: its copies back; a nonblocking
  // one's op goes. MPI_SUCCESS, or the error the communicator's handler was given.
  int completed(int i);
  // Every request is complete (Waitall, Testall's true flag).
  int all_completed();
  // Before the MPI's start of request i (persistent): its copies in. MPI_SUCCESS or the
  // error (raised); MPI_ERR_REQUEST for an active one.
  int before_start(int i, const char *func);
  // After the MPI started it: active, counted. A persistent call the engine may take
  // (RequestOp::inner): this start's path, decided now, and its activation (the engine op
  // queued, or the MPI's request started). MPI_SUCCESS or the error (raised).
  int started(int i, const char *func);
  // MPI_Request_get_status found request i complete: its copies back (once); the op
  // stays until the request is completed or freed.
  int status_complete(int i);
  // Before MPI_Request_free / MPI_Cancel of request i: MPI_ERR_REQUEST (raised) where the
  // standard makes the call erroneous, else MPI_SUCCESS.
  int may_free(int i);
  int may_cancel(int i);
  // The op of request i, nullptr when gcoll keeps none.
  RequestOp *op(int i) const;
  // Request i was freed (MPI_Request_free): its op goes.
  void freed(int i);

 private:
  MPI_Request handle(int i) const;  // request i's handle before the MPI's call
  std::vector<std::pair<int, std::shared_ptr<RequestOp>>> ops_;
  std::vector<MPI_Request> handles_;
};

// Inside MPI_Finalize: drops what erroneous programs left (requests never completed).
void release_requests();

}  // namespace gcoll
