#include "coll/team.h"

#include <cstring>
#include <optional>

#include "base/wait.h"
#include "coll/team_memory.h"
#include "coll/team_call.h"

namespace gcoll {

namespace {

// Whether the engine takes a call whose kinds the ranks agreed to be `cm` (decide.h): the
// same on every rank.
bool engine_kind(const Team *cs, const CallMemory &cm) {
  DispatchInput in;
  in.host_buffers_engine = cs->host_engine;
  in.engine_supports = true;
  in.mem = cm.mem;
  in.device_engine = cm.device_engine;
  return decide(in) == Path::Engine;
}

// The rule of the nonblocking and persistent forms, given the agreed kinds and the engine
// (set up): the progress thread runs `op` (Engine; its arguments' memory set), or the
// MPI's call of the form does (Mpi), or the device space is not ready yet (NotReady).
// Rank-uniform: every input is.
enum class AsyncPath { Engine, Mpi, NotReady };
AsyncPath async_path(const Team *cs, const Engine &e, EngineOp *op, const CallMemory &cm) {
  if (!engine_kind(cs, cm)) return AsyncPath::Mpi;
  op->args.mem = cm.mem == CallMem::Device ? MemKind::Device : MemKind::Host;
  op->args.zero_copy = cm.zero_copy;
  if (op->args.mem == MemKind::Device && e.device_state != Engine::DeviceState::Ready) return AsyncPath::NotReady;
  return e.takes_async(op->args, cs->thread_mpi) ? AsyncPath::Engine : AsyncPath::Mpi;
}

// `op` entered on this rank's buffers and queued on the communicator's progress thread.
Status queue(Team *cs, std::shared_ptr<EngineOp> op, const LocalMemory &lm, const CallMemory &cm, Buffers bufs,
             std::shared_ptr<EngineOp> *out, std::string *why) {
  Status st = op->enter(cs, lm, cm, bufs);
  if (!ok(st)) {
    *why = op->why();
    return st;
  }
  op->team = cs;
  st = cs->async.submit(cs, op);
  if (!ok(st)) {
    *why = "no progress thread could be started";
    return st;
  }
  *out = std::move(op);
  return Status::Ok;
}

}  // namespace

Status Team::run_engine(const CollArgs &a, int gpu, EngineRecord *rec, bool on_app_thread) {
  Engine *e = nullptr;
  if (!on_app_thread) {
    // The progress thread: the engine is set up (team_async_call takes nothing else), and
    // nothing here calls the MPI, unless every rank's MPI granted MPI_THREAD_MULTIPLE
    // (thread_mpi: calls across nodes end with agreements over the MPI, and the engine's
    // waits keep the MPI progressing, as on the application's thread).
    e = engine.peek();
    if (!e) return Status::ErrInternal;
    std::optional<WaitCallScope> in_call;
    if (thread_mpi) in_call.emplace();
    const Status st = e->run(a, gpu, rec);
    if (st != Status::NotSupported) seq.fetch_add(1, std::memory_order_relaxed);
    return st;
  }
  // The engine's waits (its setup's agreements, syncs with node peers, the rails) keep the
  // MPI progressing (base/wait.h). Only here: the other paths of a call wait for nothing
  // but this rank's own GPU or the MPI itself, and the passthrough path stays untouched.
  WaitCallScope in_call;
  async.drain();  // the nonblocking calls started before this one run first
  EngineSettings es;
  es.usable = engine_settings;
  es.timeout_s = timeout_s;
  Status st = engine.get(comm, inter, id, es, &e);
  if (!ok(st)) return st;
  st = e->run(a, gpu, rec);
  // The GPU of the communicator's device engine, once it has one: buffers elsewhere are
  // then not the engine's (team_memory.cc).
  if (e->device >= 0) device = e->device;
  if (st != Status::NotSupported) seq.fetch_add(1, std::memory_order_relaxed);
  return st;
}

void Team::settle_async_wants() {
  std::vector<AsyncWant> wants;
  wants.swap(async_wants);
  if (!progress_thread || (!host_engine && gpu == 0)) return;  // (agreed since the wants were noted)
  WaitCallScope in_call;
  async.drain();
  // Collective, every rank alike (the list is the same on every rank, and so is every
  // answer): each key's memory kinds agreed where they must be; then, where some key
  // would take the engine, its setup and, for device memory, the device space.
  std::vector<CallMemory> answers(wants.size());
  bool any_engine = false;
  for (std::size_t i = 0; i < wants.size(); ++i) {
    if (!ok(agree_memory_slow(this, wants[i].coll, wants[i].bytes, wants[i].lm, &answers[i]))) return;
    any_engine = any_engine || engine_kind(this, answers[i]);
  }
  if (!any_engine) return;
  EngineSettings es;
  es.usable = engine_settings;
  es.timeout_s = timeout_s;
  Engine *e = nullptr;
  if (!ok(engine.get(comm, inter, id, es, &e))) return;
  for (std::size_t i = 0; i < wants.size(); ++i) {
    const CallMemory &cm = answers[i];
    if (cm.mem == CallMem::Device && cm.device_engine) {
      const int g = device >= 0 ? device : wants[i].lm.ordinal;
      if (e->prepare_device(g) == Status::ErrComm) return;
      if (e->device >= 0) device = e->device;
    }
  }
}

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



Status team_async_start(Team *cs, std::shared_ptr<EngineOp> op, Buffers bufs, std::shared_ptr<EngineOp> *out,
                        std::string *why) {
  out->reset();
  const Coll coll = op->args.coll;
  if (cs->without_gcoll || (cs->gpu >= 0 && !cs->progress_thread)) return Status::Ok;
  if (!cs->host_engine && cs->gpu == 0) return Status::Ok;
  const void *ptrs[2] = {bufs.send, bufs.recv};
  const LocalMemory lm = cs->gpu < 0 ? classify_local(ptrs, 2, -1) : classify_call(&cs->memo, ptrs, cs->device);
  CallMemory cm;
  bool known = true;
  if (cs->gpu < 0) {
    known = false;  // the communicator's first call: nothing agreed yet
  } else if (cs->gpu == 0) {
    cm.mem = CallMem::Host;
  } else if (cs->uniform_memory) {
    if (!ok(agree_memory_slow(cs, coll, op->args.bytes(), lm, &cm))) return Status::Ok;  // local under the promise
  } else {
    const Team::AgreedKind &k = cs->agreed[static_cast<int>(coll)][size_class(op->args.bytes())];
    if (k.bits < 0) known = false;
    else std::memcpy(&cm, &k.answer, sizeof cm);
  }
  // What is missing, for the next blocking call (once per collective and size class).
  auto want = [&] {
    for (const Team::AsyncWant &w : cs->async_wants)
      if (w.coll == coll && size_class(w.bytes) == size_class(op->args.bytes())) return Status::Ok;
    cs->async_wants.push_back({coll, op->args.bytes(), lm});
    return Status::Ok;
  };
  Engine *e = cs->engine.peek();
  if (!known || !e) return want();
  switch (async_path(cs, *e, op.get(), cm)) {
    case AsyncPath::Mpi: return Status::Ok;
    case AsyncPath::NotReady: return want();
    case AsyncPath::Engine: break;
  }
  return queue(cs, std::move(op), lm, cm, bufs, out, why);
}

void team_persistent_init(Team *cs, EngineOp *tmpl, Buffers bufs, PersistentPath *out) {
  *out = PersistentPath();
  // (The caller made the communicator's first agreement: the template exists only once
  // GCOLL_PROGRESS_THREAD is agreed on.)
  const void *ptrs[2] = {bufs.send, bufs.recv};
  LocalMemory lm = classify_call(&cs->memo, ptrs, cs->device);
  CallMemory cm;
  if (cs->uniform_memory) {
    if (!ok(agree_memory_slow(cs, tmpl->args.coll, tmpl->args.bytes(), lm, &cm))) return;  // local
  } else if (!ok(agree_memory_now(cs, lm, &cm))) {
    return;  // (every rank alike)
  }
  if (!engine_kind(cs, cm)) return;
  WaitCallScope in_call;  // the MPI keeps progressing in the setup's waits (base/wait.h)
  cs->async.drain();      // (the engine's state is the queue's until then)
  EngineSettings es;
  es.usable = cs->engine_settings;
  es.timeout_s = cs->timeout_s;
  Engine *e = nullptr;
  if (!ok(cs->engine.get(cs->comm, cs->inter, cs->id, es, &e))) return;
  if (cm.mem == CallMem::Device) {
    if (e->prepare_device(cs->device >= 0 ? cs->device : lm.ordinal) == Status::ErrComm) return;
    if (e->device >= 0) cs->device = e->device;
    lm = classify_call(&cs->memo, ptrs, cs->device);  // (against the engine's GPU, now known)
  }
  out->engine = async_path(cs, *e, tmpl, cm) == AsyncPath::Engine;
  out->lm = lm;
  out->cm = cm;
}

Status team_persistent_start(Team *cs, const EngineOp &tmpl, const PersistentPath &path, Buffers bufs,
                             std::shared_ptr<EngineOp> *out, std::string *why) {
  out->reset();
  if (!path.engine) return Status::Ok;
  return queue(cs, tmpl.fresh(), path.lm, path.cm, bufs, out, why);
}

}  // namespace gcoll
