// Reduce_scatter @rails (reduce_scatter_block @rails: rsb_rails.cc, equal blocks): several nodes of the same size (every
// rank has a rail), host buffers. Each rank reduces its own node's part of the blocks of
// its rail's ranks, and the rail's ring reduce-scatter finishes each of them on its owner:
// nobody's result passes through a peer's bank.
//
// Rounds of s elements per block (s: a bank holds one piece of every block, s x P x elem
// <= the bank; block q's piece in round k: its elements [k s, k s + s), fewer or none
// where the block is shorter). Round k:
//   1. every rank publishes its pieces of all P blocks (node by node, local rank by local
//      rank) into its bank; one node sync;
//   2. rank (node x, local j) reduces, for every node y, the piece of the block of rank
//      (y, j) from its node peers' banks into its slice (segment y);
//   3. along rail j a ring reduce-scatter whose segments are those pieces: segment y ends
//      fully reduced on rail rank y, i.e. rank (y, j) gets its own block's piece;
//   4. that rank copies it into its receive buffer.
// One node sync per round, against two on the nodes that hold the chunk's results in
// @hier (reduce_hier.cc: the rail ranks' parts go back through the banks to their owners);
// the same bytes between nodes (each rail rank sends every segment but its own once). On
// cores shared with other processes every sync is a hand-off (docs/host-engine-vs-mpi.md).
// Pipelined as reduce_hier.cc (pipeline_chunks): round k + 1's node phase while round k
// is on the network.
//
// In place (the input is the receive buffer, the result its first counts[me] elements):
// round k's result goes to elements [k s, k s + s) after round k + 1 was published;
// every later round reads elements at or beyond (k + 2) s of the input.
#include <algorithm>
#include <functional>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

Status reduce_scatter_rails_blocks(CallContext &cx, const CollArgs &a, const std::function<std::size_t(int)> &block) {
  const Topology &t = cx.topo;
  const int N = t.num_nodes, L = t.local_size, P = t.size, me = t.local_rank;
  const std::size_t elem = a.elem, cap = cx.space->capacity();
  const std::size_t s = cap / elem / static_cast<std::size_t>(P);
  if (!s) return Status::NotSupported;  // rank-uniform (reduce_scatter_rails_fits), never reached
  const char *in = static_cast<const char *>(a.sendbuf ? a.sendbuf : a.recvbuf);
  char *slice[2] = {cx.work, cx.work + cap};
  char *tmp[2] = {cx.work + 2 * cap, cx.work + 3 * cap};
  std::vector<std::size_t> displ(P + 1, 0);
  std::size_t longest = 0;
  for (int r = 0; r < P; ++r) {
    displ[r + 1] = displ[r] + block(r);
    longest = std::max(longest, block(r));
  }
  const std::size_t rounds = (longest + s - 1) / s;
  const auto piece = [&](int r, std::size_t k) {
    const std::size_t b = block(r), k0 = k * s;
    return b > k0 ? std::min(s, b - k0) : 0;
  };
  RailAllreduce rail[2];
  std::vector<const void *> srcs(L);
  std::vector<std::size_t> bank(N);  // round k: where rank (y, me)'s piece starts in a bank
  std::vector<std::size_t> seg_off[2] = {std::vector<std::size_t>(N), std::vector<std::size_t>(N)};
  std::vector<std::size_t> seg_len[2] = {std::vector<std::size_t>(N), std::vector<std::size_t>(N)};
  const auto node_in = [&](std::size_t k) {
    const Rail r = next_rail(cx);  // every rank takes round k's tag number
    // 1. My pieces of every block, node by node; bank[y] (elements) where rank (y, j)'s
    //    piece starts, for my rail's ranks.
    std::vector<std::size_t> &off = seg_off[k % 2], &len = seg_len[k % 2];
    Status st = Status::Ok;
    std::size_t o = 0;
    for (int y = 0; y < N; ++y)
      for (int j = 0; j < L; ++j) {
        const int q = t.members[y][j];
        const std::size_t n = piece(q, k);
        if (j == me) bank[y] = o;
        if (n && ok(st)) st = cx.space->publish(o * elem, in + (displ[q] + k * s) * elem, n * elem);
        o += n;
      }
    const Status s1 = cx.space->sync();
    if (!ok(st)) return st;
    if (!ok(s1)) return s1;
    // 2. My rail ranks' pieces, my node's part of them.
    std::size_t so = 0;
    for (int y = 0; y < N; ++y) {
      off[y] = so;
      len[y] = piece(t.members[y][me], k);
      if (!len[y]) continue;
      for (int q = 0; q < L; ++q) srcs[q] = at(cx.space->peer(q), bank[y] * elem);
      st = cx.space->reduce(a.dtype, a.op, at(slice[k % 2], so * elem), srcs.data(), L, len[y]);
      if (!ok(st)) return st;
      so += len[y];
    }
    // 3. Along my rail: segment y ends on rail rank y (node y).
    std::vector<RailStep> steps;
    steps_ring_reduce_scatter(N, t.node, off, len, elem, slice[k % 2], tmp[k % 2], &steps);
    return rail[k % 2].start_steps(r, a.dtype, a.op, std::move(steps));
  };
  // 4. My block's piece of round k.
  const auto node_out = [&](std::size_t k) {
    const std::size_t n = seg_len[k % 2][t.node];
    if (!n) return Status::Ok;
    return cx.space->copy(at(a.recvbuf, k * s * elem), slice[k % 2] + seg_off[k % 2][t.node] * elem, n * elem);
  };
  return pipeline_chunks(cx, rounds, rail, node_in, node_out);
}

bool reduce_scatter_rails_fits(const CollArgs &a, const Topology &t) {
  // The bank's size from the settings (rank-uniform; host memory: the space's capacity).
  const std::size_t bank = config().chunk_size;
  return a.mem == MemKind::Host && t.num_nodes > 1 && !t.uneven() && a.elem > 0 &&
         bank / a.elem / static_cast<std::size_t>(t.size) > 0;
}

Status reduce_scatter_rails(CallContext &cx, const CollArgs &a) {
  return reduce_scatter_rails_blocks(cx, a, [&a](int r) { return static_cast<std::size_t>(a.counts[r]); });
}

}  // namespace gcoll
