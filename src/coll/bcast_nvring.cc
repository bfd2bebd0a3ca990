// Bcast along the NVLink ring (Topology::ring, coll/device_topo.h): the root's buffer
// passes around the ring from the root, a bank at a time, pipelined: at round r the rank
// d places after the root forwards chunk r - d, which it copied from its predecessor's
// bank at round r - 1. Each rank reads only its predecessor's bank (NVLink); chunks +
// L - 2 syncs.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status bcast_nvring(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t);
  const int pred = t.ring[(pos + L - 1) % L];
  const int root_pos = ring_position(t, t.local_of[a.root]);
  const long long d = ((pos - root_pos) % L + L) % L;  // my distance from the root
  const std::size_t bytes = a.bytes(), cap = cx.space->capacity();
  const long long chunks = static_cast<long long>((bytes + cap - 1) / cap);
  const auto range = [&](long long k, std::size_t *o, std::size_t *n) {
    *o = static_cast<std::size_t>(k) * cap;
    *n = std::min(cap, bytes - *o);
  };
  Status st = Status::Ok;
  std::size_t o, n;
  for (long long r = 0; chunks > 0 && r < chunks + L - 2; ++r) {
    const long long mine = r - d;  // the chunk I forward now (the last rank forwards none)
    if (ok(st) && d < L - 1 && mine >= 0 && mine < chunks) {
      range(mine, &o, &n);
      st = cx.space->publish(0, at(a.recvbuf, o), n);
    }
    const Status s1 = cx.space->sync();
    if (ok(st)) st = s1;
    const long long got = r - d + 1;  // the chunk my predecessor forwarded
    if (ok(st) && d > 0 && got >= 0 && got < chunks) {
      range(got, &o, &n);
      st = cx.space->peer(pred) ? cx.space->copy(at(a.recvbuf, o), cx.space->peer(pred), n) : Status::ErrInternal;
    }
  }
  return st;
}

}  // namespace gcoll
