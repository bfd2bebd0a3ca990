// Inter-node steps among the ranks of one rail (one rank per node), over UCX.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "coll/memspace.h"
#include "kernels/types.h"
#include "ucx/transport.h"

namespace gcoll {

namespace ucx {
class Group;
}

struct Rail {
  ucx::Group *group;
  MemSpace *space;        // reductions and copies
  std::uint32_t seq;      // call number: tags never match another call's messages
  double timeout_s;
  int *steps = nullptr;   // counts the network rounds this rank takes part in (stats)
  std::uint32_t tag(int step) const { return (seq << 12) | static_cast<std::uint32_t>(step & 0xfff); }
};

// An allreduce along the rail as a list of steps, run nonblocking: start() posts the
// first step, advance() moves on as messages complete (call it often: from a sync's
// wait, between other work), finish() blocks until the end. Step k: send, receive, then
// optionally reduce what was received into the local buffer.
class RailAllreduce {
 public:
  Status start(Rail r, DType t, ROp op, void *buf, std::size_t count, std::size_t elem, void *tmp, bool ring);
  Status advance(bool *done);
  Status finish();
  // After a failure elsewhere: cancel what is posted, so no buffer is touched afterwards.
  void abandon();

 private:
  struct Step {
    int dst = -1, src = -1;  // -1: no send / no receive
    const void *sbuf = nullptr;
    std::size_t sbytes = 0;
    void *rbuf = nullptr;
    std::size_t rbytes = 0;
    void *acc = nullptr;  // acc = op(acc, rbuf) over `elems` elements after the receive
    std::size_t elems = 0;
    int tag = 0;
  };
  Status post();
  Rail r_{};
  DType t_{};
  ROp op_{};
  std::vector<Step> steps_;
  std::size_t next_ = 0;
  bool posted_ = false;
  ucx::Request req_[2];
};

// Allreduce of buf[0, count) in place. tmp must hold count elements (rd) or
// ceil(count / n) elements (ring).
Status rail_allreduce_ring(Rail &r, DType t, ROp op, void *buf, std::size_t count, std::size_t elem, void *tmp);
// Recursive doubling; non-powers of two fold the extra ranks in first and out last.
Status rail_allreduce_rd(Rail &r, DType t, ROp op, void *buf, std::size_t count, std::size_t elem, void *tmp);
// Binomial tree from rail rank `root`.
Status rail_bcast_binomial(Rail &r, void *buf, std::size_t bytes, int root);
// Allgather of variable-size pieces: piece i (sizes[i] bytes) of rail rank i is at
// out + offset(i) (node order); my piece must already be in place. Ring or Bruck
// (tmp: sum(sizes) bytes, Bruck only).
Status rail_allgatherv_ring(Rail &r, const std::vector<std::size_t> &sizes, void *out);
Status rail_allgatherv_bruck(Rail &r, const std::vector<std::size_t> &sizes, void *out, void *tmp);

// Element range [*off, *off + *len) of part i when n elements are cut into `parts`
// near-equal contiguous parts (the first n % parts parts get one more).
void part_range(std::size_t n, int parts, int i, std::size_t *off, std::size_t *len);

// Steps of the recursive-doubling schedule for n ranks (floor(log2 n), plus 2 when n is
// not a power of two).
int rd_steps(int n);

}  // namespace gcoll
