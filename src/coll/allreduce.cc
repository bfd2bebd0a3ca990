// Allreduce algorithms.
//   oneshot: every rank reduces the whole chunk from all node peers, then every rail runs
//            recursive doubling on the whole chunk (the rails compute the same result, so
//            no intra-node broadcast is needed). Fewest steps: for small messages.
//   hierarchical (rd, ring, rabenseifner, ...: allreduce_hier with the algorithm's
//            schedule builder): intra-node reduce-scatter (local rank j reduces slice j),
//            allreduce of the slice among its rail (the schedule), intra-node allgather.
//            Every byte crosses the network once per direction per rail: for large ones.
//   twoshot: device buffers on one node, zero-copy: every rank exposes its buffers (CUDA
//            IPC), reduces its slice reading all peers' input in place, then copies the
//            other slices from their owners' results. No bank copies, no chunking:
//            about 3 x S bytes of memory traffic per rank, for large messages.
//   fused:   device buffers on one node, where the space fuses: per chunk of the bank, one
//            kernel per rank copies its input into its bank, raises its flag, waits for the
//            peers' flags and reduces all banks into its result (kernels/fused.h). One
//            launch and one wait per chunk; about (3 + n) x S bytes of memory traffic per
//            rank, for small and mid-size messages.
#include <algorithm>
#include <functional>

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
      st = rail_allreduce(rail, schedule_rd, a.dtype, a.op, at(a.recvbuf, c0 * elem), cn, elem, e.work);
      if (!ok(st)) return st;
    }
    st = share_with_railless(e, at(a.recvbuf, c0 * elem), bytes);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

// Chunk k of the message and my slice of it (elements).
struct ChunkSlice {
  std::size_t c0 = 0, cn = 0, so = 0, sn = 0;
};

// Pipelined over chunks: while chunk k is on the network (rail allreduce of its slice),
// the node works on chunk k+1 (publish, sync, reduce) and then on chunk k-1's results;
// the rail's progress runs inside the syncs' waits. Two slices are in flight at most.
Status run_hier(Engine &e, const CollArgs &a, ScheduleBuilder schedule) {
  const Topology &t = e.topo;
  const std::size_t elem = a.elem, step = chunk_elems(e, elem), cap = e.space->capacity();
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const int L = t.min_local;
  const bool net = t.has_rail() && t.num_nodes > 1;
  const std::size_t nchunks = (a.count + step - 1) / step;
  char *slice[2] = {e.work, e.work + cap};
  char *tmp[2] = {e.work + 2 * cap, e.work + 3 * cap};
  RailAllreduce rail[2];
  std::vector<const void *> srcs(t.local_size);
  const auto at_chunk = [&](std::size_t k) {
    ChunkSlice p;
    p.c0 = k * step;
    p.cn = std::min(step, a.count - p.c0);
    if (t.has_rail()) part_range(p.cn, L, t.local_rank, &p.so, &p.sn);
    return p;
  };
  // Node phase 1 of chunk k: my chunk to the node; rail ranks reduce their slice from
  // all node peers and put it on the network.
  const auto node_in = [&](std::size_t k) {
    const ChunkSlice p = at_chunk(k);
    Status st = e.space->publish(0, at(in, p.c0 * elem), p.cn * elem);
    if (ok(st)) st = e.space->sync();
    if (!ok(st) || !t.has_rail()) return st;
    for (int q = 0; q < t.local_size; ++q) srcs[q] = at(e.space->peer(q), p.so * elem);
    st = e.space->reduce(a.dtype, a.op, slice[k % 2], srcs.data(), t.local_size, p.sn);
    if (ok(st) && net)
      st = rail[k % 2].start(next_rail(e), schedule, a.dtype, a.op, slice[k % 2], p.sn, elem, tmp[k % 2]);
    return st;
  };
  // Node phase 2 of chunk k: rail ranks publish the finished slice; everyone collects
  // the slices of all rails.
  const auto node_out = [&](std::size_t k) {
    const ChunkSlice p = at_chunk(k);
    Status st = t.has_rail() ? e.space->publish(p.so * elem, slice[k % 2], p.sn * elem) : Status::Ok;
    if (ok(st)) st = e.space->sync();
    for (int j = 0; ok(st) && j < L; ++j) {
      std::size_t so, sn;
      part_range(p.cn, L, j, &so, &sn);
      st = e.space->copy(at(a.recvbuf, (p.c0 + so) * elem), at(e.space->peer(j), so * elem), sn * elem);
    }
    return st;
  };
  // While a sync waits, move the chunk that is on the network along.
  const auto overlap = [&](std::size_t k) {
    if (!net || k >= nchunks) return std::function<Status()>();
    return std::function<Status()>([&rail, k] {
      bool done = false;
      return rail[k % 2].advance(&done);
    });
  };
  Status st = nchunks ? node_in(0) : Status::Ok;
  for (std::size_t k = 0; ok(st) && k < nchunks; ++k) {
    e.space->while_waiting = overlap(k);
    if (k + 1 < nchunks) st = node_in(k + 1);
    if (ok(st) && net) st = rail[k % 2].finish();
    e.space->while_waiting = overlap(k + 1);
    if (ok(st)) st = node_out(k);
  }
  e.space->while_waiting = nullptr;
  if (!ok(st))
    for (auto &r : rail) r.abandon();
  return st;
}

// Three syncs: (1) buffers exposed, (2) every slice reduced (so in place, a rank's input
// slice q may be overwritten only after its owner q has read it, which (2) guarantees:
// a rank writes slice q of its own buffer only in the allgather), (3) every peer has
// read my result slice (the application may reuse the buffer once the call returns):
// that one is the space's finish(), which the engine calls after every algorithm.
Status run_twoshot(Engine &e, const CollArgs &a) {
  const Topology &t = e.topo;
  const int L = t.local_size, me = t.local_rank;
  const std::size_t elem = a.elem;
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  Status st = e.space->expose(0, in, a.bytes());
  if (ok(st)) st = e.space->expose(1, a.recvbuf, a.bytes());
  // Every rank syncs even when exposing failed: the peers must not wait forever.
  const Status s1 = e.space->sync();
  if (!ok(st)) return st;
  if (!ok(s1)) return s1;
  std::vector<void *> ins(L), outs(L);
  for (int q = 0; ok(st) && q < L; ++q) {
    st = e.space->exposed(q, 0, &ins[q]);
    if (ok(st)) st = e.space->exposed(q, 1, &outs[q]);
  }
  std::size_t so = 0, sn = 0;
  part_range(a.count, L, me, &so, &sn);
  std::vector<const void *> srcs(L);
  for (int q = 0; ok(st) && q < L; ++q) srcs[q] = at(ins[q], so * elem);
  if (ok(st) && sn) st = e.space->reduce(a.dtype, a.op, at(a.recvbuf, so * elem), srcs.data(), L, sn);
  const Status s2 = e.space->sync();
  if (ok(st)) st = s2;
  for (int q = 0; ok(st) && q < L; ++q) {
    if (q == me) continue;
    std::size_t qo, qn;
    part_range(a.count, L, q, &qo, &qn);
    if (qn) st = e.space->copy(at(a.recvbuf, qo * elem), at(outs[q], qo * elem), qn * elem);
  }
  return st;
}

Status run_fused(Engine &e, const CollArgs &a) {
  const std::size_t elem = a.elem, step = std::max<std::size_t>(1, e.space->capacity() / elem);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  FusedCall f;
  f.kind = FusedKind::Allreduce;
  f.dtype = a.dtype;
  f.op = a.op;
  f.elem = elem;
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0);
    f.in = at(in, c0 * elem);
    f.out = at(a.recvbuf, c0 * elem);
    f.bytes = cn * elem;
    const Status st = e.space->fused(f);
    if (!ok(st)) return st;  // alike on every rank (or the space is broken: a timeout)
  }
  return Status::Ok;
}

}  // namespace

Status allreduce_fused(Engine &e, const CollArgs &a) { return run_fused(e, a); }
Status allreduce_twoshot(Engine &e, const CollArgs &a) { return run_twoshot(e, a); }
Status allreduce_oneshot(Engine &e, const CollArgs &a) { return run_oneshot(e, a); }
Status allreduce_hier(Engine &e, const CollArgs &a, ScheduleBuilder schedule) { return run_hier(e, a, schedule); }

}  // namespace gcoll
