#include "pmpi/collectives.h"

#include <cstdint>

#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "coll/engine.h"
#include "cuda/device.h"
#include "pmpi/comm_state.h"
#include "pmpi/dispatch.h"
#include "pmpi/errors.h"
#include "pmpi/memory.h"
#include "pmpi/mpi_types.h"
#include "pmpi/runtime.h"
#include "coll/staged.h"

namespace gcoll {

namespace {

// Size in bytes of `count` elements, for stats. Only called after the MPI accepted the
// datatype (a bad one must reach the error handler through the collective, not here).
std::uint64_t payload(int count, MPI_Datatype type) {
  if (count <= 0) return 0;
  int size = 0;
  PMPI_Type_size(type, &size);
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size > 0 ? size : 0);
}

// Runs the engine for a call it supports. NotSupported (the same on every rank, before
// any byte moved) sends the call to the MPI (host buffers) or to the staged path (device).
Status run_engine(MPI_Comm comm, const CollArgs &a, int device, EngineRecord *rec) {
  CommState *cs = nullptr;
  Engine *e = nullptr;
  Status st = comm_state(comm, &cs);
  if (ok(st)) st = cs->engine.get(cs->comm, cs->inter, cs->id, &e);
  if (!ok(st)) return st;
  st = e->run(a, device, rec);
  // The GPU of the communicator's device engine, once it has one: buffers elsewhere are
  // then not the engine's (memory.cc).
  if (e->device >= 0) cs->device = e->device;
  if (st != Status::NotSupported) cs->seq.fetch_add(1, std::memory_order_relaxed);
  return st;
}

// The buffers of a call that carry bytes (nullptr: none, or MPI_IN_PLACE), for the
// memory classification.
struct Buffers {
  const void *send = nullptr;
  const void *recv = nullptr;
};

// The one template method every collective goes through (the guard at the boundary):
//   1. reject what the MPI would crash on, through the error handler;
//   2. decide the path, the same on every rank, before any byte moves: `prepare` fills
//      the engine's arguments and says whether the engine supports the call (it never
//      supports invalid arguments: those go to the MPI, which reports them as it does);
//      the memory kinds of the buffers are classified, and for calls the engine
//      supports, agreed across the ranks (memory.h);
//   3. run it; an engine answer of NotSupported (rank-uniform, before anything moved)
//      falls back to the MPI (host) or the staged path (device); any other engine error
//      goes to the error handler;
//   4. count the call.
// `mpi` runs the PMPI_* call, `staged` the staged path (given which buffers are device
// memory); `bytes` gives the result size after success.
template <class Prepare, class Mpi, class Staged, class Bytes>
int dispatch(Coll coll, const char *func, MPI_Comm comm, Buffers bufs, Prepare &&prepare, Mpi &&mpi,
             Staged &&staged, Bytes &&bytes) {
  Stats &stats = process_stats();
  if (comm == MPI_COMM_NULL) {  // Open MPI 4.1.4 segfaults on this in MPI_Allgather
    stats.record(coll, Path::Error, 0);
    return raise_error(comm, Status::ErrComm, func, "the communicator is MPI_COMM_NULL");
  }
  const bool host_engine = host_buffers_engine();
  // The communicator's state (a thread-local memory makes this a few ns); its first call
  // agrees whether any of its ranks can hold device memory at all.
  CommState *cs = nullptr;
  if (!ok(comm_state(comm, &cs))) cs = nullptr;  // an invalid communicator: the MPI reports it
  if (cs && cs->inter) cs = nullptr;              // the engine never takes intercommunicators
  if (cs && cs->gpu < 0) agree_once(cs);
  // The common case, kept short: nobody here can pass device memory and host buffers go
  // to the MPI.
  if (!host_engine && (cs ? cs->gpu == 0 : !cuda::usable())) {
    const int rc = mpi();
    if (rc != MPI_SUCCESS) {
      stats.record(coll, Path::Error, 0);
      return rc;
    }
    const std::uint64_t b = bytes();
    stats.record(coll, Path::Passthrough, b);
    GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(Path::Passthrough));
    return rc;
  }
  CollArgs args;
  args.coll = coll;
  DispatchInput in;
  in.host_buffers_engine = host_engine;
  in.engine_supports = cs && prepare(&args);
  // Memory kinds: mine, then (for calls the engine could take) everyone's.
  const void *ptrs[2] = {bufs.send, bufs.recv};
  const LocalMemory lm = classify_local(ptrs, 2, cs ? cs->device : -1);
  StagedBuffers sb;
  sb.send_device = lm.is_device[0];
  sb.recv_device = lm.is_device[1];
  sb.device = lm.ordinal;
  in.local_device = lm.device;
  in.mem = local_kind(lm);
  if (in.engine_supports) {
    CallMemory cm;
    const Status st = agree_memory(cs, lm, &cm);
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
    const Status st = run_engine(comm, args, lm.ordinal, &rec);
    if (ok(st)) {
      stats.record(coll, Path::Engine, bytes());
      stats.record_engine(coll, rec);
      return MPI_SUCCESS;
    }
    if (st != Status::NotSupported) {
      stats.record(coll, Path::Error, 0);
      return raise_error(comm, st, func, "the collective failed");
    }
    path = in.mem == CallMem::Device ? Path::Staged : Path::Passthrough;
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
  const std::uint64_t b = bytes();
  stats.record(coll, path, b);
  GCOLL_TRACE("%s: %llu bytes, %s", func, static_cast<unsigned long long>(b), path_name(path));
  return rc;
}

// dispatch() behind the exception boundary (errors.h): a C++ exception from gcoll's own
// code becomes MPI_ERR_NO_MEM / MPI_ERR_INTERN through the error handler, counted as an
// error, and never reaches the application.
template <class Prepare, class Mpi, class Staged, class Bytes>
int run(Coll coll, const char *func, MPI_Comm comm, Buffers bufs, Prepare &&prepare, Mpi &&mpi, Staged &&staged,
        Bytes &&bytes) {
  return guarded(
      comm, func, [&] { return dispatch(coll, func, comm, bufs, prepare, mpi, staged, bytes); },
      [&] { process_stats().record(coll, Path::Error, 0); });
}

bool valid_buffer(const void *p, int count) { return count == 0 || (p != nullptr && p != MPI_IN_PLACE); }

int comm_size(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

}  // namespace

int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (!library_active()) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  const auto prepare = [&](CollArgs *a) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    if (count < 0 || !map_reduction(datatype, op, &a->dtype, &a->op) || !valid_buffer(recvbuf, count) ||
        (!in_place && !valid_buffer(sendbuf, count)) || (sendbuf == recvbuf && count > 1))
      return false;
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = recvbuf;
    a->count = static_cast<std::size_t>(count);
    a->elem = dtype_size(a->dtype);
    return true;
  };
  Buffers bufs;
  if (count > 0) {
    bufs.send = sendbuf == MPI_IN_PLACE ? nullptr : sendbuf;
    bufs.recv = recvbuf;
  }
  return run(
      Coll::Allreduce, "MPI_Allreduce", comm, bufs, prepare,
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](StagedBuffers sb) { return staged_allreduce(sendbuf, recvbuf, count, datatype, op, comm, sb); },
      [&] { return payload(count, datatype); });
}

int bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (!library_active()) return PMPI_Bcast(buffer, count, datatype, root, comm);
  const auto prepare = [&](CollArgs *a) {
    if (count < 0 || !map_datatype(datatype, &a->dtype) || !valid_buffer(buffer, count) || root < 0 ||
        root >= comm_size(comm))
      return false;
    a->recvbuf = buffer;
    a->count = static_cast<std::size_t>(count);
    a->root = root;
    a->elem = dtype_size(a->dtype);
    return true;
  };
  Buffers bufs;
  if (count > 0) bufs.recv = buffer;
  return run(
      Coll::Bcast, "MPI_Bcast", comm, bufs, prepare, [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); },
      [&](StagedBuffers sb) { return staged_bcast(buffer, count, datatype, root, comm, sb); },
      [&] { return payload(count, datatype); });
}

int allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active())
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const auto prepare = [&](CollArgs *a) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    DType st;
    if (recvcount < 0 || !map_datatype(recvtype, &a->dtype) || !valid_buffer(recvbuf, recvcount)) return false;
    a->elem = dtype_size(a->dtype);
    if (!in_place) {
      // The engine moves bytes: the send signature must carry exactly one block.
      if (sendcount < 0 || !map_datatype(sendtype, &st) || !valid_buffer(sendbuf, sendcount) ||
          static_cast<std::size_t>(sendcount) * dtype_size(st) != static_cast<std::size_t>(recvcount) * a->elem)
        return false;
    }
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = recvbuf;
    a->count = static_cast<std::size_t>(recvcount);
    return true;
  };
  Buffers bufs;
  if (sendbuf != MPI_IN_PLACE && sendcount > 0) bufs.send = sendbuf;
  if (recvcount > 0) bufs.recv = recvbuf;
  return run(
      Coll::Allgather, "MPI_Allgather", comm, bufs, prepare,
      [&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
      [&](StagedBuffers sb) {
        return staged_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, sb);
      },
      [&] {
        int inter = 0, n = 0;
        PMPI_Comm_test_inter(comm, &inter);
        if (inter) PMPI_Comm_remote_size(comm, &n);
        else PMPI_Comm_size(comm, &n);
        return payload(recvcount, recvtype) * static_cast<std::uint64_t>(n);
      });
}

int finalize() {
  no_throw("MPI_Finalize (stats)", [] { before_finalize(); });
  return PMPI_Finalize();
}

}  // namespace gcoll
