// Reduce, hierarchical (@hier), and the node-rail-node pipeline it shares with
// reduce_scatter @hier (reduce_scatter_hier.cc): host buffers (GCOLL_HOST_BUFFERS=engine)
// and device buffers on the node's banks, one node or several, even or uneven nodes.
//
// The input vector V is read in an order W in which every node's result is one range
// (RedPlan: reduce: W = V, all of it the root's node's; reduce_scatter: the blocks node by
// node). Per chunk of W (the pipeline chunk, whole elements):
//   1. inside the node: every rank publishes its chunk; rail rank j (j < L_min) reduces
//      part j of each node's range in the chunk from every node peer's bank into its
//      slice (host memory or the device work area);
//   2. along the rail: reduce: a binomial reduce of the slice toward the root's node (every
//      rail rank but the root node's sends its slice once); reduce_scatter: a ring
//      reduce-scatter whose segments are the nodes' ranges (every rail rank sends each
//      segment but its own node's once);
//   3. on the nodes whose range the chunk holds: the rail ranks publish their reduced
//      parts and each rank copies the parts of its own result (reduce: the root only).
// Bytes a rail rank sends between nodes per call: reduce: at most ceil(count / L_min)
// elements (0 on the root's node); reduce_scatter: the elements of the other nodes' blocks
// in its parts, about (total - my node's blocks) / L_min. Pipelined as allreduce_hier.cc:
// chunk k + 1's node phase runs while chunk k is on the network (its steps move on inside
// the syncs' waits), then chunk k's step 3.
//
// In place: the chunk is published (copied into the bank) before any result of it is
// written, and results only go to V positions at or before the W position being
// processed where W = V (reduce; reduce_scatter whose nodes hold consecutive ranks in
// order: registry.cc declines the other in-place calls).
#include <algorithm>
#include <functional>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

Status node_rail_reduce(CallContext &cx, const CollArgs &a, const RedPlan &p) {
  const Topology &t = cx.topo;
  const int L = t.min_local, N = t.num_nodes, me = t.local_rank;
  const std::size_t elem = a.elem, step = chunk_elems(cx, elem), cap = cx.space->capacity();
  const char *in = static_cast<const char *>(a.sendbuf ? a.sendbuf : a.recvbuf);
  char *slice[2] = {cx.work, cx.work + cap};
  char *tmp[2] = {cx.work + 2 * cap, cx.work + 3 * cap};
  const bool net = t.has_rail() && N > 1;
  const std::size_t nchunks = (p.total + step - 1) / step;
  RailAllreduce rail[2];
  std::vector<const void *> srcs(t.local_size);
  // Chunk k's layout of my slice: node x's part at seg_off[k % 2][x], seg_len[..][x] elements.
  std::vector<std::size_t> seg_off[2] = {std::vector<std::size_t>(N), std::vector<std::size_t>(N)};
  std::vector<std::size_t> seg_len[2] = {std::vector<std::size_t>(N), std::vector<std::size_t>(N)};
  const auto chunk = [&](std::size_t k, std::size_t *c0, std::size_t *c1) {
    *c0 = k * step;
    *c1 = std::min(p.total, *c0 + step);
  };
  // 1. Chunk k inside the node, then onto the rail: my chunk of W into my bank, piece by
  //    piece; my part of every node's range reduced from every node peer's bank into
  //    slice[k % 2]; its rail steps started (they move on while later syncs wait).
  const auto node_in = [&](std::size_t k) {
    std::size_t c0, c1;
    chunk(k, &c0, &c1);
    // Every rank takes the chunk's tag number, with a rail or not (allreduce_hier.cc).
    const Rail r = next_rail(cx);
    Status st = Status::Ok;
    for (const RedPiece &q : p.pieces) {
      const std::size_t lo = std::max(c0, q.w0), hi = std::min(c1, q.w0 + q.len);
      if (lo < hi) st = cx.space->publish((lo - c0) * elem, in + (q.v0 + lo - q.w0) * elem, (hi - lo) * elem);
      if (!ok(st)) break;
    }
    const Status s1 = cx.space->sync();
    if (!ok(st)) return st;
    if (!ok(s1)) return s1;
    std::vector<std::size_t> &off = seg_off[k % 2], &len = seg_len[k % 2];
    std::size_t o = 0;
    for (int x = 0; x < N; ++x) {
      const std::size_t lo = std::max(c0, p.seg0[x]), hi = std::min(c1, p.seg0[x + 1]);
      off[x] = o;
      len[x] = 0;
      if (lo >= hi || !t.has_rail()) continue;
      std::size_t po, pn;
      part_range(hi - lo, L, me, &po, &pn);
      len[x] = pn;
      o += pn;
      if (!pn) continue;
      for (int q = 0; q < t.local_size; ++q) srcs[q] = at(cx.space->peer(q), (lo - c0 + po) * elem);
      st = cx.space->reduce(a.dtype, a.op, at(slice[k % 2], off[x] * elem), srcs.data(), t.local_size, pn);
      if (!ok(st)) return st;
    }
    if (!net) return Status::Ok;
    // 2. Along the rail.
    std::vector<RailStep> steps;
    if (p.root_node >= 0)
      steps_binomial_reduce(N, t.node, p.root_node, len[p.root_node], elem, slice[k % 2] + off[p.root_node] * elem,
                            tmp[k % 2], &steps);
    else
      steps_ring_reduce_scatter(N, t.node, off, len, elem, slice[k % 2], tmp[k % 2], &steps);
    return rail[k % 2].start_steps(r, a.dtype, a.op, std::move(steps));
  };
  // 3. My node's range in chunk k, if it holds any: every rail rank's part through its
  //    bank; each rank copies the pieces of its own result.
  const auto node_out = [&](std::size_t k) {
    std::size_t c0, c1;
    chunk(k, &c0, &c1);
    const std::size_t lo = std::max(c0, p.seg0[t.node]), hi = std::min(c1, p.seg0[t.node + 1]);
    if (lo >= hi) return Status::Ok;
    Status st = Status::Ok;
    if (t.has_rail())
      st = cx.space->publish(0, slice[k % 2] + seg_off[k % 2][t.node] * elem, seg_len[k % 2][t.node] * elem);
    const Status s2 = cx.space->sync();
    if (!ok(st)) return st;
    if (!ok(s2)) return s2;
    for (const RedPiece &q : p.pieces) {
      if (q.rank != t.rank) continue;
      for (int j = 0; ok(st) && j < L; ++j) {
        std::size_t po, pn;
        part_range(hi - lo, L, j, &po, &pn);
        const std::size_t u = std::max(lo + po, q.w0), v = std::min(lo + po + pn, q.w0 + q.len);
        if (u < v)
          st = cx.space->copy(at(a.recvbuf, (u - q.w0) * elem), at(cx.space->peer(j), (u - lo - po) * elem),
                              (v - u) * elem);
      }
      if (!ok(st)) return st;
    }
    return Status::Ok;
  };
  // Pipelined as allreduce_hier: chunk k + 1's node phase while chunk k is on the network,
  // then chunk k's results; two slices in flight at most.
  return pipeline_chunks(cx, nchunks, net ? rail : nullptr, node_in, node_out);
}

Status reduce_hier(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  RedPlan p;
  p.total = a.count;
  p.pieces.push_back({0, 0, a.count, a.root});
  p.root_node = t.node_of[a.root];
  p.seg0.assign(t.num_nodes + 1, 0);
  for (int x = p.root_node + 1; x <= t.num_nodes; ++x) p.seg0[x] = a.count;
  return node_rail_reduce(cx, a, p);
}

}  // namespace gcoll
