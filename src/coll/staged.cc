#include "coll/staged.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "cuda/runtime.h"
#include "mem/device_scope.h"
#include "mem/pinned.h"

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

// A staging session for one call: the device made current (and restored), host copies
// of the device buffers, copies in both directions on the GPU's staging stream.
class Stager {
 public:
  explicit Stager(int device) : scope_(device), device_(device) {
    if (!ok(scope_.status())) {
      fail("cannot make the buffers' GPU current");
      return;
    }
    stream_ = pinned::stream(device);
    if (!stream_) {
      fail("no CUDA stream for staging");
      return;
    }
    order_ = pinned::take_event(device);
    if (!order_) fail("no CUDA event for staging");
  }
  ~Stager() {
    for (void *p : held_) pinned::put(p);
    if (order_) pinned::give_event(device_, order_);
  }
  Stager(const Stager &) = delete;
  Stager &operator=(const Stager &) = delete;

  // A host copy of the span of `count` x `type` at `dev`; `copy_in` fills it from the
  // device. Returns the pointer the MPI gets (span start minus lo); after a failure,
  // failed() is true and the pointer must not be used.
  void *host_copy(const void *dev, const Span &s, bool copy_in) {
    if (failed_) return nullptr;
    void *h = s.bytes ? pinned::get(s.bytes) : nullptr;
    if (s.bytes && !h) {
      fail("out of pinned host memory", Status::ErrNoMem);
      return nullptr;
    }
    if (h) held_.push_back(h);
    if (copy_in && s.bytes) {
      // The application may have written the buffer with work still in flight on its
      // default stream (cudaMemcpy from pageable memory returns before the data lands):
      // the copy waits for it.
      if (!ok(rt().order_after_default_streams(stream_, order_)) ||
          !ok(rt().memcpy_async(h, static_cast<const char *>(dev) + s.lo, s.bytes, stream_)) ||
          !ok(rt().stream_synchronize(stream_))) {
        fail("copy of a device buffer to host memory failed");
        return nullptr;
      }
    }
    return static_cast<char *>(h) - s.lo;
  }

  void copy_out(void *dev, const void *host, const Span &s) {
    if (failed_ || !s.bytes) return;
    // Ordered after the application's default-stream work too: a write of ours must not
    // be overtaken by an older write of the application to the same buffer.
    if (!ok(rt().order_after_default_streams(stream_, order_)) ||
        !ok(rt().memcpy_async(static_cast<char *>(dev) + s.lo, static_cast<const char *>(host) + s.lo, s.bytes,
                              stream_)) ||
        !ok(rt().stream_synchronize(stream_)))
      fail("copy of the result back to device memory failed");
  }

  bool failed() const { return failed_; }
  // The outcome: the MPI's return code, or the staging failure.
  StagedResult result(int mpi_rc) const {
    StagedResult r;
    r.mpi_rc = mpi_rc;
    if (failed_) {
      r.status = status_;
      r.why = std::string(message_) + " (" + rt().last_error() + ")";
    }
    return r;
  }

 private:
  void fail(const char *msg, Status st = Status::ErrInternal) {
    if (failed_) return;
    message_ = msg;
    status_ = st;
    failed_ = true;
  }

  DeviceScope scope_;
  int device_ = -1;
  const char *message_ = "";
  Status status_ = Status::Ok;
  cuda::Stream stream_ = nullptr;
  cuda::Event order_ = nullptr;
  bool failed_ = false;
  std::vector<void *> held_;
};

}  // namespace

// A staging failure is local (out of pinned memory, a CUDA error): the rank cannot take
// part in the MPI call. Its caller reports it through the error handler; its peers then
// wait in the MPI, as they would for any rank that leaves a collective with an error.
StagedResult staged_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, StagedBuffers b) {
  Span s;
  if (!span_of(count, datatype, &s))  // the MPI reports the bad datatype or count, touching nothing
    return {PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm)};
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Stager st(b.device);
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, s, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, s, in_place || s.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = PMPI_Allreduce(hsend, hrecv, count, datatype, op, comm);
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(recvbuf, hrecv, s);
  return st.result(rc);
}

StagedResult staged_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          StagedBuffers b) {
  Span s;
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  if (!b.recv_device || !span_of(count, datatype, &s)) return {PMPI_Bcast(buffer, count, datatype, root, comm)};
  Stager st(b.device);
  const bool is_root = rank == root;
  void *h = st.host_copy(buffer, s, is_root || s.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = PMPI_Bcast(h, count, datatype, root, comm);
  if (rc == MPI_SUCCESS && !is_root) st.copy_out(buffer, h, s);
  return st.result(rc);
}

StagedResult staged_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b) {
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
    return {PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)};
  Stager st(b.device);
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, ss, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, rs, in_place || rs.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = PMPI_Allgather(hsend, sendcount, sendtype, hrecv, recvcount, recvtype, comm);
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(recvbuf, hrecv, rs);
  return st.result(rc);
}

void release_staging() { pinned::release(); }

}  // namespace gcoll
