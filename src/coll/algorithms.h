// The algorithm functions, one file each (allreduce_twoshot.cc, bcast_binomial.cc,
// rsb_node.cc, ...; allgather.cc: ring and Bruck, one pipeline); the table that selects
// them is registry.cc.
#pragma once

#include <functional>

#include "coll/engine.h"
#include "mem/memspace.h"
#include "coll/rail.h"

namespace gcoll {

// Byte offsets into buffers.
inline char *at(void *p, std::size_t off) { return static_cast<char *>(p) + off; }
inline const char *at(const void *p, std::size_t off) { return static_cast<const char *>(p) + off; }
// The position of local rank `lr` (default: mine) on the device engine's NVLink ring
// (Topology::ring; the *_nvring files).
inline int ring_position(const Topology &t, int lr) {
  for (int i = 0; i < static_cast<int>(t.ring.size()); ++i)
    if (t.ring[i] == lr) return i;
  return 0;
}
inline int ring_position(const Topology &t) { return ring_position(t, t.local_rank); }
// Elements of one pipeline chunk (CallContext::chunk_bytes), at least one.
inline std::size_t chunk_elems(const CallContext &cx, std::size_t elem) { return cx.chunk_bytes / elem ? cx.chunk_bytes / elem : 1; }

// The rail for the next chunk of a call (each chunk gets its own tag sequence number;
// every rank runs the same chunks, so the numbers agree).
inline Rail next_rail(CallContext &cx) { return Rail{cx.channel, cx.space, cx.seq++, cx.timeout_s, &cx.call_steps}; }

Status allreduce_oneshot(CallContext &cx, const CollArgs &a);
// The hierarchical allreduce (intra-node reduce-scatter, the schedule along each rail,
// intra-node allgather), and its row in the table for a given schedule builder.
Status allreduce_hier(CallContext &cx, const CollArgs &a, ScheduleBuilder schedule);
template <ScheduleBuilder kSchedule>
Status allreduce_hier(CallContext &cx, const CollArgs &a) {
  return allreduce_hier(cx, a, kSchedule);
}
// The chunk pipeline of the hierarchical reductions (allreduce_hier.cc, reduce_hier.cc):
// node_in(k) runs chunk k's node phase and starts its steps on rail[k % 2]; chunk k + 1's
// node phase runs while chunk k is on the network (its steps move on inside the syncs'
// waits), then node_out(k) places chunk k's results. rail: two of them, or nullptr where
// this rank has no network phase. On failure both rails are abandoned.
Status pipeline_chunks(CallContext &cx, std::size_t nchunks, RailAllreduce *rail,
                       const std::function<Status(std::size_t)> &node_in,
                       const std::function<Status(std::size_t)> &node_out);
Status allreduce_twoshot(CallContext &cx, const CollArgs &a);
Status bcast_binomial(CallContext &cx, const CollArgs &a);
Status bcast_scatter_ag(CallContext &cx, const CollArgs &a);
// Allgather and allgatherv (CollArgs::block_bytes: uneven blocks), one pipeline.
Status allgather_ring(CallContext &cx, const CollArgs &a);
Status allgather_bruck(CallContext &cx, const CollArgs &a);
// Their pipeline step: the largest s in [1, limit] such that, on every rail (rails[j]: the
// bytes of the blocks rail j carries, every node's), the sum of min(s, bytes) fits `cap`
// (what one chunk publishes in a bank); 1 if none does.
std::size_t allgather_step(const std::vector<std::vector<std::size_t>> &rails, std::size_t cap, std::size_t limit);
// Device buffers on one node where the space fuses (MemSpace::fused): one fused op per
// chunk of at most the space's capacity, one kernel and one wait each.
Status allreduce_fused(CallContext &cx, const CollArgs &a);
// reduce_scatter_block: one node through the banks (rsb_node.cc), device buffers on one
// node zero-copy (rsb_twoshot.cc), several nodes through the allreduce (rsb_allreduce.cc).
Status reduce_scatter_block_node(CallContext &cx, const CollArgs &a);
Status reduce_scatter_block_twoshot(CallContext &cx, const CollArgs &a);
Status reduce_scatter_block_allreduce(CallContext &cx, const CollArgs &a);
Status bcast_fused(CallContext &cx, const CollArgs &a);
// Device buffers on one node, zero-copy (CUDA IPC): reduce_direct.cc,
// reduce_scatter_direct.cc, alltoall_direct.cc, allgatherv_direct.cc.
Status reduce_direct(CallContext &cx, const CollArgs &a);
Status reduce_scatter_direct(CallContext &cx, const CollArgs &a);
Status alltoall_direct(CallContext &cx, const CollArgs &a);
// Alltoall through the banks and along the rails (alltoall_hier.cc); fits: whether one byte
// of every block fits a bank of the configured size (rank-uniform).
Status alltoall_hier(CallContext &cx, const CollArgs &a);
bool alltoall_hier_fits(const CollArgs &a, const Topology &t);
Status allgatherv_direct(CallContext &cx, const CollArgs &a);
Status allgather_fused(CallContext &cx, const CollArgs &a);
// Device buffers on one node along its NVLink ring (Topology::ring): through the banks,
// each rank reading only its predecessor's.
Status allreduce_nvring(CallContext &cx, const CollArgs &a);
Status reduce_scatter_block_nvring(CallContext &cx, const CollArgs &a);
// Their ring reduce-scatter (allreduce_nvring.cc): L segments of the input, segment j at
// seg(j) (elements), reduced so that the rank at ring position p ends with segment p + 1,
// written to `result`. L - 1 syncs.
using RingSegment = std::function<void(int j, std::size_t *off, std::size_t *n)>;
Status nvring_reduce_scatter(CallContext &cx, const CollArgs &a, const void *in, const RingSegment &seg, void *result);
Status bcast_nvring(CallContext &cx, const CollArgs &a);
// Reduce and reduce_scatter across the node's banks and the rails (reduce_hier.cc): the
// input read in an order W in which each node's result is one range.
struct RedPiece {
  std::size_t w0, v0, len;  // W elements [w0, w0 + len) are the input's [v0, v0 + len)
  int rank;                 // the comm rank whose result they are (reduce: the root)
};
struct RedPlan {
  std::size_t total = 0;            // elements of W (= of the input)
  std::vector<RedPiece> pieces;     // in W order, covering [0, total)
  std::vector<std::size_t> seg0;    // node x's range of W: [seg0[x], seg0[x + 1])
  int root_node = -1;               // >= 0: a reduce toward that node; -1: a reduce-scatter
};
Status node_rail_reduce(CallContext &cx, const CollArgs &a, const RedPlan &p);
Status reduce_hier(CallContext &cx, const CollArgs &a);
Status reduce_scatter_hier(CallContext &cx, const CollArgs &a);
// Their shared part: blocks of block(r) elements for comm rank r (reduce_scatter_hier.cc).
Status reduce_scatter_blocks(CallContext &cx, const CollArgs &a, const std::function<std::size_t(int)> &block);
Status reduce_scatter_block_hier(CallContext &cx, const CollArgs &a);  // rsb_hier.cc
// Several nodes of the same size, host buffers: each rail's ranks' blocks reduced by
// their owners, one node sync per round (reduce_scatter_rails.cc); fits: a piece of every
// block fits a bank (rank-uniform: the settings and the topology).
Status reduce_scatter_rails(CallContext &cx, const CollArgs &a);
Status reduce_scatter_block_rails(CallContext &cx, const CollArgs &a);  // rsb_rails.cc
// Their shared part: blocks of block(r) elements for comm rank r.
Status reduce_scatter_rails_blocks(CallContext &cx, const CollArgs &a, const std::function<std::size_t(int)> &block);
bool reduce_scatter_rails_fits(const CollArgs &a, const Topology &t);
// reduce_scatter @hier in place needs W = the input's order: every node's ranks
// consecutive in the communicator, in local order (reduce_scatter_hier.cc).
bool nodes_in_rank_order(const Topology &t);
Status allgather_nvring(CallContext &cx, const CollArgs &a);
// The rest of the engine's collectives along the ring (one file each, <coll>_nvring.cc):
// reduce as a chain ending at the root, reduce_scatter through nvring_reduce_scatter with
// the uneven blocks as segments, alltoall and allgatherv around the ring.
Status reduce_nvring(CallContext &cx, const CollArgs &a);
Status reduce_scatter_nvring(CallContext &cx, const CollArgs &a);
Status alltoall_nvring(CallContext &cx, const CollArgs &a);
Status allgatherv_nvring(CallContext &cx, const CollArgs &a);
// The eight across nodes whose every node has an NVLink ring through all its ranks
// (nvring_hier.cc): along the ring inside each node, the rails between nodes.
Status allreduce_nvring_hier(CallContext &cx, const CollArgs &a);
Status bcast_nvring_hier(CallContext &cx, const CollArgs &a);
Status allgather_nvring_hier(CallContext &cx, const CollArgs &a);
Status allgatherv_nvring_hier(CallContext &cx, const CollArgs &a);
Status reduce_scatter_block_nvring_hier(CallContext &cx, const CollArgs &a);
Status reduce_nvring_hier(CallContext &cx, const CollArgs &a);
Status reduce_scatter_nvring_hier(CallContext &cx, const CollArgs &a);
Status alltoall_nvring_hier(CallContext &cx, const CollArgs &a);

}  // namespace gcoll
