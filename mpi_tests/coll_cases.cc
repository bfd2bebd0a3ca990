// Cases of the collectives without an engine algorithm. See coll_cases.h.
#include "coll_cases.h"

#include <cstring>

namespace gct {

const char *coll2_name(Coll2 k) {
  switch (k) {
    case Coll2::Reduce: return "MPI_Reduce";
    case Coll2::Gather: return "MPI_Gather";
    case Coll2::Scatter: return "MPI_Scatter";
    case Coll2::Alltoall: return "MPI_Alltoall";
    case Coll2::ReduceScatter: return "MPI_Reduce_scatter";
    case Coll2::Allgatherv: return "MPI_Allgatherv";
    case Coll2::Gatherv: return "MPI_Gatherv";
    case Coll2::Scatterv: return "MPI_Scatterv";
  }
  return "?";
}

const std::vector<Coll2> &all_coll2() {
  static const std::vector<Coll2> v = {Coll2::Reduce,        Coll2::Gather,     Coll2::Scatter, Coll2::Alltoall,
                                       Coll2::ReduceScatter, Coll2::Allgatherv, Coll2::Gatherv, Coll2::Scatterv};
  return v;
}

bool is_reduction(Coll2 k) { return k == Coll2::Reduce || k == Coll2::ReduceScatter; }
bool has_root(Coll2 k) {
  return k == Coll2::Reduce || k == Coll2::Gather || k == Coll2::Scatter || k == Coll2::Gatherv ||
         k == Coll2::Scatterv;
}
bool allows_in_place(Coll2) { return true; }

namespace {

std::string where(Coll2 k, const std::string &type, const char *op, size_t count, const TestComm &c, int root,
                  bool in_place) {
  std::string s = std::string(coll2_name(k)) + " type=" + type;
  if (op) s += std::string(" op=") + op;
  s += " count=" + std::to_string(count) + " comm=" + c.name + " comm_rank=" + std::to_string(c.rank);
  if (has_root(k)) s += " root=" + std::to_string(root);
  if (in_place) s += " MPI_IN_PLACE";
  return s;
}

// The v-forms' blocks (coll_cases.h), in elements.
struct VBlocks {
  std::vector<int> counts, displs;
  size_t extent_elems = 0;  // the buffer's length in elements
};
VBlocks v_blocks(int n, size_t count) {
  VBlocks b;
  b.counts.resize(static_cast<size_t>(n));
  b.displs.resize(static_cast<size_t>(n));
  size_t pos = 0;
  for (int i = n - 1; i >= 0; --i) {
    const size_t ci = i % 3 == 1 ? 0 : count + static_cast<size_t>(i) * ((count + 1) / 2);
    b.counts[static_cast<size_t>(i)] = static_cast<int>(ci);
    b.displs[static_cast<size_t>(i)] = static_cast<int>(pos);
    pos += ci + 2;
  }
  b.extent_elems = pos;
  return b;
}

// MPICH 4.0.2's own PMPI_Reduce crashes (a memcpy from MPI_IN_PLACE) on MPI_IN_PLACE at
// a root other than 0 from a few hundred elements on (np 2, MPI_INT; with or without
// gcoll, which passes the call on): under MPICH such cases run without MPI_IN_PLACE.
bool reduce_in_place_needs_root_0() {
  static const bool mpich = [] {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    return PMPI_Get_library_version(version, &len) == MPI_SUCCESS && std::strncmp(version, "MPICH", 5) == 0;
  }();
  return mpich;
}

}  // namespace

CollCase reduction_case(Coll2 k, const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count, int root,
                        bool in_place, uint32_t seed) {
  CollCase r;
  r.ctx = where(k, t.name, op_name(op), count, c, root, in_place);
  const MPI_Datatype type = t.type, ref_type = reference_type(t, op);
  const MPI_Comm comm = c.comm;
  const int me = world_rank();
  if (k == Coll2::Reduce) {
    const bool is_root = c.rank == root;
    if (root != 0 && reduce_in_place_needs_root_0()) in_place = false;  // (on every rank alike)
    r.ctx = where(k, t.name, op_name(op), count, c, root, in_place);
    in_place = in_place && is_root;
    const size_t bytes = count * t.extent;
    std::vector<unsigned char> input(bytes);
    t.fill(input.data(), count, me, seed, op);
    r.recv = patterned(is_root ? bytes : 0);
    if (in_place && bytes) memcpy(r.recv.data(), input.data(), bytes);
    r.recv.resize(is_root ? bytes : 0);
    if (!in_place) r.send = input;
    r.send_used = !in_place;
    const int n = static_cast<int>(count);
    r.call = [=](const void *s, void *rv, bool ref) {
      const void *sb = in_place ? MPI_IN_PLACE : s;
      return ref ? PMPI_Reduce(sb, rv, n, ref_type, op, root, comm) : MPI_Reduce(sb, rv, n, type, op, root, comm);
    };
    if (ref_type != type)
      r.mpi_own = [=](const void *s, void *rv) {
        return PMPI_Reduce(in_place ? MPI_IN_PLACE : s, rv, n, type, op, root, comm);
      };
    if (is_root) r.result_bytes = bytes;
  } else {  // ReduceScatter: uneven blocks one after the other
    const VBlocks b = v_blocks(c.size, count);
    std::vector<int> counts = b.counts;
    size_t total = 0;
    for (int x : counts) total += static_cast<size_t>(x);
    std::vector<unsigned char> input(total * t.extent);
    t.fill(input.data(), total, me, seed, op);
    const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(c.rank)]) * t.extent;
    if (in_place) {
      r.recv = input;
    } else {
      r.send = input;
      r.recv = patterned(mine);
      r.recv.resize(mine);
    }
    r.send_used = !in_place;
    r.call = [=](const void *s, void *rv, bool ref) {
      const void *sb = in_place ? MPI_IN_PLACE : s;
      return ref ? PMPI_Reduce_scatter(sb, rv, counts.data(), ref_type, op, comm)
                 : MPI_Reduce_scatter(sb, rv, counts.data(), type, op, comm);
    };
    if (ref_type != type)
      r.mpi_own = [=](const void *s, void *rv) {
        return PMPI_Reduce_scatter(in_place ? MPI_IN_PLACE : s, rv, counts.data(), type, op, comm);
      };
    r.result_bytes = mine;
  }
  const TypeDesc td = t;
  const int p = c.size;
  const size_t elems = t.extent ? r.result_bytes / t.extent : 0;
  r.result_compare = [td, op, p, elems](const void *got, const void *ref, size_t *first, std::string *detail) {
    return td.compare(got, ref, elems, op, p, first, detail);
  };
  return r;
}

CollCase movement_case(Coll2 k, const TestComm &c, const DataSpec &send, size_t send_count, const DataSpec &recv,
                       size_t count, int root, bool in_place, uint32_t seed) {
  CollCase r;
  const std::string tname = send.name == recv.name ? send.name : send.name + "->" + recv.name;
  r.ctx = where(k, tname, nullptr, count, c, root, in_place);
  if (send.name != recv.name) r.ctx += " sendcount=" + std::to_string(send_count);
  const MPI_Comm comm = c.comm;
  const int n = c.size, me = world_rank(), rank = c.rank;
  const bool is_root = rank == root;
  const MPI_Datatype st = send.type, rt = recv.type;
  const int sc = static_cast<int>(send_count), rc = static_cast<int>(count);
  const size_t rblock = count * recv.extent, sblock = send_count * send.extent;
  const auto filled = [&](const DataSpec &d, size_t elems, uint32_t s) {
    std::vector<unsigned char> v(elems * d.extent);
    d.fill(v.data(), elems, me, s);
    return v;
  };
  const auto pattern = [](size_t bytes) {
    std::vector<unsigned char> v = patterned(bytes);
    v.resize(bytes);
    return v;
  };
  switch (k) {
    case Coll2::Gather: {
      in_place = in_place && is_root;
      r.recv = pattern(is_root ? rblock * static_cast<size_t>(n) : 0);
      if (in_place) {
        const std::vector<unsigned char> own = filled(recv, count, seed);
        if (rblock) memcpy(r.recv.data() + rblock * static_cast<size_t>(rank), own.data(), rblock);
      } else {
        r.send = filled(send, send_count, seed);
      }
      r.call = [=](const void *s, void *rv, bool ref) {
        if (in_place)
          return ref ? PMPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rv, rc, rt, root, comm)
                     : MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rv, rc, rt, root, comm);
        return ref ? PMPI_Gather(s, sc, st, rv, rc, rt, root, comm) : MPI_Gather(s, sc, st, rv, rc, rt, root, comm);
      };
      break;
    }
    case Coll2::Scatter: {
      in_place = in_place && is_root;
      if (is_root) r.send = filled(send, send_count * static_cast<size_t>(n), seed);
      r.recv = pattern(in_place ? 0 : rblock);
      r.call = [=](const void *s, void *rv, bool ref) {
        void *rb = in_place ? MPI_IN_PLACE : rv;
        return ref ? PMPI_Scatter(s, sc, st, rb, rc, rt, root, comm) : MPI_Scatter(s, sc, st, rb, rc, rt, root, comm);
      };
      break;
    }
    case Coll2::Alltoall: {
      if (in_place) {
        r.recv = filled(recv, count * static_cast<size_t>(n), seed);
      } else {
        r.send = filled(send, send_count * static_cast<size_t>(n), seed);
        r.recv = pattern(rblock * static_cast<size_t>(n));
      }
      r.call = [=](const void *s, void *rv, bool ref) {
        if (in_place)
          return ref ? PMPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rv, rc, rt, comm)
                     : MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rv, rc, rt, comm);
        return ref ? PMPI_Alltoall(s, sc, st, rv, rc, rt, comm) : MPI_Alltoall(s, sc, st, rv, rc, rt, comm);
      };
      break;
    }
    case Coll2::Allgatherv:
    case Coll2::Gatherv:
    case Coll2::Scatterv: {
      const VBlocks b = v_blocks(n, count);
      const std::vector<int> counts = b.counts, displs = b.displs;
      const int mine = counts[static_cast<size_t>(rank)];
      const size_t mine_at = static_cast<size_t>(displs[static_cast<size_t>(rank)]) * recv.extent;
      const size_t whole = b.extent_elems * recv.extent;
      if (k == Coll2::Allgatherv || k == Coll2::Gatherv) {
        const bool holds = k == Coll2::Allgatherv || is_root;
        in_place = in_place && holds;
        r.recv = pattern(holds ? whole : 0);
        const std::vector<unsigned char> own = filled(recv, static_cast<size_t>(mine), seed);
        if (in_place && !own.empty()) memcpy(r.recv.data() + mine_at, own.data(), own.size());
        else r.send = own;
        r.call = [=](const void *s, void *rv, bool ref) {
          const void *sb = in_place ? MPI_IN_PLACE : s;
          const int c0 = in_place ? 0 : mine;
          const MPI_Datatype t0 = in_place ? MPI_DATATYPE_NULL : rt;
          if (k == Coll2::Allgatherv)
            return ref ? PMPI_Allgatherv(sb, c0, t0, rv, counts.data(), displs.data(), rt, comm)
                       : MPI_Allgatherv(sb, c0, t0, rv, counts.data(), displs.data(), rt, comm);
          return ref ? PMPI_Gatherv(sb, c0, t0, rv, counts.data(), displs.data(), rt, root, comm)
                     : MPI_Gatherv(sb, c0, t0, rv, counts.data(), displs.data(), rt, root, comm);
        };
      } else {  // Scatterv: the root's buffer has the blocks (and gaps, which nobody reads)
        in_place = in_place && is_root;
        if (is_root) r.send = filled(recv, b.extent_elems, seed);
        r.recv = pattern(in_place ? 0 : static_cast<size_t>(mine) * recv.extent);
        r.call = [=](const void *s, void *rv, bool ref) {
          void *rb = in_place ? MPI_IN_PLACE : rv;
          return ref ? PMPI_Scatterv(s, counts.data(), displs.data(), rt, rb, mine, rt, root, comm)
                     : MPI_Scatterv(s, counts.data(), displs.data(), rt, rb, mine, rt, root, comm);
        };
      }
      break;
    }
    case Coll2::Reduce:
    case Coll2::ReduceScatter: break;
  }
  r.send_used = !r.send.empty() || !in_place;
  if (in_place) r.ctx += "";  // (in place as the rank takes it: see the call)
  return r;
}

bool check_case(const TestComm &c, const CollCase &k) {
  set_phase("%s", k.ctx.c_str());
  std::vector<unsigned char> ref_send = k.send, got_send = k.send;
  std::vector<unsigned char> ref = k.recv, got = k.recv;
  // Guard bytes after each buffer (and a valid address for empty ones).
  for (auto *v : {&ref_send, &got_send, &ref, &got}) {
    const size_t n = v->size();
    std::vector<unsigned char> g = patterned(n);
    if (n) memcpy(g.data(), v->data(), n);  // (an empty vector's data() may be null)
    *v = g;
  }
  const int rc_ref = k.call(ref_send.data(), ref.data(), true);
  const int rc_got = k.call(got_send.data(), got.data(), false);
  bool ok = check_rc(rc_ref, "reference PMPI_*", k.ctx);
  ok = check_rc(rc_got, "the call under test", k.ctx) && ok;
  if (!ok) return false;
  if (!std::equal(k.send.begin(), k.send.end(), got_send.begin()) || !guard_intact(got_send, k.send.size())) {
    report("the send buffer changed: %s", k.ctx.c_str());
    ok = false;
  }
  if (!guard_intact(got, k.recv.size())) {
    report("wrote past the end of the receive buffer: %s", k.ctx.c_str());
    ok = false;
  }
  return compare_recv(k, k.ctx, got.data(), ref.data(), mpi_own_result(k)) && ok;
}

std::vector<unsigned char> mpi_own_result(const CollCase &k) {
  if (!k.mpi_own) return {};
  std::vector<unsigned char> send = k.send, recv = k.recv;
  send.resize(send.size() + kGuardBytes);
  recv.resize(recv.size() + kGuardBytes);
  if (k.mpi_own(send.data(), recv.data()) != MPI_SUCCESS) return {};
  return recv;
}

namespace {

bool same_result(const CollCase &k, const unsigned char *got, const unsigned char *ref) {
  if (k.result_bytes && k.result_compare) {
    size_t first = 0;
    std::string detail;
    if (k.result_compare(got, ref, &first, &detail)) return false;
  }
  for (size_t i = k.result_bytes; i < k.recv.size(); ++i)
    if (got[i] != ref[i]) return false;
  return true;
}

}  // namespace

bool compare_recv(const CollCase &k, const std::string &ctx, const unsigned char *got, const unsigned char *ref,
                  const std::vector<unsigned char> &alt) {
  if (!alt.empty() && same_result(k, got, alt.data())) return true;
  size_t from = 0;
  if (k.result_bytes && k.result_compare) {
    size_t first = 0;
    std::string detail;
    const size_t bad = k.result_compare(got, ref, &first, &detail);
    if (bad) {
      report("MISMATCH %s: %zu elements of the result differ from PMPI on host copies; first index %zu: %s",
             ctx.c_str(), bad, first, detail.c_str());
      return false;
    }
    from = k.result_bytes;
  }
  for (size_t i = from; i < k.recv.size(); ++i) {
    if (got[i] != ref[i]) {
      report("MISMATCH %s: receive buffer byte %zu of %zu: 0x%02x, PMPI on host copies 0x%02x", ctx.c_str(), i,
             k.recv.size(), got[i], ref[i]);
      return false;
    }
  }
  return true;
}

}  // namespace gct
