// The path of one call below the MPI's ABI (coll/team.h), generic over the collectives:
// classification, the memory-kind agreement, the path decision (decide.h), the engine,
// deviation (deviate.h), packing (pack.h) and staging (staged.h). A template, so that each
// collective's particulars (lambdas from its argument file, pmpi/calls/) inline into it.
#pragma once

#include <mpi.h>

#include <cerrno>
#include <cstdint>

#include "base/log.h"
#include "base/stats.h"
#include "coll/decide.h"
#include "coll/deviate.h"
#include "coll/engine.h"
#include "coll/pack.h"
#include "coll/staged.h"
#include "coll/team.h"
#include "coll/team_memory.h"

namespace gcoll {

// The buffers of a call that carry bytes (nullptr: none, or MPI_IN_PLACE), for the
// memory classification.
struct Buffers {
  const void *send = nullptr;
  const void *recv = nullptr;
};

// This rank's memory kinds in an engine call whose packed sides (pack.h) are host
// scratch: the engine's view, for fits_agreed and the deviator.
LocalMemory packed_memory(const LocalMemory &lm, bool packed_send, bool packed_recv, const Buffers &b);

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
// memory); `bytes(predefined)` gives the result size after success (`predefined`: the
// engine mapped the datatype, a predefined one); `raise_error(status, why)` reports an
// error through the communicator's error handler and returns what the call returns. `cs`:
// the communicator's team, nullptr for a communicator the engine never serves (an
// intercommunicator, or one whose state cannot be had: the MPI reports what is wrong).
template <class Prepare, class Mpi, class Staged, class Bytes, class Fail>
inline int team_call(Team *cs, Coll coll, const char *func, Buffers bufs, Prepare &&prepare, Mpi &&mpi,
                     Staged &&staged, Bytes &&bytes, Fail &&raise_error) {
  Stats &stats = process_stats();
  const int app_errno = errno;
  // The team's first call agrees whether any of its ranks can hold device memory at all,
  // and the settings that must be equal on every rank.
  if (cs && cs->gpu < 0) agree_once(cs);
  if (cs && cs->without_gcoll) {
    stats.record(coll, Path::Error, 0);
    return raise_error(Status::ErrMismatch, kWithoutGcoll);
  }
  const bool host_engine = cs && cs->host_engine;
  // The common case, kept short: nobody here can pass device memory and host buffers go
  // to the MPI.
  if (!host_engine && (cs ? cs->gpu == 0 : !device_memory_possible())) {
    errno = app_errno;
    const int rc = mpi();
    if (rc != MPI_SUCCESS) {
      stats.record(coll, Path::Error, 0);
      return rc;
    }
    const std::uint64_t b = bytes(false);
    stats.record(coll, Path::Passthrough, b);
    GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(Path::Passthrough));
    return rc;
  }
  CollArgs args;
  args.coll = coll;
  PackPlan plan;  // byte-moving collectives: this rank's layouts (pack.h)
  DispatchInput in;
  in.host_buffers_engine = host_engine;
  in.engine_supports = cs && prepare(&args, &plan);
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
  if (path == Path::Engine) {
    EngineRecord rec;
    Status st;
    // A layout that is not the signature's bytes in one run: packed host scratch in the
    // engine call (pack.h), which the engine sees as host memory.
    Packer packer;
    LocalMemory mine = lm;
    if (plan.any()) {
      plan.send.device = lm.is_device[0];
      plan.recv.device = lm.is_device[1];
      st = packer.enter(&args, plan, cs->rank, cs->size, lm.ordinal);
      if (!ok(st)) {
        stats.record(coll, Path::Error, 0);
        return raise_error(st, packer.why().c_str());
      }
      mine = packed_memory(lm, packer.packed_send(), packer.packed_recv(), bufs);
    }
    if (fits_agreed(mine, cm, cs->device)) {
      st = cs->run_engine(args, lm.ordinal, &rec);
    } else {
      // A deviator: the same engine call, on scratch of the agreed kind.
      stats.count(Counter::Deviations);
      const int gpu = args.mem == MemKind::Device ? cs->device : mine.ordinal;
      Deviator dev(args.mem, gpu);
      st = dev.enter(&args, cs->rank, cs->size);
      if (!ok(st)) {
        stats.record(coll, Path::Error, 0);
        return raise_error(st, dev.why().c_str());
      }
      st = cs->run_engine(args, dev.gpu(), &rec);
      if (ok(st)) st = dev.leave();
      if (!ok(st) && st != Status::NotSupported && !dev.why().empty()) {
        stats.record(coll, Path::Error, 0);
        return raise_error(st, dev.why().c_str());
      }
    }
    if (ok(st) && plan.any()) {
      st = packer.leave();
      if (!ok(st)) {
        stats.record(coll, Path::Error, 0);
        return raise_error(st, packer.why().c_str());
      }
    }
    if (ok(st)) {
      stats.record(coll, Path::Engine, bytes(true));
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
    errno = app_errno;
    rc = mpi();
  }
  if (rc != MPI_SUCCESS) {
    stats.record(coll, Path::Error, 0);
    return rc;
  }
  const std::uint64_t b = bytes(in.engine_supports);
  stats.record(coll, path, b);
  GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(path));
  if (path == Path::Staged) errno = app_errno;
  return rc;
}

}  // namespace gcoll
