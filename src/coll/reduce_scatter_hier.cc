// Reduce_scatter, hierarchical (@hier): node_rail_reduce (reduce_hier.cc) with W = the
// ranks' blocks node by node (each node's ranks in local order), so that every node's
// result is one range of W; along the rails a ring reduce-scatter whose segments are the
// nodes' ranges. CollArgs::counts: elements of each rank's block (the same array on every
// rank, as MPI requires). In place only where W is the input's own order
// (nodes_in_rank_order; registry.cc). reduce_scatter_block @hier is the same with equal
// blocks (rsb_hier.cc).
#include <functional>

#include "coll/algorithms.h"

namespace gcoll {

bool nodes_in_rank_order(const Topology &t) {
  int r = 0;
  for (const auto &m : t.members)
    for (int q : m)
      if (q != r++) return false;
  return true;
}

Status reduce_scatter_blocks(CallContext &cx, const CollArgs &a, const std::function<std::size_t(int)> &block) {
  const Topology &t = cx.topo;
  std::vector<std::size_t> displ(t.size + 1, 0);
  for (int r = 0; r < t.size; ++r) displ[r + 1] = displ[r] + block(r);
  RedPlan p;
  p.total = displ[t.size];
  p.seg0.assign(t.num_nodes + 1, 0);
  std::size_t w = 0;
  for (int x = 0; x < t.num_nodes; ++x) {
    p.seg0[x] = w;
    for (int r : t.members[x]) {
      const std::size_t n = displ[r + 1] - displ[r];
      if (n) p.pieces.push_back({w, displ[r], n, r});
      w += n;
    }
  }
  p.seg0[t.num_nodes] = w;
  return node_rail_reduce(cx, a, p);
}

Status reduce_scatter_hier(CallContext &cx, const CollArgs &a) {
  return reduce_scatter_blocks(cx, a, [&a](int r) { return static_cast<std::size_t>(a.counts[r]); });
}

}  // namespace gcoll
