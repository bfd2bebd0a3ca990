#include "coll/staged.h"

#include <algorithm>
#include <memory>
#include <cstddef>
#include <string>
#include <vector>

#include "cuda/runtime.h"
#include "cuda/stream_order.h"
#include "mem/device_scope.h"
#include "mem/pinned.h"

namespace gcoll {

namespace {

cuda::Runtime &rt() { return cuda::runtime(); }

}  // namespace

bool span_of(long long count, MPI_Datatype type, Span *out) {
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
  Impl(int device, Form form) : scope(new DeviceScope(device)), device(device), form(form) {}
  void fail(const char *msg, Status st = Status::ErrInternal) {
    if (failed) return;
    message = msg;
    status = st;
    failed = true;
  }
  // A copy between a device buffer and its host copy, kept for later (nonblocking: the
  // copies out, at completion; persistent: the copies in too, at every start).
  struct Copy {
    bool in;
    void *dev;
    void *host;
    Span span;
  };
  bool run(const Copy &c);
  std::unique_ptr<DeviceScope> scope;  // while the call runs (nonblocking, persistent: see leave_call)
  int device = -1;
  Form form = Form::Blocking;
  const char *message = "";
  Status status = Status::Ok;
  cuda::Stream stream = nullptr;
  cuda::Event order = nullptr;
  bool failed = false;
  std::vector<void *> held;
  std::vector<Copy> later;
};

// One copy on the staging stream, ordered after the application's work on its default
// streams (it may have written the buffer with work still in flight: cudaMemcpy from
// pageable memory returns before the data lands; and a write of ours must not be
// overtaken by an older write of the application to the same buffer).
bool Stager::Impl::run(const Copy &c) {
  if (failed || !c.span.bytes) return !failed;
  char *dst = static_cast<char *>(c.in ? c.host : c.dev) + c.span.lo;
  const char *src = static_cast<const char *>(c.in ? c.dev : c.host) + c.span.lo;
  if (!ok(cuda::order_after_application(rt(), stream, order)) ||
      !ok(rt().memcpy_async(dst, src, c.span.bytes, stream)) || !ok(rt().stream_synchronize(stream))) {
    fail(c.in ? "copy of a device buffer to host memory failed" : "copy of the result back to device memory failed");
    return false;
  }
  return true;
}

Stager::Stager(int device, Form form) : impl_(new Impl(device, form)) {
  Impl &m = *impl_;
  if (!ok(m.scope->status())) {
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
  char *base = static_cast<char *>(h) - s.lo;
  if (copy_in) this->copy_in(dev, base, s);
  return m.failed ? nullptr : base;
}

void Stager::copy_out(void *dev, const void *host, const Span &s) {
  Impl &m = *impl_;
  const Impl::Copy c{false, dev, const_cast<void *>(host), s};
  if (m.form == Form::Blocking) m.run(c);
  else if (!m.failed && s.bytes) m.later.push_back(c);
}

void Stager::copy_in(const void *dev, void *host, const Span &s) {
  Impl &m = *impl_;
  const Impl::Copy c{true, const_cast<void *>(dev), host, s};
  if (m.form != Form::Persistent) m.run(c);
  else if (!m.failed && s.bytes) m.later.push_back(c);
}

void Stager::leave_call() { impl_->scope.reset(); }

bool Stager::start() {
  Impl &m = *impl_;
  DeviceScope scope(m.device);
  if (!ok(scope.status())) m.fail("cannot make the buffers' GPU current");
  for (const Impl::Copy &c : m.later)
    if (c.in && !m.run(c)) return false;
  return !m.failed;
}

bool Stager::finish() {
  Impl &m = *impl_;
  DeviceScope scope(m.device);
  if (!ok(scope.status())) m.fail("cannot make the buffers' GPU current");
  for (const Impl::Copy &c : m.later)
    if (!c.in && !m.run(c)) return false;
  return !m.failed;
}

std::string Stager::why() const { return std::string(impl_->message) + " (" + rt().last_error() + ")"; }

bool Stager::failed() const { return impl_->failed; }

StagedResult Stager::result(int mpi_rc) const {
  StagedResult r;
  r.mpi_rc = mpi_rc;
  if (impl_->failed) {
    r.status = impl_->status;
    r.why = why();
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
    return {pmpi_allreduce(*b.form, sendbuf, recvbuf, count, datatype, op, comm)};
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, s, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, s, in_place || s.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_allreduce(*b.form, hsend, hrecv, count, datatype, op, comm);
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(recvbuf, hrecv, s);
  return st.result(rc);
}

StagedResult staged_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          StagedBuffers b) {
  Span s;
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  if (!b.recv_device || !span_of(count, datatype, &s))
    return {pmpi_bcast(*b.form, buffer, count, datatype, root, comm)};
  Stager &st = *b.stager;
  const bool is_root = rank == root;
  void *h = st.host_copy(buffer, s, is_root || s.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_bcast(*b.form, h, count, datatype, root, comm);
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
    return {pmpi_allgather(*b.form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)};
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, ss, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, rs, in_place || rs.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_allgather(*b.form, hsend, sendcount, sendtype, hrecv, recvcount, recvtype, comm);
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
    return {pmpi_reduce_scatter_block(*b.form, sendbuf, recvbuf, recvcount, datatype, op, comm)};
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, ss, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, rs, in_place || rs.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_reduce_scatter_block(*b.form, hsend, hrecv, recvcount, datatype, op, comm);
  // Only the result goes back (in place, the rest of the input stays as it was).
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(recvbuf, hrecv, out);
  return st.result(rc);
}

RootRole root_role(MPI_Comm comm, int root) {
  RootRole r;
  int inter = 0, size = 0;
  if (comm == MPI_COMM_NULL) return r;  // (the caller reports it; the MPI would abort)
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || PMPI_Comm_size(comm, &size) != MPI_SUCCESS ||
      PMPI_Comm_rank(comm, &r.rank) != MPI_SUCCESS)
    return r;
  if (!inter) return intra_root_role(r.rank, size, root);
  r.inter = true;
  if (PMPI_Comm_remote_size(comm, &r.n) != MPI_SUCCESS) return r;
  r.valid = root == MPI_ROOT || root == MPI_PROC_NULL || (root >= 0 && root < r.n);
  r.root = r.valid && root == MPI_ROOT;
  r.member = r.valid && root >= 0;
  return r;
}

int group_size(MPI_Comm comm) {
  int inter = 0, n = 0;
  if (comm == MPI_COMM_NULL) return 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) PMPI_Comm_remote_size(comm, &n);
  else PMPI_Comm_size(comm, &n);
  return n;
}

NeighborDegrees neighbor_degrees(MPI_Comm comm) {
  NeighborDegrees d;
  int kind = MPI_UNDEFINED, rank = 0, ndims = 0, weighted = 0;
  if (comm == MPI_COMM_NULL || PMPI_Topo_test(comm, &kind) != MPI_SUCCESS) return d;
  if (kind == MPI_CART) {
    if (PMPI_Cartdim_get(comm, &ndims) == MPI_SUCCESS) d.in = d.out = 2 * ndims;
  } else if (kind == MPI_GRAPH) {
    int nn = 0;
    if (PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS && PMPI_Graph_neighbors_count(comm, rank, &nn) == MPI_SUCCESS)
      d.in = d.out = nn;
  } else if (kind == MPI_DIST_GRAPH) {
    if (PMPI_Dist_graph_neighbors_count(comm, &d.in, &d.out, &weighted) != MPI_SUCCESS) d = NeighborDegrees{};
  }
  return d;
}

namespace {

// `count` elements of `type` starting `displ` extents into the buffer. false: the MPI
// would reject the count or the type.
bool block_span(int count, long long displ, MPI_Datatype type, Span *out) {
  if (!span_of(count, type, out)) return false;
  if (count == 0) return true;
  MPI_Aint lb = 0, ext = 0;
  if (PMPI_Type_get_extent(type, &lb, &ext) != MPI_SUCCESS) return false;
  out->lo += static_cast<MPI_Aint>(displ) * ext;
  return true;
}

// n blocks: block i of counts[i] elements at displs[i] extents (skip: a block left out, or
// -1). false: a count or the type the MPI would reject.
bool blocks_of(int n, const int *counts, const long long *displs, MPI_Datatype type, int skip,
               std::vector<Span> *out) {
  for (int i = 0; i < n; ++i) {
    Span s;
    if (!block_span(counts[i], displs[i], type, &s)) return false;
    if (i != skip && s.bytes) out->push_back(s);
  }
  return true;
}

// The same blocks as the byte runs they cover: sorted, overlapping and touching ones
// joined (a run holds no byte outside the blocks).
std::vector<Span> runs_of(std::vector<Span> v) {
  std::sort(v.begin(), v.end(), [](const Span &a, const Span &b) { return a.lo < b.lo; });
  std::vector<Span> r;
  for (const Span &s : v) {
    if (!s.bytes) continue;
    const MPI_Aint end = s.lo + static_cast<MPI_Aint>(s.bytes);
    if (!r.empty() && s.lo <= r.back().lo + static_cast<MPI_Aint>(r.back().bytes)) {
      Span &b = r.back();
      b.bytes = static_cast<std::size_t>(std::max(end, b.lo + static_cast<MPI_Aint>(b.bytes)) - b.lo);
      b.holes = b.holes || s.holes;
    } else {
      r.push_back(s);
    }
  }
  return r;
}

bool any_holes(const std::vector<Span> &v) {
  for (const Span &s : v)
    if (s.holes) return true;
  return false;
}

// The host copy of the device buffer `dev` of a call that reads the spans `reads` of it
// and writes `writes` (relative to the buffer): one pinned buffer over all of them; what
// the MPI reads copied in, and the blocks it writes too where their datatype has holes
// (the holes go back as they were).
void *stage_in(Stager &st, const void *dev, const std::vector<Span> &reads, const std::vector<Span> &writes) {
  std::vector<Span> all = reads;
  all.insert(all.end(), writes.begin(), writes.end());
  const std::vector<Span> every = runs_of(all);
  static char nothing;  // a host address all the same: no device pointer reaches the MPI
  if (every.empty()) return &nothing;
  Span cover;
  cover.lo = every.front().lo;
  cover.bytes = static_cast<std::size_t>(every.back().lo + static_cast<MPI_Aint>(every.back().bytes) - cover.lo);
  void *h = st.host_copy(dev, cover, false);
  if (st.failed()) return nullptr;
  std::vector<Span> in = reads;
  if (any_holes(writes)) in.insert(in.end(), writes.begin(), writes.end());
  for (const Span &r : runs_of(in)) st.copy_in(dev, h, r);
  return h;
}

// Copies back what the MPI wrote: the runs of `writes`, nothing between them.
void stage_out(Stager &st, void *dev, const void *host, const std::vector<Span> &writes) {
  for (const Span &r : runs_of(writes)) st.copy_out(dev, host, r);
}

// n blocks of `count` elements, block i at i x count (a scalar-count collective's buffer
// at the root, or an alltoall's).
bool even_blocks(int n, int count, MPI_Datatype type, int skip, std::vector<Span> *out) {
  std::vector<int> counts(static_cast<std::size_t>(n), count);
  std::vector<long long> displs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) displs[static_cast<std::size_t>(i)] = static_cast<long long>(i) * count;
  return blocks_of(n, counts.data(), displs.data(), type, skip, out);
}

bool displaced_blocks(int n, const int *counts, const int *displs, MPI_Datatype type, int skip,
                      std::vector<Span> *out) {
  if (n > 0 && (!counts || !displs)) return false;
  std::vector<long long> d(displs, displs + n);
  return blocks_of(n, counts, d.data(), type, skip, out);
}

std::vector<Span> one(const Span &s) { return s.bytes ? std::vector<Span>{s} : std::vector<Span>{}; }

// n blocks of their own datatypes: block i of counts[i] x types[i] at bdispls[i] bytes.
template <class Displ>
bool typed_blocks(int n, const int *counts, const Displ *bdispls, const MPI_Datatype *types, std::vector<Span> *out) {
  if (n > 0 && (!counts || !bdispls || !types)) return false;
  for (int i = 0; i < n; ++i) {
    Span s;
    if (!span_of(counts[i], types[i], &s)) return false;
    s.lo += static_cast<MPI_Aint>(bdispls[i]);
    if (s.bytes) out->push_back(s);
  }
  return true;
}

// A collective that reads the blocks `sblocks` of sendbuf and writes `rblocks` of recvbuf
// (in place: the receive buffer's blocks are the input too), staged: `mpi(hsend, hrecv)`
// makes the MPI's call on the host copies. `ok_args`: the blocks could be described (else
// the MPI gets the call as it is, and reports what is wrong).
template <class Mpi>
StagedResult stage_blocks(const StagedBuffers &b, bool ok_args, const void *sendbuf, const std::vector<Span> &sblocks,
                          void *recvbuf, const std::vector<Span> &rblocks, Mpi &&mpi) {
  if (!ok_args) return {mpi(sendbuf, recvbuf)};
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device && !in_place) hsend = stage_in(st, sendbuf, sblocks, {});
  if (b.recv_device) hrecv = stage_in(st, recvbuf, in_place ? rblocks : std::vector<Span>{}, rblocks);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = mpi(hsend, hrecv);
  if (rc == MPI_SUCCESS && b.recv_device) stage_out(st, recvbuf, hrecv, rblocks);
  return st.result(rc);
}

}  // namespace

StagedResult staged_alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, StagedBuffers b) {
  const int n = group_size(comm);
  std::vector<Span> sb, rb;
  const bool good = (!b.send_device || typed_blocks(n, sendcounts, sdispls, sendtypes, &sb)) &&
                    (!b.recv_device || typed_blocks(n, recvcounts, rdispls, recvtypes, &rb));
  return stage_blocks(b, good, sendbuf, sb, recvbuf, rb, [&](const void *s, void *r) {
    return pmpi_alltoallw(*b.form, s, sendcounts, sdispls, sendtypes, r, recvcounts, rdispls, recvtypes, comm);
  });
}

StagedResult staged_neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b) {
  const NeighborDegrees d = neighbor_degrees(comm);
  std::vector<Span> sb, rb;
  Span ss;
  const bool good = (!b.send_device || span_of(sendcount, sendtype, &ss)) &&
                    (!b.recv_device || even_blocks(d.in, recvcount, recvtype, -1, &rb));
  sb = one(ss);
  return stage_blocks(b, good, sendbuf, sb, recvbuf, rb, [&](const void *s, void *r) {
    return pmpi_neighbor_allgather(*b.form, s, sendcount, sendtype, r, recvcount, recvtype, comm);
  });
}

StagedResult staged_neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                        MPI_Comm comm, StagedBuffers b) {
  const NeighborDegrees d = neighbor_degrees(comm);
  std::vector<Span> sb, rb;
  Span ss;
  const bool good = (!b.send_device || span_of(sendcount, sendtype, &ss)) &&
                    (!b.recv_device || displaced_blocks(d.in, recvcounts, displs, recvtype, -1, &rb));
  sb = one(ss);
  return stage_blocks(b, good, sendbuf, sb, recvbuf, rb, [&](const void *s, void *r) {
    return pmpi_neighbor_allgatherv(*b.form, s, sendcount, sendtype, r, recvcounts, displs, recvtype, comm);
  });
}

StagedResult staged_neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b) {
  const NeighborDegrees d = neighbor_degrees(comm);
  std::vector<Span> sb, rb;
  const bool good = (!b.send_device || even_blocks(d.out, sendcount, sendtype, -1, &sb)) &&
                    (!b.recv_device || even_blocks(d.in, recvcount, recvtype, -1, &rb));
  return stage_blocks(b, good, sendbuf, sb, recvbuf, rb, [&](const void *s, void *r) {
    return pmpi_neighbor_alltoall(*b.form, s, sendcount, sendtype, r, recvcount, recvtype, comm);
  });
}

StagedResult staged_neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b) {
  const NeighborDegrees d = neighbor_degrees(comm);
  std::vector<Span> sb, rb;
  const bool good = (!b.send_device || displaced_blocks(d.out, sendcounts, sdispls, sendtype, -1, &sb)) &&
                    (!b.recv_device || displaced_blocks(d.in, recvcounts, rdispls, recvtype, -1, &rb));
  return stage_blocks(b, good, sendbuf, sb, recvbuf, rb, [&](const void *s, void *r) {
    return pmpi_neighbor_alltoallv(*b.form, s, sendcounts, sdispls, sendtype, r, recvcounts, rdispls, recvtype, comm);
  });
}

StagedResult staged_neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                       StagedBuffers b) {
  const NeighborDegrees d = neighbor_degrees(comm);
  std::vector<Span> sb, rb;
  const bool good = (!b.send_device || typed_blocks(d.out, sendcounts, sdispls, sendtypes, &sb)) &&
                    (!b.recv_device || typed_blocks(d.in, recvcounts, rdispls, recvtypes, &rb));
  return stage_blocks(b, good, sendbuf, sb, recvbuf, rb, [&](const void *s, void *r) {
    return pmpi_neighbor_alltoallw(*b.form, s, sendcounts, sdispls, sendtypes, r, recvcounts, rdispls, recvtypes,
                                   comm);
  });
}

StagedResult staged_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                           MPI_Comm comm, StagedBuffers b) {
  Span s;
  if (!span_of(count, datatype, &s)) return {pmpi_reduce(*b.form, sendbuf, recvbuf, count, datatype, op, root, comm)};
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device) hsend = st.host_copy(sendbuf, s, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, s, in_place || s.holes);  // the root's
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_reduce(*b.form, hsend, hrecv, count, datatype, op, root, comm);
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(recvbuf, hrecv, s);
  return st.result(rc);
}

StagedResult staged_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, int root, MPI_Comm comm, StagedBuffers b) {
  const RootRole r = root_role(comm, root);
  const bool in_place = r.root && !r.inter && sendbuf == MPI_IN_PLACE;
  Span ss;
  std::vector<Span> blocks;  // the root's: every block but its own in place
  if (!r.valid || (b.send_device && !span_of(sendcount, sendtype, &ss)) ||
      (b.recv_device && !even_blocks(r.n, recvcount, recvtype, in_place ? r.rank : -1, &blocks)))
    return {pmpi_gather(*b.form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm)};
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device) hsend = st.host_copy(sendbuf, ss, true);
  if (b.recv_device) hrecv = stage_in(st, recvbuf, {}, blocks);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_gather(*b.form, hsend, sendcount, sendtype, hrecv, recvcount, recvtype, root, comm);
  if (rc == MPI_SUCCESS && b.recv_device) stage_out(st, recvbuf, hrecv, blocks);
  return st.result(rc);
}

StagedResult staged_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm, StagedBuffers b) {
  const RootRole r = root_role(comm, root);
  const bool in_place = r.root && !r.inter && recvbuf == MPI_IN_PLACE;
  Span rs;
  std::vector<Span> blocks;  // the root's: every block but its own in place
  if (!r.valid || (b.recv_device && !span_of(recvcount, recvtype, &rs)) ||
      (b.send_device && !even_blocks(r.n, sendcount, sendtype, in_place ? r.rank : -1, &blocks)))
    return {pmpi_scatter(*b.form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm)};
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device) hsend = stage_in(st, sendbuf, blocks, {});
  if (b.recv_device) hrecv = st.host_copy(recvbuf, rs, rs.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_scatter(*b.form, hsend, sendcount, sendtype, hrecv, recvcount, recvtype, root, comm);
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(recvbuf, hrecv, rs);
  return st.result(rc);
}

StagedResult staged_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int n = group_size(comm);
  // In place: the receive buffer holds the input and the result, both n blocks.
  std::vector<Span> sblocks, rblocks;
  if ((b.send_device && !even_blocks(n, sendcount, sendtype, -1, &sblocks)) ||
      (b.recv_device && !even_blocks(n, recvcount, recvtype, -1, &rblocks)))
    return {pmpi_alltoall(*b.form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)};
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device) hsend = stage_in(st, sendbuf, sblocks, {});
  if (b.recv_device) hrecv = stage_in(st, recvbuf, in_place ? rblocks : std::vector<Span>{}, rblocks);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_alltoall(*b.form, hsend, sendcount, sendtype, hrecv, recvcount, recvtype, comm);
  if (rc == MPI_SUCCESS && b.recv_device) stage_out(st, recvbuf, hrecv, rblocks);
  return st.result(rc);
}

StagedResult staged_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                   MPI_Op op, MPI_Comm comm, StagedBuffers b) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  int n = 0, rank = 0;
  PMPI_Comm_size(comm, &n);
  PMPI_Comm_rank(comm, &rank);
  // The input: the blocks of every rank one after the other (in place: in the receive
  // buffer); the result: this rank's block at the start of the receive buffer.
  std::vector<Span> input, result;
  std::vector<long long> at(static_cast<std::size_t>(n > 0 ? n : 0));
  bool good = n > 0 && recvcounts != nullptr && rank >= 0 && rank < n;
  for (int i = 0; good && i < n; ++i) at[static_cast<std::size_t>(i)] = i ? at[i - 1] + recvcounts[i - 1] : 0;
  Span out;
  if (!good || !blocks_of(n, recvcounts, at.data(), datatype, -1, &input) ||
      !span_of(recvcounts[rank], datatype, &out))
    return {pmpi_reduce_scatter(*b.form, sendbuf, recvbuf, recvcounts, datatype, op, comm)};
  result = one(out);
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device) hsend = stage_in(st, sendbuf, input, {});
  if (b.recv_device) hrecv = stage_in(st, recvbuf, in_place ? input : std::vector<Span>{}, result);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_reduce_scatter(*b.form, hsend, hrecv, recvcounts, datatype, op, comm);
  // Only the result goes back (in place, the rest of the input stays as it was).
  if (rc == MPI_SUCCESS && b.recv_device) stage_out(st, recvbuf, hrecv, result);
  return st.result(rc);
}

StagedResult staged_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                               StagedBuffers b) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int n = group_size(comm);
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  // In place: this rank's block is its input, every other block the MPI writes.
  Span ss;
  std::vector<Span> mine, others;
  if ((b.send_device && !span_of(sendcount, sendtype, &ss)) ||
      (b.recv_device && (!displaced_blocks(n, recvcounts, displs, recvtype, in_place ? rank : -1, &others) ||
                         (in_place && (rank < 0 || rank >= n ||
                                       !blocks_of(1, recvcounts + rank, std::vector<long long>{displs[rank]}.data(),
                                                  recvtype, -1, &mine))))))
    return {pmpi_allgatherv(*b.form, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm)};
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device) hsend = st.host_copy(sendbuf, ss, true);
  if (b.recv_device) hrecv = stage_in(st, recvbuf, mine, others);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_allgatherv(*b.form, hsend, sendcount, sendtype, hrecv, recvcounts, displs, recvtype, comm);
  if (rc == MPI_SUCCESS && b.recv_device) stage_out(st, recvbuf, hrecv, others);
  return st.result(rc);
}

StagedResult staged_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                            StagedBuffers b) {
  const RootRole r = root_role(comm, root);
  const bool in_place = r.root && !r.inter && sendbuf == MPI_IN_PLACE;
  Span ss;
  std::vector<Span> blocks;  // the root's: every block but its own in place
  if (!r.valid || (b.send_device && !span_of(sendcount, sendtype, &ss)) ||
      (b.recv_device && !displaced_blocks(r.n, recvcounts, displs, recvtype, in_place ? r.rank : -1, &blocks)))
    return {pmpi_gatherv(*b.form, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm)};
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device) hsend = st.host_copy(sendbuf, ss, true);
  if (b.recv_device) hrecv = stage_in(st, recvbuf, {}, blocks);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_gatherv(*b.form, hsend, sendcount, sendtype, hrecv, recvcounts, displs, recvtype, root, comm);
  if (rc == MPI_SUCCESS && b.recv_device) stage_out(st, recvbuf, hrecv, blocks);
  return st.result(rc);
}

StagedResult staged_scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                             StagedBuffers b) {
  const RootRole r = root_role(comm, root);
  const bool in_place = r.root && !r.inter && recvbuf == MPI_IN_PLACE;
  Span rs;
  std::vector<Span> blocks;  // the root's: every block but its own in place
  if (!r.valid || (b.recv_device && !span_of(recvcount, recvtype, &rs)) ||
      (b.send_device && !displaced_blocks(r.n, sendcounts, displs, sendtype, in_place ? r.rank : -1, &blocks)))
    return {pmpi_scatterv(*b.form, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm)};
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (b.send_device) hsend = stage_in(st, sendbuf, blocks, {});
  if (b.recv_device) hrecv = st.host_copy(recvbuf, rs, rs.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = pmpi_scatterv(*b.form, hsend, sendcounts, displs, sendtype, hrecv, recvcount, recvtype, root, comm);
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(recvbuf, hrecv, rs);
  return st.result(rc);
}

StagedResult staged_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                              MPI_Comm comm, StagedBuffers b) {
  const int n = group_size(comm);
  // In place: the receive buffer's blocks are the input and the result.
  std::vector<Span> sblocks, rblocks;
  const bool good = (!b.send_device || displaced_blocks(n, sendcounts, sdispls, sendtype, -1, &sblocks)) &&
                    (!b.recv_device || displaced_blocks(n, recvcounts, rdispls, recvtype, -1, &rblocks));
  return stage_blocks(b, good, sendbuf, sblocks, recvbuf, rblocks, [&](const void *s, void *r) {
    return pmpi_alltoallv(*b.form, s, sendcounts, sdispls, sendtype, r, recvcounts, rdispls, recvtype, comm);
  });
}

StagedResult staged_reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                 StagedBuffers b) {
  Span s;
  if (!span_of(count, datatype, &s)) return {PMPI_Reduce_local(inbuf, inoutbuf, count, datatype, op)};
  Stager &st = *b.stager;
  const void *hin = b.send_device ? st.host_copy(inbuf, s, true) : inbuf;
  void *hio = b.recv_device ? st.host_copy(inoutbuf, s, true) : inoutbuf;
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = PMPI_Reduce_local(hin, hio, count, datatype, op);
  if (rc == MPI_SUCCESS && b.recv_device) st.copy_out(inoutbuf, hio, s);
  return st.result(rc);
}

StagedResult staged_scan(bool exclusive, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, StagedBuffers b) {
  const auto mpi = [&](const void *s, void *r) {
    return exclusive ? pmpi_exscan(*b.form, s, r, count, datatype, op, comm)
                     : pmpi_scan(*b.form, s, r, count, datatype, op, comm);
  };
  Span s;
  if (!span_of(count, datatype, &s)) return {mpi(sendbuf, recvbuf)};
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const bool gets = !exclusive || rank > 0;  // exscan: rank 0's receive buffer is not written
  Stager &st = *b.stager;
  const void *hsend = sendbuf;
  void *hrecv = recvbuf;
  if (!in_place && b.send_device) hsend = st.host_copy(sendbuf, s, true);
  if (b.recv_device) hrecv = st.host_copy(recvbuf, s, in_place || s.holes);
  if (st.failed()) return st.result(MPI_SUCCESS);
  const int rc = mpi(hsend, hrecv);
  if (rc == MPI_SUCCESS && b.recv_device && gets) st.copy_out(recvbuf, hrecv, s);
  return st.result(rc);
}

void release_staging() { pinned::release(); }

}  // namespace gcoll
