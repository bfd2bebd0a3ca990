// Allreduce, oneshot: every rank reduces the whole chunk from all node peers, then every
// rail runs recursive doubling on the whole chunk (the rails compute the same result, so
// no intra-node broadcast is needed). Fewest steps: for small messages.
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

namespace {

// Ranks without a rail (uneven nodes) read the result that local rank 0 published. The
// condition depends on the topology only, so the whole node takes the same steps.
Status share_with_railless(CallContext &cx, void *chunk, std::size_t bytes) {
  const Topology &t = cx.topo;
  if (!t.uneven()) return Status::Ok;
  Status st = Status::Ok;
  if (t.local_rank == 0) st = cx.space->publish(0, chunk, bytes);
  const Status s2 = cx.space->sync();
  if (!ok(st)) return st;
  if (!ok(s2)) return s2;
  return t.has_rail() ? Status::Ok : cx.space->copy(chunk, cx.space->peer(0), bytes);
}

}  // namespace

Status allreduce_oneshot(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const std::size_t elem = a.elem, step = chunk_elems(cx, elem);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  std::vector<const void *> srcs(t.local_size);
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0), bytes = cn * elem;
    Rail rail = next_rail(cx);
    // My chunk to the node; then everyone reduces all of it.
    Status st = cx.space->publish(0, at(in, c0 * elem), bytes);
    if (ok(st)) st = cx.space->sync();
    if (!ok(st)) return st;
    for (int p = 0; p < t.local_size; ++p) srcs[p] = cx.space->peer(p);
    st = cx.space->reduce(a.dtype, a.op, at(a.recvbuf, c0 * elem), srcs.data(), t.local_size, cn);
    if (!ok(st)) return st;
    if (t.num_nodes == 1) continue;
    // Between nodes: every rail does the same recursive doubling on the whole chunk.
    if (t.has_rail()) {
      st = rail_allreduce(rail, schedule_rd, a.dtype, a.op, at(a.recvbuf, c0 * elem), cn, elem, cx.work);
      if (!ok(st)) return st;
    }
    st = share_with_railless(cx, at(a.recvbuf, c0 * elem), bytes);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

}  // namespace gcoll
