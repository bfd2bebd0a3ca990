// Rabenseifner's allreduce along a rail: reduce-scatter by recursive halving, then
// allgather by recursive doubling, among the largest power of two p <= n ranks. The other
// n - p ranks fold in first and out last, as in recursive doubling (ranks 0 .. 2(n-p)-1
// pair up; the even one of each pair hands its buffer to the odd one and gets the result
// back at the end).
//
// Halving step i (distance p/2, p/4, ..., 1): partners hold the same segment; the one
// whose vrank has that bit clear keeps the lower half (the larger one when the length is
// odd), the other the upper half; each sends the half it gives away and reduces the half
// it keeps with what it receives. After log2(p) steps vrank v holds the full reduction
// of the v-th segment. The allgather undoes the steps in reverse: send what I hold,
// receive the partner's half. Bytes sent per rank: 2(p-1)/p x S (plus S to fold), in
// 2 log2(p) steps (plus 2 to fold).
#include "coll/rail.h"

namespace gcoll {

namespace {

char *at(void *p, std::size_t off) { return static_cast<char *>(p) + off; }

}  // namespace

void schedule_rabenseifner(const ScheduleArgs &a, std::vector<RailStep> *steps) {
  const int n = a.n, me = a.rank;
  const std::size_t count = a.count, elem = a.elem, bytes = count * elem;
  void *buf = a.buf, *tmp = a.tmp;
  const int p = pow2_floor(n), extra = n - p, v = rd_vrank(n, me);
  int levels = 0;
  while ((1 << levels) < p) ++levels;
  // Fold in (tag 0).
  if (me < 2 * extra) {
    if (me % 2 == 0) steps->push_back({me + 1, -1, buf, bytes, nullptr, 0, nullptr, 0, 0});
    else steps->push_back({-1, me - 1, nullptr, 0, tmp, bytes, buf, count, 0});
  }
  if (v >= 0) {
    struct Seg {
      std::size_t lo, len;
    };
    std::vector<Seg> keep(levels), give(levels);
    std::size_t lo = 0, len = count;
    int tag = 1;
    // Reduce-scatter by recursive halving (tags 1 .. levels).
    for (int i = 0; i < levels; ++i) {
      const int mask = p >> (i + 1), partner = rd_real_rank(n, v ^ mask);
      const std::size_t lower = len - len / 2;
      const bool low = !(v & mask);
      keep[i] = low ? Seg{lo, lower} : Seg{lo + lower, len - lower};
      give[i] = low ? Seg{lo + lower, len - lower} : Seg{lo, lower};
      steps->push_back({partner, partner, at(buf, give[i].lo * elem), give[i].len * elem, tmp, keep[i].len * elem,
                        at(buf, keep[i].lo * elem), keep[i].len, tag++});
      lo = keep[i].lo;
      len = keep[i].len;
    }
    // Allgather by recursive doubling (tags levels+1 .. 2 levels).
    for (int i = levels - 1; i >= 0; --i) {
      const int partner = rd_real_rank(n, v ^ (p >> (i + 1)));
      steps->push_back({partner, partner, at(buf, keep[i].lo * elem), keep[i].len * elem, at(buf, give[i].lo * elem),
                        give[i].len * elem, nullptr, 0, tag++});
    }
  }
  // Fold out (the same tag on both sides).
  const int tag = 1 + 2 * levels;
  if (me < 2 * extra) {
    if (me % 2 == 1) steps->push_back({me - 1, -1, buf, bytes, nullptr, 0, nullptr, 0, tag});
    else steps->push_back({-1, me + 1, nullptr, 0, buf, bytes, nullptr, 0, tag});
  }
}

}  // namespace gcoll
