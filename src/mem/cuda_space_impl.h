// The device memory space (cuda_space.h), internal to src/mem/cuda_space*.cc, by concern:
//   - cuda_space.cc: creation (banks exported and mapped, the fused ops' vote), the bank
//     operations (publish, sync, reduce, copy) and the call's completion;
//   - cuda_space_expose.cc: user buffers exposed to the node's peers (CUDA IPC, the
//     zero-copy algorithms);
//   - cuda_space_fused.cc: the driver of the fused one-shot kernel (kernels/fused.h) and
//     the node's decision on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/log.h"
#include "cuda/device.h"
#include "cuda/runtime.h"
#include "mem/cuda_space.h"

namespace gcoll {
namespace cuda_space_impl {

inline cuda::Runtime &rt() { return cuda::runtime(); }

// A failed CUDA step, with the runtime's message; st itself.
inline Status cuda_status(Status st, const char *what) {
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

inline std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

class CudaSpace final : public MemSpace {
 public:
  CudaSpace(const CudaSpaceOptions &opt, std::unique_ptr<MemSpace> ctl)
      : opt_(opt),
        ctl_(std::move(ctl)),
        export_cache_(cuda::driver()),
        open_cache_(cuda::driver(), opt.ipc_cache_bytes) {}

  ~CudaSpace() override;

  // Creation, between the two collective steps: allocate and export (step 1), map the
  // peers' banks and decide on the fused ops (step 2). Every rank goes through both syncs
  // whatever happens.
  Status setup();

  int local_rank() const override { return ctl_->local_rank(); }
  int local_size() const override { return ctl_->local_size(); }
  std::size_t capacity() const override { return bank_bytes_; }

  Status publish(std::size_t at, const void *src, std::size_t bytes) override;
  Status sync() override;

  const void *peer(int lr) const override {
    return peers_[lr] ? bank(lr, (epoch_ - 1) & 1) : nullptr;  // nullptr: not mapped (map_peers)
  }

  bool can_reduce(DType t, ROp op) const override { return rt().reduce_supported(op, t); }

  Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count) override;

  Status copy(void *dst, const void *src, std::size_t bytes) override;
  Status compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst) override;
  Status compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst) override;
  Status compress_decode_add(Compress c, DType t, const void *src, std::size_t n, void *dst) override;

  // The application may have written its buffers with work still in flight on its
  // default stream (cudaMemcpy from pageable memory returns before the data lands;
  // cudaMemset returns at once): everything of this call on my stream waits for it, and
  // so do my peers, which read my buffers only after my next sync(), which drains my
  // stream first (a fused kernel, queued after it, reads them itself). A failure is
  // reported by that sync, or by the fused op (every rank still takes part).
  void begin_call() override;

  // The result must be complete when the call returns; a final sync only where peers read
  // my user buffers (exposure). Bank algorithms need none (memspace.h); fused ops waited
  // for their kernel already, and no peer reads my buffers, only my bank of the op, which
  // I overwrite two ops later, after the peers' flags of the op in between.
  Status finish() override;

  // Without while_waiting: the rails settle from inside it (RailAllreduce::advance).
  Status settle() override;

  // My part failed: the peers learn it at my next sync of this call (sync() marks it in
  // the flags' segment), or from my next fused op, which posts a failure.
  void mark_failed() override { failed_ = true; }

  bool can_fuse() const override { return fuse_blocks_ > 0; }
  bool time_sliced() const override { return time_sliced_; }

  // One op of kernels/fused.h: launch, one wait, read the blocks' outcomes; relaunch as a
  // resume while some block gave up waiting for a late peer.
  Status fused(const FusedCall &c) override;

  char *work_area() override { return static_cast<char *>(work_); }

  bool can_expose() const override { return true; }

  Status expose(int slot, const void *buf, std::size_t bytes) override;

  Status exposed(int lr, int slot, void **out) override;

 private:
  char *bank(int lr, std::uint64_t which) const { return peers_[lr] + which * bank_bytes_; }
  FusedControl *control(int lr) const { return reinterpret_cast<FusedControl *>(peers_[lr] + 2 * bank_bytes_); }

  // Flags start at 0 (op numbers start at 1); peers read them only after setup's first sync.
  Status clear_control();

  // Blocks of a fused op of `bytes` bytes: about kFusedBlockBytes each, as agreed at most.
  int blocks_for(std::size_t bytes) const;

  // Whether every block of op `seq` has written its outcome within `spin` (polled). The
  // words are read with acquire loads (the blocks store them with release, after their
  // part of the output): plain loads on x86, and, unlike a volatile read and a fence,
  // no data race with the emulated GPU's stream thread that stores them.
  bool outcomes_within(std::uint64_t seq, int blocks, std::chrono::microseconds spin) const;

  bool peers_alive() const;

  // A failure of my part of the call (not NotSupported, which is decided alike on every
  // rank before anything moves) is reported to every peer at the next sync.
  Status failed_if(Status st);

  // Waits until everything enqueued on my stream is done: polls an event, pausing by the
  // wait policy (src/base/wait.h: spin, then yield or sleep, so that ranks sharing a GPU
  // and cores let each other run), with the caller's overlap work in between.
  Status drain(bool overlap = true);

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

}  // namespace cuda_space_impl
}  // namespace gcoll
