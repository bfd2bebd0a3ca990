// The algorithm functions (one file per collective, or per algorithm); the table is in
// registry.cc.
#pragma once

#include "coll/engine.h"
#include "mem/memspace.h"
#include "coll/rail.h"

namespace gcoll {

// The rail for the next chunk of a call (each chunk gets its own tag sequence number;
// every rank runs the same chunks, so the numbers agree).
inline Rail next_rail(Engine &e) { return Rail{e.channel, e.space, e.seq++, e.timeout_s, &e.call_steps}; }

Status allreduce_oneshot(Engine &e, const CollArgs &a);
// The hierarchical allreduce (intra-node reduce-scatter, the schedule along each rail,
// intra-node allgather), and its row in the table for a given schedule builder.
Status allreduce_hier(Engine &e, const CollArgs &a, ScheduleBuilder schedule);
template <ScheduleBuilder kSchedule>
Status allreduce_hier(Engine &e, const CollArgs &a) {
  return allreduce_hier(e, a, kSchedule);
}
Status allreduce_twoshot(Engine &e, const CollArgs &a);
Status bcast_binomial(Engine &e, const CollArgs &a);
Status bcast_scatter_ag(Engine &e, const CollArgs &a);
Status allgather_ring(Engine &e, const CollArgs &a);
Status allgather_bruck(Engine &e, const CollArgs &a);
// Device buffers on one node where the space fuses (MemSpace::fused): one fused op per
// chunk of at most the space's capacity, one kernel and one wait each.
Status allreduce_fused(Engine &e, const CollArgs &a);
// reduce_scatter_block: one node through the banks (rsb_node.cc), device buffers on one
// node zero-copy (rsb_twoshot.cc), several nodes through the allreduce (rsb_allreduce.cc).
Status reduce_scatter_block_node(Engine &e, const CollArgs &a);
Status reduce_scatter_block_twoshot(Engine &e, const CollArgs &a);
Status reduce_scatter_block_allreduce(Engine &e, const CollArgs &a);
Status bcast_fused(Engine &e, const CollArgs &a);
Status allgather_fused(Engine &e, const CollArgs &a);

}  // namespace gcoll
