// Allgather and allgatherv (one pipeline): inside the node, then between nodes, with the
// result in communicator rank order even when a node's ranks are interleaved with other
// nodes' in the communicator. Rank r's block is B_r bytes at offset off_r of the receive
// buffer (allgather: B bytes at r x B; allgatherv: CollArgs::block_bytes, rank-uniform,
// and block_offsets, this rank's own). Per chunk [o, o + c) of the blocks (chunk k of
// block r: [o, min(o + c, B_r)), empty once o >= B_r):
//   1. every rank publishes its chunk; every rank copies its node peers' chunks;
//   2. rail j carries the blocks of local ranks i = j (mod L_min) of every node: its rail
//      ranks allgather those pieces between nodes (ring, or Bruck for small blocks); the
//      piece of a node is its carried ranks' chunks one after the other;
//   3. each rail rank publishes what it received; everyone copies the remote chunks.
// The step c is the same on every rank: it depends on the topology and the block sizes.
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

std::size_t allgather_step(const std::vector<std::vector<std::size_t>> &rails, std::size_t cap, std::size_t limit) {
  limit = std::max<std::size_t>(1, limit);
  // What one chunk of step s publishes on the busiest rail (non-decreasing in s).
  const auto need = [&](std::size_t s) {
    std::size_t m = 0;
    for (const auto &r : rails) {
      std::size_t sum = 0;
      for (std::size_t b : r) sum += std::min(s, b);
      m = std::max(m, sum);
    }
    return m;
  };
  if (need(limit) <= cap) return limit;
  std::size_t lo = 1, hi = limit;  // need(hi) > cap
  if (need(lo) > cap) return 1;
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (need(mid) <= cap ? lo : hi) = mid;
  }
  return lo;
}

namespace {

// The blocks of one call.
struct Blocks {
  const std::size_t *bytes = nullptr, *offs = nullptr;  // allgatherv; nullptr: allgather
  std::size_t B = 0;                                    // allgather: bytes per rank
  std::size_t size(int r) const { return bytes ? bytes[r] : B; }
  std::size_t off(int r) const { return offs ? offs[r] : static_cast<std::size_t>(r) * B; }
  // Bytes of block r in the chunk at o of step s.
  std::size_t piece(int r, std::size_t o, std::size_t s) const {
    const std::size_t b = size(r);
    return o < b ? std::min(s, b - o) : 0;
  }
};

template <bool kBruck>
Status run(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.min_local, N = t.num_nodes;
  Blocks bl;
  if (a.block_bytes) {
    bl.bytes = a.block_bytes;
    bl.offs = a.block_offsets;
  } else {
    bl.B = a.bytes();
  }
  std::size_t max_b = 0;
  for (int r = 0; r < t.size; ++r) max_b = std::max(max_b, bl.size(r));
  const std::size_t cap = cx.space->capacity();
  // Chunk of the blocks: step 3 publishes every piece of a rail, so it must fit in a bank.
  std::size_t step = std::max<std::size_t>(1, std::min(cx.chunk_bytes, cap));
  if (N > 1) {
    std::vector<std::vector<std::size_t>> rails(L);
    for (int x = 0; x < N; ++x)
      for (int i = 0; i < t.node_size(x); ++i) rails[i % L].push_back(bl.size(t.members[x][i]));
    step = allgather_step(rails, cap, step);
  }
  const void *mine = a.sendbuf ? a.sendbuf : at(a.recvbuf, bl.off(t.rank));
  char *net = cx.work, *tmp = cx.work + cap;
  std::vector<std::size_t> sizes(N), off(N + 1);
  for (std::size_t o = 0; o < max_b; o += step) {
    const auto c = [&](int r) { return bl.piece(r, o, step); };
    Rail rail = next_rail(cx);
    // 1. Inside the node.
    Status st = cx.space->publish(0, at(mine, o), c(t.rank));
    if (ok(st)) st = cx.space->sync();
    if (!ok(st)) return st;
    for (int i = 0; i < t.local_size; ++i) {
      const int r = t.members[t.node][i];
      if ((r == t.rank && !a.sendbuf) || !c(r)) continue;  // in place: already there
      st = cx.space->copy(at(a.recvbuf, bl.off(r) + o), i == t.local_rank ? at(mine, o) : cx.space->peer(i), c(r));
      if (!ok(st)) return st;
    }
    if (N == 1) continue;
    // 2. Between nodes, on my rail: pieces in node order, piece x = chunks of node x's
    //    local ranks j, j + L, ...
    if (t.has_rail()) {
      const int j = t.local_rank;
      off[0] = 0;
      for (int x = 0; x < N; ++x) {
        sizes[x] = 0;
        for (int i = j; i < t.node_size(x); i += L) sizes[x] += c(t.members[x][i]);
        off[x + 1] = off[x] + sizes[x];
      }
      std::size_t po = off[t.node];
      for (int i = j; ok(st) && i < t.local_size; i += L) {
        const int r = t.members[t.node][i];
        if (c(r)) st = cx.space->copy(net + po, at(a.recvbuf, bl.off(r) + o), c(r));
        po += c(r);
      }
      if (!ok(st)) return st;
      // Every rail rank computes the same sizes: an empty chunk of the rail is skipped by all.
      if (off[N]) {
        st = kBruck ? rail_allgatherv_bruck(rail, sizes, net, tmp) : rail_allgatherv_ring(rail, sizes, net);
        if (!ok(st)) return st;
      }
      // 3. Publish all pieces for the node; place the remote ones in my result.
      st = cx.space->publish(0, net, off[N]);
      if (!ok(st)) return st;
      for (int x = 0; x < N; ++x) {
        if (x == t.node) continue;
        std::size_t po = off[x];
        for (int i = j; ok(st) && i < t.node_size(x); i += L) {
          const int r = t.members[x][i];
          if (c(r)) st = cx.space->copy(at(a.recvbuf, bl.off(r) + o), net + po, c(r));
          po += c(r);
        }
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
        for (int i = j; i < t.node_size(x); i += L) {
          const int r = t.members[x][i];
          if (x != t.node && c(r)) {
            st = cx.space->copy(at(a.recvbuf, bl.off(r) + o), bank + po, c(r));
            if (!ok(st)) return st;
          }
          po += c(r);
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
