// Algorithm selection as data. A rule list in one small grammar, the default written in
// the same grammar that users override it with (GCOLL_TUNE):
//     rules  := rule (',' rule)*
//     rule   := coll ':' lo '-' hi ':' '@' algorithm
//     coll   := allreduce | bcast | allgather
//     lo, hi := size (4096, 64K, 1M, ...) | inf        message bytes in [lo, hi)
// Message bytes: allreduce and bcast count x type size; allgather the per-rank block.
// User rules come first; the first rule that matches the size and whose algorithm
// supports the call wins, then (host buffers) the host crossovers (GCOLL_HOST_TUNE, by
// default kHostTune: @mpi where the MPI's own collective is faster), then (device buffers
// on nodes of several GPUs) the cost model's pick, then the default rules. An invalid
// GCOLL_TUNE is reported and ignored whole, never half-applied.
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
// Tried after the user's rules and before everything else for host-buffer calls
// (GCOLL_HOST_BUFFERS=engine): the sizes where the MPI's own collective was measured faster
// than the engine (@mpi: the engine declines, the call goes to the MPI). GCOLL_HOST_TUNE
// replaces it (rules measured on the machine: scripts/tune_host.py) or turns it off.
extern const char *const kHostTune;
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

// The process's host crossover rules, parsed once from GCOLL_HOST_TUNE: kHostTune's for
// "default" (or empty), none for "off", else the setting's rules; invalid rules: kHostTune's,
// and host_tune_error() says why (reported at start-up). GCOLL_HOST_TUNE is agreed
// (uniform_settings.cc): every rank of an engine communicator has the same rules.
const std::vector<TuneRule> &host_tune_rules();
const std::string &host_tune_error();
// GCOLL_HOST_TUNE=off (the engine at every size), read once.
bool host_tune_off();
// The rules `setting` (GCOLL_HOST_TUNE's value) stands for, as host_tune_rules() reads it.
std::vector<TuneRule> host_rules_of(const std::string &setting, std::string *error);

// The algorithm for a call: user rules; for host buffers the `host` rules (the engine passes
// host_tune_rules(); nullptr: none); on GPUs shared without MPS their rules; for device
// buffers with the cost model's links (CollArgs::model: nodes of several GPUs) the model's
// pick (coll/cost_model.h); then defaults. nullptr: none supports it. An algorithm without
// a run (@mpi, @staged): the engine declines the call.
const Algorithm *select_algorithm(const std::vector<TuneRule> &user, const CollArgs &a, const Topology &t,
                                  const std::vector<TuneRule> *host = nullptr);

// Whether select_algorithm would give the host-buffer call `a` to the MPI (@mpi) by the
// host rules alone, decided without a topology: no compression asked, no GCOLL_TUNE rule
// for its collective and size, and the first host rule for them is @mpi (whose supports()
// is "host buffers": true). False where it cannot say so without the engine (the full
// selection then decides, as before). Rank-uniform: bytes by type signature, agreed settings.
bool host_declines(const std::vector<TuneRule> &user, const std::vector<TuneRule> &host, const CollArgs &a);

// host_declines() as size ranges per collective, for the calls below every crossover that
// pass through (team_call.h): one short array per collective instead of a walk over both
// rule lists, each call. Exactly host_declines() on every size (it is constant between the
// rules' bounds: each elementary range is decided by host_declines() at its low end);
// `exact` false for a collective whose ranges do not fit (then host_declines() decides).
struct DeclineRanges {
  static constexpr int kMax = 6;
  struct Range {
    std::uint64_t lo, hi;  // [lo, hi)
  };
  Range r[kBlockingColls][kMax];
  std::uint8_t n[kBlockingColls];
  bool exact[kBlockingColls];
};
DeclineRanges decline_ranges_of(const std::vector<TuneRule> &user, const std::vector<TuneRule> &host);
// The blocking collectives (bit i: Coll i) whose host-buffer calls the host engine may take
// at some size, by `d`: all but those whose every size host_declines() gives to the MPI.
// Allreduce always (a compressed allreduce ignores the crossovers). Team::host_engine_colls.
std::uint32_t host_engine_colls_of(const DeclineRanges &d);
// The process's (user_tune_rules(), host_tune_rules()), built once.
const DeclineRanges &decline_ranges();
// host_declines(user_tune_rules(), host_tune_rules(), a) through decline_ranges().
inline bool host_declines(const CollArgs &a) {
  if (a.compress != Compress::Off || static_cast<int>(a.coll) >= kBlockingColls) return false;
  const DeclineRanges &d = decline_ranges();
  const int c = static_cast<int>(a.coll);
  if (!d.exact[c]) return host_declines(user_tune_rules(), host_tune_rules(), a);
  const std::uint64_t b = a.bytes();
  for (int i = 0; i < d.n[c]; ++i)
    if (b >= d.r[c][i].lo && b < d.r[c][i].hi) return true;
  return false;
}

// Whether the host-buffer call `a` is one that GCOLL_HOST_BUSY_MPI may give to the MPI on a
// loaded machine (coll/team.h: Team::busy_says_mpi): `min_bytes` (the setting) > 0 and the
// call at least that large (reduce, reduce_scatter, reduce_scatter_block: any size below
// kBusyEngineScatterBytes, none above), the host crossovers on (GCOLL_HOST_TUNE not "off"),
// no compression asked and no GCOLL_TUNE rule for its collective and size. Rank-uniform.
bool host_busy_candidate(const std::vector<TuneRule> &user, const CollArgs &a, std::uint64_t min_bytes,
                         bool host_tune_off);
// The scatter-reductions' selection bytes (reduce: the message, reduce_scatter: the total,
// reduce_scatter_block: the block) from which their engine stays on shared cores.
constexpr std::uint64_t kBusyEngineScatterBytes = 64 << 10;

}  // namespace gcoll
