#include "coll/deviate.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "base/log.h"
#include "cuda/stream_order.h"
#include "mem/device_scope.h"
#include "mem/pinned.h"

namespace gcoll {

namespace {

cuda::Runtime &rt() { return cuda::runtime(); }

}  // namespace

Deviator::Deviator(MemKind mem, int gpu) : mem_(mem), gpu_(gpu) {}

Deviator::~Deviator() {
  if (order_) pinned::give_event(gpu_, order_);
  if (!scratch_) return;
  if (mem_ == MemKind::Device) pinned::put_device(scratch_);
  else pinned::put(scratch_);
}

Status Deviator::fail(const char *what, Status st) {
  why_ = std::string(what) + " (" + rt().last_error() + ")";
  return st;
}

Status Deviator::copy(void *dst, const void *src, std::size_t bytes) {
  if (!bytes) return Status::Ok;
  return rt().memcpy_async(dst, src, bytes, stream_);
}

Status Deviator::enter(CollArgs *a, int rank, int size) {
  const std::size_t block = a->count * a->elem;
  const bool in_place = a->sendbuf == nullptr;
  // Scratch: [send block][result], the result being what recvbuf holds after the call.
  std::size_t result = block;
  std::size_t send = a->coll == Coll::Bcast || in_place ? 0 : block;
  if (a->coll == Coll::Allgather) result = block * static_cast<std::size_t>(size);
  if (a->coll == Coll::Reduce_scatter_block) {
    // n input blocks (in place: in the receive buffer, which the result then starts)
    const std::size_t total = block * static_cast<std::size_t>(size);
    send = in_place ? 0 : total;
    result = in_place ? total : block;
  }
  if (a->coll == Coll::Reduce && rank != a->root) result = 0;  // only the root receives
  if (a->coll == Coll::Reduce_scatter) {
    // the input: every block (a->count elements in all); the result: my block, at the start
    send = in_place ? 0 : block;
    result = in_place ? block : static_cast<std::size_t>(a->counts[rank]) * a->elem;
  }
  if (a->coll == Coll::Alltoall) {  // n blocks of a->count bytes each way
    const std::size_t total = block * static_cast<std::size_t>(size);
    send = in_place ? 0 : total;
    result = total;
  }
  if (a->coll == Coll::Allgatherv) {  // my block; every block, one after the other
    send = in_place ? 0 : a->block_bytes[rank];
    result = block;
  }
  const std::size_t need = std::max<std::size_t>(send + result, 1);
  if (gpu_ < 0) gpu_ = rt().current_device();
  if (gpu_ < 0) return fail("no GPU for the copies of a rank whose buffers differ from the agreed kind", Status::ErrInternal);
  DeviceScope scope(gpu_);
  if (!ok(scope.status())) return fail("cannot make the GPU current", Status::ErrInternal);
  if (mem_ == MemKind::Device) {
    scratch_ = pinned::get_device(gpu_, need, &scratch_bytes_);
  } else {
    scratch_ = pinned::get(need);
    scratch_bytes_ = need;
  }
  if (!scratch_) return fail("out of memory for the scratch buffer of a rank whose buffers differ from the agreed kind", Status::ErrNoMem);
  stream_ = pinned::stream(gpu_);
  if (!stream_) return fail("no CUDA stream for the copies", Status::ErrInternal);
  order_ = pinned::take_event(gpu_);
  if (!order_) return fail("no CUDA event for the copies", Status::ErrInternal);

  char *s_send = static_cast<char *>(scratch_);
  char *s_res = s_send + send;
  // The application may have queued writes to its buffers on its default streams.
  Status st = cuda::order_after_application(rt(), stream_, order_);
  switch (a->coll) {
    case Coll::Allreduce:
      if (ok(st)) st = in_place ? copy(s_res, a->recvbuf, block) : copy(s_send, a->sendbuf, block);
      out_ = a->recvbuf;
      out_bytes_ = block;
      a->sendbuf = in_place ? nullptr : s_send;
      break;
    case Coll::Bcast:
      if (ok(st) && rank == a->root) st = copy(s_res, a->recvbuf, block);
      out_ = rank == a->root ? nullptr : a->recvbuf;  // the root's buffer does not change
      out_bytes_ = block;
      break;
    case Coll::Allgather:
      if (ok(st)) {
        st = in_place ? copy(s_res + block * static_cast<std::size_t>(rank),
                             static_cast<const char *>(a->recvbuf) + block * static_cast<std::size_t>(rank), block)
                      : copy(s_send, a->sendbuf, block);
      }
      out_ = a->recvbuf;
      out_bytes_ = result;
      a->sendbuf = in_place ? nullptr : s_send;
      break;
    case Coll::Allgatherv: {
      v_bytes_ = a->block_bytes;
      v_out_.assign(a->block_offsets, a->block_offsets + size);
      v_scratch_.assign(static_cast<std::size_t>(size), 0);
      for (std::size_t q = 1; q < v_scratch_.size(); ++q) v_scratch_[q] = v_scratch_[q - 1] + v_bytes_[q - 1];
      // Already one after the other: one copy back.
      if (v_out_ == v_scratch_) v_bytes_ = nullptr;
      if (ok(st))
        st = in_place ? copy(s_res + v_scratch_[rank], static_cast<const char *>(a->recvbuf) + v_out_[rank],
                             a->block_bytes[rank])
                      : copy(s_send, a->sendbuf, send);
      out_ = a->recvbuf;
      out_bytes_ = result;
      a->sendbuf = in_place ? nullptr : s_send;
      a->block_offsets = v_scratch_.data();
      break;
    }
    case Coll::Reduce_scatter_block:
      if (ok(st)) st = in_place ? copy(s_res, a->recvbuf, result) : copy(s_send, a->sendbuf, send);
      out_ = a->recvbuf;
      out_bytes_ = block;  // the result: the first block
      a->sendbuf = in_place ? nullptr : s_send;
      break;
    case Coll::Reduce:
      // In place only at the root: its input is its receive buffer.
      if (ok(st)) st = in_place ? copy(s_res, a->recvbuf, block) : copy(s_send, a->sendbuf, block);
      out_ = rank == a->root ? a->recvbuf : nullptr;
      out_bytes_ = result;
      a->sendbuf = in_place ? nullptr : s_send;
      if (rank != a->root) {
        a->recvbuf = nullptr;
        out_from_ = nullptr;
        if (ok(st)) st = rt().stream_synchronize(stream_);
        if (!ok(st)) return fail("copy of a buffer into the scratch of the agreed memory kind failed", st);
        return Status::Ok;
      }
      break;
    case Coll::Reduce_scatter:
    case Coll::Alltoall:
      if (ok(st)) st = in_place ? copy(s_res, a->recvbuf, result) : copy(s_send, a->sendbuf, send);
      out_ = a->recvbuf;
      out_bytes_ = a->coll == Coll::Reduce_scatter ? static_cast<std::size_t>(a->counts[rank]) * a->elem : result;
      a->sendbuf = in_place ? nullptr : s_send;
      break;
    default:  // the collectives without an engine algorithm never reach the engine
      return fail("unknown collective", Status::ErrInternal);
  }
  out_from_ = s_res;
  a->recvbuf = s_res;
  if (ok(st)) st = rt().stream_synchronize(stream_);
  if (!ok(st)) return fail("copy of a buffer into the scratch of the agreed memory kind failed", st);
  return Status::Ok;
}

Status Deviator::leave() {
  if (!out_ || !out_bytes_) return Status::Ok;
  DeviceScope scope(gpu_);
  Status st = scope.status();
  if (ok(st)) st = cuda::order_after_application(rt(), stream_, order_);
  if (v_bytes_) {  // allgatherv: block by block
    for (std::size_t q = 0; ok(st) && q < v_out_.size(); ++q)
      st = copy(static_cast<char *>(out_) + v_out_[q], static_cast<const char *>(out_from_) + v_scratch_[q],
                v_bytes_[q]);
  } else if (ok(st)) {
    st = copy(out_, out_from_, out_bytes_);
  }
  if (ok(st)) st = rt().stream_synchronize(stream_);
  if (!ok(st)) return fail("copy of the result from the scratch of the agreed memory kind failed", st);
  return Status::Ok;
}


}  // namespace gcoll
