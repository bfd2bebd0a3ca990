// Allgatherv along the NVLink ring (Topology::ring, coll/device_topo.h): allgather_nvring
// with uneven blocks. Every block travels around the ring, a bank of it per round: at
// step s a rank forwards its piece of the block of the rank s places before it (its own
// at step 0) and copies its predecessor's into place. Rounds: the largest block's banks
// (CollArgs::block_bytes is rank-uniform), L - 1 syncs each; a block with no piece left
// is skipped, its syncs are not. Each rank places blocks at its own offsets
// (block_offsets). In place: my block is already in my receive buffer, and a rank writes
// only other ranks' blocks (MPI forbids overlapping receive blocks).
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status allgatherv_nvring(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t);
  const int pred = t.ring[(pos + L - 1) % L];
  const std::size_t cap = cx.space->capacity();
  const auto rank_of = [&](int p) { return t.members[t.node][t.ring[((p % L) + L) % L]]; };
  std::size_t most = 0;
  for (int r = 0; r < t.size; ++r) most = std::max(most, a.block_bytes[r]);
  const auto piece = [&](int r, std::size_t off) { return off < a.block_bytes[r] ? std::min(cap, a.block_bytes[r] - off) : 0; };
  const auto where = [&](int r, std::size_t off) { return at(a.recvbuf, a.block_offsets[r] + off); };
  Status st = Status::Ok;
  if (a.sendbuf && a.block_bytes[t.rank]) st = cx.space->copy(where(t.rank, 0), a.sendbuf, a.block_bytes[t.rank]);
  for (std::size_t off = 0; off < most; off += cap) {
    for (int s = 0; s < L - 1; ++s) {
      const int fwd = rank_of(pos - s), got = rank_of(pos - s - 1);
      std::size_t n = piece(fwd, off);
      if (ok(st) && n) st = cx.space->publish(0, where(fwd, off), n);
      const Status s1 = cx.space->sync();
      if (ok(st)) st = s1;
      n = piece(got, off);
      if (ok(st) && n) st = cx.space->peer(pred) ? cx.space->copy(where(got, off), cx.space->peer(pred), n) : Status::ErrInternal;
    }
  }
  return st;
}

}  // namespace gcoll
