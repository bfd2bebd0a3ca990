// Reduce_scatter_block along the NVLink ring (Topology::ring, coll/device_topo.h): the
// allreduce's ring reduce-scatter (allreduce_nvring.cc) with the blocks as its segments,
// a bank of each block at a time; each rank reads only its predecessor's bank. In place
// too: the result goes to the first block of the receive buffer, whose input of the same
// elements was read at an earlier step (or, on rank 0, by the same reduction).
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status reduce_scatter_block_nvring(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size());
  const std::size_t elem = a.elem, step = std::max<std::size_t>(cx.space->capacity() / elem, 1);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  Status st = Status::Ok;
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0);
    // Segment j ends complete at ring position j - 1: the block of the rank there (one
    // node: local ranks are the communicator's ranks).
    const RingSegment seg = [&](int j, std::size_t *o, std::size_t *n) {
      *o = static_cast<std::size_t>(t.ring[(j + L - 1) % L]) * a.count + c0;
      *n = cn;
    };
    const Status s = nvring_reduce_scatter(cx, a, in, seg, at(a.recvbuf, c0 * elem));
    if (ok(st)) st = s;
  }
  return st;
}

}  // namespace gcoll
