// Reduce_scatter along the NVLink ring (Topology::ring, coll/device_topo.h): the
// allreduce's ring reduce-scatter (allreduce_nvring.cc) with the (uneven) blocks as its
// segments, a bank of each block per round; each rank reads only its predecessor's bank.
// Rounds: the largest block's banks (rank-uniform: the counts are), L - 1 syncs each; a
// block that has no part in a round is an empty segment (its syncs still happen).
//
// In place the input is the receive buffer and the result its beginning: round k writes
// result elements [k s, k s + n) (s: a bank's elements), whose input lies in some block
// b at element x - off(b) <= x < (k + 1) s of it: read in round k or before. Only the last
// step's reduction reads an input range (my block's) while it writes; where that range is
// not the result's own (my block is not the first), it could overlap it in part, which a
// reduction may not do (memspace.h): the result goes to the scratch first, then into place.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status reduce_scatter_nvring(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t);
  const std::size_t elem = a.elem, cap = cx.space->capacity(), step = std::max<std::size_t>(cap / elem, 1);
  // One node: the comm rank of local rank lr is members[node][lr]; blocks in comm rank order.
  const auto rank_of = [&](int lr) { return t.members[t.node][lr]; };
  std::vector<std::size_t> off(static_cast<std::size_t>(t.size) + 1, 0);
  std::size_t most = 0;
  for (int r = 0; r < t.size; ++r) {
    off[r + 1] = off[r] + static_cast<std::size_t>(a.counts[r]);
    most = std::max(most, static_cast<std::size_t>(a.counts[r]));
  }
  const int me = t.rank;
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  const bool via_work = !a.sendbuf && off[me] != 0;
  char *staged = cx.work + cap;  // past the partial sums' bank (work: 4 x capacity)
  Status st = Status::Ok;
  for (std::size_t c0 = 0; c0 < most; c0 += step) {
    // Segment j ends complete at ring position j - 1: the block of the rank there.
    const RingSegment seg = [&](int j, std::size_t *o, std::size_t *n) {
      const int r = rank_of(t.ring[(j + L - 1) % L]);
      const std::size_t cnt = off[r + 1] - off[r];
      *o = off[r] + std::min(c0, cnt);
      *n = c0 < cnt ? std::min(step, cnt - c0) : 0;
    };
    std::size_t o, n;
    seg((pos + 1) % L, &o, &n);
    const Status s = nvring_reduce_scatter(cx, a, in, seg, via_work ? staged : at(a.recvbuf, c0 * elem));
    if (ok(st)) st = s;
    if (ok(st) && via_work && n) st = cx.space->copy(at(a.recvbuf, c0 * elem), staged, n * elem);
  }
  return st;
}

}  // namespace gcoll
