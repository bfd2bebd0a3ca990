#include "pmpi/mpi_types.h"

#include <type_traits>
#include <utility>
#include <vector>

namespace gcoll {

namespace {

// A predefined handle, its DType, and the ops MPI defines on that handle among those of
// the DType (op_supported): MPI_BYTE, Fortran INTEGER and MPI_CHAR allow fewer ops than
// the C integer types they share a DType with.
struct TypeEntry {
  MPI_Datatype handle;
  DType dtype;
  OpSet ops;
};

constexpr OpSet kAllOps = ~OpSet{0};  // whatever the DType supports

template <class T>
constexpr DType int_dtype() {
  if (sizeof(T) == 1) return std::is_signed<T>::value ? DType::Int8 : DType::Uint8;
  if (sizeof(T) == 2) return std::is_signed<T>::value ? DType::Int16 : DType::Uint16;
  if (sizeof(T) == 4) return std::is_signed<T>::value ? DType::Int32 : DType::Uint32;
  return std::is_signed<T>::value ? DType::Int64 : DType::Uint64;
}

// Built at first use (handles are not compile-time constants in every MPI).
const std::vector<TypeEntry> &datatypes() {
  static const std::vector<TypeEntry> table = [] {
    // Aliases: the C names whose width depends on the platform, and the Fortran names
    // with a fixed C counterpart (Fortran callers use these handles). They come first
    // because the first match wins: should an MPI give two handles one value, the
    // restricted MPI_CHAR and MPI_BYTE are found before MPI_INT8_T and MPI_UINT8_T.
    std::vector<TypeEntry> t = {
        // not a reduction type in the standard: leave it to the MPI
        {MPI_CHAR, int_dtype<char>(), 0},
        {MPI_SIGNED_CHAR, DType::Int8, kAllOps},
        {MPI_UNSIGNED_CHAR, DType::Uint8, kAllOps},
        {MPI_BYTE, DType::Uint8, group_ops(OpGroup::Bitwise)},
        {MPI_SHORT, int_dtype<short>(), kAllOps},
        {MPI_UNSIGNED_SHORT, int_dtype<unsigned short>(), kAllOps},
        {MPI_INT, int_dtype<int>(), kAllOps},
        {MPI_UNSIGNED, int_dtype<unsigned>(), kAllOps},
        {MPI_LONG, int_dtype<long>(), kAllOps},
        {MPI_UNSIGNED_LONG, int_dtype<unsigned long>(), kAllOps},
        {MPI_LONG_LONG, int_dtype<long long>(), kAllOps},
        {MPI_UNSIGNED_LONG_LONG, int_dtype<unsigned long long>(), kAllOps},
        // the logical ops are for Fortran LOGICAL, not INTEGER
        {MPI_INTEGER, DType::Int32, ~group_ops(OpGroup::Logical)},
        {MPI_REAL, DType::Float, kAllOps},
        {MPI_DOUBLE_PRECISION, DType::Double, kAllOps},
        {MPI_COMPLEX, DType::CFloatComplex, kAllOps},
        {MPI_DOUBLE_COMPLEX, DType::CDoubleComplex, kAllOps},
        {MPI_2INTEGER, DType::IntInt, kAllOps},
    };
    // The types' own handles, from the list (type_op_list.h).
#define GCOLL_X(dtype, name, ops, unit, mpi, ...) \
  if (mpi != MPI_DATATYPE_NULL) t.push_back({mpi, DType::dtype, kAllOps});
    GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
    return t;
  }();
  return table;
}

// From the list (type_op_list.h).
const std::vector<std::pair<MPI_Op, ROp>> &ops() {
  static const std::vector<std::pair<MPI_Op, ROp>> table = {
#define GCOLL_X(rop, name, group, mpi) {mpi, ROp::rop},
      GCOLL_ROPS(GCOLL_X)
#undef GCOLL_X
  };
  return table;
}

// The last type each thread looked up (applications use one or two types for most calls;
// the table is searched linearly). The table never changes once built.
thread_local const TypeEntry *t_last_type __attribute__((tls_model("initial-exec"))) = nullptr;

const TypeEntry *find_type(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return nullptr;
  const TypeEntry *last = t_last_type;
  if (last && last->handle == t) return last;
  for (const auto &e : datatypes())
    if (e.handle == t) {
      t_last_type = &e;
      return &e;
    }
  return nullptr;
}

// The last (type, op) pair each thread mapped, with its answer.
struct LastReduction {  // trivial: zero TLS, no init function; type 0 matches no handle
  MPI_Datatype type;
  MPI_Op op;
  bool ok;
  DType dtype;
  ROp rop;
};
thread_local LastReduction t_last_reduction __attribute__((tls_model("initial-exec")));

}  // namespace

bool map_datatype(MPI_Datatype t, DType *out) {
  const TypeEntry *e = find_type(t);
  if (!e) return false;
  *out = e->dtype;
  return true;
}

bool map_reduction(MPI_Datatype t, MPI_Op op, DType *dt, ROp *rop) {
  LastReduction &last = t_last_reduction;
  if (last.type == t && last.op == op && t != MPI_DATATYPE_NULL && t != MPI_Datatype()) {
    if (!last.ok) return false;
    *dt = last.dtype;
    *rop = last.rop;
    return true;
  }
  const TypeEntry *e = find_type(t);
  ROp o = ROp::Sum;
  const bool known_op = map_op(op, &o);
  const bool ok = e && known_op && (e->ops & op_bit(o)) != 0 && op_supported(o, e->dtype);
  // User-defined ops and types may be freed and their handles reused: only predefined
  // ones (found in the tables) are remembered.
  if (e && known_op) last = LastReduction{t, op, ok, e->dtype, o};
  if (!ok) return false;
  *dt = e->dtype;
  *rop = o;
  return true;
}

bool map_op(MPI_Op op, ROp *out) {
  if (op == MPI_OP_NULL) return false;
  for (const auto &e : ops())
    if (e.first == op) {
      *out = e.second;
      return true;
    }
  return false;
}

}  // namespace gcoll
