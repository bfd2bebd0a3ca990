// reduce_scatter_block @rails: several nodes of the same size, host buffers: reduce_scatter
// @rails (reduce_scatter_rails.cc) with equal blocks of CollArgs::count elements.
#include "coll/algorithms.h"

namespace gcoll {

Status reduce_scatter_block_rails(CallContext &cx, const CollArgs &a) {
  return reduce_scatter_rails_blocks(cx, a, [&a](int) { return a.count; });
}

}  // namespace gcoll
