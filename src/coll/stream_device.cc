// A stream communicator's device path: see stream_device.h.
#include "coll/stream_device.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/config.h"
#include "base/log.h"
#include "cuda/device.h"
#include "mem/cuda_space.h"  // decide_fused
#include "mem/device_scope.h"

namespace gcoll {
namespace {

cuda::Runtime &rt() { return cuda::runtime(); }

constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }
constexpr std::size_t kCtlOffset = 2 * StreamDevice::kBankBytes;  // my FusedControl, after the banks
const std::size_t kAllocBytes = kCtlOffset + round_up(sizeof(FusedControl), kAlign);

// What each rank tells the others at creation.
struct Record {
  cuda::IpcHandle handle;
  unsigned char uuid[16];
  char host[64];
  std::int32_t sm_count, mps, want, ready, ranks_per_node;
};

// A runtime failure's text.
Status failed(Status st, const char *what, std::string *why) {
  *why = std::string(what) + ": " + rt().last_error();
  return st;
}

// Every rank's `ok`, ANDed (the outcome of a step that may fail on some rank only).
bool all(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, every = 0;
  return PMPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, comm) == MPI_SUCCESS && every == 1;
}

// Whether the buffer [p, p + bytes) is device memory of `device` (the kernels read and write
// it as it is); anything else is staged through the scratch.
bool on_device(const void *p, int device) {
  const cuda::PtrInfo info = cuda::classify(p);
  return info.device && info.ordinal == device;
}

}  // namespace

std::unique_ptr<StreamDevice> StreamDevice::create(MPI_Comm comm, cuda::Stream stream, std::string *why) {
  std::unique_ptr<StreamDevice> d(new StreamDevice);
  d->comm_ = comm;
  d->stream_ = stream;
  PMPI_Comm_size(comm, &d->n_);
  PMPI_Comm_rank(comm, &d->me_);
  d->device_ = rt().current_device();
  Record rec{};
  rec.want = config().stream_device ? 1 : 0;
  rec.ranks_per_node = config().ranks_per_node;
  gethostname(rec.host, sizeof rec.host - 1);
  std::string local_why;
  Status st = d->device_ >= 0 ? Status::Ok : failed(Status::ErrInternal, "no current device", &local_why);
  if (rec.want && ok(st)) {
    DeviceScope scope(d->device_);
    void *mine = nullptr, *scratch = nullptr, *status = nullptr;
    cuda::DeviceInfo info;
    if (!ok(rt().device_info(d->device_, &info))) st = failed(Status::ErrInternal, "device information", &local_why);
    if (ok(st) && !ok(rt().malloc_device(&mine, kAllocBytes)))
      st = failed(Status::ErrNoMem, "device memory (banks)", &local_why);
    d->mine_ = static_cast<char *>(mine);
    if (ok(st) && !ok(rt().malloc_device(&scratch, kBankBytes)))
      st = failed(Status::ErrNoMem, "device memory (scratch)", &local_why);
    d->scratch_ = static_cast<char *>(scratch);
    if (ok(st) && !ok(rt().malloc_host_mapped(&status, sizeof(std::uint64_t) * kFusedMaxBlocks)))
      st = failed(Status::ErrNoMem, "mapped host memory (status)", &local_why);
    d->status_ = static_cast<std::uint64_t *>(status);
    if (ok(st)) {
      std::memset(d->status_, 0, sizeof(std::uint64_t) * kFusedMaxBlocks);
      // The flags and the epoch start at 0 (op numbers at 1), before any peer looks.
      const std::vector<unsigned char> zeros(sizeof(FusedControl), 0);
      cuda::Stream s = nullptr;
      if (!ok(rt().stream_create(&s)) || !ok(rt().memcpy_async(d->mine_ + kCtlOffset, zeros.data(), zeros.size(), s)) ||
          !ok(rt().stream_synchronize(s)))
        st = failed(Status::ErrInternal, "clearing the flags", &local_why);
      if (s) rt().stream_destroy(s);
    }
    if (ok(st) && !ok(cuda::driver().ipc_export(reinterpret_cast<std::uintptr_t>(d->mine_), &rec.handle)))
      st = failed(Status::ErrInternal, "exporting the banks", &local_why);
    if (ok(st)) {
      std::memcpy(rec.uuid, info.uuid, sizeof rec.uuid);
      rec.sm_count = info.sm_count;
      rec.mps = info.mps;
      rec.ready = 1;
    }
  }
  std::vector<Record> recs(static_cast<std::size_t>(d->n_));
  if (PMPI_Allgather(&rec, sizeof rec, MPI_BYTE, recs.data(), sizeof rec, MPI_BYTE, comm) != MPI_SUCCESS) {
    *why = "the set-up's exchange failed";
    return nullptr;
  }
  // Decided alike on every rank, from the same records.
  std::vector<FusedVote> votes(recs.size());
  bool every = d->n_ <= kFusedMaxRanks;
  for (std::size_t q = 0; q < recs.size(); ++q) {
    const Record &r = recs[q];
    every = every && r.want && r.ready && std::strncmp(r.host, recs[0].host, sizeof r.host) == 0 &&
            (r.ranks_per_node == 0 || d->n_ <= r.ranks_per_node);
    std::memcpy(votes[q].uuid, r.uuid, sizeof r.uuid);
    votes[q].sm_count = r.sm_count;
    votes[q].mps = r.mps;
    votes[q].mode = FusedMode::On;
  }
  if (!every) {
    bool anyone = false;
    for (const Record &r : recs) anyone = anyone || r.want;
    *why = !anyone ? "GCOLL_STREAM_DEVICE=off"
                   : !rec.want ? "GCOLL_STREAM_DEVICE is off on this rank"
                               : !local_why.empty() ? local_why
                                                    : "not every rank says GCOLL_STREAM_DEVICE=on, set it up, and is on "
                                                      "one node (at most 16 ranks)";
    return nullptr;
  }
  const FusedDecision fd = decide_fused(votes);
  if (fd.time_sliced || fd.blocks < 1) {
    *why = fd.time_sliced ? "the ranks share a GPU without MPS (time-sliced): a kernel waiting for its peers could "
                            "hold the GPU from them"
                          : "no fused kernels here";
    return nullptr;
  }
  d->max_blocks_ = fd.blocks;
  {
    DeviceScope scope(d->device_);
    d->peers_.assign(recs.size(), nullptr);
    d->peers_[d->me_] = d->mine_;
    for (std::size_t q = 0; ok(st) && q < recs.size(); ++q) {
      if (static_cast<int>(q) == d->me_) continue;
      void *p = nullptr;
      if (!ok(cuda::driver().ipc_open(recs[q].handle, &p))) st = failed(Status::ErrInternal, "mapping a peer's banks", &local_why);
      d->peers_[q] = static_cast<char *>(p);
    }
  }
  // Nobody uses (or frees) the banks before every rank has mapped every peer's.
  if (!all(comm, ok(st))) {
    *why = !local_why.empty() ? local_why : "a rank could not map its peers' banks";
    return nullptr;  // the destructor unmaps and frees, after a barrier
  }
  return d;
}

StreamDevice::~StreamDevice() {
  if (device_ < 0) return;  // nothing was made
  DeviceScope scope(device_);
  // free_device waits for my device, as cudaFree does: my kernels, which read my peers'
  // banks, have ended; after the barrier, so have everyone's, which read mine.
  if (scratch_) rt().free_device(scratch_);
  if (!peers_.empty()) PMPI_Barrier(comm_);
  for (std::size_t q = 0; q < peers_.size(); ++q)
    if (peers_[q] && static_cast<int>(q) != me_) cuda::driver().ipc_close(peers_[q]);
  if (mine_) rt().free_device(mine_);
  if (status_) rt().free_host(status_);
}

bool StreamDevice::takes_reduction(DType dtype, ROp op) const {
  const std::size_t e = dtype_size(dtype);
  return rt().reduce_supported(op, dtype) && e > 0 && kFusedAlign % e == 0;
}

Status StreamDevice::earlier_failure(std::string *why) const {
  for (int b = 0; b < last_blocks_; ++b) {
    const std::uint64_t v = __atomic_load_n(&status_[b], __ATOMIC_ACQUIRE);
    const std::uint64_t code = v & 3;
    if (code == kFusedFailed || code == kFusedTimedOut) {
      *why = code == kFusedFailed ? "an earlier enqueued call failed on some rank (its kernel stopped the stream)"
                                  : "an earlier enqueued call: a peer did not arrive within GCOLL_TIMEOUT (its "
                                    "kernel stopped the stream)";
      return Status::ErrInternal;
    }
  }
  return Status::Ok;
}

Status StreamDevice::launch(FusedParams &p, bool failed_part) {
  p.nranks = n_;
  p.me = me_;
  p.seq = 0;
  p.bank_stride = kBankBytes;
  p.trap = true;
  p.failed = failed_part;
  // No timeout unless asked for: a peer's stream may legitimately reach the call much later
  // (as a blocking collective waits for a late rank); GCOLL_TIMEOUT makes the kernel stop.
  p.spin_ns = config().timeout_s > 0 ? static_cast<std::uint64_t>(config().timeout_s) * 1000000000ull : ~0ull;
  const std::size_t want = (std::max<std::size_t>(p.bytes, 1) + kFusedBlockBytes - 1) / kFusedBlockBytes;
  p.blocks = static_cast<int>(std::min<std::size_t>(want, static_cast<std::size_t>(max_blocks_)));
  for (int q = 0; q < n_; ++q) {
    p.bank[q] = peers_[q];
    p.ctl[q] = reinterpret_cast<FusedControl *>(peers_[q] + kCtlOffset);
  }
  p.status = status_;
  last_blocks_ = std::max(last_blocks_, p.blocks);
  return rt().fused(p, stream_);
}

Status StreamDevice::enqueue(const StreamDeviceCall &c, std::string *why) {
  const std::size_t total = c.bytes;  // the same on every rank: nothing to do for none
  if (!total) return Status::Ok;
  DeviceScope scope(device_);
  const bool allgather = c.kind == FusedKind::Allgather;
  const std::size_t n = static_cast<std::size_t>(n_), me = static_cast<std::size_t>(me_);
  // Chunks alike on every rank: the bank (allgather: a piece per rank fits the scratch).
  const std::size_t step = allgather ? kBankBytes / n / kFusedAlign * kFusedAlign : kBankBytes;
  Status mine = Status::Ok;  // the first failure of my part; later steps take part as failed
  const auto fail = [&](Status st, const char *what) {
    if (ok(mine)) mine = failed(st, what, why);
  };
  if (!ok(c.refused)) {
    mine = c.refused;
    *why = c.refused_why;
  } else {
    mine = earlier_failure(why);
  }
  const auto copy = [&](void *dst, const void *src, std::size_t len) {
    if (ok(mine) && !ok(rt().memcpy_async(dst, src, len, stream_))) fail(Status::ErrInternal, "staging a buffer");
  };
  const char *in = static_cast<const char *>(c.in);
  char *out = static_cast<char *>(c.out);
  const bool publishes = c.kind != FusedKind::Bcast || c.root == me_;
  const bool writes = c.kind != FusedKind::Bcast || c.root != me_;
  // My buffers as the kernels read and write them, or through the scratch.
  const bool in_direct = !in || on_device(in, device_);
  const bool out_direct = on_device(out, device_);
  for (std::size_t o = 0; o < total; o += step) {
    const std::size_t len = std::min(step, total - o);
    FusedParams p;
    p.kind = c.kind;
    p.dtype = c.dtype;
    p.op = c.op;
    p.elem = c.elem;
    p.root = c.kind == FusedKind::Bcast ? c.root : 0;
    p.bytes = len;
    if (allgather) {
      // My piece: mine, or (in place) already at its place in the result.
      const char *piece = in ? in + o : out + me * total + o;
      const bool piece_direct = in ? in_direct : out_direct;
      char *const stage = out_direct ? scratch_ : scratch_ + me * len;
      if (!piece_direct) {
        copy(stage, piece, len);
        piece = stage;
      }
      p.in = piece;
      for (std::size_t q = 0; q < n; ++q) {
        char *at = out_direct ? out + q * total + o : scratch_ + q * len;
        p.dst[q] = q == me && at == piece ? nullptr : at;  // already there
      }
    } else {
      // Allreduce (in place without an input) and bcast (the root publishes its buffer).
      const char *src = c.kind == FusedKind::Allreduce && in ? in + o : out + o;
      const bool src_direct = c.kind == FusedKind::Allreduce && in ? in_direct : out_direct;
      if (publishes && !src_direct) {
        copy(scratch_, src, len);
        src = scratch_;
      }
      p.in = src;
      p.out = out_direct ? out + o : scratch_;  // the result lands in the scratch, then in my buffer
    }
    if (!ok(launch(p, !ok(mine)))) fail(Status::ErrInternal, "queueing the kernel");
    if (!out_direct && writes) {
      if (allgather)
        for (std::size_t q = 0; q < n; ++q) copy(out + q * total + o, scratch_ + q * len, len);
      else
        copy(out + o, scratch_, len);
    }
  }
  return mine;
}

}  // namespace gcoll
