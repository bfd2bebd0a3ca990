#include "kernels/types.h"

#include <cstdint>

#include "kernels/elements.h"

namespace gcoll {

namespace {

// The list's columns as arrays indexed by DType / ROp (the enums are in list order).
constexpr const char *kDTypeNames[] = {
#define GCOLL_X(dtype, name, ...) name,
    GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
};

constexpr std::size_t kDTypeSizes[] = {
#define GCOLL_X(dtype, name, ops, unit, mpi, ...) sizeof(__VA_ARGS__),
    GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
};

constexpr OpSet kDTypeOps[] = {
#define GCOLL_X(dtype, name, ops, ...) ops,
    GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
};

constexpr const char *kROpNames[] = {
#define GCOLL_X(rop, name, ...) name,
    GCOLL_ROPS(GCOLL_X)
#undef GCOLL_X
};

static_assert(sizeof kDTypeNames / sizeof *kDTypeNames == kNumDTypes);
static_assert(sizeof kROpNames / sizeof *kROpNames == kNumROps);

// Out-of-range values (kCount, or anything cast into the enums) index nothing.
constexpr bool valid(DType t) { return static_cast<int>(t) < kNumDTypes; }
constexpr bool valid(ROp o) { return static_cast<int>(o) < kNumROps; }

}  // namespace

const char *dtype_name(DType t) { return valid(t) ? kDTypeNames[static_cast<int>(t)] : "?"; }

const char *rop_name(ROp o) { return valid(o) ? kROpNames[static_cast<int>(o)] : "?"; }

std::size_t dtype_size(DType t) { return valid(t) ? kDTypeSizes[static_cast<int>(t)] : 0; }

bool op_supported(ROp op, DType t) {
  return valid(t) && valid(op) && (kDTypeOps[static_cast<int>(t)] & op_bit(op)) != 0;
}

}  // namespace gcoll
