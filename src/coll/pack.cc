#include "coll/pack.h"

#include <algorithm>
#include <climits>
#include <mutex>
#include <new>


namespace gcoll {

namespace {

// A duplicate of MPI_COMM_SELF with MPI_ERRORS_RETURN, for PMPI_Pack and PMPI_Unpack:
// a refusal (an uncommitted datatype) comes back as a return code, and the caller
// reports it through the application's communicator instead. Created at first use (a
// duplicate of MPI_COMM_SELF involves no other process).
std::mutex g_comm_mu;
MPI_Comm g_pack_comm = MPI_COMM_NULL;

MPI_Comm pack_comm() {
  std::lock_guard<std::mutex> lock(g_comm_mu);
  if (g_pack_comm == MPI_COMM_NULL) {
    MPI_Comm c = MPI_COMM_NULL;
    if (PMPI_Comm_dup(MPI_COMM_SELF, &c) != MPI_SUCCESS) return MPI_COMM_NULL;
    PMPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    g_pack_comm = c;
  }
  return g_pack_comm;
}

int class_of(int rc) {
  int cls = MPI_ERR_INTERN;
  if (PMPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = MPI_ERR_INTERN;
  return cls;
}

// Named (predefined) types never change and are never freed: their shape is remembered
// per thread for the last few handles.
struct Shape {
  MPI_Datatype type;
  int size;
  MPI_Aint extent, true_lb, true_extent;
  bool named;
};
constexpr int kShapes = 4;
struct ShapeCache {  // trivial: zero TLS
  Shape s[kShapes];
  unsigned next;
};
thread_local ShapeCache t_shapes __attribute__((tls_model("initial-exec")));

bool shape_of(MPI_Datatype t, Shape *out) {
  ShapeCache &c = t_shapes;
  for (const Shape &s : c.s)
    if (s.type == t && s.named && t != MPI_Datatype()) {
      *out = s;
      return true;
    }
  Shape s{};
  s.type = t;
  int ni = 0, na = 0, nd = 0, combiner = 0;
  if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
  s.named = combiner == MPI_COMBINER_NAMED;
  MPI_Aint lb = 0;
  if (PMPI_Type_size(t, &s.size) != MPI_SUCCESS || s.size == MPI_UNDEFINED || s.size < 0 ||
      PMPI_Type_get_extent(t, &lb, &s.extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(t, &s.true_lb, &s.true_extent) != MPI_SUCCESS)
    return false;
  if (s.named) {
    c.s[c.next % kShapes] = s;
    ++c.next;
  }
  *out = s;
  return true;
}

// The span of `n` elements of `type` (64-bit counts; Span of coll/staged.h).
bool span64(long long n, MPI_Datatype type, Span *out) {
  *out = Span{};
  if (n <= 0) return true;
  Shape s;
  if (!shape_of(type, &s)) return false;
  const MPI_Aint stride = static_cast<MPI_Aint>(n - 1) * s.extent;
  const MPI_Aint lo = s.true_lb + std::min<MPI_Aint>(0, stride);
  const MPI_Aint hi = s.true_lb + s.true_extent + std::max<MPI_Aint>(0, stride);
  out->lo = lo;
  out->bytes = static_cast<std::size_t>(hi - lo);
  out->holes = static_cast<std::size_t>(s.size) * static_cast<std::size_t>(n) != out->bytes;
  return true;
}

// The span of an allgatherv's receive blocks (every non-empty one; holes: the bytes
// between blocks).
bool span_blocks(int n, const int *counts, const int *displs, MPI_Datatype type, Span *out) {
  *out = Span{};
  Shape s;
  if (!shape_of(type, &s)) return false;
  bool any = false;
  MPI_Aint lo = 0, hi = 0;
  for (int i = 0; i < n; ++i) {
    if (counts[i] <= 0) continue;
    Span b;
    if (!span64(counts[i], type, &b)) return false;
    const MPI_Aint l = static_cast<MPI_Aint>(displs[i]) * s.extent + b.lo;
    const MPI_Aint h = l + static_cast<MPI_Aint>(b.bytes);
    lo = any ? std::min(lo, l) : l;
    hi = any ? std::max(hi, h) : h;
    any = true;
  }
  if (any) {
    out->lo = lo;
    out->bytes = static_cast<std::size_t>(hi - lo);
    out->holes = true;
  }
  return true;
}

// Elements per PMPI_Pack call: the packed size must fit an int.
long long piece_of(int size) { return size > 0 ? std::max<long long>(1, (INT_MAX / 2) / size) : 1; }

}  // namespace

bool byte_layout(long long count, MPI_Datatype type, ByteLayout *out) {
  *out = ByteLayout{};
  if (count < 0 || type == MPI_DATATYPE_NULL) return false;
  Shape s;
  if (!shape_of(type, &s)) return false;
  out->bytes = static_cast<std::size_t>(count) * static_cast<std::size_t>(s.size);
  out->offset = s.true_lb;
  out->extent = s.extent;
  if (count == 0 || s.size == 0) {
    out->direct = true;  // no bytes: nothing to pack
    return true;
  }
  // One run: the elements' bytes without gaps (named types lay theirs out in type-map
  // order), and the elements back to back.
  const bool one_element = s.named && s.true_extent == s.size;
  out->direct = one_element && (count == 1 || s.extent == s.size);
  return true;
}

Packer::~Packer() = default;

Status Packer::fail(Status st, int cls, std::string why) {
  error_class_ = cls;
  why_ = std::move(why);
  return st;
}

Status Packer::pack(const void *user, int n, MPI_Datatype type, char *out, std::size_t bytes) {
  MPI_Comm c = pack_comm();
  if (c == MPI_COMM_NULL) return fail(Status::ErrInternal, MPI_ERR_INTERN, "no communicator for packing");
  Shape s;
  if (!shape_of(type, &s)) return fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no size");
  const long long piece = piece_of(s.size);
  std::size_t done = 0;
  for (long long at = 0; at < n || (n == 0 && at == 0); at += piece) {
    const int m = static_cast<int>(std::min<long long>(piece, n - at));
    int pos = 0;
    const char *from = static_cast<const char *>(user) + at * s.extent;
    const int rc = PMPI_Pack(from, m, type, out + done, static_cast<int>(std::min<std::size_t>(bytes - done, INT_MAX)),
                             &pos, c);
    if (rc != MPI_SUCCESS)
      return fail(class_of(rc) == MPI_ERR_TYPE ? Status::ErrType : Status::ErrArg, class_of(rc),
                  "the datatype cannot be packed (is it committed?)");
    done += static_cast<std::size_t>(pos);
    if (n == 0) break;
  }
  if (done != bytes)
    return fail(Status::ErrInternal, MPI_ERR_INTERN,
                "MPI_Pack's packed size differs from the type signature's (a heterogeneous representation?)");
  return Status::Ok;
}

Status Packer::unpack(const char *in, std::size_t bytes, void *user, int n, MPI_Datatype type) {
  MPI_Comm c = pack_comm();
  if (c == MPI_COMM_NULL) return fail(Status::ErrInternal, MPI_ERR_INTERN, "no communicator for packing");
  Shape s;
  if (!shape_of(type, &s)) return fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no size");
  const long long piece = piece_of(s.size);
  std::size_t done = 0;
  for (long long at = 0; at < n || (n == 0 && at == 0); at += piece) {
    const int m = static_cast<int>(std::min<long long>(piece, n - at));
    const std::size_t len = static_cast<std::size_t>(m) * static_cast<std::size_t>(s.size);
    int pos = 0;
    char *to = static_cast<char *>(user) + at * s.extent;
    const int rc = PMPI_Unpack(in + done, static_cast<int>(len), &pos, to, m, type, c);
    if (rc != MPI_SUCCESS)
      return fail(class_of(rc) == MPI_ERR_TYPE ? Status::ErrType : Status::ErrArg, class_of(rc),
                  "the datatype cannot be unpacked (is it committed?)");
    done += static_cast<std::size_t>(pos);
    if (n == 0) break;
  }
  if (done != bytes)
    return fail(Status::ErrInternal, MPI_ERR_INTERN,
                "MPI_Unpack's packed size differs from the type signature's (a heterogeneous representation?)");
  return Status::Ok;
}

void *Packer::host_view(const PackSide &s, long long elements) {
  Span span;
  if (!span64(elements, s.type, &span)) {
    fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no extent");
    return nullptr;
  }
  return host_view(s, span);
}

void *Packer::host_view(const PackSide &s, const Span &span) {
  if (!stager_) stager_.reset(new Stager(gpu_));
  void *h = stager_->host_copy(s.user, span, true);
  if (stager_->failed()) {
    const StagedResult r = stager_->result(MPI_SUCCESS);
    fail(r.status, r.status == Status::ErrNoMem ? MPI_ERR_NO_MEM : MPI_ERR_INTERN, r.why);
    return nullptr;
  }
  if (&s == &plan_.recv) recv_span_ = span;  // leave() copies it back
  return h;
}

Status Packer::enter(CollArgs *a, const PackPlan &plan, int rank, int size, int gpu) {
  coll_ = a->coll;
  plan_ = plan;
  rank_ = rank;
  size_ = size;
  gpu_ = gpu;
  const bool in_place = (a->coll == Coll::Allgather || a->coll == Coll::Alltoall) && a->sendbuf == nullptr;
  // Every side this rank packs or unpacks is tried first with no element: a datatype the
  // MPI cannot pack (uncommitted) fails here, on every rank alike for a bad argument,
  // before this rank joins the engine call.
  for (const PackSide *s : {&plan_.send, &plan_.recv}) {
    if (!s->packs()) continue;
    char none = 0;
    const Status st = pack(nullptr, 0, s->type, &none, 0);
    if (!ok(st)) return st;
  }
  const std::size_t block = a->count * a->elem;  // bytes per rank (allgather) or of the buffer
  switch (a->coll) {
    case Coll::Bcast: {
      const PackSide &b = plan_.recv;
      root_ = rank == a->root;
      if (!b.packs()) {
        if (b.user) a->recvbuf = static_cast<char *>(b.user) + b.layout.offset;
        return Status::Ok;
      }
      try {
        recv_scratch_.resize(std::max<std::size_t>(block, 1));
      } catch (const std::bad_alloc &) {
        return fail(Status::ErrNoMem, MPI_ERR_NO_MEM, "out of memory for packing a derived datatype");
      }
      if (root_) {
        const void *from = b.user;
        if (b.device && !(from = host_view(b, b.count))) return Status::ErrInternal;
        const Status st = pack(from, b.count, b.type, recv_scratch_.data(), block);
        if (!ok(st)) return st;
      }
      a->recvbuf = recv_scratch_.data();
      packed_recv_ = true;
      return Status::Ok;
    }
    case Coll::Allgather:
    case Coll::Alltoall: {
      // Alltoall: its send side is n blocks of PackSide::count elements, packed block by
      // block; in place (alltoall_hier.cc) the whole receive buffer is its input.
      const PackSide &s = plan_.send, &r = plan_.recv;
      const std::size_t send_bytes = a->coll == Coll::Alltoall ? block * static_cast<std::size_t>(size) : block;
      if (!in_place) {
        if (s.packs()) {
          try {
            send_scratch_.resize(std::max<std::size_t>(send_bytes, 1));
          } catch (const std::bad_alloc &) {
            return fail(Status::ErrNoMem, MPI_ERR_NO_MEM, "out of memory for packing a derived datatype");
          }
          const bool all = a->coll == Coll::Alltoall;
          const void *from = s.user;
          if (s.device && !(from = host_view(s, all ? static_cast<long long>(s.count) * size : s.count)))
            return Status::ErrInternal;
          Status st = Status::Ok;
          if (all) {
            Shape sh;
            if (!shape_of(s.type, &sh)) return fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no extent");
            for (int q = 0; q < size && ok(st); ++q)
              st = pack(static_cast<const char *>(from) + static_cast<MPI_Aint>(q) * s.count * sh.extent, s.count,
                        s.type, send_scratch_.data() + block * static_cast<std::size_t>(q), block);
          } else {
            st = pack(from, s.count, s.type, send_scratch_.data(), send_bytes);
          }
          if (!ok(st)) return st;
          a->sendbuf = send_scratch_.data();
          packed_send_ = true;
        } else if (s.user) {
          a->sendbuf = static_cast<const char *>(s.user) + s.layout.offset;
        }
      }
      if (!r.packs()) {
        if (r.user) a->recvbuf = static_cast<char *>(r.user) + r.layout.offset;
        return Status::Ok;
      }
      const std::size_t total = block * static_cast<std::size_t>(size);
      try {
        recv_scratch_.resize(std::max<std::size_t>(total, 1));
      } catch (const std::bad_alloc &) {
        return fail(Status::ErrNoMem, MPI_ERR_NO_MEM, "out of memory for packing a derived datatype");
      }
      if (r.device && !(recv_view_ = host_view(r, static_cast<long long>(r.count) * size))) return Status::ErrInternal;
      if (in_place) {
        // My contribution is my block of the receive buffer (alltoall: every block).
        Shape sh;
        if (!shape_of(r.type, &sh)) return fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no extent");
        const char *base = static_cast<const char *>(r.device ? recv_view_ : r.user);
        const int q0 = a->coll == Coll::Alltoall ? 0 : rank, q1 = a->coll == Coll::Alltoall ? size : rank + 1;
        Status st = Status::Ok;
        for (int q = q0; q < q1 && ok(st); ++q)
          st = pack(base + static_cast<MPI_Aint>(q) * r.count * sh.extent, r.count, r.type,
                    recv_scratch_.data() + block * static_cast<std::size_t>(q), block);
        if (!ok(st)) return st;
      }
      a->recvbuf = recv_scratch_.data();
      packed_recv_ = true;
      return Status::Ok;
    }
    case Coll::Allgatherv:
      return enter_v(a);
    default:
      return fail(Status::ErrInternal, MPI_ERR_INTERN, "packing: not a byte-moving collective");
  }
}

// Allgatherv: my send block packed; the receive side as the blocks one after the other in
// rank order (CollArgs::block_offsets: their prefix sums), unpacked block by block at the
// displacements by leave().
Status Packer::enter_v(CollArgs *a) {
  const PackSide &s = plan_.send, &r = plan_.recv;
  const bool in_place = a->sendbuf == nullptr;
  const std::size_t *bytes = a->block_bytes;
  if (!in_place && s.packs()) {
    const std::size_t mine = bytes[rank_];
    try {
      send_scratch_.resize(std::max<std::size_t>(mine, 1));
    } catch (const std::bad_alloc &) {
      return fail(Status::ErrNoMem, MPI_ERR_NO_MEM, "out of memory for packing a derived datatype");
    }
    const void *from = s.user;
    if (s.device && !(from = host_view(s, s.count))) return Status::ErrInternal;
    const Status st = pack(from, s.count, s.type, send_scratch_.data(), mine);
    if (!ok(st)) return st;
    a->sendbuf = send_scratch_.data();
    packed_send_ = true;
  }
  if (!r.packs()) return Status::Ok;  // prepare() pointed the engine at the blocks themselves
  std::size_t total = 0;
  v_offsets_.assign(static_cast<std::size_t>(size_), 0);
  for (int q = 0; q < size_; ++q) {
    v_offsets_[q] = total;
    total += bytes[q];
  }
  try {
    recv_scratch_.resize(std::max<std::size_t>(total, 1));
  } catch (const std::bad_alloc &) {
    return fail(Status::ErrNoMem, MPI_ERR_NO_MEM, "out of memory for packing a derived datatype");
  }
  Shape sh;
  if (!shape_of(r.type, &sh)) return fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no extent");
  if (r.device) {
    Span span;
    if (!span_blocks(size_, r.counts, r.displs, r.type, &span))
      return fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no extent");
    if (!(recv_view_ = host_view(r, span))) return Status::ErrInternal;
  }
  if (in_place && bytes[rank_]) {
    // My contribution is my block of the receive buffer.
    const char *base = static_cast<const char *>(r.device ? recv_view_ : r.user);
    const Status st = pack(base + static_cast<MPI_Aint>(r.displs[rank_]) * sh.extent, r.counts[rank_], r.type,
                           recv_scratch_.data() + v_offsets_[rank_], bytes[rank_]);
    if (!ok(st)) return st;
  }
  a->recvbuf = recv_scratch_.data();
  a->block_offsets = v_offsets_.data();
  packed_recv_ = true;
  return Status::Ok;
}

Status Packer::leave() {
  const PackSide &r = plan_.recv;
  if (!packed_recv_) return Status::Ok;
  if (coll_ == Coll::Bcast && root_) return Status::Ok;  // the root's buffer does not change
  Status st = Status::Ok;
  if (coll_ == Coll::Bcast) {
    void *to = r.user;
    if (r.device && !(to = recv_view_ = host_view(r, r.count))) return Status::ErrInternal;
    st = unpack(recv_scratch_.data(), r.layout.bytes, to, r.count, r.type);
  } else if (coll_ == Coll::Allgatherv) {
    // Block by block, at the displacements.
    Shape sh;
    if (!shape_of(r.type, &sh)) return fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no extent");
    char *base = static_cast<char *>(r.device ? recv_view_ : r.user);
    for (int q = 0; q < size_ && ok(st); ++q)
      if (r.counts[q] > 0)
        st = unpack(recv_scratch_.data() + v_offsets_[q],
                    static_cast<std::size_t>(r.counts[q]) * static_cast<std::size_t>(sh.size),
                    base + static_cast<MPI_Aint>(r.displs[q]) * sh.extent, r.counts[q], r.type);
  } else {
    // Rank by rank: block q of the scratch into block q of the receive buffer.
    Shape sh;
    if (!shape_of(r.type, &sh)) return fail(Status::ErrArg, MPI_ERR_TYPE, "the datatype has no extent");
    const std::size_t block = r.layout.bytes / static_cast<std::size_t>(std::max(size_, 1));
    char *base = static_cast<char *>(r.device ? recv_view_ : r.user);
    for (int q = 0; q < size_ && ok(st); ++q)
      st = unpack(recv_scratch_.data() + block * static_cast<std::size_t>(q), block,
                  base + static_cast<MPI_Aint>(q) * r.count * sh.extent, r.count, r.type);
  }
  if (!ok(st)) return st;
  if (r.device) {
    stager_->copy_out(r.user, recv_view_, recv_span_);
    if (stager_->failed()) {
      const StagedResult res = stager_->result(MPI_SUCCESS);
      return fail(res.status, MPI_ERR_INTERN, res.why);
    }
  }
  return Status::Ok;
}

void release_pack_comm() {
  std::lock_guard<std::mutex> lock(g_comm_mu);
  if (g_pack_comm != MPI_COMM_NULL) PMPI_Comm_free(&g_pack_comm);
}

}  // namespace gcoll
