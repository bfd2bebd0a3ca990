// Reduce along the NVLink ring (Topology::ring, coll/device_topo.h): a pipelined chain
// that ends at the root. The root's successor on the ring starts it with its input; each
// next rank reduces its predecessor's partial sum with its own input and passes the
// result on, a bank at a time; the root (the chain's last rank) writes the whole
// reduction into its receive buffer. Each rank reads only its predecessor's bank
// (NVLink); chunks + L - 2 syncs, every link carries S bytes once. (A ring reduce-scatter
// followed by a gather to the root needs 2 (L - 1) syncs for a small message and moves
// 2 (L - 1) / L x S per link for a large one: the chain does less of both.)
// In place at the root: it reads and writes the same elements of its receive buffer in one
// reduction (memspace.h allows it); every other rank reads its send buffer.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status reduce_nvring(CallContext &cx, const CollArgs &a) {
  const Topology &t = cx.topo;
  const int L = static_cast<int>(t.ring.size()), pos = ring_position(t);
  const int pred = t.ring[(pos + L - 1) % L];
  const int root_pos = ring_position(t, t.local_of[a.root]);
  // My place in the chain: 0 for the root's successor, ..., L - 1 for the root.
  const long long e = ((pos - root_pos - 1) % L + L) % L;
  const std::size_t elem = a.elem, step = std::max<std::size_t>(cx.space->capacity() / elem, 1);
  const long long chunks = static_cast<long long>((a.count + step - 1) / step);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  char *part = cx.work;  // my partial sum of the chunk I pass on next (at most a bank)
  const auto range = [&](long long k, std::size_t *o, std::size_t *n) {
    *o = static_cast<std::size_t>(k) * step;
    *n = std::min(step, a.count - *o);
  };
  Status st = Status::Ok;
  std::size_t o, n;
  if (L == 1) return a.sendbuf && a.count ? cx.space->copy(a.recvbuf, a.sendbuf, a.bytes()) : Status::Ok;
  // Rank e passes chunk k on at round k + e: the chain's first rank its input, the others
  // the partial sum they made at round k + e - 1 from their predecessor's.
  for (long long r = 0; chunks > 0 && r < chunks + L - 2; ++r) {
    const long long mine = r - e;  // the chunk I pass on now (the root passes none)
    if (ok(st) && e < L - 1 && mine >= 0 && mine < chunks) {
      range(mine, &o, &n);
      st = cx.space->publish(0, e == 0 ? at(in, o * elem) : part, n * elem);
    }
    const Status s1 = cx.space->sync();
    if (ok(st)) st = s1;
    const long long got = r - e + 1;  // the chunk my predecessor passed on
    if (ok(st) && e > 0 && got >= 0 && got < chunks) {
      range(got, &o, &n);
      const void *srcs[2] = {cx.space->peer(pred), at(in, o * elem)};
      st = srcs[0] ? cx.space->reduce(a.dtype, a.op, e == L - 1 ? at(a.recvbuf, o * elem) : part, srcs, 2, n)
                   : Status::ErrInternal;
    }
  }
  return st;
}

}  // namespace gcoll
