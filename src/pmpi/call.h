// What every collective's argument file (pmpi/calls/<name>.cc) calls: run_call() checks
// the communicator, finds its team (pmpi/comm_state.h) and runs the call's path
// (coll/team_call.h) behind the exception guard, errors raised through the communicator's
// error handler (pmpi/errors.h).
#pragma once

#include <mpi.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>

#include "base/config.h"
#include "base/stats.h"
#include "base/wait.h"
#include "coll/team_call.h"
#include "pmpi/comm_state.h"
#include "pmpi/errors.h"
#include "pmpi/mpi_types.h"
#include "pmpi/requests.h"
#include "pmpi/runtime.h"

namespace gcoll {

// Size in bytes of `count` elements, for stats (after the MPI accepted the datatype); the
// sizes of predefined datatypes remembered per thread. Under detail::tl_bytes_probe
// (base/stats.h), 0 for a datatype not remembered, without asking the MPI.
std::uint64_t payload(long long count, MPI_Datatype type);

bool valid_buffer(const void *p, long long count);
int comm_size_slow(MPI_Comm comm);
// The communicator's size (MPI_Comm_size), and the size of the group a v-form's arrays
// cover (the remote group of an intercommunicator): from the thread's last team lookup
// (pmpi/comm_state.h) when it was this communicator, without asking the MPI. On a rank
// sharing its core with another, every call into the MPI's code and data costs cache
// misses: these are on every call's path.
inline int comm_size(MPI_Comm comm) {
  if (const CommState *cs = comm_state_cached(comm)) return cs->size;
  return comm_size_slow(comm);
}
int comm_rank_slow(MPI_Comm comm);
inline int comm_rank(MPI_Comm comm) {  // MPI_Comm_rank (-1 where the MPI refuses)
  if (const CommState *cs = comm_state_cached(comm)) return cs->rank;
  return comm_rank_slow(comm);
}
inline int comm_group_size(MPI_Comm comm) {
  if (const CommState *cs = comm_state_cached(comm); cs && !cs->inter) return cs->size;
  return group_size(comm);
}
// This rank's role in a rooted collective (coll/staged.h: root_role), an
// intracommunicator's from the thread's last team lookup without asking the MPI.
inline RootRole root_of(MPI_Comm comm, int root) {
  if (const CommState *cs = comm_state_cached(comm); cs && !cs->inter) return intra_root_role(cs->rank, cs->size, root);
  return root_role(comm, root);
}
// The collectives without an engine algorithm (pmpi/calls/reduce.cc and after):
// whether any of the n counts is negative (an array the MPI reads), their sum, and the
// bytes of the blocks of a v-form (sum of counts x type size).
bool any_negative(const int *counts, int n);
long long sum_of(const int *counts, int n);
// The bytes of n blocks of their own datatypes (alltoallw's; stats). Their prepare() is
// engine_declines (coll/team_call.h).
std::uint64_t payload_typed(int n, const int *counts, const MPI_Datatype *types);

template <class Prepare, class Mpi, class Staged, class Bytes>
inline int dispatch(Coll coll, const char *func, MPI_Comm comm, Buffers bufs, Prepare &&prepare, Mpi &&mpi,
                    Staged &&staged, Bytes &&bytes) {
  if (comm == MPI_COMM_NULL) {  // Open MPI 4.1.4 segfaults on this in MPI_Allgather
    process_stats().record(coll, Path::Error, 0);
    return raise_error(comm, Status::ErrComm, func, "the communicator is MPI_COMM_NULL");
  }
  // The communicator's team (a thread-local memory makes this a few ns).
  CommState *cs = nullptr;
  if (!ok(comm_state(comm, &cs))) cs = nullptr;  // an invalid communicator: the MPI reports it
  if (cs && cs->inter) cs = nullptr;              // the engine never takes intercommunicators
  return team_call(cs, coll, func, bufs, prepare, mpi, staged, bytes,
                   [&](Status st, const char *why) { return raise_error(comm, st, func, why); });
}

// The nonblocking and persistent forms (pmpi/requests.h). Each rank by its own buffers,
// with nothing agreed (a nonblocking call may not wait for its peers): host buffers go to
// the MPI's call of the form; device buffers are staged, the MPI's call of the form made
// on host copies (coll/staged.h), the copies back when the application sees the request
// complete. Counted on the form's line
// (nonblocking: at the call; persistent: at each start).
// Nonblocking calls the engine can take (team_call.h: team_async_call, the same on every
// rank) run on the communicator's progress thread instead: the application gets a
// generalized request of gcoll's (MPI_Grequest_start), which the completion calls complete
// once the thread has run the op (pmpi/requests.h).
int engine_request(MPI_Request *request);
// A persistent call's handle of gcoll's, for one whose starts the engine runs
// (pmpi/requests.h: RequestOp::self_tag): into *request; MPI_SUCCESS or the MPI's error.
int engine_persistent_request(RequestOp *op, MPI_Request *request);

template <class Prepare, class Mpi, class Staged, class Bytes>
inline int async_dispatch(Coll coll, const CallForm &form, const char *func, MPI_Comm comm, Buffers bufs,
                          Prepare &&prepare, Mpi &&mpi, Staged &&staged, Bytes &&bytes) {
  Stats &stats = process_stats();
  const Coll line = coll_form(coll, form.form);
  if (comm == MPI_COMM_NULL) {
    stats.record(line, Path::Error, 0);
    return raise_error(comm, Status::ErrComm, func, "the communicator is MPI_COMM_NULL");
  }
  const int app_errno = errno;
  const bool persistent = form.form == Form::Persistent;
  // GCOLL_PROGRESS_THREAD is agreed off on every communicator where it is off here
  // (coll/team_memory.cc): no lookup of the communicator's state then.
  const bool engine_forms = config().progress_thread;
  if (engine_forms && form.form == Form::Nonblocking && form.request) {
    CommState *cs = nullptr;
    if (!ok(comm_state(comm, &cs)) || (cs && cs->inter)) cs = nullptr;
    std::shared_ptr<EngineOp> eop;
    std::string why;
    const Status st = team_async_call(cs, coll, bufs, prepare, &eop, &why);
    if (!ok(st)) {
      stats.record(line, Path::Error, 0);
      return raise_error(comm, st, func, why.c_str());
    }
    if (eop) {
      // Queued: the request can only fail to appear if the MPI refuses a generalized one,
      // and then the op still runs (its peers run it too): it is waited for here.
      const int rc = engine_request(form.request);
      std::unique_ptr<RequestOp> op(new RequestOp);
      op->comm = comm;
      op->coll = line;
      op->path = Path::Engine;
      op->bytes = bytes();
      op->active = true;
      op->engine = eop;
      if (rc != MPI_SUCCESS) {
        wait_until([&] { return eop->done.load(std::memory_order_acquire); });
        eop->leave(eop->run_status);
        stats.record(line, Path::Error, 0);
        return rc;
      }
      stats.record(line, Path::Engine, op->bytes);
      track_request(*form.request, std::move(op));
      errno = app_errno;
      GCOLL_TRACE("%s: engine, on the progress thread", func);
      return MPI_SUCCESS;
    }
  }
  // A persistent call: its path is decided at the _init, for every start, by every rank
  // alike whatever its own GCOLL_PROGRESS_THREAD (the setting is agreed, here at the
  // communicator's first call if this is it; team_call.h: team_persistent_init, collective
  // as MPI-4.0 makes the _init). Where the engine runs every start, the application's
  // handle is gcoll's own and the MPI makes no request.
  if (persistent && form.request) {
    CommState *cs = nullptr;
    if (!ok(comm_state(comm, &cs)) || (cs && cs->inter)) cs = nullptr;
    if (cs && cs->gpu < 0) agree_once(cs);
    if (std::shared_ptr<EngineOp> tmpl = team_async_prepare(cs, coll, prepare, true)) {
      std::unique_ptr<RequestOp> op(new RequestOp);
      team_persistent_init(cs, tmpl.get(), bufs, &op->persistent_path);
      if (op->persistent_path.engine) {
        const int rc = engine_persistent_request(op.get(), form.request);
        if (rc != MPI_SUCCESS) {
          stats.record(line, Path::Error, 0);
          return raise_error(comm, Status::ErrInternal, func,
                             "gcoll could not make the persistent request (its handle on MPI_COMM_SELF)");
        }
        op->engine_template = std::move(tmpl);
        op->team = cs;
        op->bufs = bufs;
        op->comm = comm;
        op->coll = line;
        op->path = Path::Engine;
        op->bytes = bytes();
        op->persistent = true;
        track_request(*form.request, std::move(op));
        errno = app_errno;
        GCOLL_TRACE("%s: every start through the engine, on the progress thread", func);
        return MPI_SUCCESS;
      }
    }
  }
  const void *ptrs[2] = {bufs.send, bufs.recv};
  const LocalMemory lm =
      (bufs.send || bufs.recv) && device_memory_possible() ? classify_local(ptrs, 2, -1) : LocalMemory{};
  std::unique_ptr<RequestOp> op;
  Path path = Path::Passthrough;
  int rc = MPI_SUCCESS;
  if (!lm.device) {
    errno = app_errno;
    rc = mpi();
  } else {
    path = Path::Staged;
    std::unique_ptr<Stager> st(new Stager(lm.ordinal, form.form));
    StagedBuffers sb;
    sb.send_device = lm.is_device[0];
    sb.recv_device = lm.is_device[1];
    sb.device = lm.ordinal;
    sb.stager = st.get();
    sb.form = &form;
    const StagedResult r = staged(sb);
    st->leave_call();
    if (!ok(r.status)) {
      stats.record(line, Path::Error, 0);
      return raise_error(comm, r.status, func, r.why.c_str());
    }
    rc = r.mpi_rc;
    if (rc == MPI_SUCCESS) {
      op.reset(new RequestOp);
      op->stager = std::move(st);
    }
    errno = app_errno;
  }
  if (rc != MPI_SUCCESS) {
    stats.record(line, Path::Error, 0);
    return rc;
  }
  const std::uint64_t b = bytes();
  // A nonblocking call the MPI completed at once (a communicator of one rank, a call with
  // nothing to move) may share its handle with every other such request (Open MPI
  // returns &ompi_request_empty for all of them): it is never kept under it; its results
  // go back now.
  if (op && !persistent && form.request && *form.request != MPI_REQUEST_NULL) {
    int done = 0;
    if (PMPI_Request_get_status(*form.request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
      if (!op->stager->finish()) {
        const StagedResult r = op->stager->result(MPI_SUCCESS);
        stats.record(line, Path::Error, 0);
        return raise_error(comm, r.status, func, r.why.c_str());
      }
      op.reset();
    }
  }
  // Persistent host calls are kept too: each start is counted.
  if (persistent && !op) op.reset(new RequestOp);
  if (op && form.request && *form.request != MPI_REQUEST_NULL) {
    op->comm = comm;
    op->coll = line;
    op->path = path;
    op->bytes = b;
    op->persistent = persistent;
    op->active = !persistent;
    track_request(*form.request, std::move(op));
  }
  if (!persistent) stats.record(line, path, b);
  GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(path));
  return rc;
}

// The MPI's name of a collective's form ("MPI_Iallreduce"), for messages.
const char *form_func_name(Coll line);
inline const char *func_of(Coll blocking, const CallForm &form) {
  return form_func_name(coll_form(blocking, form.form));
}

// The nonblocking and persistent forms' part of run_call(), out of line: the blocking
// call's short path to the MPI stays a short stretch of code (team_call.h).
template <class Prepare, class Mpi, class Staged, class Bytes>
[[gnu::noinline]] int run_async_call(Coll coll, const CallForm &form, MPI_Comm comm, Buffers bufs, Prepare &prepare,
                                     Mpi &mpi, Staged &staged, Bytes &bytes) {
  const Coll line = coll_form(coll, form.form);
  const char *name = form_func_name(line);
  return guarded(
      comm, name, [&] { return async_dispatch(coll, form, name, comm, bufs, prepare, mpi, staged, bytes); },
      [&] { process_stats().record(line, Path::Error, 0); });
}

// dispatch() (or, for the nonblocking and persistent forms, async_dispatch()) behind the
// exception boundary (errors.h): a C++ exception from gcoll's own code becomes
// MPI_ERR_NO_MEM / MPI_ERR_INTERN through the error handler, counted as an error, and
// never reaches the application. `func`: the blocking form's name (the others' are
// derived).
template <class Prepare, class Mpi, class Staged, class Bytes>
inline int run_call(Coll coll, const CallForm &form, const char *func, MPI_Comm comm, Buffers bufs,
                    Prepare &&prepare, Mpi &&mpi, Staged &&staged, Bytes &&bytes) {
  if (!form.blocking()) return run_async_call(coll, form, comm, bufs, prepare, mpi, staged, bytes);
  return guarded(
      comm, func, [&] { return dispatch(coll, func, comm, bufs, prepare, mpi, staged, bytes); },
      [&] { process_stats().record(coll, Path::Error, 0); });
}

}  // namespace gcoll
