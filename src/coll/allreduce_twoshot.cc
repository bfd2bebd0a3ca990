// Allreduce, twoshot: device buffers on one node, zero-copy: every rank exposes its
// buffers (CUDA IPC), reduces its slice reading all peers' input in place, then copies the
// other slices from their owners' results. No bank copies, no chunking: about 3 x S bytes
// of memory traffic per rank, for large messages.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

// Three syncs: (1) buffers exposed, (2) every slice reduced (so in place, a rank's input
// slice q may be overwritten only after its owner q has read it, which (2) guarantees:
// a rank writes slice q of its own buffer only in the allgather), (3) every peer has
// read my result slice (the application may reuse the buffer once the call returns):
// that one is the space's finish(), which the engine calls after every algorithm.
Status allreduce_twoshot(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.local_size, me = t.local_rank;
  const std::size_t elem = a.elem;
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  Status st = cx.space->expose(0, in, a.bytes());
  if (ok(st)) st = cx.space->expose(1, a.recvbuf, a.bytes());
  // Every rank syncs even when exposing failed: the peers must not wait forever.
  const Status s1 = cx.space->sync();
  if (!ok(st)) return st;
  if (!ok(s1)) return s1;
  std::vector<void *> ins(L), outs(L);
  for (int q = 0; ok(st) && q < L; ++q) {
    st = cx.space->exposed(q, 0, &ins[q]);
    if (ok(st)) st = cx.space->exposed(q, 1, &outs[q]);
  }
  std::size_t so = 0, sn = 0;
  part_range(a.count, L, me, &so, &sn);
  std::vector<const void *> srcs(L);
  for (int q = 0; ok(st) && q < L; ++q) srcs[q] = at(ins[q], so * elem);
  if (ok(st) && sn) st = cx.space->reduce(a.dtype, a.op, at(a.recvbuf, so * elem), srcs.data(), L, sn);
  const Status s2 = cx.space->sync();
  if (ok(st)) st = s2;
  for (int q = 0; ok(st) && q < L; ++q) {
    if (q == me) continue;
    std::size_t qo, qn;
    part_range(a.count, L, q, &qo, &qn);
    if (qn) st = cx.space->copy(at(a.recvbuf, qo * elem), at(outs[q], qo * elem), qn * elem);
  }
  return st;
}

}  // namespace gcoll
