#include "pmpi/staged.h"

#include <algorithm>
#include <cstdio>
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "cuda/runtime.h"
#include "pmpi/errors.h"

namespace gcoll {

namespace {

// Where `count` elements of `type` lie relative to the buffer pointer: [lo, lo + bytes).
struct Span {
  MPI_Aint lo = 0;
  std::size_t bytes = 0;
  bool holes = false;  // bytes the datatype does not describe lie inside the span
};

bool span_of(int count, MPI_Datatype type, Span *out) {
  *out = Span{};
  if (count == 0) return true;
  MPI_Aint tlb, text, lb, ext;
  int size = 0;
  if (count < 0 || PMPI_Type_get_true_extent(type, &tlb, &text) != MPI_SUCCESS ||
      PMPI_Type_get_extent(type, &lb, &ext) != MPI_SUCCESS || PMPI_Type_size(type, &size) != MPI_SUCCESS)
    return false;
  const MPI_Aint stride = static_cast<MPI_Aint>(count - 1) * ext;
  const MPI_Aint lo = tlb + std::min<MPI_Aint>(0, stride), hi = tlb + text + std::max<MPI_Aint>(0, stride);
  out->lo = lo;
  out->bytes = static_cast<std::size_t>(hi - lo);
  out->holes = static_cast<std::size_t>(size) * static_cast<std::size_t>(count) != out->bytes;
  return true;
}

cuda::Runtime &rt() { return cuda::runtime(); }

// Pinned host buffers, kept for the next call (cudaHostAlloc costs milliseconds).
class PinnedPool {
 public:
  void *get(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
      if (best != free_.end()) {
        void *p = best->first;
        size_[p] = best->second;
        cached_ -= best->second;
        free_.erase(best);
        return p;
      }
    }
    std::size_t want = std::size_t{1} << 16;
    while (want < bytes) want <<= 1;
    void *p = nullptr;
    if (!ok(rt().malloc_host(&p, want))) {
      GCOLL_WARN("pinned host memory (%zu bytes) for staging: %s", want, rt().last_error());
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    size_[p] = want;
    return p;
  }

  void put(void *p) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t bytes = size_[p];
    size_.erase(p);
    free_.emplace_back(p, bytes);
    cached_ += bytes;
    // Keep at most kMaxCached bytes idle: free the smallest first (the largest serve all).
    while (cached_ > kMaxCached && free_.size() > 1) {
      auto small = std::min_element(free_.begin(), free_.end(),
                                    [](const auto &a, const auto &b) { return a.second < b.second; });
      rt().free_host(small->first);
      cached_ -= small->second;
      free_.erase(small);
    }
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &f : free_) rt().free_host(f.first);
    free_.clear();
    cached_ = 0;
  }

 private:
  static constexpr std::size_t kMaxCached = std::size_t{1} << 30;
  std::mutex mu_;
  std::vector<std::pair<void *, std::size_t>> free_;
  std::map<void *, std::size_t> size_;  // buffers in use
  std::size_t cached_ = 0;
};

PinnedPool &pool() {
  static PinnedPool *p = new PinnedPool;  // never destroyed: release_staging() empties it
  return *p;
}

// One non-blocking stream per GPU for the staging copies, and the events that order them
// after the application's work (one per call in flight: the per-thread default stream is
// the calling thread's, so two threads must not share one).
std::mutex g_streams_mu;
std::map<int, cuda::Stream> g_streams;
std::vector<std::pair<int, cuda::Event>> g_free_events;  // (device, event)

cuda::Stream stream_for(int device) {
  std::lock_guard<std::mutex> lock(g_streams_mu);
  auto it = g_streams.find(device);
  if (it != g_streams.end()) return it->second;
  cuda::Stream s = nullptr;
  if (!ok(rt().stream_create(&s))) return nullptr;
  g_streams[device] = s;
  return s;
}

cuda::Event take_event(int device) {
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    for (auto it = g_free_events.begin(); it != g_free_events.end(); ++it)
      if (it->first == device) {
        cuda::Event e = it->second;
        g_free_events.erase(it);
        return e;
      }
  }
  cuda::Event e = nullptr;
  if (!ok(rt().event_create(&e))) return nullptr;
  return e;
}

void give_event(int device, cuda::Event e) {
  std::lock_guard<std::mutex> lock(g_streams_mu);
  g_free_events.emplace_back(device, e);
}

// A staging session for one call: the device made current (and restored), host copies
// of the device buffers, copies in both directions on the GPU's staging stream.
class Stager {
 public:
  Stager(MPI_Comm comm, const char *func, int device) : comm_(comm), func_(func), device_(device) {
    prev_ = rt().current_device();
    if (!ok(rt().set_device(device))) {
      fail("cannot make the buffers' GPU current");
      return;
    }
    stream_ = stream_for(device);
    if (!stream_) {
      fail("no CUDA stream for staging");
      return;
    }
    order_ = take_event(device);
    if (!order_) fail("no CUDA event for staging");
  }
  ~Stager() {
    for (void *p : held_) pool().put(p);
    if (order_) give_event(device_, order_);
    if (prev_ >= 0 && prev_ != device_) rt().set_device(prev_);
  }

  // A host copy of the span of `count` x `type` at `dev`; `copy_in` fills it from the
  // device. Returns the pointer the MPI gets (span start minus lo), or nullptr on failure.
  void *host_copy(const void *dev, const Span &s, bool copy_in) {
    if (failed_) return nullptr;
    void *h = s.bytes ? pool().get(s.bytes) : nullptr;
    if (s.bytes && !h) return fail("out of pinned host memory");
    if (h) held_.push_back(h);
    if (copy_in && s.bytes) {
      // The application may have written the buffer with work still in flight on its
      // default stream (cudaMemcpy from pageable memory returns before the data lands):
      // the copy waits for it.
      if (!ok(rt().order_after_default_streams(stream_, order_)) ||
          !ok(rt().memcpy_async(h, static_cast<const char *>(dev) + s.lo, s.bytes, stream_)) ||
          !ok(rt().stream_synchronize(stream_)))
        return fail("copy of a device buffer to host memory failed");
    }
    return static_cast<char *>(h) - s.lo;
  }

  bool copy_out(void *dev, const void *host, const Span &s) {
    if (!s.bytes) return true;
    // Ordered after the application's default-stream work too: a write of ours must not
    // be overtaken by an older write of the application to the same buffer.
    if (!ok(rt().order_after_default_streams(stream_, order_)) ||
        !ok(rt().memcpy_async(static_cast<char *>(dev) + s.lo, static_cast<const char *>(host) + s.lo, s.bytes,
                              stream_)) ||
        !ok(rt().stream_synchronize(stream_))) {
      fail("copy of the result back to device memory failed");
      return false;
    }
    return true;
  }

  bool failed() const { return failed_; }
  int error() {
    std::snprintf(text_, sizeof text_, "%s (%s)", message_, rt().last_error());
    return raise_error(comm_, Status::ErrInternal, func_, text_);
  }

 private:
  void *fail(const char *msg) {
    if (!failed_) message_ = msg;
    failed_ = true;
    return nullptr;
  }

  MPI_Comm comm_;
  const char *func_;
  const char *message_ = "";
  char text_[256] = "";
  int prev_ = -1, device_ = -1;
  cuda::Stream stream_ = nullptr;
  cuda::Event order_ = nullptr;
  bool failed_ = false;
  std::vector<void *> held_;
};

}  // namespace

// A staging failure is local (out of pinned memory, a CUDA error): the rank cannot take
// part in the MPI call. It reports through the error handler; its peers then wait in the
// MPI, as they would for any rank that leaves a collective with an error.
int staged_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                     MPI_Comm comm, StagedBuffers b) {
  Span s;
  if (!span_of(count, datatype, &s))  // the MPI reports the bad datatype or count, touching nothing
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Stager st(comm, "MPI_Allreduce", b.device);
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, s, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, s, in_place || s.holes);
  if (st.failed()) return st.error();
  const int rc = PMPI_Allreduce(hsend, hrecv, count, datatype, op, comm);
  if (rc != MPI_SUCCESS) return rc;
  if (b.recv_device && !st.copy_out(recvbuf, hrecv, s)) return st.error();
  return MPI_SUCCESS;
}

int staged_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, StagedBuffers b) {
  Span s;
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  if (!b.recv_device || !span_of(count, datatype, &s)) return PMPI_Bcast(buffer, count, datatype, root, comm);
  Stager st(comm, "MPI_Bcast", b.device);
  const bool is_root = rank == root;
  void *h = st.host_copy(buffer, s, is_root || s.holes);
  if (st.failed()) return st.error();
  const int rc = PMPI_Bcast(h, count, datatype, root, comm);
  if (rc != MPI_SUCCESS) return rc;
  if (!is_root && !st.copy_out(buffer, h, s)) return st.error();
  return MPI_SUCCESS;
}

int staged_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  int n = 0, inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) PMPI_Comm_remote_size(comm, &n);
  else PMPI_Comm_size(comm, &n);
  Span ss, rs;
  // The receive span: n blocks of recvcount elements (block i at i x recvcount x extent).
  const long long total = static_cast<long long>(recvcount) * n;
  if ((!in_place && !span_of(sendcount, sendtype, &ss)) || total > 0x7fffffff ||
      !span_of(static_cast<int>(total), recvtype, &rs))
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  Stager st(comm, "MPI_Allgather", b.device);
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, ss, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, rs, in_place || rs.holes);
  if (st.failed()) return st.error();
  const int rc = PMPI_Allgather(hsend, sendcount, sendtype, hrecv, recvcount, recvtype, comm);
  if (rc != MPI_SUCCESS) return rc;
  if (b.recv_device && !st.copy_out(recvbuf, hrecv, rs)) return st.error();
  return MPI_SUCCESS;
}

void release_staging() {
  pool().clear();  // empty unless something was staged
  std::lock_guard<std::mutex> lock(g_streams_mu);
  if (g_streams.empty() && g_free_events.empty()) return;  // never staged: touch nothing
  const int prev = rt().current_device();
  for (auto &kv : g_streams) {
    rt().set_device(kv.first);
    rt().stream_destroy(kv.second);
  }
  g_streams.clear();
  for (auto &de : g_free_events) {
    rt().set_device(de.first);
    rt().event_destroy(de.second);
  }
  g_free_events.clear();
  if (prev >= 0) rt().set_device(prev);
}

}  // namespace gcoll
