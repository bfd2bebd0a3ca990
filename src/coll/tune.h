// Algorithm selection as data. A rule list in one small grammar, the default written in
// the same grammar that users override it with (GCOLL_TUNE):
//     rules  := rule (',' rule)*
//     rule   := coll ':' lo '-' hi ':' '@' algorithm
//     coll   := allreduce | bcast | allgather
//     lo, hi := size (4096, 64K, 1M, ...) | inf        message bytes in [lo, hi)
// Message bytes: allreduce and bcast count x type size; allgather the per-rank block.
// User rules come first; the first rule that matches the size and whose algorithm
// supports the call wins, then (device buffers on nodes of several GPUs) the cost model's
// pick, then the default rules. An invalid GCOLL_TUNE is reported and
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
// Tried after the user's rules and before kDefaultTune for device calls on GPUs that
// ranks share without MPS (CollArgs::time_sliced) where the device space does not fuse.
extern const char *const kTimeSlicedTune;

// Parses `text` into *out. Status::ErrArg on a bad rule: *error says why in one line and
// *out is left as it was (nothing half-applied).
Status parse_tune(const std::string &text, std::vector<TuneRule> *out, std::string *error);

// The algorithm table as gcoll_info prints it: per algorithm its collective, name, the
// size ranges the default rules give it, and its description; then the GCOLL_TUNE rules
// `user_tune` (tried first), or the one-line reason they are ignored.
std::string describe_algorithms(const std::string &user_tune);

// The process's GCOLL_TUNE rules, parsed once: empty when unset or invalid; then
// user_tune_error() says why (reported at start-up, see src/pmpi/runtime.cc).
const std::vector<TuneRule> &user_tune_rules();
const std::string &user_tune_error();

// The algorithm for a call: user rules; on GPUs shared without MPS their rules; for device
// buffers with the cost model's links (CollArgs::model: nodes of several GPUs) the model's
// pick (coll/cost_model.h); then defaults. nullptr: none supports it.
const Algorithm *select_algorithm(const std::vector<TuneRule> &user, const CollArgs &a, const Topology &t);

}  // namespace gcoll
