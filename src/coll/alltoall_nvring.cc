// Alltoall along the NVLink ring (Topology::ring, coll/device_topo.h): every block
// travels around the ring from its sender to its receiver, a piece of every block per
// round. At step s a rank publishes the pieces that came from the rank s places before
// it for the L - 1 - s ranks after it (step 0: its own), and from its predecessor's bank
// keeps the first (for itself) and passes the others on at step s + 1, straight from that
// bank (readable until my next sync: memspace.h) into mine. Each rank reads only its
// predecessor's bank (NVLink); per round L - 1 syncs and L (L - 1) / 2 pieces per link,
// what one direction of a ring must carry.
// In place: the blocks I send are in my receive buffer; a round publishes its pieces of
// them at step 0, before anything of that round is received into it, and rounds touch
// disjoint byte ranges of the blocks.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status alltoall_nvring(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t);
  const int pred = t.ring[(pos + L - 1) % L];
  // CollArgs::count: the bytes of one block. One node: comm rank members[node][lr].
  const std::size_t block = a.bytes();
  const auto rank_of = [&](int p) { return t.members[t.node][t.ring[((p % L) + L) % L]]; };
  const auto dst_at = [&](int r, std::size_t off) { return at(a.recvbuf, static_cast<std::size_t>(r) * block + off); };
  const auto src_at = [&](const void *buf, int r, std::size_t off) {
    return at(buf, static_cast<std::size_t>(r) * block + off);
  };
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  Status st = Status::Ok;
  if (a.sendbuf && block) st = cx.space->copy(dst_at(t.rank, 0), src_at(a.sendbuf, t.rank, 0), block);
  if (L == 1) return st;
  // A piece of each of the L - 1 blocks in transit fits a bank.
  const std::size_t piece = std::max<std::size_t>(cx.space->capacity() / static_cast<std::size_t>(L - 1), 1);
  for (std::size_t off = 0; off < block; off += piece) {
    const std::size_t n = std::min(piece, block - off);
    for (int s = 0; s < L - 1; ++s) {
      // Publish: pieces for the ranks at distance 1 .. L - 1 - s after me, in that order.
      if (s == 0) {
        for (int h = 1; ok(st) && h < L; ++h)
          st = cx.space->publish(static_cast<std::size_t>(h - 1) * n, src_at(in, rank_of(pos + h), off), n);
      } else if (ok(st)) {  // my predecessor's pieces past the first: still in its bank
        const void *p = cx.space->peer(pred);
        st = p ? cx.space->publish(0, at(p, n), static_cast<std::size_t>(L - 1 - s) * n) : Status::ErrInternal;
      }
      const Status s1 = cx.space->sync();
      if (ok(st)) st = s1;
      // The first piece is mine, from the rank s + 1 places before me.
      if (ok(st)) {
        const void *p = cx.space->peer(pred);
        st = p ? cx.space->copy(dst_at(rank_of(pos - s - 1), off), p, n) : Status::ErrInternal;
      }
    }
  }
  return st;
}

}  // namespace gcoll
