// The path of one call, shared by every collective's argument file (pmpi/calls/<name>.cc):
// run() takes what the argument file knows about its call (how to fill the engine's
// arguments, the PMPI_* call, the staged call, the result size) and decides the path the
// same way on every rank before any byte moves (dispatch.h: decide), then runs it.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "coll/engine.h"
#include "coll/staged.h"
#include "cuda/device.h"
#include "cuda/runtime.h"
#include "pmpi/comm_state.h"
#include "pmpi/deviate.h"
#include "pmpi/dispatch.h"
#include "pmpi/errors.h"
#include "pmpi/memory.h"
#include "pmpi/mpi_types.h"
#include "pmpi/pack.h"
#include "pmpi/runtime.h"

namespace gcoll {

// Size in bytes of `count` elements, for stats (after the MPI accepted the datatype).
std::uint64_t payload(long long count, MPI_Datatype type);
// The same for a predefined datatype, its size remembered per thread.
std::uint64_t payload_predefined(long long count, MPI_Datatype type);

// Runs the engine for a call it supports. NotSupported (the same on every rank, before
// any byte moved) sends the call to the MPI (host buffers) or to the staged path (device).
Status run_engine(MPI_Comm comm, const CollArgs &a, int device, EngineRecord *rec);

// The buffers of a call that carry bytes (nullptr: none, or MPI_IN_PLACE), for the
// memory classification.
struct Buffers {
  const void *send = nullptr;
  const void *recv = nullptr;
};

// This rank's memory kinds in an engine call whose packed sides (pack.h) are host
// scratch: the engine's view, for fits_agreed and the deviator.
LocalMemory packed_memory(const LocalMemory &lm, bool packed_send, bool packed_recv, const Buffers &b);

bool valid_buffer(const void *p, long long count);
int comm_size(MPI_Comm comm);

// The one template method every collective goes through (the guard at the boundary):
//   1. reject what the MPI would crash on, through the error handler;
//   2. decide the path, the same on every rank, before any byte moves: `prepare` fills
//      the engine's arguments and says whether the engine supports the call (it never
//      supports invalid arguments: those go to the MPI, which reports them as it does);
//      the memory kinds of the buffers are classified (cached, cuda/device.h), and for
//      calls the engine supports, taken as the ranks last agreed (memory.h), so that
//      every rank takes the engine or none does;
//   3. run it; a rank whose own buffers differ from the agreed kind takes the engine
//      call on scratch of the agreed kind (deviate.h); an engine answer of NotSupported
//      (rank-uniform, before anything moved) falls back to the MPI (host buffers) or the
//      staged path (device buffers), each rank by its own buffers; any other engine
//      error goes to the error handler;
//   4. count the call.
// `mpi` runs the PMPI_* call, `staged` the staged path (given which buffers are device
// memory); `bytes(predefined)` gives the result size after success (`predefined`: the
// engine mapped the datatype, a predefined one).
template <class Prepare, class Mpi, class Staged, class Bytes>
inline int dispatch(Coll coll, const char *func, MPI_Comm comm, Buffers bufs, Prepare &&prepare, Mpi &&mpi,
             Staged &&staged, Bytes &&bytes) {
  Stats &stats = process_stats();
  if (comm == MPI_COMM_NULL) {  // Open MPI 4.1.4 segfaults on this in MPI_Allgather
    stats.record(coll, Path::Error, 0);
    return raise_error(comm, Status::ErrComm, func, "the communicator is MPI_COMM_NULL");
  }
  // The communicator's state (a thread-local memory makes this a few ns); its first call
  // agrees whether any of its ranks can hold device memory at all, and the settings that
  // must be equal on every rank.
  CommState *cs = nullptr;
  if (!ok(comm_state(comm, &cs))) cs = nullptr;  // an invalid communicator: the MPI reports it
  if (cs && cs->inter) cs = nullptr;              // the engine never takes intercommunicators
  if (cs && cs->gpu < 0) agree_once(cs);
  const bool host_engine = cs && cs->host_engine;
  // The common case, kept short: nobody here can pass device memory and host buffers go
  // to the MPI.
  if (!host_engine && (cs ? cs->gpu == 0 : !cuda::usable())) {
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
      return raise_error(comm, st, func, "the ranks could not agree on the memory kinds of the call");
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
        return raise_error(comm, st, func, packer.why().c_str());
      }
      mine = packed_memory(lm, packer.packed_send(), packer.packed_recv(), bufs);
    }
    if (fits_agreed(mine, cm, cs->device)) {
      st = run_engine(comm, args, lm.ordinal, &rec);
    } else {
      // A deviator: the same engine call, on scratch of the agreed kind.
      stats.count(Counter::Deviations);
      const int gpu = args.mem == MemKind::Device ? cs->device : mine.ordinal;
      Deviator dev(args.mem, gpu);
      st = dev.enter(&args, cs->rank, cs->size);
      if (!ok(st)) {
        stats.record(coll, Path::Error, 0);
        return raise_error(comm, st, func, dev.why().c_str());
      }
      st = run_engine(comm, args, gpu >= 0 ? gpu : cuda::runtime().current_device(), &rec);
      if (ok(st)) st = dev.leave();
      if (!ok(st) && st != Status::NotSupported && !dev.why().empty()) {
        stats.record(coll, Path::Error, 0);
        return raise_error(comm, st, func, dev.why().c_str());
      }
    }
    if (ok(st) && plan.any()) {
      st = packer.leave();
      if (!ok(st)) {
        stats.record(coll, Path::Error, 0);
        return raise_error(comm, st, func, packer.why().c_str());
      }
    }
    if (ok(st)) {
      stats.record(coll, Path::Engine, bytes(true));
      stats.record_engine(coll, rec);
      return MPI_SUCCESS;
    }
    if (st != Status::NotSupported) {
      stats.record(coll, Path::Error, 0);
      return raise_error(comm, st, func, "the collective failed");
    }
    // Every rank alike, before anything moved: each by its own buffers.
    path = lm.device ? Path::Staged : Path::Passthrough;
  }
  int rc = MPI_SUCCESS;
  if (path == Path::Staged) {
    const StagedResult r = staged(sb);
    if (!ok(r.status)) {
      stats.record(coll, Path::Error, 0);
      return raise_error(comm, r.status, func, r.why.c_str());
    }
    rc = r.mpi_rc;
  } else {
    rc = mpi();
  }
  if (rc != MPI_SUCCESS) {
    stats.record(coll, Path::Error, 0);
    return rc;
  }
  const std::uint64_t b = bytes(in.engine_supports);
  stats.record(coll, path, b);
  GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(path));
  return rc;
}

// dispatch() behind the exception boundary (errors.h): a C++ exception from gcoll's own
// code becomes MPI_ERR_NO_MEM / MPI_ERR_INTERN through the error handler, counted as an
// error, and never reaches the application.
template <class Prepare, class Mpi, class Staged, class Bytes>
inline int run_call(Coll coll, const char *func, MPI_Comm comm, Buffers bufs, Prepare &&prepare, Mpi &&mpi, Staged &&staged,
        Bytes &&bytes) {
  return guarded(
      comm, func, [&] { return dispatch(coll, func, comm, bufs, prepare, mpi, staged, bytes); },
      [&] { process_stats().record(coll, Path::Error, 0); });
}

}  // namespace gcoll
