// Allgather, fused: device buffers on one node, where the space fuses: per chunk of the
// block, one kernel per rank copies its chunk into its bank, raises its flag, waits for the
// others' and copies every rank's chunk to its place in the result.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status allgather_fused(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const std::size_t B = a.bytes(), step = std::max<std::size_t>(1, cx.space->capacity());
  const void *mine = a.sendbuf ? a.sendbuf : at(a.recvbuf, t.rank * B);
  FusedCall f;
  f.kind = FusedKind::Allgather;
  for (std::size_t o = 0; o < B; o += step) {
    f.in = at(mine, o);
    f.bytes = std::min(step, B - o);
    for (int i = 0; i < t.local_size; ++i) {
      const int r = t.members[t.node][i];
      f.dst[i] = r == t.rank && !a.sendbuf ? nullptr : at(a.recvbuf, r * B + o);  // in place: already there
    }
    const Status st = cx.space->fused(f);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

}  // namespace gcoll
