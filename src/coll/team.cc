#include "coll/team.h"

#include "base/wait.h"
#include "coll/team_call.h"

namespace gcoll {

Status Team::run_engine(const CollArgs &a, int gpu, EngineRecord *rec) {
  // The engine's waits (its setup's agreements, syncs with node peers, the rails) keep the
  // MPI progressing (base/wait.h). Only here: the other paths of a call wait for nothing
  // but this rank's own GPU or the MPI itself, and the passthrough path stays untouched.
  WaitCallScope in_call;
  Engine *e = nullptr;
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

}  // namespace gcoll
