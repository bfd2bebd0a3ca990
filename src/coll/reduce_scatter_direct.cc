// Reduce_scatter, direct: device buffers on one node, not in place, zero-copy (CUDA IPC):
// every rank exposes its input (all blocks, CollArgs::counts elements each, one after the
// other) and reduces its own block reading every peer's input in place into its receive
// buffer: the two-shot's first half with uneven blocks (rsb_twoshot.cc with equal ones).
#include "coll/algorithms.h"

namespace gcoll {

Status reduce_scatter_direct(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.local_size, me = t.local_rank;
  const std::size_t elem = a.elem;
  // One node: the communicator's ranks are the local ranks, in order (topo/topology.h).
  std::size_t off = 0;
  for (int q = 0; q < me; ++q) off += static_cast<std::size_t>(a.counts[q]);
  const std::size_t mine = static_cast<std::size_t>(a.counts[me]);
  Status st = cx.space->expose(0, a.sendbuf, a.bytes());
  const Status s1 = cx.space->sync();
  if (!ok(st)) return st;
  if (!ok(s1)) return s1;
  if (!mine) return Status::Ok;
  std::vector<const void *> srcs(L);
  for (int q = 0; ok(st) && q < L; ++q) {
    void *p = nullptr;
    st = cx.space->exposed(q, 0, &p);
    srcs[q] = at(p, off * elem);
  }
  if (ok(st)) st = cx.space->reduce(a.dtype, a.op, a.recvbuf, srcs.data(), L, mine);
  if (!ok(st)) cx.space->mark_failed();
  return st;
}

}  // namespace gcoll
