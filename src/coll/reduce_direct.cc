// Reduce, direct: device buffers on one node, zero-copy (CUDA IPC): every rank exposes its
// input and the root its receive buffer; each rank reduces its slice of the message
// reading every peer's input in place and writes it straight into the root's buffer. No
// bank, no chunking: the root's result is whole once every rank's writes are done, which
// the space's finish() (a sync after draining each rank's stream) guarantees before any
// rank returns. In place at the root: rank r reads and writes only slice r of the root's
// buffer, in one kernel (the same elements: memspace.h allows it).
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status reduce_direct(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.local_size, me = t.local_rank, root = t.local_of[a.root];
  const std::size_t elem = a.elem;
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  Status st = cx.space->expose(0, in, a.bytes());
  if (ok(st)) st = cx.space->expose(1, me == root ? a.recvbuf : nullptr, me == root ? a.bytes() : 0);
  // Every rank syncs even when exposing failed: the peers must not wait forever.
  const Status s1 = cx.space->sync();
  if (!ok(st)) return st;
  if (!ok(s1)) return s1;
  std::size_t so = 0, sn = 0;
  part_range(a.count, L, me, &so, &sn);
  if (!sn) return Status::Ok;
  std::vector<const void *> srcs(L);
  void *out = nullptr;
  for (int q = 0; ok(st) && q < L; ++q) {
    void *p = nullptr;
    st = cx.space->exposed(q, 0, &p);
    srcs[q] = at(p, so * elem);
  }
  if (ok(st)) st = cx.space->exposed(root, 1, &out);
  if (ok(st) && !out) st = Status::ErrInternal;  // the root exposed nothing: cannot happen with sn > 0
  if (ok(st)) st = cx.space->reduce(a.dtype, a.op, at(out, so * elem), srcs.data(), L, sn);
  if (!ok(st)) cx.space->mark_failed();
  return st;
}

}  // namespace gcoll
