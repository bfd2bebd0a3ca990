// Alltoall, hierarchical: through the node's banks and along the rails, for host buffers
// and device buffers (the bank-based device space), one node or many, even or uneven
// nodes, in place (sendbuf == nullptr: the input is recvbuf) or not. CollArgs::count is
// the bytes B of one block: rank r sends block q (sendbuf + q B) to rank q, which receives
// it at recvbuf + r B.
//
// Chunks: the same byte range [o, o + c) of every block per round; c comes from the
// topology and the bank alone (rank-uniform, max_chunk()): whatever a rank publishes
// between two syncs fits its bank, its outgoing and incoming rail pieces fit two halves
// of the work area (4 x capacity). Per chunk (P ranks, N nodes, L = L_min rails, n_x the
// size of node x):
//   1. every rank publishes chunk o of its P blocks (bank slot q: the one for rank q);
//      sync;
//   2. every rank copies the blocks its node peers (itself too) have for it out of their
//      banks;
//   3. rail j of node y gathers, out of its node peers' banks, the blocks of all n_y
//      ranks for the ranks d = j, j + L, ... of every other node x (one piece per node),
//      and exchanges the pieces pairwise along the rail: N - 1 steps, step s to node
//      y + s, from node y - s (rail_alltoallv_pairwise);
//   4. the rail rank copies the received blocks meant for itself into its result; uneven
//      nodes only (n_y > L: the same on every rank of the node, so the node's ranks make
//      the same syncs): it publishes those for its node's ranks d = j + L, j + 2L, ...;
//      sync; those ranks copy theirs out of rail rank (d mod L)'s bank.
// In place: chunk o of every block is published (step 1) before anything writes the
// result, and a round writes only chunk o of blocks; a rank reads only banks and its own
// buffer, never a peer's: the input of later rounds stays intact.
//
// Traffic between nodes (per call): rail rank j of node y sends n_y x B bytes to every
// other node x for each of x's ranks on rail j: n_y x B x (ranks on rail j outside node
// y) in all; with even nodes L (N - 1) B = (P - L) B, what each rank would send to the
// other nodes by itself: every block crosses the network once. Inside the node every rank
// publishes P x B bytes (plus, uneven nodes, the relayed blocks).
#include <algorithm>

#include "base/config.h"
#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

namespace {

// Local ranks of node x on rail j (j, j + L, ...).
std::size_t pieces(const Topology &t, int x, int j) {
  const int n = t.node_size(x), L = t.min_local;
  return n > j ? static_cast<std::size_t>((n - j + L - 1) / L) : 0;
}

// Largest chunk c (bytes of every block per round) for banks of `cap` bytes and a work
// area of 4 x cap; 0 when even one byte does not fit. Counts, in units of c, for every
// rail rank (the largest): the bank (P blocks; the relayed blocks of step 4), the
// outgoing pieces (work [0, 2 cap)) and the incoming ones (work [2 cap, 4 cap)).
std::size_t max_chunk(const Topology &t, std::size_t cap) {
  const std::size_t P = static_cast<std::size_t>(t.size);
  std::size_t bank = std::max<std::size_t>(P, 1), out = 0, in = 0;
  if (t.num_nodes > 1)
    for (int j = 0; j < t.min_local; ++j) {
      std::size_t on_rail = 0;  // ranks on rail j
      for (int x = 0; x < t.num_nodes; ++x) on_rail += pieces(t, x, j);
      for (int y = 0; y < t.num_nodes; ++y) {
        const std::size_t ny = static_cast<std::size_t>(t.node_size(y)), others = P - ny;
        out = std::max(out, ny * (on_rail - pieces(t, y, j)));
        in = std::max(in, pieces(t, y, j) * others);
        bank = std::max(bank, (pieces(t, y, j) - 1) * others);
      }
    }
  std::size_t c = cap / bank;
  if (out) c = std::min(c, 2 * cap / out);
  if (in) c = std::min(c, 2 * cap / in);
  return c;
}

}  // namespace

bool alltoall_hier_fits(const CollArgs &a, const Topology &t) {
  // The bank's size from the settings (rank-uniform); the space's capacity() is at least
  // that (the device space rounds it up).
  const Config &c = config();
  return max_chunk(t, a.mem == MemKind::Device ? c.device_chunk_size : c.chunk_size) > 0;
}

Status alltoall_hier(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int N = t.num_nodes, L = t.min_local, me = t.local_rank, y = t.node, ny = t.local_size;
  const std::size_t P = static_cast<std::size_t>(t.size), B = a.bytes(), cap = cx.space->capacity();
  const std::size_t step = std::min(B, max_chunk(t, cap));
  if (!B) return Status::Ok;
  if (!step) return Status::ErrInternal;  // supports() rules this out
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const std::size_t rme = static_cast<std::size_t>(t.rank);
  const bool relay = N > 1 && ny > L;  // my node has ranks without a rail: one more sync
  char *out_net = cx.work, *in_net = cx.work + 2 * cap;
  std::vector<std::size_t> sizes_out(N, 0), sizes_in(N, 0);
  for (std::size_t o = 0; o < B; o += step) {
    const std::size_t c = std::min(step, B - o);
    Rail rail = next_rail(cx);
    // 1. My chunk of every block to the node.
    Status st = Status::Ok;
    if (c == B) {
      st = cx.space->publish(0, in, P * B);
    } else {
      for (std::size_t q = 0; ok(st) && q < P; ++q) st = cx.space->publish(q * c, at(in, q * B + o), c);
    }
    if (ok(st)) st = cx.space->sync();
    if (!ok(st)) return st;
    // 2. Inside the node: the blocks of my node peers (mine too) for me.
    for (int s = 0; ok(st) && s < ny; ++s) {
      const std::size_t from = static_cast<std::size_t>(t.members[y][s]);
      if (s == me) {
        if (a.sendbuf) st = cx.space->copy(at(a.recvbuf, rme * B + o), at(in, rme * B + o), c);
      } else {
        st = cx.space->copy(at(a.recvbuf, from * B + o), at(cx.space->peer(s), rme * c), c);
      }
    }
    if (!ok(st)) return st;
    if (N == 1) continue;
    // 3. Between nodes on my rail j: to node x, the blocks of my node's ranks s for x's
    //    ranks d = j + k L (piece layout: k, then s); from node x, those of x's ranks for
    //    my node's ranks on rail j (layout: k, then x's rank s).
    if (t.has_rail()) {
      const int j = me;
      const std::size_t mine = pieces(t, y, j);
      std::size_t pos = 0;
      for (int x = 0; x < N; ++x) {
        const std::size_t nx = static_cast<std::size_t>(t.node_size(x));
        sizes_out[x] = x == y ? 0 : static_cast<std::size_t>(ny) * pieces(t, x, j) * c;
        sizes_in[x] = x == y ? 0 : nx * mine * c;
        if (x == y) continue;
        for (int d = j; ok(st) && d < t.node_size(x); d += L) {
          const std::size_t to = static_cast<std::size_t>(t.members[x][d]);
          for (int s = 0; ok(st) && s < ny; ++s, pos += c)
            st = cx.space->copy(out_net + pos, s == me ? at(in, to * B + o) : at(cx.space->peer(s), to * c), c);
        }
      }
      if (ok(st)) st = rail_alltoallv_pairwise(rail, sizes_out, out_net, sizes_in, in_net);
      if (!ok(st)) return st;
      // 4. Mine into my result; those of my node's ranks j + L, j + 2L, ... to my bank
      //    (layout: node x, then k - 1, then x's rank s).
      std::size_t ipos = 0, bpos = 0;
      for (int x = 0; ok(st) && x < N; ++x) {
        if (x == y) continue;
        const int nx = t.node_size(x);
        for (int s = 0; ok(st) && s < nx; ++s)
          st = cx.space->copy(at(a.recvbuf, static_cast<std::size_t>(t.members[x][s]) * B + o), in_net + ipos + s * c, c);
        const std::size_t relayed = (mine - 1) * nx * c;
        if (ok(st) && relayed) st = cx.space->publish(bpos, in_net + ipos + nx * c, relayed);
        ipos += sizes_in[x];
        bpos += relayed;
      }
      if (!ok(st)) return st;
    }
    if (!relay) continue;
    st = cx.space->sync();
    if (!ok(st)) return st;
    if (t.has_rail()) continue;
    // Mine, relayed by rail rank j = me mod L as its k-th (k = me / L) piece of every node.
    const int j = me % L;
    const std::size_t k = static_cast<std::size_t>(me / L), kept = pieces(t, y, j) - 1;
    const char *bank = static_cast<const char *>(cx.space->peer(j));
    std::size_t bpos = 0;
    for (int x = 0; ok(st) && x < N; ++x) {
      if (x == y) continue;
      const int nx = t.node_size(x);
      for (int s = 0; ok(st) && s < nx; ++s)
        st = cx.space->copy(at(a.recvbuf, static_cast<std::size_t>(t.members[x][s]) * B + o),
                            bank + bpos + ((k - 1) * nx + s) * c, c);
      bpos += kept * nx * c;
    }
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

}  // namespace gcoll
