#include "base/stats.h"

#include <sstream>

namespace gcoll {

const char *coll_name(Coll c) {
  switch (c) {
    case Coll::Allreduce: return "allreduce";
    case Coll::Bcast: return "bcast";
    case Coll::Allgather: return "allgather";
    case Coll::kCount: break;
  }
  return "?";
}

const char *path_name(Path p) {
  switch (p) {
    case Path::Engine: return "engine";
    case Path::Staged: return "staged";
    case Path::Passthrough: return "passthrough";
    case Path::Error: return "errors";
    case Path::kCount: break;
  }
  return "?";
}

std::vector<std::uint64_t> Stats::snapshot() const {
  std::vector<std::uint64_t> out(kCounters);
  for (int k = 0; k < kCounters; ++k) out[k] = counters_[k].load(std::memory_order_relaxed);
  return out;
}

Stats &process_stats() {
  static Stats s;
  return s;
}

std::vector<std::uint64_t> stats_sum(const std::vector<std::vector<std::uint64_t>> &per_rank) {
  std::vector<std::uint64_t> sum(kCounters, 0);
  for (const auto &r : per_rank)
    for (int k = 0; k < kCounters && k < static_cast<int>(r.size()); ++k) sum[k] += r[k];
  return sum;
}

std::string stats_to_json(const std::vector<std::uint64_t> &agg) {
  std::ostringstream o;
  o << "{\n";
  for (int c = 0; c < kColls; ++c) {
    const std::uint64_t *f = agg.data() + c * kFields;
    const auto at = [&](Field x) { return f[static_cast<int>(x)]; };
    const std::uint64_t calls = at(Field::Engine) + at(Field::Staged) + at(Field::Passthrough) + at(Field::Errors);
    o << "  \"" << coll_name(static_cast<Coll>(c)) << "\": {"
      << "\"calls\": " << calls << ", \"engine\": " << at(Field::Engine)
      << ", \"staged\": " << at(Field::Staged) << ", \"passthrough\": " << at(Field::Passthrough)
      << ", \"errors\": " << at(Field::Errors) << ", \"bytes\": " << at(Field::Bytes) << "}"
      << (c + 1 < kColls ? ",\n" : "\n");
  }
  o << "}\n";
  return o.str();
}

}  // namespace gcoll
