// The engine's eight collectives on device buffers across nodes whose every node has an
// NVLink ring through all of its ranks (issue 31 item 3; coll/device_topo.h step 5: the
// device engine's nodes are the host's nodes, Topology::ring my node's ring, every node of
// the same size, so every rank has a rail). The hierarchical shape of allreduce_hier
// (node, rails, node) with the node phases along the ring: each rank reads only its ring
// predecessor's bank (the space maps only the two ring neighbours'), and the rails carry
// what crosses nodes (rail j: local rank j of every node, rail rank = node index). N nodes
// of L ranks, S bytes per rank's message, a bank of B bytes:
//
//   allreduce (allreduce_nvring_hier): per chunk of L segments of at most a bank, the ring
//     reduce-scatter of allreduce_nvring with segment j := the slice part_range(chunk, L,
//     ring[j - 1]), so that every rank ends with its own local rank's slice (rail j carries
//     the same slice on every node, whatever each node's ring order); the rail allreduce of
//     that slice (schedule_rd below 256 KiB, else schedule_ring: 2 (N-1)/N x S/L bytes per
//     rank between nodes); the ring allgather. 2 (L - 1) syncs per chunk, about 2 S per
//     NVLink. Not pipelined (a chunk's rail phase does not overlap the next chunk's ring).
//   reduce: the allreduce's chunks, the slice reduced along its rail toward the root's node
//     (steps_binomial_reduce: (N - 1) x S in all, log2 N rounds at the root), the ring
//     allgather on the root's node only (the root into its receive buffer, its node peers
//     into the work area: chunks of at most 2 banks there).
//   reduce_scatter, reduce_scatter_block: ring_hier_reduce_scatter below: per round a bank
//     of input packed rail-major, the ring reduce-scatter, a ring reduce-scatter along the
//     rail with the nodes' slices as segments ((N - 1) x S in all, as reduce_scatter_hier),
//     the ring allgather of the node's own range; 2 (L - 1) syncs a round. In place where
//     the nodes' ranks are not consecutive in the communicator (the caller's fallback):
//     the allreduce a chunk (2 banks) at a time into the work area, each rank keeping its
//     block, twice those bytes.
//   bcast: the root's local rank's rail carries the message between nodes (binomial from
//     the root's node, a pipeline chunk at a time: ceil(log2 N) x S on the root's rail),
//     then inside every node around the ring from that local rank (bcast_nvring's
//     pipeline: chunks + L - 2 syncs, S per NVLink).
//   allgather, allgatherv: per round a piece of c = B / N bytes of every block: each rank
//     allgathers its own block's piece along its rail (ring: the pieces of its local rank
//     on every node, (N - 1) x c sent per rank), then the node's ranks pass these groups
//     around the ring (L - 1 syncs, each group forwarded straight out of the
//     predecessor's bank), each rank placing every group into its receive buffer. Between
//     nodes (N - 1) x S per rank: each block crosses every other node once.
//   alltoall: per round a piece of c = B / ((L - 1) N) bytes of every block. Inside the node
//     (alltoall_nvring's ring with aggregated pieces): rank i sends rank j the pieces of
//     its blocks for local rank j of every node (N pieces together), L - 1 syncs; then
//     rail j exchanges pairwise (rail_alltoallv_pairwise, N - 1 steps) what its node has
//     for each other node's local rank j: L pieces per pair. Between nodes (N - 1) L
//     blocks per rank (P (P - L) blocks in all: each block for another node crosses once);
//     inside the node each block travels L / 2 ring hops on average.
//
// The ranks' part of a call failing (a device error) still makes every sync of its node
// phases (memspace.h); a failing rail step returns from the rail phase, as in the other
// hierarchical algorithms (docs/engine.md, gaps).
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

namespace {

int pred_of(const Topology &t) {
  const int L = static_cast<int>(t.ring.size());
  return t.ring[(ring_position(t) + L - 1) % L];
}

int ring_at(const Topology &t, int p) {
  const int L = static_cast<int>(t.ring.size());
  return t.ring[((p % L) + L) % L];
}

// The rail schedule of a hierarchical allreduce by the call's size (rank-uniform), as the
// defaults choose @rd and @ring.
ScheduleBuilder schedule_for(const CollArgs &a) {
  return a.bytes() < (256u << 10) ? schedule_rd : schedule_ring;
}

// One chunk of the ring-hier allreduce: in[0, cn) (elements) reduced over the whole
// communicator into dst[0, cn) (dst == in: in place). tmp: the rail schedule's scratch,
// at least a slice (cn / L rounded up, elements). cx.work[0, capacity) is the ring
// reduce-scatter's partial sum. Every segment (<= a bank) fits the bank. root_node >= 0:
// a reduce toward that node instead (each slice reduced along its rail by a binomial
// reduce, steps_binomial_reduce; only that node's ranks run the ring allgather).
Status ring_hier_chunk(CallContext &cx, const CollArgs &a, const void *in, std::size_t cn, void *dst, void *tmp,
                       ScheduleBuilder sched, int root_node = -1) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t), pred = pred_of(t);
  const std::size_t elem = a.elem;
  // Segment j ends reduced at ring position j - 1: the slice of the local rank there.
  const RingSegment seg = [&](int j, std::size_t *o, std::size_t *n) { part_range(cn, L, ring_at(t, j - 1), o, n); };
  std::size_t so, sn;
  seg(pos + 1, &so, &sn);  // my own local rank's slice
  Rail r = next_rail(cx);  // every rank, so that the tag numbers stay alike
  Status st = nvring_reduce_scatter(cx, a, in, seg, at(dst, so * elem));
  // The slice along my rail (every rail rank has the same slice length: the same cn).
  if (ok(st) && sn && t.num_nodes > 1) {
    if (root_node < 0) {
      st = rail_allreduce(r, sched, a.dtype, a.op, at(dst, so * elem), sn, elem, tmp);
    } else {
      std::vector<RailStep> steps;
      steps_binomial_reduce(t.num_nodes, t.node, root_node, sn, elem, at(dst, so * elem), tmp, &steps);
      RailAllreduce ra;
      st = ra.start_steps(r, a.dtype, a.op, std::move(steps));
      if (ok(st)) st = ra.finish();
    }
  }
  if (root_node >= 0 && t.node != root_node) return st;  // (the other nodes are done with the chunk)
  // Ring allgather: at step s pass on segment pos + 1 - s, copy segment pos - s.
  std::size_t ro, rn;
  for (int s = 0; s < L - 1; ++s) {
    seg(pos + 1 - s, &so, &sn);
    if (ok(st) && sn) st = cx.space->publish(0, at(dst, so * elem), sn * elem);
    const Status s1 = cx.space->sync();
    if (ok(st)) st = s1;
    seg(pos - s, &ro, &rn);
    if (ok(st) && rn)
      st = cx.space->peer(pred) ? cx.space->copy(at(dst, ro * elem), cx.space->peer(pred), rn * elem)
                                : Status::ErrInternal;
  }
  return st;
}

// The allreduce of in[0, total) chunk by chunk into the work area (chunks of at most two
// banks: work = [partial sums | rail scratch | the chunk's result, 2 banks]); keep(c0, cn,
// result) copies what this rank keeps of chunk [c0, c0 + cn).
Status reduce_through_work(CallContext &cx, const CollArgs &a, const void *in, std::size_t total,
                           const std::function<Status(std::size_t, std::size_t, const char *)> &keep) {
  const std::size_t elem = a.elem, cap = cx.space->capacity();
  const std::size_t step = std::max<std::size_t>(2 * cap / elem, 1);
  char *tmp = cx.work + cap, *res = cx.work + 2 * cap;
  const ScheduleBuilder sched = schedule_for(a);
  Status st = Status::Ok;
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    const std::size_t cn = std::min(step, total - c0);
    const Status s = ring_hier_chunk(cx, a, at(in, c0 * elem), cn, res, tmp, sched);
    if (ok(st)) st = s;
    if (ok(st)) st = keep(c0, cn, res);
  }
  return st;
}

// Reduce-scatter of blocks of cnt[r] elements (comm rank r's, in comm rank order in the
// input) without the allreduce's second pass: node x's range R_x is its members' blocks
// in local order; round k takes q elements of every node's range (q: N x q fit a bank),
// slice j (part_range over L) of each going to local rank j. The round's input is packed
// rail-major (for each local rank j, its slice of every node's range, node order), so
// that the ring reduce-scatter's segment of local rank j is one run: after it local rank
// j holds the node's partial sums of its slice of every range; its rail reduce-scatters
// them (steps_ring_reduce_scatter: node x's slice ends on rail rank x, (N - 1) / N of
// the slices sent); each node's ranks then pass their finished slices of their own range
// around the ring (L - 1 syncs) and each copies its block's part. Between nodes
// (N - 1) x S in all (S: the whole input), as reduce_scatter_hier. In place only where
// every node's ranks are consecutive in the communicator, in local order (then a round
// writes results only over input that an earlier round or this one has read); the caller
// goes through the allreduce elsewhere.
Status ring_hier_reduce_scatter(CallContext &cx, const CollArgs &a, const std::vector<std::size_t> &cnt) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), N = t.num_nodes, pos = ring_position(t), pred = pred_of(t);
  const int me = t.local_rank;
  const std::size_t elem = a.elem, cap = cx.space->capacity();
  const std::size_t q = std::max<std::size_t>(cap / (static_cast<std::size_t>(N) * elem), 1);
  std::vector<std::size_t> in_off(static_cast<std::size_t>(t.size) + 1, 0), rlen(N, 0);
  for (int r = 0; r < t.size; ++r) in_off[r + 1] = in_off[r] + cnt[r];
  std::vector<std::vector<std::size_t>> rpos(N, std::vector<std::size_t>(L, 0));  // block i's offset in R_x
  std::size_t most = 0;
  for (int x = 0; x < N; ++x) {
    for (int i = 0; i < L; ++i) {
      rpos[x][i] = rlen[x];
      rlen[x] += cnt[t.members[x][i]];
    }
    most = std::max(most, rlen[x]);
  }
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  char *packed = cx.work + cap, *mine = cx.work + 2 * cap, *tmp = cx.work + 3 * cap, *gathered = packed;
  Status st = Status::Ok;
  std::vector<std::size_t> qx(N), seg_off(N), seg_len(N), run(static_cast<std::size_t>(L) + 1);
  for (std::size_t k0 = 0; k0 < most; k0 += q) {
    for (int x = 0; x < N; ++x) qx[x] = k0 < rlen[x] ? std::min(q, rlen[x] - k0) : 0;
    // The packed runs: run[j] .. run[j + 1] is local rank j's (its slice of every range).
    std::size_t so, sn;
    run[0] = 0;
    for (int j = 0; j < L; ++j) {
      run[j + 1] = run[j];
      for (int x = 0; x < N; ++x) {
        part_range(qx[x], L, j, &so, &sn);
        // R_x elements [k0 + so, k0 + so + sn) from the blocks they lie in.
        const std::size_t p0 = k0 + so, p1 = p0 + sn;
        for (int i = 0; ok(st) && i < L && sn; ++i) {
          const int b = t.members[x][i];
          const std::size_t lo = std::max(p0, rpos[x][i]), hi = std::min(p1, rpos[x][i] + cnt[b]);
          if (lo < hi)
            st = cx.space->copy(packed + (run[j + 1] + lo - p0) * elem, at(in, (in_off[b] + lo - rpos[x][i]) * elem),
                                (hi - lo) * elem);
        }
        if (j == me) {
          seg_off[x] = run[j + 1] - run[j];
          seg_len[x] = sn;
        }
        run[j + 1] += sn;
      }
    }
    const RingSegment seg = [&](int j, std::size_t *o, std::size_t *n) {
      const int lr = ring_at(t, j - 1);
      *o = run[lr];
      *n = run[lr + 1] - run[lr];
    };
    const Status s0 = nvring_reduce_scatter(cx, a, packed, seg, mine);
    if (ok(st)) st = s0;
    Rail r = next_rail(cx);
    if (ok(st) && N > 1 && run[me + 1] > run[me]) {
      std::vector<RailStep> steps;
      steps_ring_reduce_scatter(N, t.node, seg_off, seg_len, elem, mine, tmp, &steps);
      RailAllreduce ra;
      st = ra.start_steps(r, a.dtype, a.op, std::move(steps));
      if (ok(st)) st = ra.finish();
    }
    // My node's range of the round, whole on every rank of the node: my slice in place,
    // the others around the ring.
    const std::size_t qn = qx[t.node];
    const RingSegment mine_of = [&](int j, std::size_t *o, std::size_t *n) {
      part_range(qn, L, ring_at(t, j - 1), o, n);
    };
    mine_of(pos + 1, &so, &sn);
    if (ok(st) && sn) st = cx.space->copy(gathered + so * elem, mine + seg_off[t.node] * elem, sn * elem);
    std::size_t ro, rn;
    for (int s = 0; s < L - 1; ++s) {
      mine_of(pos + 1 - s, &so, &sn);
      if (ok(st) && sn) st = cx.space->publish(0, gathered + so * elem, sn * elem);
      const Status s1 = cx.space->sync();
      if (ok(st)) st = s1;
      mine_of(pos - s, &ro, &rn);
      if (ok(st) && rn)
        st = cx.space->peer(pred) ? cx.space->copy(gathered + ro * elem, cx.space->peer(pred), rn * elem)
                                  : Status::ErrInternal;
    }
    // My block's part of the round.
    const std::size_t b0 = rpos[t.node][me], lo = std::max(b0, k0), hi = std::min(b0 + cnt[t.rank], k0 + qn);
    if (ok(st) && lo < hi)
      st = cx.space->copy(at(a.recvbuf, (lo - b0) * elem), gathered + (lo - k0) * elem, (hi - lo) * elem);
  }
  return st;
}

// Copies the part of chunk [c0, c0 + cn) that lies in my block [b0, b0 + bn) (elements of
// the input) to my receive buffer at element (x - b0).
Status keep_block(CallContext &cx, const CollArgs &a, std::size_t b0, std::size_t bn, std::size_t c0, std::size_t cn,
                  const char *res) {
  const std::size_t lo = std::max(b0, c0), hi = std::min(b0 + bn, c0 + cn);
  if (lo >= hi) return Status::Ok;
  return cx.space->copy(at(a.recvbuf, (lo - b0) * a.elem), res + (lo - c0) * a.elem, (hi - lo) * a.elem);
}

// Bcast around my node's ring from local rank root_lr, a bank at a time, pipelined
// (bcast_nvring with a node-local root).
Status ring_bcast(CallContext &cx, void *buf, std::size_t bytes, int root_lr) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t), pred = pred_of(t);
  const long long d = ((pos - ring_position(t, root_lr)) % L + L) % L;  // my distance from the root
  const std::size_t cap = cx.space->capacity();
  const long long chunks = static_cast<long long>((bytes + cap - 1) / cap);
  const auto range = [&](long long k, std::size_t *o, std::size_t *n) {
    *o = static_cast<std::size_t>(k) * cap;
    *n = std::min(cap, bytes - *o);
  };
  Status st = Status::Ok;
  std::size_t o, n;
  for (long long r = 0; chunks > 0 && r < chunks + L - 2; ++r) {
    const long long mine = r - d;
    if (ok(st) && d < L - 1 && mine >= 0 && mine < chunks) {
      range(mine, &o, &n);
      st = cx.space->publish(0, at(buf, o), n);
    }
    const Status s1 = cx.space->sync();
    if (ok(st)) st = s1;
    const long long got = r - d + 1;
    if (ok(st) && d > 0 && got >= 0 && got < chunks) {
      range(got, &o, &n);
      st = cx.space->peer(pred) ? cx.space->copy(at(buf, o), cx.space->peer(pred), n) : Status::ErrInternal;
    }
  }
  return st;
}

// The blocks of an allgather (B bytes at r x B) or allgatherv (block_bytes, block_offsets).
struct Blocks {
  const std::size_t *bytes = nullptr, *offs = nullptr;
  std::size_t B = 0;
  std::size_t size(int r) const { return bytes ? bytes[r] : B; }
  std::size_t off(int r) const { return offs ? offs[r] : static_cast<std::size_t>(r) * B; }
  std::size_t piece(int r, std::size_t o, std::size_t c) const {
    const std::size_t b = size(r);
    return o < b ? std::min(c, b - o) : 0;
  }
};

Status allgather_blocks(CallContext &cx, const CollArgs &a, const Blocks &bl) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), N = t.num_nodes, pos = ring_position(t), pred = pred_of(t);
  const int me = t.local_rank;
  const std::size_t cap = cx.space->capacity(), c = std::max<std::size_t>(cap / static_cast<std::size_t>(N), 1);
  std::size_t most = 0;
  for (int r = 0; r < t.size; ++r) most = std::max(most, bl.size(r));
  const void *mine = a.sendbuf ? a.sendbuf : at(a.recvbuf, bl.off(t.rank));
  char *grp = cx.work;  // my rail's pieces, in node order
  Status st = Status::Ok;
  if (a.sendbuf && bl.size(t.rank)) st = cx.space->copy(at(a.recvbuf, bl.off(t.rank)), a.sendbuf, bl.size(t.rank));
  std::vector<std::size_t> sz(N), off(N + 1);
  // The pieces (sizes and offsets, node order) of local rank g's group in the round at o.
  const auto group = [&](int g, std::size_t o) {
    off[0] = 0;
    for (int x = 0; x < N; ++x) {
      sz[x] = bl.piece(t.members[x][g], o, c);
      off[x + 1] = off[x] + sz[x];
    }
  };
  // Group g (at src, laid out as group(g, o)) into my receive buffer, my own block excepted.
  const auto place = [&](int g, std::size_t o, const void *src) {
    group(g, o);
    for (int x = 0; ok(st) && x < N; ++x) {
      const int r = t.members[x][g];
      if (sz[x] && r != t.rank) st = cx.space->copy(at(a.recvbuf, bl.off(r) + o), at(src, off[x]), sz[x]);
    }
  };
  for (std::size_t o = 0; o < most; o += c) {
    group(me, o);
    if (ok(st) && sz[t.node]) st = cx.space->copy(grp + off[t.node], at(mine, o), sz[t.node]);
    Rail r = next_rail(cx);
    if (ok(st) && off[N] && N > 1) st = rail_allgatherv_ring(r, sz, grp);
    place(me, o, grp);
    for (int s = 0; s < L - 1; ++s) {
      group(ring_at(t, pos - s), o);
      const std::size_t n = off[N];
      if (ok(st) && n) {
        const void *src = s == 0 ? grp : cx.space->peer(pred);  // (s > 0: still in my predecessor's bank)
        st = src ? cx.space->publish(0, src, n) : Status::ErrInternal;
      }
      const Status s1 = cx.space->sync();
      if (ok(st)) st = s1;
      if (ok(st)) {
        const void *p = cx.space->peer(pred);
        if (p)
          place(ring_at(t, pos - s - 1), o, p);
        else
          st = Status::ErrInternal;
      }
    }
  }
  return st;
}

}  // namespace

Status allreduce_nvring_hier(CallContext &cx, const CollArgs &a) {
  const int L = static_cast<int>(cx.topo.ring.size());
  const std::size_t elem = a.elem, seg_max = std::max<std::size_t>(cx.space->capacity() / elem, 1);
  const std::size_t step = seg_max * static_cast<std::size_t>(L);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const ScheduleBuilder sched = schedule_for(a);
  Status st = Status::Ok;
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0);
    const Status s = ring_hier_chunk(cx, a, at(in, c0 * elem), cn, at(a.recvbuf, c0 * elem),
                                     cx.work + cx.space->capacity(), sched);
    if (ok(st)) st = s;
  }
  return st;
}

Status reduce_scatter_block_nvring_hier(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  if (a.sendbuf || nodes_in_rank_order(t))
    return ring_hier_reduce_scatter(cx, a, std::vector<std::size_t>(static_cast<std::size_t>(t.size), a.count));
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const std::size_t b0 = static_cast<std::size_t>(t.rank) * a.count;
  return reduce_through_work(cx, a, in, static_cast<std::size_t>(t.size) * a.count,
                             [&](std::size_t c0, std::size_t cn, const char *res) {
                               return keep_block(cx, a, b0, a.count, c0, cn, res);
                             });
}

Status reduce_scatter_nvring_hier(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  if (a.sendbuf || nodes_in_rank_order(t)) {
    std::vector<std::size_t> cnt(static_cast<std::size_t>(t.size));
    for (int r = 0; r < t.size; ++r) cnt[r] = static_cast<std::size_t>(a.counts[r]);
    return ring_hier_reduce_scatter(cx, a, cnt);
  }
  std::size_t b0 = 0, total = 0;
  for (int r = 0; r < t.size; ++r) {
    if (r == t.rank) b0 = total;
    total += static_cast<std::size_t>(a.counts[r]);
  }
  const std::size_t bn = static_cast<std::size_t>(a.counts[t.rank]);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  return reduce_through_work(cx, a, in, total, [&](std::size_t c0, std::size_t cn, const char *res) {
    return keep_block(cx, a, b0, bn, c0, cn, res);
  });
}

Status reduce_nvring_hier(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const bool root = t.rank == a.root;
  const int root_node = t.node_of[a.root];
  const std::size_t elem = a.elem, cap = cx.space->capacity();
  // Chunks of L segments of at most a bank; on ranks other than the root, the chunk's
  // result goes to the work area (two banks), so at most that.
  const std::size_t step = std::max<std::size_t>(
      std::min(cap / elem * static_cast<std::size_t>(t.ring.size()), 2 * cap / elem), 1);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const ScheduleBuilder sched = schedule_for(a);
  Status st = Status::Ok;
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0);
    void *dst = root ? static_cast<void *>(at(a.recvbuf, c0 * elem)) : cx.work + 2 * cap;
    const Status s = ring_hier_chunk(cx, a, at(in, c0 * elem), cn, dst, cx.work + cap, sched, root_node);
    if (ok(st)) st = s;
  }
  return st;
}

Status bcast_nvring_hier(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int root_node = t.node_of[a.root], root_lr = t.local_of[a.root];
  const std::size_t bytes = a.bytes(), step = std::max<std::size_t>(cx.chunk_bytes, 1);
  Status st = Status::Ok;
  // Between nodes along the root's local rank's rail.
  for (std::size_t c0 = 0; c0 < bytes; c0 += step) {
    Rail r = next_rail(cx);
    if (ok(st) && t.local_rank == root_lr)
      st = rail_bcast_binomial(r, at(a.recvbuf, c0), std::min(step, bytes - c0), root_node);
  }
  // Inside every node, from that local rank around the ring (its space's stream orders the
  // ring's first publish after what the rail received).
  const Status s = ring_bcast(cx, a.recvbuf, bytes, root_lr);
  return ok(st) ? s : st;
}

Status allgather_nvring_hier(CallContext &cx, const CollArgs &a) {
  Blocks bl;
  bl.B = a.bytes();
  return allgather_blocks(cx, a, bl);
}

Status allgatherv_nvring_hier(CallContext &cx, const CollArgs &a) {
  Blocks bl;
  bl.bytes = a.block_bytes;
  bl.offs = a.block_offsets;
  return allgather_blocks(cx, a, bl);
}

Status alltoall_nvring_hier(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), N = t.num_nodes, pos = ring_position(t), pred = pred_of(t);
  const int me = t.local_rank;
  const std::size_t block = a.bytes(), cap = cx.space->capacity();
  const std::size_t c =
      std::max<std::size_t>(cap / (static_cast<std::size_t>(std::max(L - 1, 1)) * static_cast<std::size_t>(N)), 1);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const auto blk = [&](const void *buf, int r, std::size_t o) {
    return at(buf, static_cast<std::size_t>(r) * block + o);
  };
  const auto piece = [&](int y, int i) { return (static_cast<std::size_t>(y) * L + i); };  // (y, i) in out, inb
  // out: what my rail sends, node y's piece = L sub-pieces (local rank i's block for local
  // rank me of node y); inb: what it receives, the same layout (node y's local ranks' blocks for me).
  char *out = cx.work, *inb = cx.work + 2 * cap;
  Status st = Status::Ok;
  for (std::size_t o = 0; o < block; o += c) {
    const std::size_t n = std::min(c, block - o), g = static_cast<std::size_t>(N) * n;  // g: one aggregated piece
    // My own blocks for local rank me of every node.
    for (int y = 0; ok(st) && y < N; ++y)
      st = cx.space->copy(out + piece(y, me) * n, blk(in, t.members[y][me], o), n);
    // Around the ring: aggregated pieces (my blocks for local rank j of every node).
    for (int s = 0; s < L - 1; ++s) {
      if (s == 0) {
        for (int h = 1; ok(st) && h < L; ++h) {
          const int j = ring_at(t, pos + h);
          for (int y = 0; ok(st) && y < N; ++y)
            st = cx.space->publish(static_cast<std::size_t>(h - 1) * g + static_cast<std::size_t>(y) * n,
                                   blk(in, t.members[y][j], o), n);
        }
      } else if (ok(st)) {
        const void *p = cx.space->peer(pred);
        st = p ? cx.space->publish(0, at(p, g), static_cast<std::size_t>(L - 1 - s) * g) : Status::ErrInternal;
      }
      const Status s1 = cx.space->sync();
      if (ok(st)) st = s1;
      // The first aggregated piece is mine: from local rank i, s + 1 places before me.
      if (ok(st)) {
        const void *p = cx.space->peer(pred);
        const int i = ring_at(t, pos - s - 1);
        for (int y = 0; ok(st) && y < N; ++y)
          st = p ? cx.space->copy(out + piece(y, i) * n, at(p, static_cast<std::size_t>(y) * n), n)
                 : Status::ErrInternal;
      }
    }
    // Along my rail: node y gets what my node has for its local rank me.
    Rail r = next_rail(cx);
    const std::vector<std::size_t> sizes(N, static_cast<std::size_t>(L) * n);
    if (ok(st)) st = rail_alltoallv_pairwise(r, sizes, out, sizes, inb);
    for (int y = 0; ok(st) && y < N; ++y)
      for (int i = 0; ok(st) && i < L; ++i)
        st = cx.space->copy(at(a.recvbuf, static_cast<std::size_t>(t.members[y][i]) * block + o),
                            inb + piece(y, i) * n, n);
  }
  return st;
}

}  // namespace gcoll
