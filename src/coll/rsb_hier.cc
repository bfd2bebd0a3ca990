// reduce_scatter_block @hier: several nodes, host or device buffers: reduce_scatter @hier
// (reduce_scatter_hier.cc) with equal blocks of CollArgs::count elements. Half the bytes
// between nodes of @allreduce (rsb_allreduce.cc): (N-1) x S in all against 2 (N-1) x S.
#include "coll/algorithms.h"

namespace gcoll {

Status reduce_scatter_block_hier(CallContext &cx, const CollArgs &a) {
  return reduce_scatter_blocks(cx, a, [&a](int) { return a.count; });
}

}  // namespace gcoll
