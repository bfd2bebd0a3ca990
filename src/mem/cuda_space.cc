#include "mem/cuda_space.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/wait.h"
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

// What a rank publishes in the host segment at creation: its banks (and the fused ops'
// control words after them), its vote on the fused ops, its pid (for dead-peer checks).
struct SetupRecord {
  cuda::IpcHandle handle;
  unsigned char uuid[16];
  std::int32_t sm_count, mps, fused_mode, pid, valid;
  std::uint64_t token;  // cuda::process_token(): the exporter's key in IPC caches
};

// Then, per call of a zero-copy algorithm, one record per exposure slot.
struct Exposure {
  cuda::IpcHandle handle;
  std::uint64_t base, size, id, offset;
  std::int32_t valid;
};
constexpr std::size_t kCtlBytes = 4096;
constexpr int kMaxSources = 16;  // sources of one reduce call (the CUDA kernel's limit)
static_assert(MemSpace::kExposeSlots * sizeof(Exposure) <= kCtlBytes, "exposure records fit the control bank");
static_assert(sizeof(SetupRecord) <= kCtlBytes, "the setup record fits the control bank");

constexpr std::size_t kBankAlign = 256;  // banks and control words start on this

std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

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
    rt().free_host(status_);
    if (done_) rt().event_destroy(done_);
    if (order_) rt().event_destroy(order_);
    if (stream_) rt().stream_destroy(stream_);
  }

  // Creation, between the two collective steps: allocate and export (step 1), map the
  // peers' banks and decide on the fused ops (step 2). Every rank goes through both syncs
  // whatever happens.
  Status setup() {
    DeviceScope d(opt_.device);
    bank_bytes_ = round_up(opt_.bank_bytes, kBankAlign);
    SetupRecord rec{};
    rec.pid = static_cast<std::int32_t>(getpid());
    rec.token = cuda::process_token();
    rec.fused_mode = opt_.fused;
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
        rec.fused_mode = 2;
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
      votes[p].mode = r.fused_mode;
      if (p == me) continue;
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

  int local_rank() const override { return ctl_->local_rank(); }
  int local_size() const override { return ctl_->local_size(); }
  std::size_t capacity() const override { return bank_bytes_; }

  Status publish(std::size_t at, const void *src, std::size_t bytes) override {
    if (at + bytes > bank_bytes_ || fuse_blocks_) return Status::ErrInternal;  // banks: the fused ops' there
    bytes_published += bytes;
    if (!bytes) return Status::Ok;
    DeviceScope d(opt_.device);
    enqueued_ = true;
    return failed_if(cuda_status(rt().memcpy_async(bank(local_rank(), epoch_ & 1) + at, src, bytes, stream_),
                                 "publish (device copy)"));
  }
  Status sync() override {
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

  const void *peer(int lr) const override { return bank(lr, (epoch_ - 1) & 1); }

  bool can_reduce(DType t, ROp op) const override { return rt().reduce_supported(op, t); }

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
      enqueued_ = true;
      const Status st = cuda_status(rt().reduce(t, op, dst, batch, k, count, stream_), "reduce kernel");
      if (!ok(st)) return failed_if(st);
    }
    return Status::Ok;
  }

  Status copy(void *dst, const void *src, std::size_t bytes) override {
    if (!bytes || dst == src) return Status::Ok;
    DeviceScope d(opt_.device);
    enqueued_ = true;
    return failed_if(cuda_status(rt().memcpy_async(dst, src, bytes, stream_), "copy (device copy)"));
  }

  // The application may have written its buffers with work still in flight on its
  // default stream (cudaMemcpy from pageable memory returns before the data lands;
  // cudaMemset returns at once): everything of this call on my stream waits for it, and
  // so do my peers, which read my buffers only after my next sync(), which drains my
  // stream first (a fused kernel, queued after it, reads them itself). A failure is
  // reported by that sync, or by the fused op (every rank still takes part).
  void begin_call() override {
    open_cache_.begin_call();
    ctl_->begin_call();
    failed_ = false;
    exposed_ = false;
    DeviceScope d(opt_.device);
    enqueued_ = true;
    pending_ = cuda_status(rt().order_after_default_streams(stream_, order_), "ordering after the application's work");
  }

  // The result must be complete when the call returns; a final sync only where peers read
  // my user buffers (exposure). Bank algorithms need none (memspace.h); fused ops waited
  // for their kernel already, and no peer reads my buffers, only my bank of the op, which
  // I overwrite two ops later, after the peers' flags of the op in between.
  Status finish() override {
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

  // Without while_waiting: the rails settle from inside it (RailAllreduce::advance).
  Status settle() override {
    if (!enqueued_ && ok(pending_)) return Status::Ok;
    const Status st = failed_if(drain(false));
    enqueued_ = false;
    return st;
  }

  // My part failed: the peers learn it at my next sync of this call (sync() marks it in
  // the flags' segment), or from my next fused op, which posts a failure.
  void mark_failed() override { failed_ = true; }

  bool can_fuse() const override { return fuse_blocks_ > 0; }
  bool time_sliced() const override { return time_sliced_; }

  // One op of kernels/fused.h: launch, one wait, read the blocks' outcomes; relaunch as a
  // resume while some block gave up waiting for a late peer.
  Status fused(const FusedCall &c) override {
    if (!fuse_blocks_) return Status::NotSupported;
    const int n = local_size(), me = local_rank();
    if (c.bytes > bank_bytes_ || c.root < 0 || c.root >= n) return Status::ErrInternal;
    // Decided alike on every rank, before anything moves (the selection avoids both: registry.cc).
    if (c.kind == FusedKind::Allreduce &&
        (!rt().reduce_supported(c.op, c.dtype) || c.elem != dtype_size(c.dtype) || kFusedAlign % c.elem != 0))
      return Status::NotSupported;
    if (broken_) {
      GCOLL_WARN("device engine: an earlier fused collective of this communicator did not complete; this one fails "
                 "at once");
      return Status::ErrInternal;
    }
    DeviceScope d(opt_.device);
    Status mine = pending_;  // ordering after the application's work (begin_call)
    pending_ = Status::Ok;
    FusedParams p;
    p.kind = c.kind;
    p.dtype = c.dtype;
    p.op = c.op;
    p.elem = c.elem;
    p.nranks = n;
    p.me = me;
    p.root = c.kind == FusedKind::Bcast ? c.root : 0;
    p.seq = ++fused_seq_;
    p.spin_ns = static_cast<std::uint64_t>(opt_.fused_spin_us * 1000.0);
    p.bytes = c.bytes;
    p.blocks = blocks_for(c.bytes);
    p.in = c.in;
    p.out = c.out;
    for (int q = 0; q < n; ++q) {
      p.bank[q] = bank(q, p.seq & 1);
      p.ctl[q] = control(q);
      p.dst[q] = c.kind == FusedKind::Allgather ? c.dst[q] : nullptr;
    }
    p.status = status_;
    p.failed = failed_ || !ok(mine);
    if (c.kind != FusedKind::Bcast || me == c.root) bytes_published += c.bytes;
    const auto start = std::chrono::steady_clock::now();
    auto next_check = start + std::chrono::seconds(1);
    for (int attempt = 0;; ++attempt) {
      p.resume = attempt > 0;
      for (int b = 0; b < p.blocks; ++b) status_[b] = 0;  // the previous launch wrote its words already
      Status st = cuda_status(rt().fused(p, stream_), "fused collective");
      if (!ok(st) && !p.resume && !p.failed) {
        // Post my flags anyway, as failed, so that the peers return an error rather than wait.
        mine = st;
        p.failed = true;
        st = cuda_status(rt().fused(p, stream_), "fused collective (posting a failure)");
      }
      if (ok(st)) {
        enqueued_ = true;
        // The blocks' words come last in each block: when all are there, the kernel has
        // done its work (only its exit is left, before my stream's next work). A short
        // spin on them saves the event for small ops; the event wait covers the rest,
        // and device errors.
        if (!outcomes_within(p.seq, p.blocks, std::chrono::microseconds(50))) st = drain();
        enqueued_ = false;
      }
      if (!ok(st)) {
        broken_ = true;  // my flags may never have been posted: the protocol cannot go on
        return st;
      }
      int late = 0;
      bool failed = false;
      for (int b = 0; b < p.blocks; ++b) {
        const std::uint64_t v = __atomic_load_n(&status_[b], __ATOMIC_ACQUIRE);
        if (v >> 2 != p.seq) {
          GCOLL_WARN("device engine: fused collective %llu: block %d left no outcome (0x%llx)",
                     static_cast<unsigned long long>(p.seq), b, static_cast<unsigned long long>(v));
          broken_ = true;
          return Status::ErrInternal;
        }
        late += (v & 3) == kFusedTimedOut;
        failed = failed || (v & 3) == kFusedFailed;
      }
      if (!late) {
        if (p.failed) return ok(mine) ? Status::ErrInternal : mine;
        return failed ? Status::ErrInternal : Status::Ok;
      }
      // A peer is late: the host waits for it (the kernel gave up after spin_ns), then
      // relaunches the op, which skips the publish and waits again.
      const auto now = std::chrono::steady_clock::now();
      if (opt_.timeout_s > 0 && std::chrono::duration<double>(now - start).count() > opt_.timeout_s) {
        GCOLL_WARN("device engine: a node peer did not arrive within %.0f s (GCOLL_TIMEOUT)", opt_.timeout_s);
        broken_ = true;
        return Status::ErrTransport;
      }
      if (now >= next_check) {
        next_check = now + std::chrono::seconds(1);
        if (!peers_alive()) {
          broken_ = true;
          return Status::ErrTransport;
        }
      }
      if (attempt >= 2)
        std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 50 << std::min(attempt - 2, 5))));
    }
  }

  char *work_area() override { return static_cast<char *>(work_); }

  bool can_expose() const override { return true; }

  Status expose(int slot, const void *buf, std::size_t bytes) override {
    if (slot < 0 || slot >= kExposeSlots) return Status::ErrInternal;
    Exposure rec{};
    own_[slot] = const_cast<void *>(buf);
    exposed_ = true;
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
    const Status st = open_cache_.open(tokens_[lr], rec.base, rec.size, rec.id, rec.handle, &base);
    if (!ok(st)) return failed_if(st);
    *out = static_cast<char *>(base) + rec.offset;
    return Status::Ok;
  }

 private:
  char *bank(int lr, std::uint64_t which) const { return peers_[lr] + which * bank_bytes_; }
  FusedControl *control(int lr) const { return reinterpret_cast<FusedControl *>(peers_[lr] + 2 * bank_bytes_); }

  // Flags start at 0 (op numbers start at 1); peers read them only after setup's first sync.
  Status clear_control() {
    std::memset(status_, 0, sizeof(std::uint64_t) * kFusedMaxBlocks);
    const std::vector<unsigned char> zeros(sizeof(FusedControl), 0);
    char *ctl = static_cast<char *>(mine_) + 2 * bank_bytes_;
    Status st = cuda_status(rt().memcpy_async(ctl, zeros.data(), zeros.size(), stream_), "clearing the flags");
    if (ok(st)) st = cuda_status(rt().stream_synchronize(stream_), "clearing the flags");
    return st;
  }

  // Blocks of a fused op of `bytes` bytes: about kFusedBlockBytes each, as agreed at most.
  int blocks_for(std::size_t bytes) const {
    const std::size_t want = (bytes + kFusedBlockBytes - 1) / kFusedBlockBytes;
    return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(want, fuse_blocks_)));
  }

  // Whether every block of op `seq` has written its outcome within `spin` (polled). The
  // words are read with acquire loads (the blocks store them with release, after their
  // part of the output): plain loads on x86, and, unlike a volatile read and a fence,
  // no data race with the emulated GPU's stream thread that stores them.
  bool outcomes_within(std::uint64_t seq, int blocks, std::chrono::microseconds spin) const {
    const auto t0 = std::chrono::steady_clock::now();
    for (unsigned i = 0;; ++i) {
      int b = 0;
      while (b < blocks && __atomic_load_n(&status_[b], __ATOMIC_ACQUIRE) >> 2 == seq) ++b;
      if (b == blocks) return true;
      if ((i & 15) == 15 && std::chrono::steady_clock::now() - t0 > spin) return false;
    }
  }

  bool peers_alive() const {
    for (std::size_t p = 0; p < pids_.size(); ++p) {
      if (static_cast<int>(p) == local_rank() || pids_[p] <= 0) continue;
      if (kill(static_cast<pid_t>(pids_[p]), 0) != 0 && errno == ESRCH) {
        GCOLL_WARN("node peer %zu (pid %d) has died; the collective cannot complete", p, static_cast<int>(pids_[p]));
        return false;
      }
    }
    return true;
  }

  // A failure of my part of the call (not NotSupported, which is decided alike on every
  // rank before anything moves) is reported to every peer at the next sync.
  Status failed_if(Status st) {
    if (!ok(st) && st != Status::NotSupported) mark_failed();
    return st;
  }

  // Waits until everything enqueued on my stream is done: polls an event, pausing by the
  // wait policy (src/base/wait.h: spin, then yield or sleep, so that ranks sharing a GPU
  // and cores let each other run), with the caller's overlap work in between.
  Status drain(bool overlap = true) {
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

  CudaSpaceOptions opt_;
  std::unique_ptr<MemSpace> ctl_;  // flags, IPC handles and exposure records
  cuda::IpcExportCache export_cache_;
  cuda::IpcOpenCache open_cache_;
  cuda::Stream stream_ = nullptr;
  cuda::Event done_ = nullptr;
  cuda::Event order_ = nullptr;      // orders my stream after the application's default streams
  Status pending_ = Status::Ok;      // a failure of begin_call(), reported by the next sync
  std::size_t bank_bytes_ = 0;       // per bank (opt_.bank_bytes, rounded up)
  void *mine_ = nullptr;             // my two banks, then my FusedControl
  void *work_ = nullptr;             // private scratch (where the space does not fuse)
  std::uint64_t *status_ = nullptr;  // pinned: the fused kernel's outcome per block
  std::vector<char *> peers_;        // every rank's banks, mapped here (mine included)
  std::vector<std::int32_t> pids_;   // every rank's process
  std::vector<std::uint64_t> tokens_;  // every rank's cuda::process_token()
  void *own_[kExposeSlots] = {};     // what I exposed this call
  std::uint64_t epoch_ = 0;
  int fuse_blocks_ = 0;              // agreed at creation: 0 no fused ops, else their most blocks
  bool time_sliced_ = false;         // agreed at creation: ranks share a GPU without MPS
  std::uint64_t fused_seq_ = 0;      // fused ops so far (the same on every rank)
  bool broken_ = false;              // a fused op could not complete: the flags cannot be trusted
  bool failed_ = false;              // my part of the current call failed (mark_failed)
  bool exposed_ = false;             // the current call exposed user buffers
  bool enqueued_ = false;            // work queued on my stream since it was last drained
};

}  // namespace

FusedDecision decide_fused(const std::vector<FusedVote> &votes) {
  FusedDecision d;
  const int n = static_cast<int>(votes.size());
  bool all_on = n > 0, any_off = false;
  int blocks = kFusedMaxBlocks;
  for (const FusedVote &v : votes) {
    all_on = all_on && v.mode == 1;
    any_off = any_off || v.mode == 2;
    int sharing = 0;
    for (const FusedVote &w : votes) sharing += std::memcmp(v.uuid, w.uuid, sizeof v.uuid) == 0;
    // A time-sliced GPU: a spinning kernel would wait for peers that cannot run meanwhile.
    if (sharing > 1 && v.mps != 1) d.time_sliced = true;
    blocks = std::min(blocks, std::max(1, v.sm_count / sharing));
  }
  if (n >= 1 && n <= kFusedMaxRanks && !any_off && (!d.time_sliced || all_on)) d.blocks = blocks;
  return d;
}

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

