#include "mem/cuda_space.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/wait.h"
#include "cuda/stream_order.h"
#include "mem/cuda_space_impl.h"
#include "mem/device_scope.h"
#include "mem/host_space.h"

namespace gcoll {
namespace cuda_space_impl {

CudaSpace::~CudaSpace() {
  DeviceScope d(opt_.device);
  open_cache_.clear();
  for (std::size_t p = 0; p < peers_.size(); ++p)
    if (peers_[p] && static_cast<int>(p) != local_rank()) cuda::driver().ipc_close(peers_[p]);
  rt().free_device(work_);
  rt().free_device(mine_);
  rt().free_host(status_);
  if (done_) rt().event_destroy(done_);
  if (order_) rt().event_destroy(order_);
  if (stream_) rt().stream_destroy(stream_);
}

Status CudaSpace::setup() {
  DeviceScope d(opt_.device);
  bank_bytes_ = round_up(opt_.bank_bytes, kBankAlign);
  SetupRecord rec{};
  rec.pid = static_cast<std::int32_t>(getpid());
  rec.token = cuda::process_token();
  rec.fused_mode = static_cast<std::int32_t>(opt_.fused);
  void *status = nullptr;
  Status st = cuda_status(rt().stream_create(&stream_), "stream of the device engine");
  if (ok(st)) st = cuda_status(rt().event_create(&done_), "event of the device engine");
  if (ok(st)) st = cuda_status(rt().event_create(&order_), "event of the device engine");
  if (ok(st))
    st = cuda_status(rt().malloc_device(&mine_, 2 * bank_bytes_ + round_up(sizeof(FusedControl), kBankAlign)),
                     "device memory (banks)");
  if (ok(st))
    st = cuda_status(rt().malloc_host(&status, sizeof(std::uint64_t) * kFusedMaxBlocks), "pinned memory (status)");
  status_ = static_cast<std::uint64_t *>(status);
  if (ok(st)) st = clear_control();
  if (ok(st)) st = cuda::driver().ipc_export(reinterpret_cast<std::uintptr_t>(mine_), &rec.handle);
  if (ok(st)) {
    cuda::DeviceInfo info;
    if (ok(rt().device_info(opt_.device, &info))) {
      std::memcpy(rec.uuid, info.uuid, sizeof rec.uuid);
      rec.sm_count = info.sm_count;
      rec.mps = info.mps;
    } else {
      GCOLL_INFO("device engine: no device information (%s): no fused collectives", rt().last_error());
      rec.fused_mode = static_cast<std::int32_t>(FusedMode::Off);
    }
    rec.valid = 1;
  }
  Status s2 = ctl_->publish(0, &rec, sizeof rec);
  if (ok(s2)) s2 = ctl_->sync();
  if (!ok(s2)) return s2;
  const int n = local_size(), me = local_rank();
  peers_.assign(n, nullptr);
  peers_[me] = static_cast<char *>(mine_);
  pids_.assign(n, 0);
  tokens_.assign(n, 0);
  std::vector<FusedVote> votes(n);
  for (int p = 0; ok(st) && p < n; ++p) {
    SetupRecord r;
    std::memcpy(&r, ctl_->peer(p), sizeof r);
    if (!r.valid) {
      st = Status::ErrInternal;  // that rank reported its own failure
      break;
    }
    pids_[p] = r.pid;
    tokens_[p] = r.token;
    std::memcpy(votes[p].uuid, r.uuid, sizeof r.uuid);
    votes[p].sm_count = r.sm_count;
    votes[p].mps = r.mps;
    votes[p].mode = static_cast<FusedMode>(r.fused_mode);
    if (p == me || (!opt_.map_peers.empty() && !opt_.map_peers[p])) continue;
    void *local = nullptr;
    st = cuda::driver().ipc_open(r.handle, &local);  // warns itself on failure
    peers_[p] = static_cast<char *>(local);
  }
  if (ok(st)) {
    const FusedDecision fd = decide_fused(votes);
    fuse_blocks_ = fd.blocks;
    time_sliced_ = fd.time_sliced;
    // The work area serves the bank algorithms only, which do not run where the space fuses.
    if (!fuse_blocks_)
      st = cuda_status(rt().malloc_device(&work_, 4 * bank_bytes_), "device memory (work area)");
    if (me == 0)
      GCOLL_INFO("device engine: %d ranks, %s, fused collectives %s", n,
                 time_sliced_ ? "GPUs shared without MPS (time-sliced)" : "MPS or a GPU per rank",
                 fuse_blocks_ ? "on" : "off");
  }
  // Nobody frees its banks before every peer has mapped them (and returned a verdict).
  const Status s3 = ctl_->sync();
  return ok(st) ? s3 : st;
}

Status CudaSpace::publish(std::size_t at, const void *src, std::size_t bytes) {
  if (at + bytes > bank_bytes_ || fuse_blocks_) return Status::ErrInternal;  // banks: the fused ops' there
  bytes_published += bytes;
  if (!bytes) return Status::Ok;
  DeviceScope d(opt_.device);
  enqueued_ = true;
  return failed_if(cuda_status(rt().memcpy_async(bank(local_rank(), epoch_ & 1) + at, src, bytes, stream_),
                               "publish (device copy)"));
}

Status CudaSpace::sync() {
  Status st = failed_if(drain());
  enqueued_ = false;
  // A failure of my part in this call, reported from this sync on (memspace.h). Marked
  // here rather than when it happened: a call that has no sync left reports it to
  // nobody else (its peers' results do not depend on it), and the next call starts clean.
  if (failed_) ctl_->mark_failed();
  ctl_->while_waiting = while_waiting;
  const Status s2 = ctl_->sync();  // always: the peers count my syncs
  ctl_->while_waiting = nullptr;
  ++epoch_;
  return ok(st) ? s2 : st;
}

Status CudaSpace::reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count) {
  if (m < 1) return Status::ErrInternal;
  if (!rt().reduce_supported(op, t)) return Status::NotSupported;
  DeviceScope d(opt_.device);
  // More sources than one kernel takes: fold the rest into dst, which is then the first
  // source of the next pass (the same left fold, so the same bits). dst may be one of
  // the sources of the first pass only (the two-shot, in place, has at most 16).
  const int max = std::min(rt().max_sources(), kMaxSources);
  const void *batch[kMaxSources];
  int done = 0;
  while (done < m) {
    int k = 0;
    if (done > 0) batch[k++] = dst;
    while (k < max && done < m) batch[k++] = srcs[done++];
    enqueued_ = true;
    const Status st = cuda_status(rt().reduce(t, op, dst, batch, k, count, stream_), "reduce kernel");
    if (!ok(st)) return failed_if(st);
  }
  return Status::Ok;
}

Status CudaSpace::copy(void *dst, const void *src, std::size_t bytes) {
  if (!bytes || dst == src) return Status::Ok;
  DeviceScope d(opt_.device);
  enqueued_ = true;
  return failed_if(cuda_status(rt().memcpy_async(dst, src, bytes, stream_), "copy (device copy)"));
}

// The compressed allreduce's formats on the space's stream (the rails: coll/rail.cc).
Status CudaSpace::compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst) {
  if (!n) return Status::Ok;
  DeviceScope d(opt_.device);
  enqueued_ = true;
  return failed_if(cuda_status(rt().compress_encode(c, t, src, n, dst, stream_), "compression (encode)"));
}

Status CudaSpace::compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst) {
  if (!n) return Status::Ok;
  DeviceScope d(opt_.device);
  enqueued_ = true;
  return failed_if(cuda_status(rt().compress_decode(c, t, src, n, dst, stream_), "compression (decode)"));
}

Status CudaSpace::compress_decode_add(Compress c, DType t, const void *src, std::size_t n, void *dst) {
  if (!n) return Status::Ok;
  DeviceScope d(opt_.device);
  enqueued_ = true;
  return failed_if(cuda_status(rt().compress_decode_add(c, t, src, n, dst, stream_), "compression (decode and add)"));
}

void CudaSpace::begin_call() {
  open_cache_.begin_call();
  ctl_->begin_call();
  failed_ = false;
  exposed_ = false;
  DeviceScope d(opt_.device);
  enqueued_ = true;
  pending_ = cuda_status(cuda::order_after_application(rt(), stream_, order_), "ordering after the application's work");
}

Status CudaSpace::finish() {
  Status st = Status::Ok;
  if (exposed_) {
    st = sync();
  } else if (enqueued_ || !ok(pending_)) {
    st = failed_if(drain());
    enqueued_ = false;
  }
  // My work through peers' mappings is done (drained): other communicators' caches may
  // close them now if a peer's memory must be remapped (cuda::IpcOpenCache).
  if (ok(st)) open_cache_.end_call();
  return st;
}

Status CudaSpace::settle() {
  if (!enqueued_ && ok(pending_)) return Status::Ok;
  const Status st = failed_if(drain(false));
  enqueued_ = false;
  return st;
}

bool CudaSpace::peers_alive() const {
  for (std::size_t p = 0; p < pids_.size(); ++p) {
    if (static_cast<int>(p) == local_rank() || pids_[p] <= 0) continue;
    if (kill(static_cast<pid_t>(pids_[p]), 0) != 0 && errno == ESRCH) {
      GCOLL_WARN("node peer %zu (pid %d) has died; the collective cannot complete", p, static_cast<int>(pids_[p]));
      return false;
    }
  }
  return true;
}

Status CudaSpace::failed_if(Status st) {
  if (!ok(st) && st != Status::NotSupported) mark_failed();
  return st;
}

Status CudaSpace::drain(bool overlap) {
  DeviceScope d(opt_.device);
  Status st = pending_;
  pending_ = Status::Ok;
  if (ok(st)) st = cuda_status(rt().event_record(done_, stream_), "event record");
  for (WaitPolicy w; ok(st); w.pause()) {
    bool done = false;
    st = cuda_status(rt().event_query(done_, &done), "device work of a collective");
    if (!ok(st)) return st;
    if (done) return Status::Ok;
    if (overlap && while_waiting) st = while_waiting();
  }
  return st;
}

}  // namespace cuda_space_impl

Status create_cuda_space(MPI_Comm node_comm, const CudaSpaceOptions &opt, std::unique_ptr<MemSpace> *out) {
  HostSpaceOptions ho;
  ho.bank_bytes = cuda_space_impl::kCtlBytes;
  ho.timeout_s = opt.timeout_s;
  std::unique_ptr<MemSpace> ctl;
  Status st = create_host_space(node_comm, ho, &ctl);
  if (!ok(st)) return st;  // collective failure: every rank returns here
  auto space = std::make_unique<cuda_space_impl::CudaSpace>(opt, std::move(ctl));
  st = space->setup();
  if (!ok(st)) return st;
  *out = std::move(space);
  return Status::Ok;
}

}  // namespace gcoll
