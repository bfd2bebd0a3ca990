// Alltoall, direct: device buffers on one node, not in place, zero-copy (CUDA IPC): every
// rank exposes its send buffer and copies its own block out of every peer's (block q of
// my receive buffer = block me of q's send buffer). One sync before, the space's finish()
// after (no rank returns while a peer still reads its send buffer). CollArgs::count is
// the bytes of one block (by type signature: the same on every rank).
#include "coll/algorithms.h"

namespace gcoll {

Status alltoall_direct(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.local_size, me = t.local_rank;
  const std::size_t block = a.bytes();
  Status st = cx.space->expose(0, a.sendbuf, block * static_cast<std::size_t>(L));
  const Status s1 = cx.space->sync();
  if (!ok(st)) return st;
  if (!ok(s1)) return s1;
  if (!block) return Status::Ok;
  for (int k = 0; ok(st) && k < L; ++k) {
    const int q = (me + k) % L;  // start with my own block, then spread the readers
    void *p = nullptr;
    st = cx.space->exposed(q, 0, &p);
    if (ok(st)) st = cx.space->copy(at(a.recvbuf, block * static_cast<std::size_t>(q)), at(p, block * static_cast<std::size_t>(me)), block);
  }
  if (!ok(st)) cx.space->mark_failed();
  return st;
}

}  // namespace gcoll
