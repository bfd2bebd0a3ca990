// Bad arguments: MPI_Allreduce, MPI_Bcast and MPI_Allgather (and the other intercepted
// collectives: reduce_scatter_block, reduce, gather, scatter, alltoall and the v-forms)
// must report the same error
// class as PMPI_* for the same bad call (under MPI_ERRORS_RETURN, set on the
// communicator and on MPI_COMM_WORLD), leave the receive buffer untouched, and call the
// communicator's error handler as PMPI does. Also: every datatype x every predefined op
// is accepted or rejected exactly as PMPI_Allreduce does, and Open MPI's acceptance
// table is what types.cc says.
//
// Open MPI 4.1.4 notes (from probing PMPI):
//   - PMPI_Allreduce with MPI_DATATYPE_NULL returns MPI_ERR_OP (it checks the op/type
//     pair first), not MPI_ERR_TYPE; the tests expect whatever PMPI returns;
//   - PMPI_Allgather on MPI_COMM_NULL crashes (segfault), so for that case only
//     MPI_Allgather is called and MPI_ERR_COMM is expected;
//   - PMPI_Allreduce/PMPI_Bcast on MPI_COMM_NULL return MPI_ERR_COMM (checked safe).
// MPICH 4.0.2: PMPI_Allreduce with a negative count crashes (not called there).
// The library may print a warning line for each bad call; that is expected.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "checks.h"

// From gcoll's public API; weak so that the program also runs against plain MPI.
extern "C" int gcoll_enabled(void) __attribute__((weak));

namespace gct {
namespace {

// MPI_Allgather on MPI_COMM_NULL may only be called when gcoll handles it: Open MPI's
// own (plain MPI, or gcoll with GCOLL_ENABLE=0, which forwards every call) crashes.
bool gcoll_handles_calls() {
  const bool interposed =
      reinterpret_cast<void *>(&MPI_Allgather) != reinterpret_cast<void *>(&PMPI_Allgather);
  return interposed && gcoll_enabled && gcoll_enabled() != 0;
}

enum class Impl { Pmpi, Mpi };

using AllreduceFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
using BcastFn = int (*)(void *, int, MPI_Datatype, int, MPI_Comm);
using AllgatherFn = int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);

AllreduceFn allreduce(Impl i) { return i == Impl::Pmpi ? PMPI_Allreduce : MPI_Allreduce; }
BcastFn bcast(Impl i) { return i == Impl::Pmpi ? PMPI_Bcast : MPI_Bcast; }
AllgatherFn allgather(Impl i) { return i == Impl::Pmpi ? PMPI_Allgather : MPI_Allgather; }
using ReduceScatterBlockFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
ReduceScatterBlockFn reduce_scatter_block(Impl i) {
  return i == Impl::Pmpi ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block;
}

constexpr size_t kBufBytes = 8192;

// What a row's call gets: a send buffer with data, a receive buffer with the pattern,
// the communicator, its size, and an uncommitted datatype.
struct Args {
  unsigned char *send;
  unsigned char *recv;
  MPI_Comm comm;
  int size;
  MPI_Datatype uncommitted;
  MPI_Datatype contig2int;  // committed contiguous(2 x MPI_INT)
};

struct Row {
  const char *name;
  std::function<int(Impl, const Args &)> call;
  bool fixed_comm = false;   // the row passes its own communicator (MPI_COMM_NULL)
  bool call_pmpi = true;     // false where PMPI crashes
  int expected_class = -1;   // used when call_pmpi is false
  bool buffers_used = true;  // false for rows that pass NULL buffers
  bool mpi_aborts = false;   // the MPI aborts on it and gcoll passes it on: not run
  bool mpi_asserts = false;  // the same, on any number of ranks
};

// Whether the program runs under MPICH (its native ABI, or the standard ABI, which the
// tests run under MPICH 5.0.2's wheel): told by the library, at run time.
bool under_mpich() {
  static const bool mpich = [] {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    return PMPI_Get_library_version(version, &len) == MPI_SUCCESS && std::strncmp(version, "MPICH", 5) == 0;
  }();
  return mpich;
}

// MPICH 4.0.2 aborts (an assertion in its op code) on an allreduce with an op the
// datatype does not define, on more than one rank, instead of returning MPI_ERR_OP (on
// one rank nothing is reduced and it returns the error). gcoll passes such calls to the
// MPI, as every bad call: with MPICH they are not made on larger communicators. Nor are
// the other bad calls it aborts on (bcast with MPI_DATATYPE_NULL, ...): with MPICH,
// BadArgumentsSameClassAsPmpi runs on one rank only (mpi_tests/CMakeLists.txt).
bool mpi_aborts_on_bad_pairs() { return under_mpich(); }

// MPICH 5.0.2 (PyPI's wheel: the standard ABI's tests run under it).
bool under_mpich_5_0_2() {
  static const bool is = [] {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    PMPI_Get_library_version(version, &len);
    return std::strstr(version, "MPICH Version:      5.0.2") != nullptr;
  }();
  return is;
}
// MPICH 5.0.2 fails an assertion (dt_ptr, mpir_datatype.h:800) on an allreduce with
// MPI_DATATYPE_NULL, at any count and on any number of ranks, instead of returning
// MPI_ERR_OP as Open MPI 4.1 and MPICH 4.0.2 do.
bool mpi_asserts_on_null_type_allreduce() { return under_mpich_5_0_2(); }
// A call on MPI_COMM_NULL: Open MPI 4.1 and MPICH 4.0.2 call MPI_COMM_WORLD's error
// handler, as gcoll does; MPICH 5.0.2 calls none and returns MPI_ERR_COMM.
bool mpi_calls_no_handler_on_comm_null() { return under_mpich_5_0_2(); }

std::vector<int> zeros;  // a count or displacement array of zeros, one entry per rank

std::vector<Row> rows() {
  std::vector<Row> v;
  auto add = [&v](const char *name, std::function<int(Impl, const Args &)> f) {
    v.push_back(Row{name, std::move(f)});
  };
  // ---- MPI_Allreduce ------------------------------------------------------------------
  {
    Row r{"allreduce: negative count", [](Impl i, const Args &a) {
            return allreduce(i)(a.send, a.recv, -1, MPI_INT, MPI_SUM, a.comm);
          }};
    // MPICH's PMPI_Allreduce does not check it: 4.0.2 crashes, 5.0.2 returns MPI_SUCCESS
    // on one rank and corrupts the heap (gcoll reports MPI_ERR_COUNT, as Open MPI).
    if (under_mpich()) {
      r.call_pmpi = false;
      r.expected_class = MPI_ERR_COUNT;
    }
    v.push_back(r);
  }
  add("allreduce: MPI_DATATYPE_NULL", [](Impl i, const Args &a) {
    return allreduce(i)(a.send, a.recv, 4, MPI_DATATYPE_NULL, MPI_SUM, a.comm);
  });
  v.back().mpi_asserts = mpi_asserts_on_null_type_allreduce();
  add("allreduce: MPI_DATATYPE_NULL, count 0", [](Impl i, const Args &a) {
    return allreduce(i)(a.send, a.recv, 0, MPI_DATATYPE_NULL, MPI_SUM, a.comm);
  });
  v.back().mpi_asserts = mpi_asserts_on_null_type_allreduce();
  add("allreduce: MPI_OP_NULL", [](Impl i, const Args &a) {
    return allreduce(i)(a.send, a.recv, 4, MPI_INT, MPI_OP_NULL, a.comm);
  });
  add("allreduce: MPI_OP_NULL, count 0", [](Impl i, const Args &a) {
    return allreduce(i)(a.send, a.recv, 0, MPI_INT, MPI_OP_NULL, a.comm);
  });
  struct BadPair {
    const char *name;
    MPI_Datatype t;
    MPI_Op op;
    int count;
  };
  static const BadPair bad_pairs[] = {
      {"allreduce: MPI_BAND on MPI_FLOAT", MPI_FLOAT, MPI_BAND, 4},
      {"allreduce: MPI_BAND on MPI_FLOAT, count 0", MPI_FLOAT, MPI_BAND, 0},
      {"allreduce: MPI_SUM on MPI_C_BOOL", MPI_C_BOOL, MPI_SUM, 4},
      {"allreduce: MPI_MINLOC on MPI_INT", MPI_INT, MPI_MINLOC, 4},
      {"allreduce: MPI_MAXLOC on MPI_DOUBLE", MPI_DOUBLE, MPI_MAXLOC, 4},
      {"allreduce: MPI_MAX on MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, MPI_MAX, 4},
      {"allreduce: MPI_LAND on MPI_DOUBLE", MPI_DOUBLE, MPI_LAND, 4},
      {"allreduce: MPI_BXOR on MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, MPI_BXOR, 2},
      {"allreduce: MPI_SUM on MPI_DOUBLE_INT", MPI_DOUBLE_INT, MPI_SUM, 4},
      {"allreduce: MPI_SUM on MPI_WCHAR", MPI_WCHAR, MPI_SUM, 4},
      {"allreduce: MPI_REPLACE on MPI_INT", MPI_INT, MPI_REPLACE, 4},
      {"allreduce: MPI_NO_OP on MPI_INT", MPI_INT, MPI_NO_OP, 4},
  };
  for (const BadPair &p : bad_pairs) {
    add(p.name, [&p](Impl i, const Args &a) {
      return allreduce(i)(a.send, a.recv, p.count, p.t, p.op, a.comm);
    });
    v.back().mpi_aborts = mpi_aborts_on_bad_pairs();
  }
  add("allreduce: uncommitted derived datatype", [](Impl i, const Args &a) {
    return allreduce(i)(a.send, a.recv, 2, a.uncommitted, MPI_SUM, a.comm);
  });
  add("allreduce: derived datatype with a predefined op", [](Impl i, const Args &a) {
    return allreduce(i)(a.send, a.recv, 2, a.contig2int, MPI_SUM, a.comm);
  });
  add("allreduce: MPI_IN_PLACE as recvbuf", [](Impl i, const Args &a) {
    return allreduce(i)(a.send, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, a.comm);
  });
  add("allreduce: MPI_IN_PLACE as sendbuf and recvbuf", [](Impl i, const Args &a) {
    return allreduce(i)(MPI_IN_PLACE, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, a.comm);
  });
  v.push_back(Row{"allreduce: MPI_COMM_NULL",
                  [](Impl i, const Args &a) {
                    return allreduce(i)(a.send, a.recv, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL);
                  },
                  true});
  // ---- MPI_Reduce_scatter_block ---------------------------------------------------------
  {
    Row r{"reduce_scatter_block: negative count", [](Impl i, const Args &a) {
            return reduce_scatter_block(i)(a.send, a.recv, -1, MPI_INT, MPI_SUM, a.comm);
          }};
    if (under_mpich()) {  // as allreduce: gcoll reports MPI_ERR_COUNT before the MPI sees it
      r.call_pmpi = false;
      r.expected_class = MPI_ERR_COUNT;
    }
    v.push_back(r);
  }
  add("reduce_scatter_block: MPI_OP_NULL", [](Impl i, const Args &a) {
    return reduce_scatter_block(i)(a.send, a.recv, 1, MPI_INT, MPI_OP_NULL, a.comm);
  });
  add("reduce_scatter_block: MPI_IN_PLACE as recvbuf", [](Impl i, const Args &a) {
    return reduce_scatter_block(i)(a.send, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, a.comm);
  });
  add("reduce_scatter_block: uncommitted derived datatype", [](Impl i, const Args &a) {
    return reduce_scatter_block(i)(a.send, a.recv, 1, a.uncommitted, MPI_SUM, a.comm);
  });
  v.push_back(Row{"reduce_scatter_block: MPI_COMM_NULL",
                  [](Impl i, const Args &a) {
                    return reduce_scatter_block(i)(a.send, a.recv, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL);
                  },
                  true});
  // ---- the collectives without an engine algorithm (pmpi/calls/reduce.cc and after) -----
  // Bad input every rank sees (a negative count on every rank, a root out of range, a null
  // op or datatype): gcoll reports negative counts itself (MPI_ERR_COUNT, before the MPI:
  // MPICH crashes on some), the rest goes to the MPI.
  {
    struct NegRow {
      const char *name;
      std::function<int(Impl, const Args &)> call;
    };
    static std::vector<int> neg;  // per-rank array of -1
    const std::vector<NegRow> negs = {
        {"reduce: negative count",
         [](Impl i, const Args &a) {
           return (i == Impl::Pmpi ? PMPI_Reduce : MPI_Reduce)(a.send, a.recv, -1, MPI_INT, MPI_SUM, 0, a.comm);
         }},
        {"gather: negative sendcount and recvcount",
         [](Impl i, const Args &a) {
           return (i == Impl::Pmpi ? PMPI_Gather : MPI_Gather)(a.send, -1, MPI_INT, a.recv, -1, MPI_INT, 0, a.comm);
         }},
        {"scatter: negative sendcount and recvcount",
         [](Impl i, const Args &a) {
           return (i == Impl::Pmpi ? PMPI_Scatter : MPI_Scatter)(a.send, -1, MPI_INT, a.recv, -1, MPI_INT, 0, a.comm);
         }},
        {"alltoall: negative counts",
         [](Impl i, const Args &a) {
           return (i == Impl::Pmpi ? PMPI_Alltoall : MPI_Alltoall)(a.send, -1, MPI_INT, a.recv, -1, MPI_INT, a.comm);
         }},
        {"reduce_scatter: negative recvcounts",
         [](Impl i, const Args &a) {
           neg.assign(static_cast<size_t>(a.size), -1);
           return (i == Impl::Pmpi ? PMPI_Reduce_scatter : MPI_Reduce_scatter)(a.send, a.recv, neg.data(), MPI_INT,
                                                                               MPI_SUM, a.comm);
         }},
        {"allgatherv: negative recvcounts",
         [](Impl i, const Args &a) {
           neg.assign(static_cast<size_t>(a.size), -1);
           zeros.assign(static_cast<size_t>(a.size), 0);
           return (i == Impl::Pmpi ? PMPI_Allgatherv : MPI_Allgatherv)(a.send, -1, MPI_INT, a.recv, neg.data(),
                                                                       zeros.data(), MPI_INT, a.comm);
         }},
        {"gatherv: negative counts",
         [](Impl i, const Args &a) {
           neg.assign(static_cast<size_t>(a.size), -1);
           zeros.assign(static_cast<size_t>(a.size), 0);
           return (i == Impl::Pmpi ? PMPI_Gatherv : MPI_Gatherv)(a.send, -1, MPI_INT, a.recv, neg.data(),
                                                                 zeros.data(), MPI_INT, 0, a.comm);
         }},
        {"scatterv: negative counts",
         [](Impl i, const Args &a) {
           neg.assign(static_cast<size_t>(a.size), -1);
           zeros.assign(static_cast<size_t>(a.size), 0);
           return (i == Impl::Pmpi ? PMPI_Scatterv : MPI_Scatterv)(a.send, neg.data(), zeros.data(), MPI_INT, a.recv,
                                                                   -1, MPI_INT, 0, a.comm);
         }},
    };
    for (const NegRow &n : negs) {
      Row r{n.name, n.call};
      if (under_mpich()) {  // as allreduce: gcoll reports MPI_ERR_COUNT before the MPI sees it
        r.call_pmpi = false;
        r.expected_class = MPI_ERR_COUNT;
      }
      v.push_back(r);
    }
  }
  // MPI_COMM_NULL: gcoll reports it (MPI_ERR_COMM) before asking anything about the
  // communicator; not called on the MPI (Open MPI 4.1.4 crashes on some).
  {
    const std::vector<std::pair<const char *, std::function<int(Impl, const Args &)>>> nulls = {
        {"reduce: MPI_COMM_NULL",
         [](Impl, const Args &a) { return MPI_Reduce(a.send, a.recv, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_NULL); }},
        {"gather: MPI_COMM_NULL",
         [](Impl, const Args &a) { return MPI_Gather(a.send, 1, MPI_INT, a.recv, 1, MPI_INT, 0, MPI_COMM_NULL); }},
        {"scatter: MPI_COMM_NULL",
         [](Impl, const Args &a) { return MPI_Scatter(a.send, 1, MPI_INT, a.recv, 1, MPI_INT, 0, MPI_COMM_NULL); }},
        {"alltoall: MPI_COMM_NULL",
         [](Impl, const Args &a) { return MPI_Alltoall(a.send, 1, MPI_INT, a.recv, 1, MPI_INT, MPI_COMM_NULL); }},
        {"reduce_scatter: MPI_COMM_NULL",
         [](Impl, const Args &a) {
           const int one = 1;
           return MPI_Reduce_scatter(a.send, a.recv, &one, MPI_INT, MPI_SUM, MPI_COMM_NULL);
         }},
        {"allgatherv: MPI_COMM_NULL",
         [](Impl, const Args &a) {
           const int one = 1, zero = 0;
           return MPI_Allgatherv(a.send, 1, MPI_INT, a.recv, &one, &zero, MPI_INT, MPI_COMM_NULL);
         }},
        {"gatherv: MPI_COMM_NULL",
         [](Impl, const Args &a) {
           const int one = 1, zero = 0;
           return MPI_Gatherv(a.send, 1, MPI_INT, a.recv, &one, &zero, MPI_INT, 0, MPI_COMM_NULL);
         }},
        {"scatterv: MPI_COMM_NULL",
         [](Impl, const Args &a) {
           const int one = 1, zero = 0;
           return MPI_Scatterv(a.send, &one, &zero, MPI_INT, a.recv, 1, MPI_INT, 0, MPI_COMM_NULL);
         }},
    };
    for (const auto &n : nulls) v.push_back(Row{n.first, n.second, true, false, MPI_ERR_COMM});
  }
  add("reduce: root == size", [](Impl i, const Args &a) {
    return (i == Impl::Pmpi ? PMPI_Reduce : MPI_Reduce)(a.send, a.recv, 4, MPI_INT, MPI_SUM, a.size, a.comm);
  });
  add("reduce: root -1", [](Impl i, const Args &a) {
    return (i == Impl::Pmpi ? PMPI_Reduce : MPI_Reduce)(a.send, a.recv, 4, MPI_INT, MPI_SUM, -1, a.comm);
  });
  add("reduce: MPI_OP_NULL", [](Impl i, const Args &a) {
    return (i == Impl::Pmpi ? PMPI_Reduce : MPI_Reduce)(a.send, a.recv, 4, MPI_INT, MPI_OP_NULL, 0, a.comm);
  });
  v.back().mpi_aborts = mpi_aborts_on_bad_pairs();
  add("gather: root == size", [](Impl i, const Args &a) {
    return (i == Impl::Pmpi ? PMPI_Gather : MPI_Gather)(a.send, 1, MPI_INT, a.recv, 1, MPI_INT, a.size, a.comm);
  });
  add("scatter: root -1", [](Impl i, const Args &a) {
    return (i == Impl::Pmpi ? PMPI_Scatter : MPI_Scatter)(a.send, 1, MPI_INT, a.recv, 1, MPI_INT, -1, a.comm);
  });
  add("alltoall: uncommitted derived datatype", [](Impl i, const Args &a) {
    return (i == Impl::Pmpi ? PMPI_Alltoall : MPI_Alltoall)(a.send, 1, a.uncommitted, a.recv, 1, a.uncommitted,
                                                            a.comm);
  });
  add("gatherv: root == size", [](Impl i, const Args &a) {
    zeros.assign(static_cast<size_t>(a.size), 0);
    return (i == Impl::Pmpi ? PMPI_Gatherv : MPI_Gatherv)(a.send, 0, MPI_INT, a.recv, zeros.data(), zeros.data(),
                                                          MPI_INT, a.size, a.comm);
  });
  add("scatterv: root -1", [](Impl i, const Args &a) {
    zeros.assign(static_cast<size_t>(a.size), 0);
    return (i == Impl::Pmpi ? PMPI_Scatterv : MPI_Scatterv)(a.send, zeros.data(), zeros.data(), MPI_INT, a.recv, 0,
                                                            MPI_INT, -1, a.comm);
  });
  add("reduce_scatter: MPI_OP_NULL", [](Impl i, const Args &a) {
    std::vector<int> ones(static_cast<size_t>(a.size), 1);
    return (i == Impl::Pmpi ? PMPI_Reduce_scatter : MPI_Reduce_scatter)(a.send, a.recv, ones.data(), MPI_INT,
                                                                        MPI_OP_NULL, a.comm);
  });
  v.back().mpi_aborts = mpi_aborts_on_bad_pairs();
  // ---- MPI_Bcast ----------------------------------------------------------------------
  add("bcast: negative count", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, -1, MPI_INT, 0, a.comm);
  });
  add("bcast: MPI_DATATYPE_NULL", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, 4, MPI_DATATYPE_NULL, 0, a.comm);
  });
  add("bcast: MPI_DATATYPE_NULL, count 0", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, 0, MPI_DATATYPE_NULL, 0, a.comm);
  });
  add("bcast: uncommitted derived datatype", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, 2, a.uncommitted, 0, a.comm);
  });
  add("bcast: root -1", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, 4, MPI_INT, -1, a.comm);
  });
  add("bcast: root == size", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, 4, MPI_INT, a.size, a.comm);
  });
  add("bcast: root == size, count 0", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, 0, MPI_INT, a.size, a.comm);
  });
  add("bcast: root MPI_ROOT on an intracommunicator", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, 4, MPI_INT, MPI_ROOT, a.comm);
  });
  add("bcast: root MPI_PROC_NULL on an intracommunicator", [](Impl i, const Args &a) {
    return bcast(i)(a.recv, 4, MPI_INT, MPI_PROC_NULL, a.comm);
  });
  add("bcast: MPI_IN_PLACE as buffer", [](Impl i, const Args &a) {
    return bcast(i)(MPI_IN_PLACE, 4, MPI_INT, 0, a.comm);
  });
  v.push_back(Row{"bcast: MPI_COMM_NULL",
                  [](Impl i, const Args &a) {
                    return bcast(i)(a.recv, 4, MPI_INT, 0, MPI_COMM_NULL);
                  },
                  true});
  // ---- MPI_Allgather ------------------------------------------------------------------
  add("allgather: negative sendcount", [](Impl i, const Args &a) {
    return allgather(i)(a.send, -1, MPI_INT, a.recv, 4, MPI_INT, a.comm);
  });
  add("allgather: negative recvcount", [](Impl i, const Args &a) {
    return allgather(i)(a.send, 4, MPI_INT, a.recv, -1, MPI_INT, a.comm);
  });
  add("allgather: sendtype MPI_DATATYPE_NULL", [](Impl i, const Args &a) {
    return allgather(i)(a.send, 4, MPI_DATATYPE_NULL, a.recv, 4, MPI_INT, a.comm);
  });
  add("allgather: recvtype MPI_DATATYPE_NULL", [](Impl i, const Args &a) {
    return allgather(i)(a.send, 4, MPI_INT, a.recv, 4, MPI_DATATYPE_NULL, a.comm);
  });
  add("allgather: recvtype MPI_DATATYPE_NULL, count 0", [](Impl i, const Args &a) {
    return allgather(i)(a.send, 0, MPI_INT, a.recv, 0, MPI_DATATYPE_NULL, a.comm);
  });
  add("allgather: uncommitted sendtype", [](Impl i, const Args &a) {
    return allgather(i)(a.send, 2, a.uncommitted, a.recv, 4, MPI_INT, a.comm);
  });
  add("allgather: MPI_IN_PLACE as recvbuf", [](Impl i, const Args &a) {
    return allgather(i)(a.send, 4, MPI_INT, MPI_IN_PLACE, 4, MPI_INT, a.comm);
  });
  add("allgather: MPI_IN_PLACE as sendbuf and recvbuf", [](Impl i, const Args &a) {
    return allgather(i)(MPI_IN_PLACE, 4, MPI_INT, MPI_IN_PLACE, 4, MPI_INT, a.comm);
  });
  // Open MPI 4.1.4's PMPI_Allgather crashes on MPI_COMM_NULL: not called.
  v.push_back(Row{"allgather: MPI_COMM_NULL",
                  [](Impl i, const Args &a) {
                    return allgather(i)(a.send, 4, MPI_INT, a.recv, 4, MPI_INT, MPI_COMM_NULL);
                  },
                  true, false, MPI_ERR_COMM});
  // ---- unusual but valid: must succeed as PMPI does -----------------------------------
  Row r0{"allreduce: count 0 with NULL buffers", [](Impl i, const Args &a) {
           return allreduce(i)(nullptr, nullptr, 0, MPI_INT, MPI_SUM, a.comm);
         }};
  r0.buffers_used = false;
  v.push_back(r0);
  Row r1{"bcast: count 0 with a NULL buffer", [](Impl i, const Args &a) {
           return bcast(i)(nullptr, 0, MPI_INT, 0, a.comm);
         }};
  r1.buffers_used = false;
  v.push_back(r1);
  Row r2{"allgather: count 0 with NULL buffers", [](Impl i, const Args &a) {
           return allgather(i)(nullptr, 0, MPI_INT, nullptr, 0, MPI_INT, a.comm);
         }};
  r2.buffers_used = false;
  v.push_back(r2);
  add("allgather: MPI_IN_PLACE ignores sendcount -1 and sendtype", [](Impl i, const Args &a) {
    return allgather(i)(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, a.recv, 2, MPI_INT, a.comm);
  });
  add("allgather: MPI_IN_PLACE with sendtype MPI_DATATYPE_NULL", [](Impl i, const Args &a) {
    return allgather(i)(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a.recv, 3, MPI_DOUBLE, a.comm);
  });
  return v;
}

// Runs one row with one implementation on fresh buffers; returns the error class and
// leaves the buffers in *send / *recv.
int run_row(const Row &row, Impl impl, MPI_Comm comm, std::vector<unsigned char> *send,
            std::vector<unsigned char> *recv) {
  *send = std::vector<unsigned char>(kBufBytes);
  for (size_t i = 0; i < send->size(); ++i) (*send)[i] = static_cast<unsigned char>(i * 7 + 3);
  *recv = patterned(kBufBytes);
  int size = 1;
  if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  MPI_Datatype unc, contig;
  PMPI_Type_contiguous(2, MPI_INT, &unc);
  PMPI_Type_contiguous(2, MPI_INT, &contig);
  PMPI_Type_commit(&contig);
  Args a{send->data(), recv->data(), comm, size, unc, contig};
  int rc = row.call(impl, a);
  PMPI_Type_free(&unc);
  PMPI_Type_free(&contig);
  return error_class(rc);
}

bool check_row(const Row &row, const TestComm &c) {
  const std::string where = std::string(row.name) + " on " + (row.fixed_comm ? "-" : c.name);
  set_phase("%s", where.c_str());
  std::vector<unsigned char> psend, precv, msend, mrecv;
  int expected = row.expected_class;
  if (row.call_pmpi) expected = run_row(row, Impl::Pmpi, c.comm, &psend, &precv);
  int got = run_row(row, Impl::Mpi, c.comm, &msend, &mrecv);
  bool ok = true;
  if (got != expected) {
    report("%s: MPI_* gave %s, PMPI_* gave %s%s", where.c_str(), error_class_name(got).c_str(),
           error_class_name(expected).c_str(), row.call_pmpi ? "" : " (expected; PMPI not called)");
    ok = false;
  }
  if (!row.buffers_used) return ok;
  if (expected != MPI_SUCCESS) {
    if (mrecv != patterned(kBufBytes)) {
      report("%s: the receive buffer was modified by a failing MPI_* call", where.c_str());
      ok = false;
    }
  } else if (row.call_pmpi && got == MPI_SUCCESS && mrecv != precv) {
    report("%s: results of MPI_* and PMPI_* differ", where.c_str());
    ok = false;
  }
  return ok;
}

class ErrorsReturn : public ::testing::Test {
 protected:
  void SetUp() override { PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); }
};

TEST_F(ErrorsReturn, BadArgumentsSameClassAsPmpi) {
  bool ok = true;
  for (CommKind k : {CommKind::World, CommKind::Dup}) {
    ScopedComm c(k);  // MPI_ERRORS_RETURN set on it by make_comm
    const char *only = std::getenv("GCOLLTEST_ERRORS_ROW");  // one row (by name), for probing an MPI
    for (const Row &row : rows()) {
      if (only && std::strcmp(only, row.name) != 0) continue;
      if (row.fixed_comm && k != CommKind::World) continue;
      if ((row.mpi_aborts && world_size() > 1) || row.mpi_asserts) {
        if (world_rank() == 0 && k == CommKind::World) printf("note: not run (the MPI aborts on it): %s\n", row.name);
        continue;
      }
      if (!row.call_pmpi && !gcoll_handles_calls()) {
        if (world_rank() == 0)
          printf("note: not run (the MPI's own call would crash): %s\n", row.name);
        continue;
      }
      ok = check_row(row, *c) && ok;
    }
    // The library still works after all these errors.
    ok = check_allreduce(*c, find_type(MPI_INT), MPI_SUM, 1001, false, next_seed()) && ok;
    ok = check_bcast(*c, spec_of(find_type(MPI_DOUBLE)), 77, c->size - 1, next_seed()) && ok;
    ok = check_allgather(*c, spec_of(find_type(MPI_SHORT)), 5, false, next_seed()) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

// Every datatype with every predefined op at counts 1 and 0: MPI_Allreduce accepts
// exactly what PMPI_Allreduce accepts, and fails with the same class otherwise.
TEST_F(ErrorsReturn, AllreduceAcceptsWhatPmpiAccepts) {
  ScopedComm c(CommKind::Dup);
  bool ok = true;
  for (const TypeDesc &t : all_types()) {
    for (MPI_Op op : all_ops()) {
      for (int count : {1, 0}) {
        std::string where = std::string(t.name) + " " + op_name(op) + " count " + std::to_string(count);
        set_phase("%s", where.c_str());
        std::vector<unsigned char> in(4 * t.extent, 0);
        t.fill(in.data(), 1, world_rank(), next_seed(), op);
        std::vector<unsigned char> s1 = in, s2 = in;
        std::vector<unsigned char> r1 = patterned(t.extent), r2 = patterned(t.extent);
        if (mpi_aborts_on_bad_pairs() && c->size > 1) {  // only the pairs the table says the MPI takes
          const auto ok_ops = tested_ops(t);
          if (std::find(ok_ops.begin(), ok_ops.end(), op) == ok_ops.end()) continue;
        }
        int c1 = error_class(PMPI_Allreduce(s1.data(), r1.data(), count, t.type, op, c->comm));
        int c2 = error_class(MPI_Allreduce(s2.data(), r2.data(), count, t.type, op, c->comm));
        if (c1 != c2) {
          report("%s: MPI_Allreduce gave %s, PMPI_Allreduce gave %s", where.c_str(),
                 error_class_name(c2).c_str(), error_class_name(c1).c_str());
          ok = false;
        } else if (c1 != MPI_SUCCESS && r2 != patterned(t.extent)) {
          report("%s: receive buffer modified by a failing MPI_Allreduce", where.c_str());
          ok = false;
        }
      }
    }
  }
  EXPECT_ALL_RANKS(ok);
}

// The user's error handler on the communicator is called exactly as PMPI calls it
// (once per failing call), including MPI_COMM_WORLD's for MPI_COMM_NULL.
int g_handler_calls = 0;
int g_handler_last_class = 0;
void counting_handler(MPI_Comm *, int *code, ...) {
  ++g_handler_calls;
  g_handler_last_class = error_class(*code);
}

TEST(UserErrhandler, CalledAsPmpiCallsIt) {
  MPI_Errhandler h;
  PMPI_Comm_create_errhandler(counting_handler, &h);
  ScopedComm c(CommKind::Dup);
  PMPI_Comm_set_errhandler(c->comm, h);
  PMPI_Comm_set_errhandler(MPI_COMM_WORLD, h);
  bool ok = true;
  for (const Row &row : rows()) {
    if (!row.call_pmpi || row.mpi_asserts) continue;
    std::vector<unsigned char> s, r;
    g_handler_calls = 0;
    int pc = run_row(row, Impl::Pmpi, c->comm, &s, &r);
    int p_calls = g_handler_calls, p_class = g_handler_last_class;
    g_handler_calls = 0;
    int mc = run_row(row, Impl::Mpi, c->comm, &s, &r);
    int m_calls = g_handler_calls, m_class = g_handler_last_class;
    if (row.fixed_comm && mpi_calls_no_handler_on_comm_null() && pc == mc) continue;
    if (p_calls != m_calls || (p_calls > 0 && p_class != m_class) || pc != mc) {
      report("%s: PMPI_* called the error handler %d time(s) (class %s, returned %s); MPI_* %d "
             "time(s) (class %s, returned %s)",
             row.name, p_calls, error_class_name(p_class).c_str(), error_class_name(pc).c_str(),
             m_calls, error_class_name(m_class).c_str(), error_class_name(mc).c_str());
      ok = false;
    }
  }
  PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  PMPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  PMPI_Errhandler_free(&h);
  EXPECT_ALL_RANKS(ok);
}

// Which op x type combinations Open MPI accepts (PMPI only). The standard's
// combinations must be accepted; with Open MPI, also exactly the extra ones in
// types.cc. GCOLLTEST_VERBOSE=1 prints the table.
TEST_F(ErrorsReturn, OpenMpiAcceptanceTable) {
  bool ok = true;
  const bool print = verbose() && world_rank() == 0;
  if (print) {
    printf("%-28s", "PMPI_Allreduce accepts");
    for (MPI_Op op : all_ops()) printf(" %-7.7s", op_name(op) + 4);
    printf("\n");
  }
  for (const TypeDesc &t : all_types()) {
    const auto std_ops = standard_ops(t), extra = ompi_extra_ops(t);
    if (print) printf("%-28s", t.name);
    for (MPI_Op op : all_ops()) {
      std::vector<unsigned char> in(t.extent, 0), out(t.extent, 0);
      int cls = error_class(PMPI_Allreduce(in.data(), out.data(), 1, t.type, op, MPI_COMM_SELF));
      bool accepted = cls == MPI_SUCCESS;
      bool is_std = std::find(std_ops.begin(), std_ops.end(), op) != std_ops.end();
      bool is_extra = std::find(extra.begin(), extra.end(), op) != extra.end();
      if (print) printf(" %-7s", accepted ? (is_std ? "yes" : "ext") : "-");
      if (is_std && !accepted) {
        report("PMPI_Allreduce rejects %s on %s (%s), which the standard defines", op_name(op),
               t.name, error_class_name(cls).c_str());
        ok = false;
      }
#ifdef OPEN_MPI
      if (!is_std && accepted != is_extra) {
        report("Open MPI %s %s on %s, the table in types.cc says otherwise",
               accepted ? "accepts" : "rejects", op_name(op), t.name);
        ok = false;
      }
#endif
    }
    if (print) printf("\n");
  }
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
