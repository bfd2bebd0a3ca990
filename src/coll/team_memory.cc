#include "coll/team_memory.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/uniform_settings.h"
#include "base/wait.h"
#include "boot/bootstrap.h"
#include "coll/tune.h"
#include "cuda/device.h"

namespace gcoll {

bool device_memory_possible() { return cuda::usable(); }

LocalMemory classify_local(const void *const *bufs, int n, int engine_device) {
  LocalMemory lm;
  if (!cuda::usable()) {
    for (int i = 0; i < n; ++i) lm.host |= bufs[i] != nullptr;
    return lm;
  }
  cuda::PtrInfo info[2];
  lm.reusable = true;
  for (int i0 = 0; i0 < n; i0 += 2) {
    const int m = n - i0 < 2 ? n - i0 : 2;
    cuda::classify(bufs + i0, m, info);
    for (int j = 0; j < m; ++j) {
      const int i = i0 + j;
      if (!bufs[i]) continue;
      const cuda::PtrInfo &p = info[j];
      lm.reusable &= p.cacheable;
      if (!p.device) {
        lm.host = true;
        continue;
      }
      lm.device = true;
      if (i < 2) lm.is_device[i] = true;
      lm.non_ipc |= !p.ipc_capable;
      if (lm.ordinal >= 0 && lm.ordinal != p.ordinal) lm.split_gpu = true;
      lm.ordinal = p.ordinal;
    }
  }
  if (lm.device && engine_device >= 0 && lm.ordinal != engine_device) lm.split_gpu = true;
  return lm;
}

LocalMemory classify_call(KindMemo *memo, const void *const bufs[2], int engine_device) {
  const std::atomic<std::uint64_t> *ep = memo->epoch;
  if (ep && memo->bufs[0] == bufs[0] && memo->bufs[1] == bufs[1] && memo->engine_device == engine_device &&
      ep->load(std::memory_order_acquire) == memo->epoch_value && memo->generation == cuda::driver_generation()) {
    process_stats().count(Counter::KindCacheHits, (bufs[0] != nullptr) + (bufs[1] != nullptr));
    return memo->lm;
  }
  // Read before classifying: a change meanwhile leaves the memo stale at once.
  const std::uint64_t gen = cuda::driver_generation();
  ep = cuda::reuse_epoch();
  const std::uint64_t e = ep ? ep->load(std::memory_order_acquire) : 0;
  const LocalMemory lm = classify_local(bufs, 2, engine_device);
  memo->epoch = nullptr;
  if (ep && lm.reusable) {
    memo->bufs[0] = bufs[0];
    memo->bufs[1] = bufs[1];
    memo->engine_device = engine_device;
    memo->epoch_value = e;
    memo->generation = gen;
    memo->lm = lm;
    memo->epoch = ep;
  }
  return lm;
}

namespace {

enum : int { kHost = 1, kDevice = 2, kNonIpc = 4, kSplitGpu = 8 };

int bits_of(const LocalMemory &lm) {
  return (lm.host ? kHost : 0) | (lm.device ? kDevice : 0) | (lm.non_ipc ? kNonIpc : 0) |
         (lm.split_gpu ? kSplitGpu : 0);
}

}  // namespace

// Every setting that must be equal on every rank (base/uniform_settings.h), and whether
// any rank can hold device memory, in one exchange. (A rank without a driver has only
// host buffers, but it must still join the agreements when a peer has a GPU.) A setting
// that differs gets one warning per process (from the communicator's rank 0) and the
// outcome its table entry names, the same on every rank.
void agree_once(Team *cs) {
  MpiBootstrap boot(cs->comm);
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  const std::vector<long long> mine =
      uniform_vote(process_config().effective, cuda::usable(), provided == MPI_THREAD_MULTIPLE);
  std::vector<long long> lo(mine.size()), hi(mine.size());
  AgreedSettings a;
  const Status st = min_max(boot, mine.data(), static_cast<int>(mine.size()), lo.data(), hi.data());
  if (ok(st)) a = agreed_settings(lo, hi);
  if (!ok(st) || !a.all_gcoll) {
    // What arrived is not gcoll's vote, or the MPI refused the exchange (a message of
    // another size met it: MPI_ERR_TRUNCATE): some rank made its own collective call
    // instead. Said by every rank that sees it (world rank 0 may be the one without gcoll).
    cs->without_gcoll = true;
    static std::once_flag said;
    std::call_once(said, [] {
      GCOLL_WARN("%s", kWithoutGcoll);
    });
  }
  if (!ok(st)) {
    // Nothing was agreed (and every call fails, above): assume the worst, a GPU somewhere,
    // nothing through the engine.
    a.gpu = true;
    a.engine = false;
    a.device_engine = false;
    a.progress_thread = false;
    a.agree_interval = 1;
  }
  cs->gpu = a.gpu ? 1 : 0;
  cs->progress_thread = a.progress_thread;
  cs->thread_mpi = a.progress_thread && a.thread_multiple;
  cs->host_engine = a.host_engine;
  // (GCOLL_TUNE and GCOLL_HOST_TUNE are among the settings a.engine says are equal)
  cs->host_engine_colls = !a.host_engine ? 0 : a.engine ? host_engine_colls_of(decline_ranges()) : ~0u;
  cs->uniform_memory = a.uniform_memory;
  cs->device_engine = a.device_engine && !cs->stage_device;
  cs->engine_settings = a.engine;
  cs->timeout_s = a.timeout_s;
  cs->agree_interval = a.agree_interval;
  cs->compress_setting = a.allreduce_compress;
  // One line per setting and job, from rank 0 of MPI_COMM_WORLD, however many of its
  // communicators differ in it (a communicator without world rank 0 applies the same
  // outcome silently).
  int world_rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (world_rank != 0) return;
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (a.all_gcoll && !a.same_build && said.insert("(build)").second)
    GCOLL_WARN("the ranks of a communicator run different gcoll builds: this communicator uses the MPI");
  for (const UniformDifference &d : a.differences)
    if (said.insert(d.setting).second) GCOLL_WARN("%s", difference_message(d).c_str());
}

void Team::agree_compress() {
  compress_pending = false;
  std::fill(std::begin(mpi_bytes), std::end(mpi_bytes), 0);  // (team.h)
  process_stats().count(Counter::HiddenMpi);
  MpiBootstrap boot(comm);
  const long long mine = compress_info_mine;
  long long lo = 0, hi = 0;
  if (!ok(min_max(boot, &mine, 1, &lo, &hi))) {
    compress_info = 0;  // nothing agreed: uncompressed, on every rank that gets here
    GCOLL_WARN("the ranks could not agree on the info key gcoll_allreduce_compress: allreduces on this "
               "communicator are not compressed");
    return;
  }
  if (lo == hi) {
    if (lo >= 0 && lo < kCompressFormats) compress_info = static_cast<int>(lo);
    return;
  }
  compress_info = 0;
  int world_rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  static std::once_flag said;
  if (world_rank == 0)
    std::call_once(said, [&] {
      const auto name = [](long long v) { return v < 0 ? "unset" : compress_name(static_cast<Compress>(v)); };
      GCOLL_WARN("the info key gcoll_allreduce_compress differs between the ranks of a communicator (%s to %s): "
                 "its allreduces are not compressed",
                 name(lo), name(hi));
    });
}

bool Team::busy_says_mpi() {
  if (busy_calls++ % kBusyAgreeEvery != 0) return busy_mpi;
  process_stats().count(Counter::HiddenMpi);
  MpiBootstrap boot(comm);
  const long long mine = wait_probe_machine_loaded() ? 1 : 0;
  long long lo = 0, hi = 0;
  // Not agreed (the MPI failed the small allreduce, on every rank alike): the engine.
  busy_mpi = ok(min_max(boot, &mine, 1, &lo, &hi)) && hi > 0;
  return busy_mpi;
}

namespace {

CallMemory from_bits(int bits, bool device_engine) {
  CallMemory m;
  if ((bits & kDevice) && (bits & kHost)) m.mem = CallMem::Mixed;
  else if (bits & kDevice) m.mem = CallMem::Device;
  else m.mem = CallMem::Host;
  m.zero_copy = !(bits & kNonIpc);
  m.device_engine = device_engine && !(bits & kSplitGpu);
  return m;
}

}  // namespace

namespace {
// Every rank's kind bits, OR-ed (one flag per bit, the maximum of each). Collective.
Status or_bits(Team *cs, int *bits) {
  process_stats().count(Counter::Agreements);
  long long flag[4];
  for (int b = 0; b < 4; ++b) flag[b] = (*bits >> b) & 1;
  MpiBootstrap boot(cs->comm);
  if (!ok(boot.max(flag, 4))) return Status::ErrComm;
  *bits = 0;
  for (int b = 0; b < 4; ++b) *bits |= flag[b] ? 1 << b : 0;
  return Status::Ok;
}
}  // namespace

Status agree_memory_now(Team *cs, const LocalMemory &lm, CallMemory *out) {
  if (cs->gpu < 0) agree_once(cs);
  int bits = bits_of(lm);
  if (cs->gpu == 0) bits = kHost;
  else if (!cs->uniform_memory && !ok(or_bits(cs, &bits))) return Status::ErrComm;
  *out = from_bits(bits, cs->device_engine);
  out->agreed_now = cs->gpu != 0 && !cs->uniform_memory;
  return Status::Ok;
}

Status agree_memory_slow(Team *cs, Coll coll, std::size_t bytes, const LocalMemory &lm, CallMemory *out) {
  if (cs->gpu < 0) agree_once(cs);
  int bits = bits_of(lm);
  bool agreed_now = false;
  if (cs->gpu == 0) {
    bits = kHost;  // nobody has a device buffer
  } else if (!cs->uniform_memory) {
    Team::AgreedKind &k = cs->agreed[static_cast<int>(coll)][size_class(bytes)];
    const std::uint64_t n = k.calls++;
    if (n == k.next) {
      if (!ok(or_bits(cs, &bits))) {
        k.next = k.calls;  // agree again next time (every rank that got here alike)
        return Status::ErrComm;
      }
      const std::uint64_t most = static_cast<std::uint64_t>(std::max(cs->agree_interval, 1));
      k.interval = bits == k.bits ? std::min(std::max<std::uint64_t>(k.interval, 1) * 2, most) : 1;
      k.bits = bits;
      k.next = n + k.interval;
      const CallMemory answer = from_bits(bits, cs->device_engine);
      k.answer = 0;
      std::memcpy(&k.answer, &answer, sizeof answer);
      agreed_now = true;
    }
    bits = k.bits;
  }
  *out = from_bits(bits, cs->device_engine);
  out->agreed_now = agreed_now;
  return Status::Ok;
}

bool fits_agreed(const LocalMemory &lm, const CallMemory &cm, int engine_device) {
  switch (cm.mem) {
    case CallMem::Host: return !lm.device;
    case CallMem::Device:
      return !lm.host && (!lm.device || (!lm.split_gpu && (engine_device < 0 || lm.ordinal == engine_device) &&
                                         (!cm.zero_copy || !lm.non_ipc)));
    case CallMem::Mixed: return true;  // never an engine call
  }
  return true;
}

}  // namespace gcoll
