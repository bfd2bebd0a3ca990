// Allgather: inside the node, then between nodes, with the result in communicator rank
// order even when a node's ranks are interleaved with other nodes' in the communicator.
// Per chunk of the per-rank block:
//   1. every rank publishes its chunk; every rank copies its node peers' chunks;
//   2. rail j carries the blocks of local ranks i = j (mod L_min) of every node: its rail
//      ranks allgather those pieces between nodes (ring, or Bruck for small blocks);
//   3. each rail rank publishes what it received; everyone copies the remote chunks.
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

namespace {

// Local ranks of node x carried by rail j.
int pieces(const Topology &t, int x, int j) {
  const int n = t.node_size(x), L = t.min_local;
  return n > j ? (n - j + L - 1) / L : 0;
}

// Largest number of block chunks any rail carries in total (over all nodes).
int max_rail_pieces(const Topology &t) {
  int m = 1;
  for (int j = 0; j < t.min_local; ++j) {
    int s = 0;
    for (int x = 0; x < t.num_nodes; ++x) s += pieces(t, x, j);
    m = std::max(m, s);
  }
  return m;
}

template <bool kBruck>
Status run(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.min_local, N = t.num_nodes;
  const std::size_t B = a.bytes();
  const std::size_t cap = cx.space->capacity();
  // Chunk of the block: step 3 publishes every piece of a rail, so it must fit in a bank.
  const std::size_t step =
      std::max<std::size_t>(1, std::min(cx.chunk_bytes, N > 1 ? cap / max_rail_pieces(t) : cap));
  const void *mine = a.sendbuf ? a.sendbuf : at(a.recvbuf, t.rank * B);
  char *net = cx.work, *tmp = cx.work + cap;
  std::vector<std::size_t> sizes(N), off(N + 1);
  for (std::size_t o = 0; o < B; o += step) {
    const std::size_t c = std::min(step, B - o);
    Rail rail = next_rail(cx);
    // 1. Inside the node.
    Status st = cx.space->publish(0, at(mine, o), c);
    if (ok(st)) st = cx.space->sync();
    if (!ok(st)) return st;
    for (int i = 0; i < t.local_size; ++i) {
      const int r = t.members[t.node][i];
      if (r == t.rank && !a.sendbuf) continue;  // in place: already there
      st = cx.space->copy(at(a.recvbuf, r * B + o), i == t.local_rank ? at(mine, o) : cx.space->peer(i), c);
      if (!ok(st)) return st;
    }
    if (N == 1) continue;
    // 2. Between nodes, on my rail: pieces in node order, piece x = chunks of node x's
    //    local ranks j, j + L, ...
    if (t.has_rail()) {
      const int j = t.local_rank;
      off[0] = 0;
      for (int x = 0; x < N; ++x) {
        sizes[x] = static_cast<std::size_t>(pieces(t, x, j)) * c;
        off[x + 1] = off[x] + sizes[x];
      }
      for (int i = j, k = 0; ok(st) && i < t.local_size; i += L, ++k)
        st = cx.space->copy(net + off[t.node] + k * c, at(a.recvbuf, t.members[t.node][i] * B + o), c);
      if (!ok(st)) return st;
      st = kBruck ? rail_allgatherv_bruck(rail, sizes, net, tmp) : rail_allgatherv_ring(rail, sizes, net);
      if (!ok(st)) return st;
      // 3. Publish all pieces for the node; place the remote ones in my result.
      st = cx.space->publish(0, net, off[N]);
      if (!ok(st)) return st;
      for (int x = 0; x < N; ++x) {
        if (x == t.node) continue;
        for (int i = j, k = 0; ok(st) && i < t.node_size(x); i += L, ++k)
          st = cx.space->copy(at(a.recvbuf, t.members[x][i] * B + o), net + off[x] + k * c, c);
      }
      if (!ok(st)) return st;
    }
    st = cx.space->sync();
    if (!ok(st)) return st;
    // Everyone: the remote chunks carried by the other rails of the node.
    for (int j = 0; j < L; ++j) {
      if (j == t.local_rank) continue;
      const char *bank = static_cast<const char *>(cx.space->peer(j));
      std::size_t po = 0;
      for (int x = 0; x < N; ++x) {
        for (int i = j; i < t.node_size(x); i += L, po += c) {
          if (x == t.node) continue;
          st = cx.space->copy(at(a.recvbuf, t.members[x][i] * B + o), bank + po, c);
          if (!ok(st)) return st;
        }
      }
    }
  }
  return Status::Ok;
}

}  // namespace

Status allgather_ring(CallContext &cx, const CollArgs &a) { return run<false>(cx, a); }
Status allgather_bruck(CallContext &cx, const CollArgs &a) { return run<true>(cx, a); }

}  // namespace gcoll
