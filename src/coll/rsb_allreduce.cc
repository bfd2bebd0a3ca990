// reduce_scatter_block @allreduce: several nodes, host memory. The input vector goes
// through the hierarchical allreduce (intra-node reduce-scatter, ring along every rail,
// intra-node allgather) a chunk at a time into host scratch, and every rank keeps the part
// of its own block that lies in the chunk. Correct on every topology (uneven nodes, ranks
// without a rail); the bytes between nodes are an allreduce's, about twice what a
// reduce-scatter along the rails needs (not written yet: docs/engine.md).
//
// In place: as @node, result element x - r*count is written after input chunk x's
// allreduce, at or before x, so no input still to be read is overwritten.
#include <algorithm>
#include <vector>

#include "coll/algorithms.h"

namespace gcoll {

Status reduce_scatter_block_allreduce(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const std::size_t elem = a.elem, block = a.count, total = block * static_cast<std::size_t>(t.size);
  const std::size_t step = std::max<std::size_t>(1, cx.space->capacity() / elem);
  const char *in = static_cast<const char *>(a.sendbuf ? a.sendbuf : a.recvbuf);
  char *out = static_cast<char *>(a.recvbuf);
  const std::size_t mine0 = block * static_cast<std::size_t>(t.rank), mine1 = mine0 + block;
  std::vector<char> chunk(std::max<std::size_t>(step * elem, 1));
  CollArgs c = a;
  c.coll = Coll::Allreduce;
  c.recvbuf = chunk.data();
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    const std::size_t cn = std::min(step, total - c0);
    c.sendbuf = in + c0 * elem;
    c.count = cn;
    const Status st = allreduce_hier(cx, c, schedule_ring);
    if (!ok(st)) return st;
    const std::size_t lo = std::max(c0, mine0), hi = std::min(c0 + cn, mine1);
    if (lo < hi) std::copy(chunk.data() + (lo - c0) * elem, chunk.data() + (hi - c0) * elem, out + (lo - mine0) * elem);
  }
  return Status::Ok;
}

}  // namespace gcoll
