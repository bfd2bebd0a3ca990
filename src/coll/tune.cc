#include "coll/tune.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "base/config.h"
#include "coll/cost_model.h"

namespace gcoll {

// Device buffers on one node (docs/engine.md, "Device buffers"): @fused where the device
// space fuses (MPS, or a GPU per rank), for allreduce up to 4 MiB (then the zero-copy
// two-shot moves 3 x S bytes per rank instead of (3 + n) x S) and for any size where the
// buffers cannot be exposed; the bank algorithms (oneshot, rd, ring, binomial, ...)
// never run on a device space that fuses (registry.cc), so what it cannot fuse (long
// double elements) and cannot run zero-copy is staged. On a node's NVLink ring (only
// there) the *_nvring algorithms, whatever the size; across nodes that each have one, the
// nvring_hier rows (the ring inside each node, the rails between: nvring_hier.cc).
// Host reduce_scatter_block and reduce_scatter on nodes of the same size: @rails
// (reduce_scatter_rails.cc) from two rounds of the bank on 2 x 2 nodes (rsb from a 512 KiB
// block, reduce_scatter from 2 MiB in all), @hier below: @rails was 5-28 % faster at every
// size on a quiet 2-core VM, but with CPU-bound processes on the same cores 1.1-1.6x
// slower in one round (its rail ranks exchange both ways per round) and 1.1-1.4x faster
// from two (docs/host-engine-vs-mpi.md, "reduce_scatter @rails").
const char *const kDefaultTune =
    "allreduce:0-inf:@nvring,bcast:0-inf:@nvring,allgather:0-inf:@nvring,reduce_scatter_block:0-inf:@nvring,"
    "reduce:0-inf:@nvring,reduce_scatter:0-inf:@nvring,alltoall:0-inf:@nvring,allgatherv:0-inf:@nvring,"
    "allreduce:0-inf:@nvring_hier,bcast:0-inf:@nvring_hier,allgather:0-inf:@nvring_hier,"
    "reduce_scatter_block:0-inf:@nvring_hier,reduce:0-inf:@nvring_hier,reduce_scatter:0-inf:@nvring_hier,"
    "alltoall:0-inf:@nvring_hier,allgatherv:0-inf:@nvring_hier,"
    "allreduce:0-4M:@fused,allreduce:0-16K:@oneshot,allreduce:16K-inf:@twoshot,allreduce:4M-inf:@fused,"
    "allreduce:16K-256K:@rd,allreduce:256K-inf:@ring,allreduce:0-inf:@staged,"
    "bcast:0-inf:@fused,bcast:0-64K:@binomial,bcast:64K-inf:@scatter_ag,"
    "allgather:0-inf:@fused,allgather:0-16K:@bruck,allgather:16K-inf:@ring,"
    "allgatherv:0-inf:@direct,allgatherv:0-16K:@bruck,allgatherv:16K-inf:@ring,"
    "reduce_scatter_block:16K-inf:@twoshot,reduce_scatter_block:0-inf:@node,reduce_scatter_block:512K-inf:@rails,"
    "reduce_scatter_block:0-inf:@hier,reduce_scatter_block:0-inf:@allreduce,"
    "reduce:0-inf:@direct,reduce:0-inf:@hier,reduce_scatter:0-inf:@direct,reduce_scatter:2M-inf:@rails,"
    "reduce_scatter:0-inf:@hier,"
    "alltoall:0-inf:@direct,alltoall:0-inf:@hier";

// Tried before kDefaultTune for device calls where node ranks share a GPU without MPS
// (time-sliced, MemSpace::time_sliced) and the space does not fuse: every engine step
// there needs every rank's context to get the GPU in turn (about 1 ms at 8 B on an H100
// with 4 ranks, against 0.34 ms for the staged MPI, which needs two turns per call), so
// staging wins up to about 2 MiB (measured for allreduce; bcast and allgather assumed).
const char *const kTimeSlicedTune =
    "allreduce:0-4M:@staged,bcast:0-4M:@staged,allgather:0-1M:@staged,reduce_scatter_block:0-1M:@staged,"
    "reduce:0-4M:@staged,reduce_scatter:0-1M:@staged,alltoall:0-1M:@staged,allgatherv:0-1M:@staged";

// Host buffers (GCOLL_HOST_BUFFERS=engine): the sizes where the MPI's own collective beat
// the engine, measured (docs/host-engine-vs-mpi.md, "Paired": 4 ranks on 2 x 2 virtual
// nodes bound two to a core, Open MPI 4.1.4, 2-core VM, medians of 3 paired runs at
// 43e9629) and read as scripts/tune_host.py --threshold 1.05 reads a measurement: a size
// between two measured sizes goes as the smaller one did; @mpi wherever the engine's median
// was not at least 1.05x the MPI's (single sizes within 5 % are noise there). Sizes in the
// selection's bytes (tune.h): allgatherv its total, reduce_scatter_block its block (the
// benchmark's size / 4). Applied on every node shape (one node was not measured: the MPI
// where unsure). GCOLL_HOST_TUNE replaces it with a measurement of the machine.
const char *const kHostTune =
    "allreduce:0-4K:@mpi,allreduce:32K-inf:@mpi,bcast:0-inf:@mpi,allgather:0-inf:@mpi,allgatherv:0-16K:@mpi,"
    "allgatherv:32K-inf:@mpi,alltoall:0-inf:@mpi,reduce:0-512K:@mpi,reduce:1M-inf:@mpi,"
    "reduce_scatter:0-128K:@mpi,reduce_scatter:256K-4M:@mpi,reduce_scatter_block:0-64K:@mpi";

namespace {

bool parse_coll(const std::string &s, Coll *c) {
  for (int k = 0; k < kColls; ++k)
    if (s == coll_name(static_cast<Coll>(k))) {
      *c = static_cast<Coll>(k);
      return true;
    }
  return false;
}

bool parse_bound(const std::string &s, std::uint64_t *v) {
  if (s == "inf") {
    *v = UINT64_MAX;
    return true;
  }
  return parse_size(s, v);
}

bool parse_rule(const std::string &r, TuneRule *out, std::string *error) {
  const size_t c1 = r.find(':'), c2 = r.find(':', c1 == std::string::npos ? 0 : c1 + 1);
  if (c1 == std::string::npos || c2 == std::string::npos) {
    *error = "'" + r + "' is not coll:lo-hi:@algorithm";
    return false;
  }
  const std::string coll = r.substr(0, c1), range = r.substr(c1 + 1, c2 - c1 - 1), algo = r.substr(c2 + 1);
  if (!parse_coll(coll, &out->coll)) {
    *error = "unknown collective '" + coll + "' in '" + r + "'";
    return false;
  }
  const size_t dash = range.find('-');
  if (dash == std::string::npos || !parse_bound(range.substr(0, dash), &out->lo) ||
      !parse_bound(range.substr(dash + 1), &out->hi) || out->lo >= out->hi) {
    *error = "bad size range '" + range + "' in '" + r + "' (expected lo-hi with lo < hi, e.g. 0-64K, 1M-inf)";
    return false;
  }
  if (algo.size() < 2 || algo[0] != '@' || !(out->algo = find_algorithm(out->coll, algo.substr(1)))) {
    std::string names;
    for (const auto &a : algorithms())
      if (a.coll == out->coll) names += std::string(names.empty() ? "" : ", ") + "@" + a.name;
    *error = "unknown algorithm '" + algo + "' for " + coll + " (known: " + names + ")";
    return false;
  }
  return true;
}

// Built-in rule lists, unit-tested to parse.
std::vector<TuneRule> builtin_rules(const char *text) {
  std::vector<TuneRule> r;
  std::string err;
  parse_tune(text, &r, &err);
  return r;
}

const std::vector<TuneRule> &default_rules() {
  static const std::vector<TuneRule> rules = builtin_rules(kDefaultTune);
  return rules;
}

const std::vector<TuneRule> &time_sliced_rules() {
  static const std::vector<TuneRule> rules = builtin_rules(kTimeSlicedTune);
  return rules;
}

const std::vector<TuneRule> &builtin_host_rules() {
  static const std::vector<TuneRule> rules = builtin_rules(kHostTune);
  return rules;
}

const Algorithm *first_match(const std::vector<TuneRule> &rules, const CollArgs &a, const Topology &t) {
  const std::uint64_t b = a.bytes();
  for (const auto &r : rules)
    if (r.coll == a.coll && b >= r.lo && b < r.hi && r.algo->supports(a, t)) return r.algo;
  return nullptr;
}

}  // namespace

Status parse_tune(const std::string &text, std::vector<TuneRule> *out, std::string *error) {
  std::vector<TuneRule> rules;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    TuneRule r{};
    if (!parse_rule(item, &r, error)) return Status::ErrArg;
    rules.push_back(r);
  }
  *out = std::move(rules);
  return Status::Ok;
}

namespace {

std::string size_text(std::uint64_t v) {
  if (v == UINT64_MAX) return "inf";
  const char *units = "KMGT";
  int u = -1;
  while (v && v % 1024 == 0 && u < 3) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + (u >= 0 ? std::string(1, units[u]) : "");
}

std::string pad(std::string s, std::size_t w) {
  s.resize(std::max(w, s.size() + 1), ' ');
  return s;
}

std::string ranges_of(const std::vector<TuneRule> &rules, const Algorithm *a) {
  std::string out;
  for (const auto &r : rules)
    if (r.algo == a) out += (out.empty() ? "" : ",") + size_text(r.lo) + "-" + size_text(r.hi);
  return out;
}

}  // namespace

std::string describe_algorithms(const std::string &user_tune) {
  std::ostringstream o;
  o << "algorithms (collective, name, default message sizes [lo-hi) from the built-in rules, description):\n";
  for (const auto &a : algorithms()) {
    std::string r = ranges_of(default_rules(), &a);
    const std::string ts = ranges_of(time_sliced_rules(), &a);
    if (!ts.empty()) r += (r.empty() ? "" : " ") + ts + " (GPUs shared without MPS)";
    const std::string hs = ranges_of(host_tune_rules(), &a);
    if (!hs.empty()) r += (r.empty() ? "" : " ") + hs + " (host buffers: GCOLL_HOST_TUNE)";
    o << "  " << pad(coll_name(a.coll), 21) << pad(a.name, 14) << (r.empty() ? (std::string(a.name) == "compressed" ? "- (asked: GCOLL_ALLREDUCE_COMPRESS, info key gcoll_allreduce_compress)" : "- (only through GCOLL_TUNE)") : r)
      << "\n      " << a.description << "\n";
  }
  // The rules per collective, in the order they are tried (the first whose algorithm
  // supports the call wins; then any algorithm of the collective that supports it).
  o << "selection, per collective, in the order tried (GCOLL_TUNE's rules come first; device buffers on nodes of "
       "several GPUs take the cost model's pick before the rules for every call: GCOLL_COST_MODEL, "
       "docs/cost-model.md, gcoll_info --topology):\n";
  const std::string &ht = config().host_tune;
  const std::string host_label = !host_tune_error().empty()     ? "GCOLL_HOST_TUNE invalid: the built-in crossovers"
                                 : ht.empty() || ht == "default" ? "the built-in crossovers"
                                 : ht == "off"                   ? "GCOLL_HOST_TUNE=off"
                                                                 : "GCOLL_HOST_TUNE's rules";
  for (int c = 0; c < kBlockingColls; ++c) {
    const Coll coll = static_cast<Coll>(c);
    std::string ts, def, host;
    for (const auto &r : host_tune_rules())
      if (r.coll == coll) host += " " + size_text(r.lo) + "-" + size_text(r.hi) + ":@" + r.algo->name;
    for (const auto &r : time_sliced_rules())
      if (r.coll == coll) ts += " " + size_text(r.lo) + "-" + size_text(r.hi) + ":@" + r.algo->name;
    for (const auto &r : default_rules())
      if (r.coll == coll) def += " " + size_text(r.lo) + "-" + size_text(r.hi) + ":@" + r.algo->name;
    bool any = false;
    for (const auto &a : algorithms()) any = any || a.coll == coll;
    if (!any) {  // seen, counted and staged only (issue 23)
      o << "  " << coll_name(coll) << ": no engine algorithm: host buffers to the MPI, device buffers staged\n";
      continue;
    }
    o << "  " << coll_name(coll) << ":\n";
    o << "    host buffers (GCOLL_HOST_BUFFERS=engine), before the rules below (" << host_label
      << "):" << (host.empty() ? " none" : host) << "\n";
    if (!ts.empty()) o << "    device buffers on GPUs shared without MPS (space not fusing):" << ts << "\n";
    o << "    every call:" << def << "\n";
  }
  if (!user_tune.empty()) {
    std::vector<TuneRule> user;
    std::string error;
    if (ok(parse_tune(user_tune, &user, &error))) {
      o << "GCOLL_TUNE rules (tried before the defaults):";
      for (const auto &r : user)
        o << " " << coll_name(r.coll) << ":" << size_text(r.lo) << "-" << size_text(r.hi) << ":@" << r.algo->name;
      o << "\n";
    } else {
      o << "warning: GCOLL_TUNE ignored: " << error << "\n";
    }
  }
  return o.str();
}

bool host_declines(const std::vector<TuneRule> &user, const std::vector<TuneRule> &host, const CollArgs &a) {
  if (a.compress != Compress::Off) return false;
  const std::uint64_t b = a.bytes();
  const auto covers = [&](const TuneRule &r) { return r.coll == a.coll && b >= r.lo && b < r.hi; };
  for (const auto &r : user)
    if (covers(r)) return false;
  for (const auto &r : host)
    if (covers(r)) return !r.algo->run && std::strcmp(r.algo->name, "mpi") == 0;
  return false;
}

DeclineRanges decline_ranges_of(const std::vector<TuneRule> &user, const std::vector<TuneRule> &host) {
  DeclineRanges d{};
  for (int c = 0; c < kBlockingColls; ++c) {
    // The bounds of every rule of the collective: host_declines() is constant between two
    // neighbours.
    std::vector<std::uint64_t> cut = {0, UINT64_MAX};
    for (const auto *rules : {&user, &host})
      for (const TuneRule &r : *rules)
        if (static_cast<int>(r.coll) == c) {
          cut.push_back(r.lo);
          cut.push_back(r.hi);
        }
    std::sort(cut.begin(), cut.end());
    cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
    CollArgs a;
    a.coll = static_cast<Coll>(c);
    a.elem = 1;
    d.exact[c] = true;
    auto &n = d.n[c];
    for (std::size_t i = 0; i + 1 < cut.size() && d.exact[c]; ++i) {
      a.count = cut[i];
      if (!host_declines(user, host, a)) continue;
      if (n > 0 && d.r[c][n - 1].hi == cut[i]) {
        d.r[c][n - 1].hi = cut[i + 1];  // continues the previous range
      } else if (n < DeclineRanges::kMax) {
        d.r[c][n++] = {cut[i], cut[i + 1]};
      } else {
        d.exact[c] = false;  // too many ranges: host_declines() decides
      }
    }
    if (!d.exact[c]) n = 0;
  }
  return d;
}

std::uint32_t host_engine_colls_of(const DeclineRanges &d) {
  static_assert(kBlockingColls <= 32, "one bit per blocking collective");
  std::uint32_t colls = 0;
  for (int c = 0; c < kBlockingColls; ++c) {
    const bool every_size = d.exact[c] && d.n[c] == 1 && d.r[c][0].lo == 0 && d.r[c][0].hi == UINT64_MAX;
    if (!every_size || static_cast<Coll>(c) == Coll::Allreduce) colls |= 1u << c;
  }
  return colls;
}

bool host_busy_candidate(const std::vector<TuneRule> &user, const CollArgs &a, std::uint64_t min_bytes,
                         bool host_tune_off) {
  const std::uint64_t b = a.bytes();
  if (min_bytes == 0 || host_tune_off || a.compress != Compress::Off) return false;
  // The scatter-reductions' engine (@hier: the node's reduce-scatter through the banks, then
  // the rail) lost to the MPI at every size it runs on shared cores (0.67-0.87x, 26f8d88,
  // docs/host-engine-vs-mpi.md), where allreduce and allgatherv won below 256K (1.9-3.8x):
  // these three were candidates at any size. Since the waits ration the MPI's progress
  // pokes there (base/wait.h, 4a02909, 9a612da), large calls end with the rail's own barrier
  // (engine.cc) and the engine's waits and the MPI's calls run with a short time slice
  // (GCOLL_WAIT_SLICE), their engine beats the busy MPI at the sizes the built-in crossovers
  // give it (4 ranks in 2 x 2 virtual nodes: reduce_scatter_block 1.78-2.76x from 64 KiB
  // blocks, reduce 512 KiB 1.33x, reduce_scatter 128 KiB 1.73x and 16 MiB 1.28x): from
  // kBusyEngineScatterBytes they stay on the engine; below it (not measured since) they
  // remain candidates at any size. reduce_scatter from 16 MiB went to the MPI there too
  // (d08a3a8: @hier 32-33 ms against the MPI's 25), until @rails (reduce_scatter_rails.cc):
  // 20.4-21.3 ms against the busy MPI's 23.7-24.2 in three runs of three.
  const bool scatter = a.coll == Coll::Reduce || a.coll == Coll::Reduce_scatter || a.coll == Coll::Reduce_scatter_block;
  if (scatter && b >= kBusyEngineScatterBytes) return false;
  if (!scatter && b < min_bytes) return false;
  for (const auto &r : user)
    if (r.coll == a.coll && b >= r.lo && b < r.hi) return false;
  return true;
}

const Algorithm *select_algorithm(const std::vector<TuneRule> &user, const CollArgs &a, const Topology &t,
                                  const std::vector<TuneRule> *host) {
  // The compressed allreduce where the communicator asked for it (agreed: rank-uniform), before any rule.
  if (a.compress != Compress::Off)
    if (const Algorithm *x = find_algorithm(Coll::Allreduce, "compressed"); x && x->supports(a, t)) return x;
  if (const Algorithm *x = first_match(user, a, t)) return x;
  if (host && a.mem == MemKind::Host)
    if (const Algorithm *x = first_match(*host, a, t)) return x;
  if (a.time_sliced && !a.fused)
    if (const Algorithm *x = first_match(time_sliced_rules(), a, t)) return x;
  // Device buffers on nodes of several GPUs: the cost model's pick (its links agreed by
  // every rank with the device space, Engine::model_links; host buffers never have them).
  if (a.mem == MemKind::Device && a.model)
    if (const Algorithm *x = model_pick(a, t, *a.model)) return x;
  if (const Algorithm *x = first_match(default_rules(), a, t)) return x;
  // Sizes no rule covers: any algorithm of the collective that supports the call.
  for (const auto &algo : algorithms())
    if (algo.coll == a.coll && algo.supports(a, t)) return &algo;
  return nullptr;
}

namespace {

struct UserTune {
  std::vector<TuneRule> rules;
  std::string error;  // why GCOLL_TUNE is ignored; empty when it is not
};

const UserTune &user_tune() {
  static const UserTune u = [] {
    UserTune t;
    const std::string &text = config().tune;
    if (!text.empty() && !ok(parse_tune(text, &t.rules, &t.error))) t.rules.clear();
    return t;
  }();
  return u;
}

}  // namespace

const std::vector<TuneRule> &user_tune_rules() { return user_tune().rules; }
const std::string &user_tune_error() { return user_tune().error; }

std::vector<TuneRule> host_rules_of(const std::string &setting, std::string *error) {
  error->clear();
  if (setting.empty() || setting == "default") return builtin_host_rules();
  if (setting == "off") return {};
  std::vector<TuneRule> rules;
  if (!ok(parse_tune(setting, &rules, error))) return builtin_host_rules();
  return rules;
}

namespace {

const UserTune &host_tune() {
  static const UserTune u = [] {
    UserTune t;
    t.rules = host_rules_of(config().host_tune, &t.error);
    return t;
  }();
  return u;
}

}  // namespace

const std::vector<TuneRule> &host_tune_rules() { return host_tune().rules; }
const DeclineRanges &decline_ranges() {
  static const DeclineRanges d = decline_ranges_of(user_tune_rules(), host_tune_rules());
  return d;
}
bool host_tune_off() {
  static const bool off = config().host_tune == "off";
  return off;
}
const std::string &host_tune_error() { return host_tune().error; }

}  // namespace gcoll
