// Broadcast, scatter_ag: the root's node cuts the chunk into one slice per rail
// (intra-node scatter), every rail broadcasts its slice between nodes at the same time,
// then each node reassembles the slices (intra-node allgather): for large messages.
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

Status bcast_scatter_ag(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int root_node = t.node_of[a.root], root_local = t.local_of[a.root];
  const int L = t.min_local;
  const bool is_root = t.rank == a.root;
  const std::size_t total = a.bytes(), step = std::max<std::size_t>(1, cx.chunk_bytes);
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    const std::size_t n = std::min(step, total - c0);
    char *chunk = at(a.recvbuf, c0);
    Rail rail = next_rail(cx);
    std::size_t so = 0, sn = 0;
    if (t.has_rail()) part_range(n, L, t.local_rank, &so, &sn);
    Status st = Status::Ok;
    // 1. Intra-node scatter on the root's node: rail rank j takes slice j.
    if (t.node == root_node && t.local_size > 1) {
      if (is_root) st = cx.space->publish(0, chunk, n);
      const Status s2 = cx.space->sync();
      if (!ok(st) || !ok(s2)) return ok(st) ? s2 : st;
      if (t.has_rail() && !is_root) st = cx.space->copy(chunk + so, static_cast<const char *>(cx.space->peer(root_local)) + so, sn);
      if (!ok(st)) return st;
    }
    // 2. Every rail broadcasts its slice between nodes.
    if (t.has_rail() && t.num_nodes > 1) {
      st = rail_bcast_binomial(rail, chunk + so, sn, root_node);
      if (!ok(st)) return st;
    }
    if (t.local_size == 1) continue;
    // 3. Intra-node allgather of the slices.
    if (t.has_rail()) st = cx.space->publish(so, chunk + so, sn);
    const Status s2 = cx.space->sync();
    if (!ok(st) || !ok(s2)) return ok(st) ? s2 : st;
    if (is_root) continue;
    for (int j = 0; j < L; ++j) {
      if (j == t.local_rank) continue;
      std::size_t jo, jn;
      part_range(n, L, j, &jo, &jn);
      st = cx.space->copy(chunk + jo, static_cast<const char *>(cx.space->peer(j)) + jo, jn);
      if (!ok(st)) return st;
    }
  }
  return Status::Ok;
}

}  // namespace gcoll
