// Checked collective calls. See checks.h.
#include "checks.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace gct {

namespace {
// Byte i of the pattern is 0xA5 ^ (i * 31) mod 256: it repeats every 256 bytes, so the
// buffers (up to tens of MiB in the large cases, several per check) are filled by copying
// one period (perf put an eighth of a large-case run's samples in the byte loop; the copy
// made AllreduceLarge about 5 % faster).
struct Period {
  unsigned char b[256];
  Period() {
    for (size_t i = 0; i < 256; ++i) b[i] = static_cast<unsigned char>(0xA5 ^ (i * 31));
  }
};
const Period &period() {
  static const Period p;
  return p;
}
}  // namespace

std::vector<unsigned char> patterned(size_t payload_bytes) {
  std::vector<unsigned char> b(payload_bytes + kGuardBytes);
  const unsigned char *src = period().b;
  for (size_t i = 0; i < b.size(); i += 256) std::memcpy(b.data() + i, src, std::min<size_t>(256, b.size() - i));
  return b;
}

bool guard_intact(const std::vector<unsigned char> &buf, size_t payload_bytes) {
  const unsigned char *src = period().b;
  for (size_t i = payload_bytes; i < buf.size(); ++i)
    if (buf[i] != src[i % 256]) return false;
  return true;
}

uint32_t next_seed() {
  static uint32_t s = 12345;
  return s += 0x9E3779B9u;
}

const std::vector<size_t> &small_counts() {
  static const std::vector<size_t> c = {0, 1, 7, 1001};
  return c;
}

DataSpec spec_of(const TypeDesc &t) {
  DataSpec d;
  d.type = t.type;
  d.name = t.name;
  d.extent = t.extent;
  d.mask = significant_bytes(t.type);
  FillFn f = t.fill;
  // Values as for MPI_MAX: any valid value of the type (no NaN for floating point).
  d.fill = [f](void *buf, size_t n, int rank, uint32_t seed) { f(buf, n, rank, seed, MPI_MAX); };
  return d;
}

DataSpec spec_of_derived(MPI_Datatype t, const std::string &name) {
  DataSpec d;
  d.type = t;
  d.name = name;
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(t, &lb, &extent);
  d.extent = static_cast<size_t>(extent);
  d.mask.assign(d.extent, 0xff);  // strict: holes must be left untouched
  size_t ext = d.extent;
  d.fill = [ext](void *buf, size_t n, int rank, uint32_t seed) {
    std::mt19937_64 g((static_cast<uint64_t>(seed) << 20) ^ static_cast<uint64_t>(rank));
    unsigned char *p = static_cast<unsigned char *>(buf);
    for (size_t i = 0; i < n * ext; ++i) p[i] = static_cast<unsigned char>(g());
  };
  return d;
}

std::vector<DerivedType> make_derived_types() {
  std::vector<DerivedType> v;
  MPI_Datatype t;
  PMPI_Type_contiguous(3, MPI_INT, &t);
  PMPI_Type_commit(&t);
  v.push_back({t, "contiguous(3 x MPI_INT)"});
  PMPI_Type_vector(3, 2, 4, MPI_DOUBLE, &t);
  PMPI_Type_commit(&t);
  v.push_back({t, "vector(3 blocks of 2 MPI_DOUBLE, stride 4)"});
  PMPI_Type_create_resized(MPI_INT, 0, 12, &t);
  PMPI_Type_commit(&t);
  v.push_back({t, "resized(MPI_INT, extent 12)"});
  int blocklens[2] = {1, 1};
  MPI_Aint displs[2] = {0, 8};
  MPI_Datatype types[2] = {MPI_CHAR, MPI_DOUBLE};
  PMPI_Type_create_struct(2, blocklens, displs, types, &t);
  PMPI_Type_commit(&t);
  v.push_back({t, "struct{char; double at 8}"});
  return v;
}

void free_derived_types(std::vector<DerivedType> &v) {
  for (auto &d : v) PMPI_Type_free(&d.type);
  v.clear();
}

std::vector<IntLayout> int_layouts() {
  std::vector<IntLayout> v;
  v.push_back({MPI_INT, 1, "MPI_INT", false});
  MPI_Datatype t;
  PMPI_Type_contiguous(3, MPI_INT, &t);
  PMPI_Type_commit(&t);
  v.push_back({t, 3, "contiguous(3 x MPI_INT)", true});
  PMPI_Type_vector(2, 2, 3, MPI_INT, &t);  // ints 0,1 and 3,4: a gap inside each element
  PMPI_Type_commit(&t);
  v.push_back({t, 4, "vector(2 blocks of 2 MPI_INT, stride 3)", true});
  {
    // Out of order: the type map is int 5, ints 0-1, int 3 (memory order differs).
    int lens[3] = {1, 2, 1}, displs[3] = {5, 0, 3};
    PMPI_Type_indexed(3, lens, displs, MPI_INT, &t);
    PMPI_Type_commit(&t);
    v.push_back({t, 4, "indexed({1,2,1} at {5,0,3} x MPI_INT)", true});
  }
  PMPI_Type_create_resized(MPI_INT, 0, 8, &t);  // a gap after each int
  PMPI_Type_commit(&t);
  v.push_back({t, 1, "resized(MPI_INT, extent 8)", true});
  {
    // Two ints at byte 4 of a 12-byte element: data away from the lower bound.
    MPI_Datatype inner;
    int lens[1] = {2}, displs[1] = {1};
    PMPI_Type_indexed(1, lens, displs, MPI_INT, &inner);
    PMPI_Type_create_resized(inner, 0, 12, &t);
    PMPI_Type_free(&inner);
    PMPI_Type_commit(&t);
    v.push_back({t, 2, "resized(2 x MPI_INT at byte 4, extent 12)", true});
  }
  return v;
}

void free_layouts(std::vector<IntLayout> &v) {
  for (IntLayout &l : v)
    if (l.owned) PMPI_Type_free(&l.type);
  v.clear();
}

DataSpec spec_of_layout(const IntLayout &l) {
  return l.owned ? spec_of_derived(l.type, l.name) : spec_of(find_type(MPI_INT));
}

namespace {

std::string where(const char *coll, const std::string &type, const char *op, size_t count,
                  const TestComm &c, int root, bool in_place) {
  std::string s = std::string(coll) + " type=" + type;
  if (op) s += std::string(" op=") + op;
  s += " count=" + std::to_string(count) + " comm=" + c.name +
       " comm_rank=" + std::to_string(c.rank);
  if (root >= 0) s += " root=" + std::to_string(root);
  if (in_place) s += " MPI_IN_PLACE";
  return s;
}


}  // namespace

bool check_rc(int rc, const char *fn, const std::string &ctx) {
  if (rc == MPI_SUCCESS) return true;
  report("%s returned %s (%d) for %s", fn, error_class_name(error_class(rc)).c_str(), rc,
         ctx.c_str());
  return false;
}

bool same_on_all_ranks(uint64_t h, MPI_Comm comm) {
  uint64_t in[2] = {h, ~h}, out[2] = {0, 0};
  PMPI_Allreduce(in, out, 2, MPI_UINT64_T, MPI_MAX, comm);
  return out[0] == h && out[1] == ~h;  // max(h) == h == min(h)
}

bool check_allreduce(const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count,
                     bool in_place, uint32_t seed) {
  const std::string ctx = where("MPI_Allreduce", t.name, op_name(op), count, c, -1, in_place);
  set_phase("%s", ctx.c_str());
  const size_t bytes = count * t.extent;
  const int n = static_cast<int>(count);

  std::vector<unsigned char> input(bytes + kGuardBytes, 0);
  t.fill(input.data(), count, world_rank(), seed, op);

  std::vector<unsigned char> send = input, ref_send = input;
  std::vector<unsigned char> ref = patterned(bytes), got = patterned(bytes);
  int rc_ref, rc_got;
  const MPI_Datatype ref_type = reference_type(t, op);
  if (in_place) {
    memcpy(ref.data(), input.data(), bytes);
    memcpy(got.data(), input.data(), bytes);
    rc_ref = PMPI_Allreduce(MPI_IN_PLACE, ref.data(), n, ref_type, op, c.comm);
    rc_got = MPI_Allreduce(MPI_IN_PLACE, got.data(), n, t.type, op, c.comm);
  } else {
    rc_ref = PMPI_Allreduce(ref_send.data(), ref.data(), n, ref_type, op, c.comm);
    rc_got = MPI_Allreduce(send.data(), got.data(), n, t.type, op, c.comm);
  }
  // Where the MPI's own reduction is wrong (see reference_type), the MPI's result on
  // the same type is accepted too: gcoll may hand such calls to the MPI.
  std::vector<unsigned char> ref_mpi;
  if (ref_type != t.type) {
    ref_mpi = patterned(bytes);
    std::vector<unsigned char> s2 = input;
    if (in_place) memcpy(ref_mpi.data(), input.data(), bytes);
    int rc = PMPI_Allreduce(in_place ? MPI_IN_PLACE : s2.data(), ref_mpi.data(), n, t.type, op, c.comm);
    if (rc != MPI_SUCCESS) ref_mpi.clear();
  }
  // No MPI type reduces t right (MPICH 4.0.2 compares 8-bit unsigned as signed): the
  // correct result, computed here from every rank's input, is accepted too (gcoll's
  // engine computes it). Collective: every rank decides alike (type and op).
  if (ref_type == t.type && mpi_unsigned_minmax_wrong(t, op) && c.comm != MPI_COMM_NULL) {
    std::vector<unsigned char> all(bytes * c.size);
    if (PMPI_Allgather(input.data(), static_cast<int>(bytes), MPI_BYTE, all.data(), static_cast<int>(bytes),
                       MPI_BYTE, c.comm) == MPI_SUCCESS) {
      ref_mpi.assign(input.begin(), input.begin() + bytes);
      ref_mpi.resize(got.size(), 0);
      memcpy(ref_mpi.data() + bytes, got.data() + bytes, got.size() - bytes);  // guard bytes as written
      for (size_t i = 0; i < count; ++i) {
        std::uint64_t best = 0;
        for (int r = 0; r < c.size; ++r) {
          std::uint64_t v = 0;
          memcpy(&v, all.data() + r * bytes + i * t.extent, t.extent);
          if (r == 0 || (op == MPI_MAX ? v > best : v < best)) best = v;
        }
        memcpy(ref_mpi.data() + i * t.extent, &best, t.extent);
      }
    }
  }
  bool ok = check_rc(rc_ref, "reference PMPI_Allreduce", ctx);
  ok = check_rc(rc_got, "MPI_Allreduce", ctx) && ok;
  if (ok) {
    if (!in_place && send != input) {
      report("MPI_Allreduce modified its send buffer: %s", ctx.c_str());
      ok = false;
    }
    if (!guard_intact(got, bytes)) {
      report("MPI_Allreduce wrote past the end of the receive buffer: %s", ctx.c_str());
      ok = false;
    }
    size_t first = 0;
    std::string detail;
    size_t bad = t.compare(got.data(), ref.data(), count, op, c.size, &first, &detail);
    if (bad && !ref_mpi.empty()) {
      size_t first2 = 0;
      std::string detail2;
      if (t.compare(got.data(), ref_mpi.data(), count, op, c.size, &first2, &detail2) == 0) bad = 0;
    }
    if (bad) {
      report("MISMATCH %s: %zu of %zu elements differ from PMPI_Allreduce; first index %zu: %s",
             ctx.c_str(), bad, count, first, detail.c_str());
      ok = false;
    }
  }
  if (t.group == Group::Floating || t.group == Group::Complex) {
    // Collective: called on every rank whatever happened above.
    bool same = same_on_all_ranks(value_hash(t, got.data(), count), c.comm);
    if (ok && !same) {
      report("MPI_Allreduce results differ between ranks of the communicator: %s", ctx.c_str());
      ok = false;
    }
  }
  return ok;
}

bool check_reduce_scatter_block(const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count, bool in_place,
                                uint32_t seed) {
  const std::string ctx = where("MPI_Reduce_scatter_block", t.name, op_name(op), count, c, -1, in_place);
  set_phase("%s", ctx.c_str());
  const size_t block = count * t.extent, total = block * static_cast<size_t>(c.size);
  const size_t rbytes = in_place ? total : block;  // the receive buffer (in place: the input too)
  const int n = static_cast<int>(count);

  std::vector<unsigned char> input(total + kGuardBytes, 0);
  t.fill(input.data(), count * static_cast<size_t>(c.size), world_rank(), seed, op);
  std::vector<unsigned char> send = input, ref_send = input;
  std::vector<unsigned char> ref = patterned(rbytes), got = patterned(rbytes);
  const MPI_Datatype ref_type = reference_type(t, op);
  const auto call = [&](bool reference, MPI_Datatype type, std::vector<unsigned char> &out,
                        std::vector<unsigned char> &in) {
    if (in_place) {
      memcpy(out.data(), input.data(), total);
      return reference ? PMPI_Reduce_scatter_block(MPI_IN_PLACE, out.data(), n, type, op, c.comm)
                       : MPI_Reduce_scatter_block(MPI_IN_PLACE, out.data(), n, type, op, c.comm);
    }
    return reference ? PMPI_Reduce_scatter_block(in.data(), out.data(), n, type, op, c.comm)
                     : MPI_Reduce_scatter_block(in.data(), out.data(), n, type, op, c.comm);
  };
  const int rc_ref = call(true, ref_type, ref, ref_send);
  const int rc_got = call(false, t.type, got, send);
  // As for allreduce: where the MPI's own reduction is wrong, its result on the same type
  // is accepted too, and so is the correct result computed here (collective: alike on
  // every rank).
  std::vector<unsigned char> ref_mpi;
  if (ref_type != t.type) {
    ref_mpi = patterned(rbytes);
    std::vector<unsigned char> s2 = input;
    if (call(true, t.type, ref_mpi, s2) != MPI_SUCCESS) ref_mpi.clear();
  }
  if (ref_type == t.type && mpi_unsigned_minmax_wrong(t, op)) {
    std::vector<unsigned char> all(total * static_cast<size_t>(c.size));
    if (PMPI_Allgather(input.data(), static_cast<int>(total), MPI_BYTE, all.data(), static_cast<int>(total),
                       MPI_BYTE, c.comm) == MPI_SUCCESS) {
      ref_mpi = got;
      for (size_t i = 0; i < count; ++i) {
        std::uint64_t best = 0;
        const size_t at = (static_cast<size_t>(c.rank) * count + i) * t.extent;
        for (int r = 0; r < c.size; ++r) {
          std::uint64_t v = 0;
          memcpy(&v, all.data() + static_cast<size_t>(r) * total + at, t.extent);
          if (r == 0 || (op == MPI_MAX ? v > best : v < best)) best = v;
        }
        memcpy(ref_mpi.data() + i * t.extent, &best, t.extent);
      }
    }
  }
  bool ok = check_rc(rc_ref, "reference PMPI_Reduce_scatter_block", ctx);
  ok = check_rc(rc_got, "MPI_Reduce_scatter_block", ctx) && ok;
  if (!ok) return false;
  if (!in_place && send != input) {
    report("MPI_Reduce_scatter_block modified its send buffer: %s", ctx.c_str());
    ok = false;
  }
  if (!guard_intact(got, rbytes)) {
    report("MPI_Reduce_scatter_block wrote past the end of the receive buffer: %s", ctx.c_str());
    ok = false;
  }
  size_t first = 0;
  std::string detail;
  size_t bad = t.compare(got.data(), ref.data(), count, op, c.size, &first, &detail);
  if (bad && !ref_mpi.empty()) {
    size_t first2 = 0;
    std::string detail2;
    if (t.compare(got.data(), ref_mpi.data(), count, op, c.size, &first2, &detail2) == 0) bad = 0;
  }
  if (bad) {
    report("MISMATCH %s: %zu of %zu elements differ from PMPI_Reduce_scatter_block; first index %zu: %s",
           ctx.c_str(), bad, count, first, detail.c_str());
    ok = false;
  }
  return ok;
}

bool check_bcast(const TestComm &c, const DataSpec &d, size_t count, int root, uint32_t seed) {
  const std::string ctx = where("MPI_Bcast", d.name, nullptr, count, c, root, false);
  set_phase("%s", ctx.c_str());
  const size_t bytes = count * d.extent;
  const int n = static_cast<int>(count);

  // The root's data, and different data on the other ranks (it must be overwritten).
  std::vector<unsigned char> ref = patterned(bytes);
  d.fill(ref.data(), count, c.rank == root ? -1 : world_rank(), seed);
  std::vector<unsigned char> got = ref;

  int rc_ref = PMPI_Bcast(ref.data(), n, d.type, root, c.comm);
  int rc_got = MPI_Bcast(got.data(), n, d.type, root, c.comm);
  bool ok = check_rc(rc_ref, "reference PMPI_Bcast", ctx);
  ok = check_rc(rc_got, "MPI_Bcast", ctx) && ok;
  if (!ok) return false;

  if (!guard_intact(got, bytes)) {
    report("MPI_Bcast wrote past the end of the buffer: %s", ctx.c_str());
    ok = false;
  }
  size_t first = 0;
  size_t bad = compare_masked(got.data(), ref.data(), count, d.extent, d.mask, &first);
  if (bad) {
    report("MISMATCH %s: %zu of %zu elements differ from PMPI_Bcast; first index %zu: got %s, "
           "expected %s (hex)",
           ctx.c_str(), bad, count, first, hex_element(got.data(), first, d.extent).c_str(),
           hex_element(ref.data(), first, d.extent).c_str());
    ok = false;
  }
  return ok;
}

bool check_allgather(const TestComm &c, const DataSpec &send, size_t send_count,
                     const DataSpec &recv, size_t recv_count, bool in_place, uint32_t seed) {
  std::string tname = send.name == recv.name ? send.name : send.name + "->" + recv.name;
  std::string ctx = where("MPI_Allgather", tname, nullptr, recv_count, c, -1, in_place);
  if (send.name != recv.name) ctx += " sendcount=" + std::to_string(send_count);
  set_phase("%s", ctx.c_str());
  const size_t block = recv_count * recv.extent;
  const size_t bytes = block * static_cast<size_t>(c.size);

  std::vector<unsigned char> input(send_count * send.extent + kGuardBytes, 0);
  send.fill(input.data(), send_count, world_rank(), seed);
  std::vector<unsigned char> sendbuf = input, ref_send = input;
  std::vector<unsigned char> ref = patterned(bytes), got = patterned(bytes);
  int rc_ref, rc_got;
  if (in_place) {
    // This rank's contribution is its own block of the receive buffer.
    recv.fill(ref.data() + block * static_cast<size_t>(c.rank), recv_count, world_rank(), seed);
    got = ref;
    rc_ref = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref.data(),
                            static_cast<int>(recv_count), recv.type, c.comm);
    rc_got = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(),
                           static_cast<int>(recv_count), recv.type, c.comm);
  } else {
    rc_ref = PMPI_Allgather(ref_send.data(), static_cast<int>(send_count), send.type, ref.data(),
                            static_cast<int>(recv_count), recv.type, c.comm);
    rc_got = MPI_Allgather(sendbuf.data(), static_cast<int>(send_count), send.type, got.data(),
                           static_cast<int>(recv_count), recv.type, c.comm);
  }
  bool ok = check_rc(rc_ref, "reference PMPI_Allgather", ctx);
  ok = check_rc(rc_got, "MPI_Allgather", ctx) && ok;
  if (!ok) return false;

  if (!in_place && sendbuf != input) {
    report("MPI_Allgather modified its send buffer: %s", ctx.c_str());
    ok = false;
  }
  if (!guard_intact(got, bytes)) {
    report("MPI_Allgather wrote past the end of the receive buffer: %s", ctx.c_str());
    ok = false;
  }
  size_t total = recv_count * static_cast<size_t>(c.size);
  size_t first = 0;
  size_t bad = compare_masked(got.data(), ref.data(), total, recv.extent, recv.mask, &first);
  if (bad) {
    size_t from = recv_count ? first / recv_count : 0;
    report("MISMATCH %s: %zu of %zu elements differ from PMPI_Allgather; first index %zu "
           "(block of comm rank %zu): got %s, expected %s (hex)",
           ctx.c_str(), bad, total, first, from, hex_element(got.data(), first, recv.extent).c_str(),
           hex_element(ref.data(), first, recv.extent).c_str());
    ok = false;
  }
  return ok;
}

}  // namespace gct
