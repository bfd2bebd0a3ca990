// Allreduce, fused: device buffers on one node, where the space fuses: per chunk of the
// bank, one kernel per rank copies its input into its bank, raises its flag, waits for the
// peers' flags and reduces all banks into its result (kernels/fused.h). One launch and one
// wait per chunk; about (3 + n) x S bytes of memory traffic per rank, for small and
// mid-size messages.
#include <algorithm>

#include "coll/algorithms.h"

namespace gcoll {

Status allreduce_fused(CallContext &cx, const CollArgs &a) {
  const std::size_t elem = a.elem, step = std::max<std::size_t>(1, cx.space->capacity() / elem);
  const void *in = a.sendbuf ? a.sendbuf : a.recvbuf;
  FusedCall f;
  f.kind = FusedKind::Allreduce;
  f.dtype = a.dtype;
  f.op = a.op;
  f.elem = elem;
  for (std::size_t c0 = 0; c0 < a.count; c0 += step) {
    const std::size_t cn = std::min(step, a.count - c0);
    f.in = at(in, c0 * elem);
    f.out = at(a.recvbuf, c0 * elem);
    f.bytes = cn * elem;
    const Status st = cx.space->fused(f);
    if (!ok(st)) return st;  // alike on every rank (or the space is broken: a timeout)
  }
  return Status::Ok;
}

}  // namespace gcoll
