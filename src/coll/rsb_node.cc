// reduce_scatter_block @node: one node, through the node's memory space (host shared
// memory, or the device space's banks). The input vector (n blocks of `count` elements,
// n = the communicator's size) goes through the banks a chunk at a time: every rank
// publishes its chunk, and every rank reduces the part of its own block (block r for
// comm rank r) that lies in the chunk, reading all peers' banks. Every rank reads every
// byte once; n x S / chunk syncs.
//
// In place the input is the receive buffer and the result its first block: a rank writes
// result element x - r*count for input element x of its block, always at or before x,
// into chunks it has already published (the banks hold copies), so nothing it still has
// to publish is overwritten.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status reduce_scatter_block_node(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const std::size_t elem = a.elem, block = a.count;
  const std::size_t total = block * static_cast<std::size_t>(t.size);
  const std::size_t step = std::max<std::size_t>(1, cx.space->capacity() / elem);
  const char *in = static_cast<const char *>(a.sendbuf ? a.sendbuf : a.recvbuf);
  char *out = static_cast<char *>(a.recvbuf);
  const std::size_t mine0 = block * static_cast<std::size_t>(t.rank), mine1 = mine0 + block;
  std::vector<const void *> srcs(static_cast<std::size_t>(t.local_size));
  for (std::size_t c0 = 0; c0 < total; c0 += step) {
    const std::size_t cn = std::min(step, total - c0);
    Status st = cx.space->publish(0, in + c0 * elem, cn * elem);
    const Status s2 = cx.space->sync();
    if (!ok(st)) return st;
    if (!ok(s2)) return s2;
    // My block's part in this chunk: [lo, hi) of the vector.
    const std::size_t lo = std::max(c0, mine0), hi = std::min(c0 + cn, mine1);
    if (lo >= hi) continue;
    for (int q = 0; q < t.local_size; ++q) srcs[static_cast<std::size_t>(q)] = static_cast<const char *>(cx.space->peer(q)) + (lo - c0) * elem;
    st = cx.space->reduce(a.dtype, a.op, out + (lo - mine0) * elem, srcs.data(), t.local_size, hi - lo);
    if (!ok(st)) return st;
  }
  return Status::Ok;
}

}  // namespace gcoll
