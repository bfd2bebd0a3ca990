// Allreduce along the NVLink ring (device buffers on one node whose GPUs are P2P only
// along a cycle: DGX-1's hybrid cube mesh; Topology::ring, coll/device_topo.h): a ring
// reduce-scatter, then a ring allgather, through the banks. Each rank reads only its
// predecessor's bank, so no byte crosses a pair of GPUs without NVLink and none goes
// through host memory. Per chunk of L segments (a segment at most a bank): 2 (L - 1)
// syncs; every rank moves about 2 x S bytes over its NVLink to its successor.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

// Segment j is reduced along the ring ending at position j - 1: the rank at ring position
// `pos` publishes segment pos - s at step s (its input at step 0, its partial sum after),
// reduces the predecessor's partial of segment pos - s - 1 with its own input, and after
// L - 1 steps holds the whole reduction of segment pos + 1, written to `result`. Every
// segment is reduced once, so every rank that receives it gets the same bits. In place
// (`result` inside `in`): my input of segment pos + 1 is read at the last step, by the
// reduction that writes it. Every rank syncs at every step whatever happened (memspace.h).
Status nvring_reduce_scatter(CallContext &cx, const CollArgs &a, const void *in, const RingSegment &seg, void *result) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t);
  const int pred = t.ring[(pos + L - 1) % L];
  const std::size_t elem = a.elem;
  char *part = cx.work;  // my partial sum of the segment I publish next (at most a bank)
  Status st = Status::Ok;
  std::size_t so, sn, ro, rn;
  for (int s = 0; s < L - 1; ++s) {
    seg(((pos - s) % L + L) % L, &so, &sn);
    if (ok(st) && sn) st = cx.space->publish(0, s == 0 ? at(in, so * elem) : part, sn * elem);
    const Status s1 = cx.space->sync();
    if (ok(st)) st = s1;
    seg(((pos - s - 1) % L + L) % L, &ro, &rn);
    if (ok(st) && rn) {
      const void *srcs[2] = {cx.space->peer(pred), at(in, ro * elem)};
      st = srcs[0] ? cx.space->reduce(a.dtype, a.op, s == L - 2 ? result : part, srcs, 2, rn) : Status::ErrInternal;
    }
  }
  return st;
}

Status allreduce_nvring(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t);
  const int pred = t.ring[(pos + L - 1) % L];
  const std::size_t elem = a.elem, seg_max = std::max<std::size_t>(cx.space->capacity() / elem, 1);
  const std::size_t step = seg_max * static_cast<std::size_t>(L);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  Status st = Status::Ok;
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0);
    const RingSegment seg = [&](int j, std::size_t *o, std::size_t *n) {
      part_range(cn, L, j, o, n);
      *o += c0;
    };
    std::size_t so, sn, ro, rn;
    seg((pos + 1) % L, &so, &sn);
    const Status s0 = nvring_reduce_scatter(cx, a, in, seg, at(a.recvbuf, so * elem));
    if (ok(st)) st = s0;
    // Allgather: I hold segment pos + 1; at step s I pass on segment pos + 1 - s and
    // copy segment pos - s from my predecessor (written after every read of the inputs).
    for (int s = 0; s < L - 1; ++s) {
      seg(((pos + 1 - s) % L + L) % L, &so, &sn);
      if (ok(st) && sn) st = cx.space->publish(0, at(a.recvbuf, so * elem), sn * elem);
      const Status s1 = cx.space->sync();
      if (ok(st)) st = s1;
      seg(((pos - s) % L + L) % L, &ro, &rn);
      if (ok(st) && rn)
        st = cx.space->peer(pred) ? cx.space->copy(at(a.recvbuf, ro * elem), cx.space->peer(pred), rn * elem)
                                  : Status::ErrInternal;
    }
  }
  return st;
}

}  // namespace gcoll
