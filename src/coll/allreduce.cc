// Allreduce algorithms.
//   oneshot: every rank reduces the whole chunk from all node peers, then every rail runs
//            recursive doubling on the whole chunk (the rails compute the same result, so
//            no intra-node broadcast is needed). Fewest steps: for small messages.
//   rd/ring: intra-node reduce-scatter (local rank j reduces slice j), allreduce of the
//            slice among its rail (recursive doubling or ring), intra-node allgather.
//            Every byte crosses the network once per direction per rail: for large ones.
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

namespace {

char *at(void *p, std::size_t off) { return static_cast<char *>(p) + off; }
const char *at(const void *p, std::size_t off) { return static_cast<const char *>(p) + off; }

std::size_t chunk_elems(const Engine &e, std::size_t elem) { return std::max<std::size_t>(1, e.chunk_bytes / elem); }

// Ranks without a rail (uneven nodes) read the result that local rank 0 published. The
// condition depends on the topology only, so the whole node takes the same steps.
Status share_with_railless(Engine &e, void *chunk, std::size_t bytes) {
  const Topology &t = e.topo;
  if (!t.uneven()) return Status::Ok;
  Status st = Status::Ok;
  if (t.local_rank == 0) st = e.space->publish(0, chunk, bytes);
  const Status s2 = e.space->sync();
  if (!ok(st)) return st;
  if (!ok(s2)) return s2;
  return t.has_rail() ? Status::Ok : e.space->copy(chunk, e.space->peer(0), bytes);
}

Status run_oneshot(Engine &e, const CollArgs &a) {
  const Topology &t = e.topo;
  const std::size_t elem = a.elem, step = chunk_elems(e, elem);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  std::vector<const void *> srcs(t.local_size);
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0), bytes = cn * elem;
    Rail rail = next_rail(e);
    // My chunk to the node; then everyone reduces all of it.
    Status st = e.space->publish(0, at(in, c0 * elem), bytes);
    if (ok(st)) st = e.space->sync();
    if (!ok(st)) return st;
    for (int p = 0; p < t.local_size; ++p) srcs[p] = e.space->peer(p);
    st = e.space->reduce(a.dtype, a.op, at(a.recvbuf, c0 * elem), srcs.data(), t.local_size, cn);
    if (!ok(st)) return st;
    if (t.num_nodes == 1) continue;
    // Between nodes: every rail does the same recursive doubling on the whole chunk.
    if (t.has_rail()) {
      st = rail_allreduce_rd(rail, a.dtype, a.op, at(a.recvbuf, c0 * elem), cn, elem, e.scratch.data());
      if (!ok(st)) return st;
    }
    st = share_with_railless(e, at(a.recvbuf, c0 * elem), bytes);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

template <bool kRing>
Status run_hier(Engine &e, const CollArgs &a) {
  const Topology &t = e.topo;
  const std::size_t elem = a.elem, step = chunk_elems(e, elem);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const int L = t.min_local;
  std::vector<const void *> srcs(t.local_size);
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0);
    Rail rail = next_rail(e);
    char *out = at(a.recvbuf, c0 * elem);
    // 1. My chunk to the node.
    Status st = e.space->publish(0, at(in, c0 * elem), cn * elem);
    if (ok(st)) st = e.space->sync();
    if (!ok(st)) return st;
    // 2. Rail ranks: reduce my slice from all node peers, allreduce it along my rail,
    //    and publish it.
    if (t.has_rail()) {
      std::size_t so, sn;
      part_range(cn, L, t.local_rank, &so, &sn);
      for (int p = 0; p < t.local_size; ++p) srcs[p] = at(e.space->peer(p), so * elem);
      char *mine = static_cast<char *>(e.space->publish_area(so * elem, sn * elem));
      st = e.space->reduce(a.dtype, a.op, mine, srcs.data(), t.local_size, sn);
      if (ok(st) && t.num_nodes > 1) {
        st = kRing ? rail_allreduce_ring(rail, a.dtype, a.op, mine, sn, elem, e.scratch.data())
                   : rail_allreduce_rd(rail, a.dtype, a.op, mine, sn, elem, e.scratch.data());
      }
      if (!ok(st)) return st;
    }
    st = e.space->sync();
    if (!ok(st)) return st;
    // 3. Everyone collects the slices from the rail ranks of the node.
    for (int j = 0; j < L; ++j) {
      std::size_t so, sn;
      part_range(cn, L, j, &so, &sn);
      st = e.space->copy(out + so * elem, at(e.space->peer(j), so * elem), sn * elem);
      if (!ok(st)) return st;
    }
  }
  return Status::Ok;
}

}  // namespace

Status allreduce_oneshot(Engine &e, const CollArgs &a) { return run_oneshot(e, a); }
Status allreduce_rd(Engine &e, const CollArgs &a) { return run_hier<false>(e, a); }
Status allreduce_ring(Engine &e, const CollArgs &a) { return run_hier<true>(e, a); }

}  // namespace gcoll
