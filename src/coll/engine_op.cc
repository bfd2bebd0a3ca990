#include "coll/engine_op.h"

#include "coll/team.h"
#include "coll/team_memory.h"

namespace gcoll {

void EngineOp::keep_arrays(int comm_size) {
  if (!args.block_bytes && !args.block_offsets) return;
  const std::size_t n = static_cast<std::size_t>(comm_size);
  arrays_.assign(2 * n, 0);
  if (args.block_bytes) std::copy(args.block_bytes, args.block_bytes + n, arrays_.begin());
  if (args.block_offsets) std::copy(args.block_offsets, args.block_offsets + n, arrays_.begin() + n);
  if (args.block_bytes) args.block_bytes = arrays_.data();
  if (args.block_offsets) args.block_offsets = arrays_.data() + n;
}

std::shared_ptr<EngineOp> EngineOp::fresh() const {
  std::shared_ptr<EngineOp> op = std::make_shared<EngineOp>();
  op->args = args;
  op->plan = plan;
  op->arrays_ = arrays_;
  const std::size_t n = arrays_.size() / 2;
  if (args.block_bytes) op->args.block_bytes = op->arrays_.data();
  if (args.block_offsets) op->args.block_offsets = op->arrays_.data() + n;
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
