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

cuda::Runtime &rt() { return cuda::runtime(); }

}  // namespace

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

struct Stager::Impl {
  explicit Impl(int device) : scope(device), device(device) {}
  void fail(const char *msg, Status st = Status::ErrInternal) {
    if (failed) return;
    message = msg;
    status = st;
    failed = true;
  }
  DeviceScope scope;
  int device = -1;
  const char *message = "";
  Status status = Status::Ok;
  cuda::Stream stream = nullptr;
  cuda::Event order = nullptr;
  bool failed = false;
  std::vector<void *> held;
};

Stager::Stager(int device) : impl_(new Impl(device)) {
  Impl &m = *impl_;
  if (!ok(m.scope.status())) {
    m.fail("cannot make the buffers' GPU current");
    return;
  }
  m.stream = pinned::stream(device);
  if (!m.stream) {
    m.fail("no CUDA stream for staging");
    return;
  }
  m.order = pinned::take_event(device);
  if (!m.order) m.fail("no CUDA event for staging");
}

Stager::~Stager() {
  for (void *p : impl_->held) pinned::put(p);
  if (impl_->order) pinned::give_event(impl_->device, impl_->order);
  delete impl_;
}

void *Stager::host_copy(const void *dev, const Span &s, bool copy_in) {
  Impl &m = *impl_;
  if (m.failed) return nullptr;
  void *h = s.bytes ? pinned::get(s.bytes) : nullptr;
  if (s.bytes && !h) {
    m.fail("out of pinned host memory", Status::ErrNoMem);
    return nullptr;
  }
  if (h) m.held.push_back(h);
  if (copy_in && s.bytes) {
    // The application may have written the buffer with work still in flight on its
    // default stream (cudaMemcpy from pageable memory returns before the data lands):
    // the copy waits for it.
    if (!ok(rt().order_after_default_streams(m.stream, m.order)) ||
        !ok(rt().memcpy_async(h, static_cast<const char *>(dev) + s.lo, s.bytes, m.stream)) ||
        !ok(rt().stream_synchronize(m.stream))) {
      m.fail("copy of a device buffer to host memory failed");
      return nullptr;
    }
  }
  return static_cast<char *>(h) - s.lo;
}

void Stager::copy_out(void *dev, const void *host, const Span &s) {
  Impl &m = *impl_;
  if (m.failed || !s.bytes) return;
  // Ordered after the application's default-stream work too: a write of ours must not
  // be overtaken by an older write of the application to the same buffer.
  if (!ok(rt().order_after_default_streams(m.stream, m.order)) ||
      !ok(rt().memcpy_async(static_cast<char *>(dev) + s.lo, static_cast<const char *>(host) + s.lo, s.bytes,
                            m.stream)) ||
      !ok(rt().stream_synchronize(m.stream)))
    m.fail("copy of the result back to device memory failed");
}

bool Stager::failed() const { return impl_->failed; }

StagedResult Stager::result(int mpi_rc) const {
  StagedResult r;
  r.mpi_rc = mpi_rc;
  if (impl_->failed) {
    r.status = impl_->status;
    r.why = std::string(impl_->message) + " (" + rt().last_error() + ")";
  }
  return r;
}

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

StagedResult staged_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                         MPI_Op op, MPI_Comm comm, StagedBuffers b) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  int n = 0;
  PMPI_Comm_size(comm, &n);
  const long long total = static_cast<long long>(recvcount) * n;
  // The input: n blocks (the receive buffer's, in place); the result: the first block.
  Span ss, rs, out;
  if (total > 0x7fffffff || (!in_place && !span_of(static_cast<int>(total), datatype, &ss)) ||
      !span_of(in_place ? static_cast<int>(total) : recvcount, datatype, &rs) || !span_of(recvcount, datatype, &out))
    return {PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm)};
  Stager st(b.device);
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, ss, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, rs, in_place || rs.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = PMPI_Reduce_scatter_block(hsend, hrecv, recvcount, datatype, op, comm);
  // Only the result goes back (in place, the rest of the input stays as it was).
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(recvbuf, hrecv, out);
  return st.result(rc);
}

void release_staging() { pinned::release(); }

}  // namespace gcoll
