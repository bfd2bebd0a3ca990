// reduce_scatter_block @twoshot: device buffers on one node, zero-copy (the first half of
// the allreduce's two-shot): every rank exposes its input (CUDA IPC), and reduces its own
// block reading every peer's input in place, straight into its receive buffer. The
// space's finish() (a final sync, after every peer has read my input) ends the call.
// Not in place: there, my result would overwrite my input's first block while peer 0 may
// still read it (such calls take @node).
#include "coll/algorithms.h"

namespace gcoll {

Status reduce_scatter_block_twoshot(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.local_size;
  const std::size_t elem = a.elem, block = a.count, total = block * static_cast<std::size_t>(t.size);
  Status st = cx.space->expose(0, a.sendbuf, total * elem);
  const Status s1 = cx.space->sync();  // every rank syncs, also when its exposure failed
  if (!ok(st)) return st;
  if (!ok(s1)) return s1;
  std::vector<const void *> srcs(static_cast<std::size_t>(L));
  for (int q = 0; ok(st) && q < L; ++q) {
    void *in = nullptr;
    st = cx.space->exposed(q, 0, &in);
    srcs[static_cast<std::size_t>(q)] = static_cast<const char *>(in) + block * static_cast<std::size_t>(t.rank) * elem;
  }
  if (ok(st) && block) st = cx.space->reduce(a.dtype, a.op, a.recvbuf, srcs.data(), L, block);
  return st;
}

}  // namespace gcoll
