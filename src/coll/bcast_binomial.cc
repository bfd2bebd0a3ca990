// Broadcast, binomial: between nodes the whole chunk along one rail (the root's, or rail 0
// after an intra-node hop when the root has none), then inside each node from the rail rank
// that received it. Few steps: for small messages.
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

Status bcast_binomial(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int root_node = t.node_of[a.root], root_local = t.local_of[a.root];
  const bool root_has_rail = root_local < t.min_local;
  const int q = root_has_rail ? root_local : 0;  // the rail that carries the data
  const bool is_root = t.rank == a.root;
  const std::size_t total = a.bytes(), step = std::max<std::size_t>(1, cx.chunk_bytes);
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    const std::size_t n = std::min(step, total - c0);
    char *chunk = at(a.recvbuf, c0);
    Rail rail = next_rail(cx);
    Status st = Status::Ok;
    // The root has no rail: hand the chunk to local rank 0 of its node first.
    if (!root_has_rail && t.node == root_node) {
      if (is_root) st = cx.space->publish(0, chunk, n);
      const Status s2 = cx.space->sync();
      if (!ok(st) || !ok(s2)) return ok(st) ? s2 : st;
      if (t.local_rank == 0) st = cx.space->copy(chunk, cx.space->peer(root_local), n);
      if (!ok(st)) return st;
    }
    if (t.local_rank == q && t.num_nodes > 1) {
      st = rail_bcast_binomial(rail, chunk, n, root_node);
      if (!ok(st)) return st;
    }
    if (t.local_size == 1) continue;
    // Inside the node, from the rail-q rank.
    if (t.local_rank == q) st = cx.space->publish(0, chunk, n);
    const Status s2 = cx.space->sync();
    if (!ok(st) || !ok(s2)) return ok(st) ? s2 : st;
    if (t.local_rank != q && !is_root) st = cx.space->copy(chunk, cx.space->peer(q), n);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

}  // namespace gcoll
