// Allgatherv, direct: device buffers on one node, zero-copy (CUDA IPC): every rank exposes
// its own block (its send buffer; in place, its block of the receive buffer) and copies
// every peer's block straight out of it into its own receive buffer, at its own offsets
// (CollArgs::block_bytes, rank-uniform; block_offsets, this rank's). One sync before, the
// space's finish() after (no rank returns while a peer still reads its block). In place
// too: a rank reads only peers' own blocks, which no one writes (MPI forbids overlapping
// receive blocks).
#include "coll/algorithms.h"

namespace gcoll {

Status allgatherv_direct(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = t.local_size, me = t.local_rank;
  const void *mine = a.sendbuf ? a.sendbuf : at(a.recvbuf, a.block_offsets[t.rank]);
  Status st = cx.space->expose(0, mine, a.block_bytes[t.rank]);
  const Status s1 = cx.space->sync();
  if (!ok(st)) return st;
  if (!ok(s1)) return s1;
  for (int k = 0; ok(st) && k < L; ++k) {
    const int q = (me + k) % L;  // start with my own block, then spread the readers
    const int r = t.members[t.node][q];
    if (!a.block_bytes[r] || (q == me && !a.sendbuf)) continue;  // in place: mine is there
    void *p = nullptr;
    st = cx.space->exposed(q, 0, &p);
    if (ok(st)) st = cx.space->copy(at(a.recvbuf, a.block_offsets[r]), p, a.block_bytes[r]);
  }
  if (!ok(st)) cx.space->mark_failed();
  return st;
}

}  // namespace gcoll
