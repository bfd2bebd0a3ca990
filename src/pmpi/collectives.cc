#include "pmpi/collectives.h"

#include <cstdint>

#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "coll/engine.h"
#include "cuda/device.h"
#include "pmpi/comm_state.h"
#include "pmpi/deviate.h"
#include "pmpi/dispatch.h"
#include "pmpi/errors.h"
#include "pmpi/memory.h"
#include "pmpi/mpi_types.h"
#include "pmpi/pack.h"
#include "pmpi/runtime.h"
#include "coll/staged.h"
#include "cuda/runtime.h"

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

// The size of a predefined datatype (one the engine maps: such handles are never freed),
// remembered per thread for the last one: PMPI_Type_size on every call costs a call and a
// store-to-load stall. Derived datatypes are always asked (their handles are reused).
struct LastTypeSize {  // trivial: zero TLS, no init function
  MPI_Datatype type;
  int size;
};
thread_local LastTypeSize t_type_size __attribute__((tls_model("initial-exec")));

std::uint64_t payload_predefined(int count, MPI_Datatype type) {
  if (count <= 0) return 0;
  LastTypeSize &l = t_type_size;
  if (l.type != type || type == MPI_Datatype()) {
    int size = 0;
    PMPI_Type_size(type, &size);
    l.type = type;
    l.size = size > 0 ? size : 0;
  }
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(l.size);
}

// Runs the engine for a call it supports. NotSupported (the same on every rank, before
// any byte moved) sends the call to the MPI (host buffers) or to the staged path (device).
Status run_engine(MPI_Comm comm, const CollArgs &a, int device, EngineRecord *rec) {
  CommState *cs = nullptr;
  Engine *e = nullptr;
  Status st = comm_state(comm, &cs);
  EngineSettings es;
  es.usable = cs->engine_settings;
  es.timeout_s = cs->timeout_s;
  if (ok(st)) st = cs->engine.get(cs->comm, cs->inter, cs->id, es, &e);
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

// This rank's memory kinds in an engine call whose packed sides (pack.h) are host
// scratch: the engine's view, for fits_agreed and the deviator.
LocalMemory packed_memory(const LocalMemory &lm, bool packed_send, bool packed_recv, const Buffers &b) {
  LocalMemory m = lm;
  m.host = false;
  m.device = false;
  const bool used[2] = {b.send != nullptr, b.recv != nullptr}, packed[2] = {packed_send, packed_recv};
  for (int i = 0; i < 2; ++i) {
    if (!used[i] && !packed[i]) continue;
    const bool dev = !packed[i] && lm.is_device[i];
    m.is_device[i] = dev;
    (dev ? m.device : m.host) = true;
  }
  return m;
}

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
int dispatch(Coll coll, const char *func, MPI_Comm comm, Buffers bufs, Prepare &&prepare, Mpi &&mpi,
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
  // Reductions: MPI requires the same count and datatype on every rank.
  const auto prepare = [&](CollArgs *a, PackPlan *) {
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
      [&] {
        // MPICH 4.0.2's PMPI_Allreduce crashes on a negative count (a memcpy of -4 bytes):
        // reported here, with the class Open MPI gives it.
        if (count < 0) return raise_error(comm, Status::ErrCount, "MPI_Allreduce", "negative count");
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
      },
      [&](StagedBuffers sb) { return staged_allreduce(sendbuf, recvbuf, count, datatype, op, comm, sb); },
      [&](bool predefined) { return predefined ? payload_predefined(count, datatype) : payload(count, datatype); });
}

int bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (!library_active()) return PMPI_Bcast(buffer, count, datatype, root, comm);
  // By type signature (pack.h): the engine moves count x type size bytes, the same on
  // every rank whatever its datatype; a rank whose layout is not one run packs.
  const auto prepare = [&](CollArgs *a, PackPlan *plan) {
    ByteLayout l;
    if (!byte_layout(count, datatype, &l) || !valid_buffer(buffer, count) || root < 0 || root >= comm_size(comm))
      return false;
    a->recvbuf = buffer;
    a->dtype = DType::Uint8;
    a->elem = 1;
    a->count = l.bytes;
    a->root = root;
    if (l.bytes) plan->recv = PackSide{buffer, count, datatype, l, false};
    return true;
  };
  Buffers bufs;
  if (count > 0) bufs.recv = buffer;
  return run(
      Coll::Bcast, "MPI_Bcast", comm, bufs, prepare, [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); },
      [&](StagedBuffers sb) { return staged_bcast(buffer, count, datatype, root, comm, sb); },
      [&](bool) {
        // (the engine takes derived datatypes too: only predefined sizes are remembered)
        DType d;
        return map_datatype(datatype, &d) ? payload_predefined(count, datatype) : payload(count, datatype);
      });
}

int allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active())
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  // By type signature (pack.h): every rank's block is recvcount x recvtype size bytes,
  // the same on every rank whatever its datatypes; a rank whose layouts are not one run
  // packs.
  const auto prepare = [&](CollArgs *a, PackPlan *plan) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    const int n = comm_size(comm);
    ByteLayout rl, block, sl;
    if (!byte_layout(recvcount, recvtype, &block) || !valid_buffer(recvbuf, recvcount) ||
        !byte_layout(static_cast<long long>(recvcount) * n, recvtype, &rl))
      return false;
    if (!in_place) {
      // The send signature must carry exactly one block.
      if (!byte_layout(sendcount, sendtype, &sl) || !valid_buffer(sendbuf, sendcount) || sl.bytes != block.bytes)
        return false;
    }
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = recvbuf;
    a->dtype = DType::Uint8;
    a->elem = 1;
    a->count = block.bytes;
    if (block.bytes) {
      if (!in_place) plan->send = PackSide{const_cast<void *>(sendbuf), sendcount, sendtype, sl, false};
      plan->recv = PackSide{recvbuf, recvcount, recvtype, rl, false};
    }
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
      [&](bool) {
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

int count_passthrough(Coll coll, int rc, unsigned long long bytes) {
  process_stats().record(coll, rc == MPI_SUCCESS ? Path::Passthrough : Path::Error,
                         rc == MPI_SUCCESS ? bytes : 0);
  return rc;
}

}  // namespace gcoll
