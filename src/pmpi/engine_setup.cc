#include "pmpi/engine_setup.h"

#include <functional>
#include <new>
#include <mutex>
#include <string>

#include "base/config.h"
#include "base/log.h"
#include "coll/cuda_space.h"
#include "coll/host_space.h"
#include "pmpi/errors.h"
#include "ucx/transport.h"

namespace gcoll {

const std::vector<TuneRule> &user_tune_rules() {
  static const std::vector<TuneRule> rules = [] {
    std::vector<TuneRule> r;
    std::string error;
    const std::string &text = config().tune;
    if (!text.empty() && !parse_tune(text, &r, &error)) {
      GCOLL_WARN("GCOLL_TUNE ignored: %s", error.c_str());
      r.clear();
    }
    return r;
  }();
  return rules;
}

namespace {

// Settings that must be equal on every rank for the ranks to run the same schedule.
long long schedule_fingerprint() {
  const Config &c = config();
  const std::string s = std::to_string(c.ranks_per_node) + "|" + c.tune + "|" + std::to_string(c.chunk_size) + "|" +
                        (c.host_engine ? "engine" : "mpi");
  return static_cast<long long>(std::hash<std::string>{}(s) & 0x7fffffffffffffffULL);
}

Status build_engine(MPI_Comm comm, std::unique_ptr<Engine> *out) {
  auto e = std::make_unique<Engine>();
  const Config &c = config();
  Status st = build_topology(comm, c.ranks_per_node, &e->topo);
  if (!ok(st)) return st;
  e->timeout_s = c.timeout_s;
  HostSpaceOptions opt;
  opt.bank_bytes = c.chunk_size;
  opt.timeout_s = c.timeout_s;
  if (e->topo.num_nodes > 1) opt.progress = [] { ucx::progress(); };
  st = create_host_space(e->topo.node_comm, opt, &e->host_space);
  if (!ok(st)) return st;
  e->space = e->host_space.get();
  e->chunk_bytes = e->space->capacity();
  e->scratch.resize(4 * e->chunk_bytes);  // two slices in flight + their receive buffers
  if (e->topo.num_nodes > 1 && e->topo.rail_comm != MPI_COMM_NULL) {
    ucx::Options uo;
    uo.flush_owed_on_wait = false;  // every engine call ends with a progress barrier instead
    ucx::init(uo);                  // the first init's options apply; failures surface in create()
    st = ucx::Group::create(e->topo.rail_comm, &e->rail);
    if (!ok(st)) return st;
  }
  *out = std::move(e);
  return Status::Ok;
}

// Local allocations of a collective setup fail here, as a status, so that the rank still
// takes part in the agreement that follows (an exception would leave its peers waiting).
template <class F>
Status without_exceptions(const char *what, F &&f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    GCOLL_WARN("%s: out of memory", what);
    return Status::ErrNoMem;
  } catch (...) {
    log_exception(what);
    return Status::ErrInternal;
  }
}

Status build(MPI_Comm comm, std::unique_ptr<Engine> *out) {
  return without_exceptions("engine setup", [&] { return build_engine(comm, out); });
}

}  // namespace

Status engine_for(CommState *cs, Engine **out) {
  std::lock_guard<std::mutex> lock(cs->engine_mu);
  if (cs->engine_state == CommState::EngineState::Unavailable) return Status::NotSupported;
  if (cs->engine_state == CommState::EngineState::Ready) {
    *out = cs->engine.get();
    return Status::Ok;
  }
  // First engine call on this communicator (the same call on every rank).
  if (cs->inter) {  // rank-uniform: every rank sees the same kind of communicator
    cs->engine_state = CommState::EngineState::Unavailable;
    return Status::NotSupported;
  }
  // Agree on the settings first: a mismatch would make ranks run different schedules.
  long long fp[2] = {schedule_fingerprint(), -schedule_fingerprint()};
  if (PMPI_Allreduce(MPI_IN_PLACE, fp, 2, MPI_LONG_LONG, MPI_MAX, cs->comm) != MPI_SUCCESS) return Status::ErrComm;
  if (fp[0] != -fp[1]) {
    GCOLL_WARN("GCOLL_* engine settings differ between the ranks of a communicator; it uses the MPI's collectives");
    cs->engine_state = CommState::EngineState::Unavailable;
    return Status::NotSupported;
  }
  std::unique_ptr<Engine> e;
  const Status st = build(cs->comm, &e);
  int good = ok(st) ? 1 : 0;
  if (PMPI_Allreduce(MPI_IN_PLACE, &good, 1, MPI_INT, MPI_MIN, cs->comm) != MPI_SUCCESS) return Status::ErrComm;
  if (!good) {
    if (!ok(st)) GCOLL_WARN("engine setup failed (%s); this communicator uses the MPI's collectives", status_name(st));
    cs->engine_state = CommState::EngineState::Unavailable;
    return Status::NotSupported;
  }
  GCOLL_INFO("engine on communicator #%llu: %d nodes, %d local ranks (node %d), %d rails",
             static_cast<unsigned long long>(cs->id), e->topo.num_nodes, e->topo.local_size, e->topo.node,
             e->topo.min_local);
  cs->engine = std::move(e);
  cs->engine_state = CommState::EngineState::Ready;
  *out = cs->engine.get();
  return Status::Ok;
}

Status select_space(CommState *cs, Engine *e, MemKind mem, int device) {
  if (mem == MemKind::Host) {
    e->space = e->host_space.get();
    e->work = e->scratch.data();
    e->chunk_bytes = e->space->capacity();
    return Status::Ok;
  }
  std::lock_guard<std::mutex> lock(cs->engine_mu);
  if (e->device_state == Engine::DeviceState::Untried) {
    Status st = Status::NotSupported;
    if (e->topo.num_nodes == 1) {  // rank-uniform (agreed topology): no collective otherwise
      const Config &c = config();
      CudaSpaceOptions o;
      o.device = device;
      o.bank_bytes = c.device_chunk_size;
      o.timeout_s = c.timeout_s;
      o.ipc_cache_bytes = c.ipc_cache_size;
      st = without_exceptions("device engine setup",
                              [&] { return create_cuda_space(e->topo.node_comm, o, &e->device_space); });
      int good = ok(st) ? 1 : 0;
      if (PMPI_Allreduce(MPI_IN_PLACE, &good, 1, MPI_INT, MPI_MIN, cs->comm) != MPI_SUCCESS) return Status::ErrComm;
      if (!good) {
        if (!ok(st) && st != Status::NotSupported)
          GCOLL_WARN("device engine setup failed (%s); device buffers on this communicator are staged",
                     status_name(st));
        e->device_space.reset();
        st = Status::NotSupported;
      }
    }
    if (ok(st)) {
      e->device_state = Engine::DeviceState::Ready;
      e->device = device;
      cs->device = device;
      GCOLL_INFO("device engine on communicator #%llu: GPU %d, %d local ranks", static_cast<unsigned long long>(cs->id),
                 device, e->topo.local_size);
    } else {
      e->device_state = Engine::DeviceState::Unavailable;
    }
  }
  if (e->device_state != Engine::DeviceState::Ready) return Status::NotSupported;
  e->space = e->device_space.get();
  e->work = e->space->work_area();
  e->chunk_bytes = e->space->capacity();
  return Status::Ok;
}

}  // namespace gcoll
