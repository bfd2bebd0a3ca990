// Allreduce, hierarchical (rd, ring, rabenseifner, ...: one registry row per schedule
// builder): intra-node reduce-scatter (local rank j reduces slice j), allreduce of the
// slice among its rail (the schedule), intra-node allgather. Every byte crosses the
// network once per direction per rail: for large messages.
// @compressed is @ring with CollArgs::compress: each slice's ring between nodes moves its
// messages compressed (RailAllreduce::start_compressed, docs/compression.md), on host and
// on device buffers (device: encoded and decoded on the GPU, in the work area); the node's
// part (shared memory, CUDA IPC) stays full precision and uncompressed.
#include <algorithm>

#include "coll/algorithms.h"
#include "coll/rail.h"

namespace gcoll {

namespace {

// Chunk k of the message and my slice of it (elements).
struct ChunkSlice {
  std::size_t c0 = 0, cn = 0, so = 0, sn = 0;
};

}  // namespace

// Pipelined over chunks: while chunk k is on the network (rail allreduce of its slice),
// the node works on chunk k+1 (publish, sync, reduce) and then on chunk k-1's results;
// the rail's progress runs inside the syncs' waits. Two slices are in flight at most.
Status allreduce_hier(CallContext &cx, const CollArgs &a, ScheduleBuilder schedule) {
  const Topology &t = cx.topo;
  const std::size_t elem = a.elem, step = chunk_elems(cx, elem), cap = cx.space->capacity();
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const int L = t.min_local;
  const bool net = t.has_rail() && t.num_nodes > 1;
  const std::size_t nchunks = (a.count + step - 1) / step;
  char *slice[2] = {cx.work, cx.work + cap};
  char *tmp[2] = {cx.work + 2 * cap, cx.work + 3 * cap};
  RailAllreduce rail[2];
  // Rank-uniform: the agreed format and the (type, op); the registry row checked the rest.
  const bool compress = a.compress != Compress::Off && compressible(a.dtype, a.op) && schedule == schedule_ring;
  if (compress && t.num_nodes > 1) process_stats().count(Counter::CompressedCalls);
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
    // Every rank takes the chunk's tag number, with a rail or not, so that the
    // communicator's count stays the same on every rank (the device engine's topology may
    // give a rank a rail that this one does not: coll/device_topo.h).
    const Rail r = next_rail(cx);
    Status st = cx.space->publish(0, at(in, p.c0 * elem), p.cn * elem);
    if (ok(st)) st = cx.space->sync();
    if (!ok(st) || !t.has_rail()) return st;
    for (int q = 0; q < t.local_size; ++q) srcs[q] = at(cx.space->peer(q), p.so * elem);
    st = cx.space->reduce(a.dtype, a.op, slice[k % 2], srcs.data(), t.local_size, p.sn);
    if (ok(st) && net && compress)
      st = rail[k % 2].start_compressed(r, a.compress, a.dtype, slice[k % 2], p.sn, elem, tmp[k % 2], cap);
    else if (ok(st) && net)
      st = rail[k % 2].start(r, schedule, a.dtype, a.op, slice[k % 2], p.sn, elem, tmp[k % 2]);
    return st;
  };
  // Node phase 2 of chunk k: rail ranks publish the finished slice; everyone collects
  // the slices of all rails.
  const auto node_out = [&](std::size_t k) {
    const ChunkSlice p = at_chunk(k);
    Status st = t.has_rail() ? cx.space->publish(p.so * elem, slice[k % 2], p.sn * elem) : Status::Ok;
    if (ok(st)) st = cx.space->sync();
    for (int j = 0; ok(st) && j < L; ++j) {
      std::size_t so, sn;
      part_range(p.cn, L, j, &so, &sn);
      st = cx.space->copy(at(a.recvbuf, (p.c0 + so) * elem), at(cx.space->peer(j), so * elem), sn * elem);
    }
    return st;
  };
  return pipeline_chunks(cx, nchunks, net ? rail : nullptr, node_in, node_out);
}

Status pipeline_chunks(CallContext &cx, std::size_t nchunks, RailAllreduce *rail,
                       const std::function<Status(std::size_t)> &node_in,
                       const std::function<Status(std::size_t)> &node_out) {
  // While a sync waits, move the chunk that is on the network along.
  const auto overlap = [&](std::size_t k) {
    if (!rail || k >= nchunks) return std::function<Status()>();
    return std::function<Status()>([rail, k] {
      bool done = false;
      return rail[k % 2].advance(&done);
    });
  };
  Status st = nchunks ? node_in(0) : Status::Ok;
  for (std::size_t k = 0; ok(st) && k < nchunks; ++k) {
    cx.space->while_waiting = overlap(k);
    if (k + 1 < nchunks) st = node_in(k + 1);
    if (ok(st) && rail) st = rail[k % 2].finish();
    cx.space->while_waiting = overlap(k + 1);
    if (ok(st)) st = node_out(k);
  }
  cx.space->while_waiting = nullptr;
  if (!ok(st) && rail)
    for (int i = 0; i < 2; ++i) rail[i].abandon();
  return st;
}

}  // namespace gcoll
