// Algorithm selection as data. A rule list in one small grammar, the default written in
// the same grammar that users override it with (GCOLL_TUNE):
//     rules  := rule (',' rule)*
//     rule   := coll ':' lo '-' hi ':' '@' algorithm
//     coll   := allreduce | bcast | allgather
//     lo, hi := size (4096, 64K, 1M, ...) | inf        message bytes in [lo, hi)
// Message bytes: allreduce and bcast count x type size; allgather the per-rank block.
// User rules come first; the first rule that matches the size and whose algorithm
// supports the call wins, then the default rules. An invalid GCOLL_TUNE is reported and
// ignored whole, never half-applied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coll/engine.h"

namespace gcoll {

struct TuneRule {
  Coll coll;
  std::uint64_t lo, hi;  // [lo, hi)
  const Algorithm *algo;
};

extern const char *const kDefaultTune;

// Parses `text`; on error returns false and sets *error to a one-line reason.
bool parse_tune(const std::string &text, std::vector<TuneRule> *out, std::string *error);

// The algorithm for a call: user rules, then defaults. nullptr: none supports it.
const Algorithm *select_algorithm(const std::vector<TuneRule> &user, const CollArgs &a, const Topology &t);

}  // namespace gcoll
