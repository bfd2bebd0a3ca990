#include "coll/engine_op.h"

#include "coll/team.h"
#include "coll/team_memory.h"

namespace gcoll {

namespace {
// The int arrays of the call an op may read after the call returned: reduce_scatter's
// recvcounts, allgatherv's receive counts and displacements (packer), in this order.
constexpr int kIntArrays = 5;
const int **int_array(CollArgs &a, PackPlan &p, int k) {
  switch (k) {
    case 0: return &a.counts;
    case 1: return &p.send.counts;
    case 2: return &p.send.displs;
    case 3: return &p.recv.counts;
    default: return &p.recv.displs;
  }
}
}  // namespace

void EngineOp::point_arrays() {
  const std::size_t n = arrays_.size() / 2;
  if (args.block_bytes) args.block_bytes = arrays_.data();
  if (args.block_offsets) args.block_offsets = arrays_.data() + n;
  const std::size_t m = int_arrays_.size() / kIntArrays;
  for (int k = 0; k < kIntArrays; ++k) {
    const int **a = int_array(args, plan, k);
    if (*a) *a = int_arrays_.data() + k * m;
  }
}

void EngineOp::keep_arrays(int comm_size) {
  // Copied at the call: MPI forbids changing them before completion, but an application
  // that frees or reuses them once the call returned works under an MPI that read them
  // at the call (mpi4py 4.1's MPI_Ireduce_scatter_c over an MPI-3.1 library passes a
  // temporary: the engine then read freed memory, a crash, before this copy).
  const std::size_t n = static_cast<std::size_t>(comm_size);
  if (args.block_bytes || args.block_offsets) {
    arrays_.assign(2 * n, 0);
    if (args.block_bytes) std::copy(args.block_bytes, args.block_bytes + n, arrays_.begin());
    if (args.block_offsets) std::copy(args.block_offsets, args.block_offsets + n, arrays_.begin() + n);
  }
  bool any = false;
  for (int k = 0; k < kIntArrays; ++k) any = any || *int_array(args, plan, k);
  if (any) {
    int_arrays_.assign(kIntArrays * n, 0);
    for (int k = 0; k < kIntArrays; ++k)
      if (const int *a = *int_array(args, plan, k)) std::copy(a, a + n, int_arrays_.begin() + k * n);
  }
  point_arrays();
}

std::shared_ptr<EngineOp> EngineOp::fresh() const {
  std::shared_ptr<EngineOp> op = std::make_shared<EngineOp>();
  op->args = args;
  op->plan = plan;
  op->arrays_ = arrays_;
  op->int_arrays_ = int_arrays_;
  op->point_arrays();
  return op;
}

Status EngineOp::enter(Team *cs, const LocalMemory &lm, const CallMemory &cm, const Buffers &bufs) {
  LocalMemory mine = lm;
  if (plan.any()) {
    plan.send.device = lm.is_device[0];
    plan.recv.device = lm.is_device[1];
    const Status st = packer_.enter(&args, plan, cs->rank, cs->size, lm.ordinal);
    if (!ok(st)) {
      why_ = packer_.why();
      return st;
    }
    mine = packed_memory(lm, packer_.packed_send(), packer_.packed_recv(), bufs);
  }
  gpu_ = lm.ordinal;
  if (fits_agreed(mine, cm, cs->device)) return Status::Ok;
  // A deviator: the same engine call, on scratch of the agreed kind.
  process_stats().count(Counter::Deviations);
  const int gpu = args.mem == MemKind::Device ? cs->device : mine.ordinal;
  dev_.reset(new Deviator(args.mem, gpu));
  const Status st = dev_->enter(&args, cs->rank, cs->size);
  if (!ok(st)) {
    why_ = dev_->why();
    return st;
  }
  gpu_ = dev_->gpu();
  return Status::Ok;
}

Status EngineOp::run(Team *cs, bool on_app_thread) { return cs->run_engine(args, gpu_, &rec, on_app_thread); }

Status EngineOp::leave(Status st) {
  if (dev_) {
    if (ok(st)) st = dev_->leave();
    if (!ok(st) && st != Status::NotSupported && !dev_->why().empty()) {
      why_ = dev_->why();
      return st;
    }
  }
  if (ok(st) && plan.any()) {
    st = packer_.leave();
    if (!ok(st)) why_ = packer_.why();
  }
  return st;
}

}  // namespace gcoll
