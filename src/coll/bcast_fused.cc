// Broadcast, fused: device buffers on one node, where the space fuses: per chunk, one
// kernel per rank; the root's copies the chunk into its bank, every rank raises its flag
// and waits for the others', the others copy the root's bank.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status bcast_fused(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const std::size_t total = a.bytes(), step = std::max<std::size_t>(1, cx.space->capacity());
  FusedCall f;
  f.kind = FusedKind::Bcast;
  f.root = t.local_of[a.root];
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    f.in = f.out = at(a.recvbuf, c0);
    f.bytes = std::min(step, total - c0);
    const Status st = cx.space->fused(f);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

}  // namespace gcoll
