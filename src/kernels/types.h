// Element types and reduction ops the engine works with (no MPI here: src/pmpi maps MPI
// handles onto these). One vocabulary for the host and the CUDA kernels, expanded from
// the one list in type_op_list.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/type_op_list.h"

namespace gcoll {

// In list order: the tables in types.cc are indexed by these values.
enum class DType : std::uint8_t {
#define GCOLL_X(dtype, ...) dtype,
  GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
  kCount
};

enum class ROp : std::uint8_t {
#define GCOLL_X(rop, ...) rop,
  GCOLL_ROPS(GCOLL_X)
#undef GCOLL_X
  kCount
};

constexpr int kNumDTypes = static_cast<int>(DType::kCount);
constexpr int kNumROps = static_cast<int>(ROp::kCount);

// A set of ops, one bit per ROp.
using OpSet = std::uint32_t;
static_assert(kNumROps <= 32, "OpSet has a bit per op");

constexpr OpSet op_bit(ROp o) { return OpSet{1} << static_cast<unsigned>(o); }

// The MPI standard defines each op on whole classes of types; ops with the same classes
// form a group (the list's OpGroup column).
enum class OpGroup : std::uint8_t { Arithmetic, Order, Logical, Bitwise, Loc };

constexpr OpSet group_ops(OpGroup g) {
  OpSet s = 0;
#define GCOLL_X(rop, name, group, ...) \
  if (g == OpGroup::group) s |= op_bit(ROp::rop);
  GCOLL_ROPS(GCOLL_X)
#undef GCOLL_X
  return s;
}

// The type classes (the list's op set column): SUM/PROD on integers, floats, complex;
// MAX/MIN on integers and floats; logical ops on integers and Bool; bitwise ops on
// integers (Uint8 covers MPI_BYTE); MINLOC/MAXLOC on pairs.
constexpr OpSet kIntegerOps = group_ops(OpGroup::Arithmetic) | group_ops(OpGroup::Order) |
                              group_ops(OpGroup::Logical) | group_ops(OpGroup::Bitwise);
constexpr OpSet kFloatingOps = group_ops(OpGroup::Arithmetic) | group_ops(OpGroup::Order);
constexpr OpSet kComplexOps = group_ops(OpGroup::Arithmetic);
constexpr OpSet kBoolOps = group_ops(OpGroup::Logical);
constexpr OpSet kPairOps = group_ops(OpGroup::Loc);

const char *dtype_name(DType t);
const char *rop_name(ROp o);
std::size_t dtype_size(DType t);  // bytes of one element (a pair counts as one element)

// Whether the engine implements `op` on `t` on the host: the list's op set of `t`.
bool op_supported(ROp op, DType t);

}  // namespace gcoll
