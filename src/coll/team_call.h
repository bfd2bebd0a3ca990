// The path of one call below the MPI's ABI (coll/team.h), generic over the collectives:
// classification, the memory-kind agreement, the path decision (decide.h), the engine,
// deviation (deviate.h), packing (pack.h) and staging (staged.h). A template, so that each
// collective's particulars (lambdas from its argument file, pmpi/calls/) inline into it.
#pragma once

#include <mpi.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/wait.h"
#include "coll/decide.h"
#include "coll/deviate.h"
#include "coll/engine.h"
#include "coll/engine_op.h"
#include "coll/pack.h"
#include "coll/staged.h"
#include "coll/team.h"
#include "coll/team_memory.h"
#include "coll/tune.h"

namespace gcoll {


// The prepare() of the collectives without an engine algorithm: the engine never takes
// the call (host buffers go to the MPI, device ones are staged, each rank by its own
// buffers). A type of its own, so that team_call() sees at compile time that no rank's
// engine can take the call.
struct EngineDeclines {
  bool operator()(CollArgs *, PackPlan *) const { return false; }
};
inline constexpr EngineDeclines engine_declines{};

// The MPI's call on host buffers, decided before anything is classified or agreed.
template <class Mpi, class Bytes>
inline int team_to_mpi(Coll coll, const char *func, int app_errno, Mpi &mpi, Bytes &bytes) {
  int rc;
  {
    MpiSliceScope slice;  // shared cores only (base/wait.h)
    errno = app_errno;
    rc = mpi();
  }
  if (rc != MPI_SUCCESS) {
    process_stats().record(coll, Path::Error, 0);
    return rc;
  }
  const std::uint64_t b = bytes();
  process_stats().record(coll, Path::Passthrough, b);
  GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(Path::Passthrough));
  return rc;
}

// team_call() past its first checks: the host engine is on or some rank may hold device
// memory. Out of line, so that the calls that go to the MPI at once run a short stretch of
// code (on a rank that shares its core, every cache line of it is a miss).
template <class Prepare, class Mpi, class Staged, class Bytes, class Fail>
[[gnu::noinline]] int team_call_past_mpi(Team *cs, Coll coll, const char *func, Buffers bufs, int app_errno,
                                         Prepare &prepare, Mpi &mpi, Staged &staged, Bytes &bytes,
                                         Fail &raise_error);

// The path of one call, the same for every collective (pmpi's argument files give their
// call's particulars; pmpi/call.h wraps this in the guard, after the communicator checks):
//   1. (pmpi) reject what the MPI would crash on, through the error handler;
//   2. decide the path, the same on every rank, before any byte moves: `prepare` fills
//      the engine's arguments and says whether the engine supports the call (it never
//      supports invalid arguments: those go to the MPI, which reports them as it does);
//      the memory kinds of the buffers are classified (cached, cuda/device.h), and for
//      calls the engine supports, taken as the ranks last agreed (team_memory.h), so that
//      every rank takes the engine or none does;
//   3. run it; a rank whose own buffers differ from the agreed kind takes the engine
//      call on scratch of the agreed kind (deviate.h); an engine answer of NotSupported
//      (rank-uniform, before anything moved) falls back to the MPI (host buffers) or the
//      staged path (device buffers), each rank by its own buffers; any other engine
//      error goes to the error handler;
//   4. count the call.
// errno: a call gcoll runs itself (engine, staged) leaves it as the application had it; a
// call handed to the MPI reaches the MPI with the application's errno, and returns with
// whatever the MPI leaves (as without gcoll).
// `mpi` runs the PMPI_* call, `staged` the staged path (given which buffers are device
// memory); `bytes()` gives the result size after success (stats); `raise_error(status,
// why)` reports an error through the communicator's error handler and returns what the
// call returns. `cs`:
// the communicator's team, nullptr for a communicator the engine never serves (an
// intercommunicator, or one whose state cannot be had: the MPI reports what is wrong).
template <class Prepare, class Mpi, class Staged, class Bytes, class Fail>
inline int team_call(Team *cs, Coll coll, const char *func, Buffers bufs, Prepare &&prepare, Mpi &&mpi,
                     Staged &&staged, Bytes &&bytes, Fail &&raise_error) {
  const int app_errno = errno;
  // The team's first call agrees whether any of its ranks can hold device memory at all,
  // and the settings that must be equal on every rank.
  if (__builtin_expect(cs && cs->gpu < 0, 0)) agree_once(cs);
  if (__builtin_expect(cs && !cs->async_wants.empty() && !cs->without_gcoll, 0)) cs->settle_async_wants();
  if (__builtin_expect(cs && cs->without_gcoll, 0)) {
    process_stats().record(coll, Path::Error, 0);
    return raise_error(Status::ErrMismatch, kWithoutGcoll);
  }
  // The common case, kept short: nobody here can pass device memory and host buffers go
  // to the MPI (with the host engine on too, for a collective it has no algorithm for or
  // whose every size the host crossovers give to the MPI).
  constexpr bool no_engine = std::is_same_v<std::decay_t<Prepare>, EngineDeclines>;
  if (cs ? (no_engine || !cs->host_engine_may(coll)) && cs->gpu == 0 : !device_memory_possible())
    return team_to_mpi(coll, func, app_errno, mpi, bytes);
  // With the host engine on: a call of the bytes the host crossovers gave to the MPI last
  // time (Team::mpi_bytes), to the MPI as that call went, without the decision again.
  if constexpr (!no_engine) {
    if (cs && cs->gpu == 0 && !cs->compress_pending && static_cast<int>(coll) < kBlockingColls) {
      // The bytes from sizes the thread knows, without asking the MPI (a datatype it has
      // not seen: the full decision below).
      detail::tl_bytes_probe = 1;
      const std::uint64_t b = bytes();
      const bool known = detail::tl_bytes_probe == 1;
      detail::tl_bytes_probe = 0;
      if (known && cs->mpi_bytes[static_cast<int>(coll)] == b + 1) {
        const auto probed = [b] { return b; };
        return team_to_mpi(coll, func, app_errno, mpi, probed);
      }
    }
  }
  return team_call_past_mpi(cs, coll, func, bufs, app_errno, prepare, mpi, staged, bytes, raise_error);
}

template <class Prepare, class Mpi, class Staged, class Bytes, class Fail>
int team_call_past_mpi(Team *cs, Coll coll, const char *func, Buffers bufs, int app_errno, Prepare &prepare,
                       Mpi &mpi, Staged &staged, Bytes &bytes, Fail &raise_error) {
  Stats &stats = process_stats();
  const bool host_engine = cs && cs->host_engine;
  const auto to_mpi = [&] { return team_to_mpi(coll, func, app_errno, mpi, bytes); };
  // The info key gcoll_allreduce_compress was set since the last blocking call (collective
  // calls: pending alike on every rank): agreed now, before the call (Team::agree_compress).
  // Every rank gets here alike: past the fast path, the host engine is on or some rank may
  // hold device memory (both agreed), so the engine may take this call.
  if (cs && cs->compress_pending) cs->agree_compress();
  CollArgs args;
  args.coll = coll;
  PackPlan plan;  // byte-moving collectives: this rank's layouts (pack.h)
  DispatchInput in;
  in.host_buffers_engine = host_engine;
  in.engine_supports = cs && prepare(&args, &plan);
  // No rank can hold device memory and the engine has no algorithm for the call (barrier,
  // gather, ... or arguments it does not take): the MPI's call, as decide() would pick after
  // classifying host buffers, without the classification (OMB's barrier after every call).
  if (!in.engine_supports && cs && cs->gpu == 0) return to_mpi();
  if (in.engine_supports && coll == Coll::Allreduce) args.compress = cs->allreduce_compress(args.dtype, args.op);
  // No rank of the communicator can hold device memory (agreed at its first call), so every
  // buffer is host memory; where the host crossovers give this size to the MPI (tune.h:
  // host_declines: bytes by type signature and agreed settings, the same on every rank),
  // the MPI's call now, without classification, memory agreement or the engine's selection
  // (each costs more than the MPI's own small call).
  if (in.engine_supports && host_engine && cs->gpu == 0 && host_declines(args)) {
    // Remembered for the next call of the same bytes (Team::mpi_bytes), unless an
    // allreduce of these bytes might be compressed (host_declines() says no to those).
    if (static_cast<int>(coll) < kBlockingColls && (coll != Coll::Allreduce || !cs->compresses()))
      cs->mpi_bytes[static_cast<int>(coll)] = bytes() + 1;
    return to_mpi();
  }
  // Memory kinds: mine, then (for calls the engine could take) the agreed ones.
  const void *ptrs[2] = {bufs.send, bufs.recv};
  const LocalMemory lm = cs ? classify_call(&cs->memo, ptrs, cs->device) : classify_local(ptrs, 2, -1);
  StagedBuffers sb;
  sb.send_device = lm.is_device[0];
  sb.recv_device = lm.is_device[1];
  sb.device = lm.ordinal;
  in.local_device = lm.device;
  in.mem = local_kind(lm);
  CallMemory cm;
  if (in.engine_supports) {
    const Status st = agree_memory(cs, coll, args.bytes(), lm, &cm);
    if (!ok(st)) {
      stats.record(coll, Path::Error, 0);
      return raise_error(st, "the ranks could not agree on the memory kinds of the call");
    }
    in.mem = cm.mem;
    in.device_engine = cm.device_engine;
    args.mem = cm.mem == CallMem::Device ? MemKind::Device : MemKind::Host;
    args.zero_copy = cm.zero_copy;
  }
  Path path = decide(in);
  // Host calls the engine declines (@mpi below a host crossover, rank-uniform: bytes by
  // type signature, the agreed topology and settings) go to the MPI before anything is
  // packed or deviated, once the engine is set up (at the same call on every rank).
  if (path == Path::Engine && args.mem == MemKind::Host) {
    const Engine *e = cs->engine.peek();
    if (e && e->declines_host(args)) path = lm.device ? Path::Staged : Path::Passthrough;
    // Large calls on a loaded machine (GCOLL_HOST_BUSY_MPI): the MPI's, where the ranks
    // agreed at the last agreement that some rank's machine is loaded.
    else if (e && host_busy_candidate(user_tune_rules(), args, config().host_busy_mpi, host_tune_off()) &&
             cs->busy_says_mpi())
      path = lm.device ? Path::Staged : Path::Passthrough;
  }
  if (path == Path::Engine) {
    EngineOp op;
    op.args = args;
    op.plan = plan;
    Status st = op.enter(cs, lm, cm, bufs);
    if (!ok(st)) {
      stats.record(coll, Path::Error, 0);
      return raise_error(st, op.why().c_str());
    }
    st = op.leave(op.run(cs, true));
    const EngineRecord &rec = op.rec;
    if (!ok(st) && st != Status::NotSupported && !op.why().empty()) {
      stats.record(coll, Path::Error, 0);
      return raise_error(st, op.why().c_str());
    }
    if (ok(st)) {
      stats.record(coll, Path::Engine, bytes());
      stats.record_engine(coll, rec);
      errno = app_errno;
      return MPI_SUCCESS;
    }
    if (st != Status::NotSupported) {
      stats.record(coll, Path::Error, 0);
      return raise_error(st, "the collective failed");
    }
    // Every rank alike, before anything moved: each by its own buffers.
    path = lm.device ? Path::Staged : Path::Passthrough;
  }
  int rc = MPI_SUCCESS;
  if (path == Path::Staged) {
    Stager stager(sb.device);
    const CallForm blocking;
    sb.stager = &stager;
    sb.form = &blocking;
    const StagedResult r = staged(sb);
    if (!ok(r.status)) {
      stats.record(coll, Path::Error, 0);
      return raise_error(r.status, r.why.c_str());
    }
    rc = r.mpi_rc;
  } else {
    MpiSliceScope slice;
    errno = app_errno;
    rc = mpi();
  }
  if (rc != MPI_SUCCESS) {
    stats.record(coll, Path::Error, 0);
    return rc;
  }
  const std::uint64_t b = bytes();
  stats.record(coll, path, b);
  GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(path));
  if (path == Path::Staged) errno = app_errno;
  return rc;
}

// The engine's part of a nonblocking call (pmpi/call.h: async_dispatch). A nonblocking
// call may not wait for its peers, so nothing is agreed here: the engine takes it only
// where everything its path depends on was agreed before, by calls every rank made in the
// same order on this communicator, so that every rank decides alike:
//   - the communicator's settings (its first call), GCOLL_PROGRESS_THREAD=on everywhere;
//   - the engine set up, with the memory space the call needs, and the call's topology one
//     node, or several where every rank's MPI granted MPI_THREAD_MULTIPLE (Team::thread_mpi;
//     Engine::takes_async: only then may the progress thread call the MPI);
//   - the memory kinds: host where no rank can hold device memory, this rank's own under
//     GCOLL_UNIFORM_MEMORY, else the answer of the last agreement of the same collective
//     and size class (agree_memory's table; read, not advanced);
//   - an algorithm other than @staged for the arguments (rank-uniform).
// What is missing is noted (Team::async_wants) and made by the next blocking call on the
// communicator, so that the next nonblocking calls of the kind take the engine. Returns
// Ok with *out set: the op, entered on this rank's buffers (pack/deviate copies in done)
// and queued; Ok with *out empty: not the engine's (the MPI's call of the form, or
// staged); an error: this rank's own failure to enter (*why), before anything was queued.
// The engine's arguments of a nonblocking or persistent call (`prepare`: the argument
// file's), kept for its start(s): nullptr where the engine can never take it on this
// communicator (rank-uniform: the arguments MPI requires to match, the settings).
// `agreed`: only once the communicator's settings are agreed (a persistent call, whose
// _init agrees them first: where no rank can hold device memory and host buffers go to
// the MPI, its handle stays the MPI's own).
template <class Prepare>
inline std::shared_ptr<EngineOp> team_async_prepare(Team *cs, Coll coll, Prepare &&prepare, bool agreed = false) {
  if (!cs || cs->without_gcoll || (cs->gpu >= 0 && !cs->progress_thread)) return nullptr;
  if (agreed && cs->gpu < 0) return nullptr;
  if (!cs->host_engine && cs->gpu == 0) return nullptr;  // host buffers go to the MPI
  std::shared_ptr<EngineOp> op = std::make_shared<EngineOp>();
  op->args.coll = coll;
  if (!prepare(&op->args, &op->plan)) return nullptr;
  // The format agreed so far (a key set since is agreed by the next blocking call: every rank alike).
  if (coll == Coll::Allreduce) op->args.compress = cs->allreduce_compress(op->args.dtype, op->args.op);
  op->keep_arrays(cs->size);
  return op;
}

// A nonblocking call's start, by the rule above: Ok with *out set: entered on this rank's
// buffers and queued; Ok with *out empty: not the engine's this time; an error: this
// rank's own failure to enter (*why), before anything was queued.
Status team_async_start(Team *cs, std::shared_ptr<EngineOp> op, Buffers bufs, std::shared_ptr<EngineOp> *out,
                        std::string *why);

// A persistent call's path, decided once at its _init for all its starts.
struct PersistentPath {
  bool engine = false;  // every start through the engine (progress thread); else the MPI's request
  LocalMemory lm;       // this rank's buffers' kinds
  CallMemory cm;        // the kinds the ranks agreed at the _init
};

// At a persistent call's _init (`tmpl`: team_async_prepare's, on a communicator whose
// settings are agreed). Collective: MPI-4.0 makes the _init of a persistent collective
// blocking and nonlocal, ordered with the communicator's other collectives, so what its
// starts need is agreed here, for this call's own buffers: the memory kinds (one small
// exchange), the engine's setup and, for device memory, its device space. Then the path
// of every start is known (`*out`), the same on every rank: each MPI_Start queues the op
// (team_persistent_start) or starts the MPI's persistent request, with nothing more to
// decide, agree or set up (a persistent call on a communicator that never made a
// blocking call takes the engine from its first start).
void team_persistent_init(Team *cs, EngineOp *tmpl, Buffers bufs, PersistentPath *out);

// One start of a persistent call `path` says the engine takes: a copy of `tmpl` entered
// on this rank's buffers and queued (*out). Ok with *out empty: the MPI's (path.engine
// false). An error: this rank's own failure to enter (*why), before anything was queued.
Status team_persistent_start(Team *cs, const EngineOp &tmpl, const PersistentPath &path, Buffers bufs,
                             std::shared_ptr<EngineOp> *out, std::string *why);

template <class Prepare>
inline Status team_async_call(Team *cs, Coll coll, Buffers bufs, Prepare &&prepare, std::shared_ptr<EngineOp> *out,
                              std::string *why) {
  out->reset();
  std::shared_ptr<EngineOp> op = team_async_prepare(cs, coll, prepare);
  return op ? team_async_start(cs, std::move(op), bufs, out, why) : Status::Ok;
}

}  // namespace gcoll
