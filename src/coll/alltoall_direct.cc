// Alltoall, direct: device buffers on one node, zero-copy (CUDA IPC): every rank exposes
// its send buffer and copies its own block out of every peer's (block q of my receive
// buffer = block me of q's send buffer). One sync before, the space's finish() after (no
// rank returns while a peer still reads its send buffer). CollArgs::count is the bytes of
// one block (by type signature: the same on every rank).
//
// In place (where the space has no banks, so that @hier cannot take it: a space that
// fuses, registry.cc): block q of my buffer and block me of q's are swapped, each pair by
// one of its two ranks, in place with three XORs (x ^= y, y ^= x, x ^= y: byte-wise
// reductions whose destination is one of their sources, which memspace.h allows). No other
// rank touches either block, so the swaps need no sync between them; the owners are spread
// so that each rank swaps about (L - 1) / 2 pairs.
#include "coll/algorithms.h"

namespace gcoll {

Status alltoall_direct(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.local_size, me = t.local_rank;
  const std::size_t block = a.bytes();
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  Status st = cx.space->expose(0, in, block * static_cast<std::size_t>(L));
  const Status s1 = cx.space->sync();
  if (!ok(st)) return st;
  if (!ok(s1)) return s1;
  if (!block) return Status::Ok;
  for (int k = 0; ok(st) && k < L; ++k) {
    const int q = (me + k) % L;  // start with my own block, then spread the readers
    if (!a.sendbuf) {
      // The pair {me, q} is mine when q is less than half the ring after me (exactly
      // half: the lower rank's).
      if (k == 0 || 2 * k > L || (2 * k == L && me > q)) continue;
      void *p = nullptr;
      st = cx.space->exposed(q, 0, &p);
      void *x = at(a.recvbuf, block * static_cast<std::size_t>(q)), *y = at(p, block * static_cast<std::size_t>(me));
      const void *xy[2] = {x, y}, *yx[2] = {y, x};
      if (ok(st)) st = cx.space->reduce(DType::Uint8, ROp::Bxor, x, xy, 2, block);
      if (ok(st)) st = cx.space->reduce(DType::Uint8, ROp::Bxor, y, yx, 2, block);
      if (ok(st)) st = cx.space->reduce(DType::Uint8, ROp::Bxor, x, xy, 2, block);
      continue;
    }
    void *p = nullptr;
    st = cx.space->exposed(q, 0, &p);
    if (ok(st)) st = cx.space->copy(at(a.recvbuf, block * static_cast<std::size_t>(q)), at(p, block * static_cast<std::size_t>(me)), block);
  }
  if (!ok(st)) cx.space->mark_failed();
  return st;
}

}  // namespace gcoll
