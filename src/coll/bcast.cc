// Broadcast algorithms. Between nodes along a rail from the root's node, then inside each
// node from the rail rank that received it.
//   binomial:   the whole chunk along one rail (the root's, or rail 0 after an intra-node
//               hop when the root has none): few steps, for small messages.
//   scatter_ag: the root's node cuts the chunk into one slice per rail (intra-node
//               scatter), every rail broadcasts its slice between nodes at the same time,
//               then each node reassembles the slices (intra-node allgather): for large.
//   fused:      device buffers on one node, where the space fuses: per chunk, one kernel
//               per rank; the root's copies the chunk into its bank, every rank raises its
//               flag and waits for the others', the others copy the root's bank.
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

namespace {

char *at(void *p, std::size_t off) { return static_cast<char *>(p) + off; }

Status run_binomial(Engine &e, const CollArgs &a) {
  const Topology &t = e.topo;
  const int root_node = t.node_of[a.root], root_local = t.local_of[a.root];
  const bool root_has_rail = root_local < t.min_local;
  const int q = root_has_rail ? root_local : 0;  // the rail that carries the data
  const bool is_root = t.rank == a.root;
  const std::size_t total = a.bytes(), step = std::max<std::size_t>(1, e.chunk_bytes);
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    const std::size_t n = std::min(step, total - c0);
    char *chunk = at(a.recvbuf, c0);
    Rail rail = next_rail(e);
    Status st = Status::Ok;
    // The root has no rail: hand the chunk to local rank 0 of its node first.
    if (!root_has_rail && t.node == root_node) {
      if (is_root) st = e.space->publish(0, chunk, n);
      const Status s2 = e.space->sync();
      if (!ok(st) || !ok(s2)) return ok(st) ? s2 : st;
      if (t.local_rank == 0) st = e.space->copy(chunk, e.space->peer(root_local), n);
      if (!ok(st)) return st;
    }
    if (t.local_rank == q && t.num_nodes > 1) {
      st = rail_bcast_binomial(rail, chunk, n, root_node);
      if (!ok(st)) return st;
    }
    if (t.local_size == 1) continue;
    // Inside the node, from the rail-q rank.
    if (t.local_rank == q) st = e.space->publish(0, chunk, n);
    const Status s2 = e.space->sync();
    if (!ok(st) || !ok(s2)) return ok(st) ? s2 : st;
    if (t.local_rank != q && !is_root) st = e.space->copy(chunk, e.space->peer(q), n);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

Status run_scatter_ag(Engine &e, const CollArgs &a) {
  const Topology &t = e.topo;
  const int root_node = t.node_of[a.root], root_local = t.local_of[a.root];
  const int L = t.min_local;
  const bool is_root = t.rank == a.root;
  const std::size_t total = a.bytes(), step = std::max<std::size_t>(1, e.chunk_bytes);
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    const std::size_t n = std::min(step, total - c0);
    char *chunk = at(a.recvbuf, c0);
    Rail rail = next_rail(e);
    std::size_t so = 0, sn = 0;
    if (t.has_rail()) part_range(n, L, t.local_rank, &so, &sn);
    Status st = Status::Ok;
    // 1. Intra-node scatter on the root's node: rail rank j takes slice j.
    if (t.node == root_node && t.local_size > 1) {
      if (is_root) st = e.space->publish(0, chunk, n);
      const Status s2 = e.space->sync();
      if (!ok(st) || !ok(s2)) return ok(st) ? s2 : st;
      if (t.has_rail() && !is_root) st = e.space->copy(chunk + so, static_cast<const char *>(e.space->peer(root_local)) + so, sn);
      if (!ok(st)) return st;
    }
    // 2. Every rail broadcasts its slice between nodes.
    if (t.has_rail() && t.num_nodes > 1) {
      st = rail_bcast_binomial(rail, chunk + so, sn, root_node);
      if (!ok(st)) return st;
    }
    if (t.local_size == 1) continue;
    // 3. Intra-node allgather of the slices.
    if (t.has_rail()) st = e.space->publish(so, chunk + so, sn);
    const Status s2 = e.space->sync();
    if (!ok(st) || !ok(s2)) return ok(st) ? s2 : st;
    if (is_root) continue;
    for (int j = 0; j < L; ++j) {
      if (j == t.local_rank) continue;
      std::size_t jo, jn;
      part_range(n, L, j, &jo, &jn);
      st = e.space->copy(chunk + jo, static_cast<const char *>(e.space->peer(j)) + jo, jn);
      if (!ok(st)) return st;
    }
  }
  return Status::Ok;
}

Status run_fused(Engine &e, const CollArgs &a) {
  const Topology &t = e.topo;
  const std::size_t total = a.bytes(), step = std::max<std::size_t>(1, e.space->capacity());
  FusedCall f;
  f.kind = FusedKind::Bcast;
  f.root = t.local_of[a.root];
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    f.in = f.out = at(a.recvbuf, c0);
    f.bytes = std::min(step, total - c0);
    const Status st = e.space->fused(f);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

}  // namespace

Status bcast_fused(Engine &e, const CollArgs &a) { return run_fused(e, a); }
Status bcast_binomial(Engine &e, const CollArgs &a) { return run_binomial(e, a); }
Status bcast_scatter_ag(Engine &e, const CollArgs &a) { return run_scatter_ag(e, a); }

}  // namespace gcoll
