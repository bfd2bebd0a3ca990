#include "mem/cuda_space.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "base/log.h"
#include "cuda/device.h"
#include "cuda/runtime.h"
#include "mem/device_scope.h"
#include "mem/host_space.h"

namespace gcoll {

namespace {

cuda::Runtime &rt() { return cuda::runtime(); }

Status cuda_status(Status st, const char *what) {
  if (ok(st)) return st;
  GCOLL_WARN("%s: %s", what, rt().last_error());
  return st;
}

// What a rank publishes in the host segment: its banks at creation, then one record per
// exposure slot.
struct Exposure {
  cuda::IpcHandle handle;
  std::uint64_t base, size, id, offset;
  std::int32_t valid;
};
constexpr std::size_t kCtlBytes = 4096;
constexpr int kMaxSources = 16;  // sources of one reduce call (the CUDA kernel's limit)
static_assert(MemSpace::kExposeSlots * sizeof(Exposure) <= kCtlBytes, "exposure records fit the control bank");

class CudaSpace final : public MemSpace {
 public:
  CudaSpace(const CudaSpaceOptions &opt, std::unique_ptr<MemSpace> ctl)
      : opt_(opt),
        ctl_(std::move(ctl)),
        export_cache_(cuda::driver()),
        open_cache_(cuda::driver(), opt.ipc_cache_bytes) {}

  ~CudaSpace() override {
    DeviceScope d(opt_.device);
    open_cache_.clear();
    for (std::size_t p = 0; p < peers_.size(); ++p)
      if (peers_[p] && static_cast<int>(p) != local_rank()) cuda::driver().ipc_close(peers_[p]);
    rt().free_device(work_);
    rt().free_device(mine_);
    if (done_) rt().event_destroy(done_);
    if (order_) rt().event_destroy(order_);
    if (stream_) rt().stream_destroy(stream_);
  }

  // Creation, between the two collective steps: allocate and export (step 1), map the
  // peers' banks (step 2). Every rank goes through both syncs whatever happens.
  Status setup() {
    DeviceScope d(opt_.device);
    Exposure rec{};
    Status st = cuda_status(rt().stream_create(&stream_), "stream of the device engine");
    if (ok(st)) st = cuda_status(rt().event_create(&done_), "event of the device engine");
    if (ok(st)) st = cuda_status(rt().event_create(&order_), "event of the device engine");
    if (ok(st)) st = cuda_status(rt().malloc_device(&mine_, 2 * opt_.bank_bytes), "device memory (banks)");
    if (ok(st)) st = cuda_status(rt().malloc_device(&work_, 4 * opt_.bank_bytes), "device memory (work area)");
    if (ok(st)) st = cuda::driver().ipc_export(reinterpret_cast<std::uintptr_t>(mine_), &rec.handle);
    if (ok(st)) rec.valid = 1;
    Status s2 = ctl_->publish(0, &rec, sizeof rec);
    if (ok(s2)) s2 = ctl_->sync();
    if (!ok(s2)) return s2;
    const int n = local_size(), me = local_rank();
    peers_.assign(n, nullptr);
    peers_[me] = static_cast<char *>(mine_);
    for (int p = 0; ok(st) && p < n; ++p) {
      if (p == me) continue;
      Exposure r;
      std::memcpy(&r, ctl_->peer(p), sizeof r);
      if (!r.valid) {
        st = Status::ErrInternal;  // that rank reported its own failure
        break;
      }
      void *local = nullptr;
      st = cuda::driver().ipc_open(r.handle, &local);  // warns itself on failure
      peers_[p] = static_cast<char *>(local);
    }
    // Nobody frees its banks before every peer has mapped them (and returned a verdict).
    const Status s3 = ctl_->sync();
    return ok(st) ? s3 : st;
  }

  int local_rank() const override { return ctl_->local_rank(); }
  int local_size() const override { return ctl_->local_size(); }
  std::size_t capacity() const override { return opt_.bank_bytes; }

  Status publish(std::size_t at, const void *src, std::size_t bytes) override {
    if (at + bytes > opt_.bank_bytes) return Status::ErrInternal;
    bytes_published += bytes;
    if (!bytes) return Status::Ok;
    DeviceScope d(opt_.device);
    return failed_if(cuda_status(rt().memcpy_async(bank(local_rank(), epoch_ & 1) + at, src, bytes, stream_),
                                 "publish (device copy)"));
  }
  Status sync() override {
    Status st = failed_if(drain());
    ctl_->while_waiting = while_waiting;
    const Status s2 = ctl_->sync();  // always: the peers count my syncs
    ctl_->while_waiting = nullptr;
    ++epoch_;
    return ok(st) ? s2 : st;
  }

  const void *peer(int lr) const override { return bank(lr, (epoch_ - 1) & 1); }

  Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count) override {
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
      const Status st = cuda_status(rt().reduce(t, op, dst, batch, k, count, stream_), "reduce kernel");
      if (!ok(st)) return failed_if(st);
    }
    return Status::Ok;
  }

  Status copy(void *dst, const void *src, std::size_t bytes) override {
    if (!bytes || dst == src) return Status::Ok;
    DeviceScope d(opt_.device);
    return failed_if(cuda_status(rt().memcpy_async(dst, src, bytes, stream_), "copy (device copy)"));
  }

  // The application may have written its buffers with work still in flight on its
  // default stream (cudaMemcpy from pageable memory returns before the data lands;
  // cudaMemset returns at once): everything of this call on my stream waits for it, and
  // so do my peers, which read my buffers only after my next sync(), which drains my
  // stream first. A failure is reported by that sync (every rank still takes part).
  void begin_call() override {
    open_cache_.begin_call();
    ctl_->begin_call();
    DeviceScope d(opt_.device);
    pending_ = cuda_status(rt().order_after_default_streams(stream_, order_), "ordering after the application's work");
  }

  Status finish() override { return sync(); }

  // My part failed: the peers learn it at the next sync (the flags' segment carries it).
  void mark_failed() override { ctl_->mark_failed(); }

  char *work_area() override { return static_cast<char *>(work_); }

  bool can_expose() const override { return true; }

  Status expose(int slot, const void *buf, std::size_t bytes) override {
    if (slot < 0 || slot >= kExposeSlots) return Status::ErrInternal;
    Exposure rec{};
    own_[slot] = const_cast<void *>(buf);
    Status st = Status::Ok;
    if (bytes) {
      const cuda::PtrInfo info = cuda::classify(buf);
      if (!info.device || !info.ipc_capable || info.ordinal != opt_.device) {
        GCOLL_WARN("buffer %p cannot be exposed through CUDA IPC", buf);
        st = Status::ErrInternal;
      } else {
        DeviceScope d(opt_.device);
        st = export_cache_.get(info, &rec.handle);
      }
      if (ok(st)) {
        rec.base = info.base;
        rec.size = info.size;
        rec.id = info.buffer_id;
        rec.offset = reinterpret_cast<std::uintptr_t>(buf) - info.base;
        rec.valid = 1;
      }
    }
    const Status s2 = ctl_->publish(slot * sizeof(Exposure), &rec, sizeof rec);
    return failed_if(ok(st) ? s2 : st);
  }

  Status exposed(int lr, int slot, void **out) override {
    if (slot < 0 || slot >= kExposeSlots || lr < 0 || lr >= local_size()) return Status::ErrInternal;
    if (lr == local_rank()) {
      *out = own_[slot];
      return Status::Ok;
    }
    Exposure rec;
    std::memcpy(&rec, static_cast<const char *>(ctl_->peer(lr)) + slot * sizeof(Exposure), sizeof rec);
    if (!rec.valid) {
      *out = nullptr;  // nothing exposed (zero bytes): never dereferenced
      return Status::Ok;
    }
    DeviceScope d(opt_.device);
    void *base = nullptr;
    const Status st = open_cache_.open(lr, rec.base, rec.size, rec.id, rec.handle, &base);
    if (!ok(st)) return failed_if(st);
    *out = static_cast<char *>(base) + rec.offset;
    return Status::Ok;
  }

 private:
  char *bank(int lr, std::uint64_t which) const { return peers_[lr] + which * opt_.bank_bytes; }

  // A failure of my part of the call (not NotSupported, which is decided alike on every
  // rank before anything moves) is reported to every peer at the next sync.
  Status failed_if(Status st) {
    if (!ok(st) && st != Status::NotSupported) mark_failed();
    return st;
  }

  // Waits until everything enqueued on my stream is done: polls an event, spinning
  // briefly, then yielding, then sleeping (ranks sharing a GPU and cores must let each
  // other run), with the caller's overlap work in between.
  Status drain() {
    DeviceScope d(opt_.device);
    Status st = pending_;
    pending_ = Status::Ok;
    if (ok(st)) st = cuda_status(rt().event_record(done_, stream_), "event record");
    for (unsigned spin = 0; ok(st); ++spin) {
      bool done = false;
      st = cuda_status(rt().event_query(done_, &done), "device work of a collective");
      if (!ok(st)) return st;
      if (done) return Status::Ok;
      if (while_waiting) st = while_waiting();
      if (spin < 256) continue;
      if (spin < 4096) {
        sched_yield();
        continue;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return st;
  }

  CudaSpaceOptions opt_;
  std::unique_ptr<MemSpace> ctl_;  // flags, IPC handles and exposure records
  cuda::IpcExportCache export_cache_;
  cuda::IpcOpenCache open_cache_;
  cuda::Stream stream_ = nullptr;
  cuda::Event done_ = nullptr;
  cuda::Event order_ = nullptr;      // orders my stream after the application's default streams
  Status pending_ = Status::Ok;      // a failure of begin_call(), reported by the next sync
  void *mine_ = nullptr;             // my two banks
  void *work_ = nullptr;             // private scratch
  std::vector<char *> peers_;        // every rank's banks, mapped here (mine included)
  void *own_[kExposeSlots] = {};     // what I exposed this call
  std::uint64_t epoch_ = 0;
};

}  // namespace

Status create_cuda_space(MPI_Comm node_comm, const CudaSpaceOptions &opt, std::unique_ptr<MemSpace> *out) {
  HostSpaceOptions ho;
  ho.bank_bytes = kCtlBytes;
  ho.timeout_s = opt.timeout_s;
  std::unique_ptr<MemSpace> ctl;
  Status st = create_host_space(node_comm, ho, &ctl);
  if (!ok(st)) return st;  // collective failure: every rank returns here
  auto space = std::make_unique<CudaSpace>(opt, std::move(ctl));
  st = space->setup();
  if (!ok(st)) return st;
  *out = std::move(space);
  return Status::Ok;
}

}  // namespace gcoll

