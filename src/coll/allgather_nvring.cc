// Allgather along the NVLink ring (Topology::ring, coll/device_topo.h): every block
// travels around the ring, a bank at a time: at step s a rank forwards the block of the
// rank s places before it (its own at step 0), and copies its predecessor's into place.
// Each rank reads only its predecessor's bank (NVLink); (L - 1) syncs per bank of block.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status allgather_nvring(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t);
  const int pred = t.ring[(pos + L - 1) % L];
  const std::size_t block = a.bytes(), cap = cx.space->capacity();
  // One node: the communicator's ranks are the local ranks, in order (topo/topology.h).
  const auto where = [&](int lr, std::size_t off) { return at(a.recvbuf, static_cast<std::size_t>(lr) * block + off); };
  Status st = Status::Ok;
  if (a.sendbuf && block) st = cx.space->copy(where(t.local_rank, 0), a.sendbuf, block);
  for (std::size_t off = 0; off < block; off += cap) {
    const std::size_t n = std::min(cap, block - off);
    for (int s = 0; s < L - 1; ++s) {
      const int fwd = t.ring[((pos - s) % L + L) % L], got = t.ring[((pos - s - 1) % L + L) % L];
      if (ok(st)) st = cx.space->publish(0, where(fwd, off), n);
      const Status s1 = cx.space->sync();
      if (ok(st)) st = s1;
      if (ok(st))
        st = cx.space->peer(pred) ? cx.space->copy(where(got, off), cx.space->peer(pred), n) : Status::ErrInternal;
    }
  }
  return st;
}

}  // namespace gcoll
