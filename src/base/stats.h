// Per-process call counters and their aggregation into the stats JSON file.
// No MPI here: src/pmpi gathers the counters of all ranks and calls stats_to_json.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace gcoll {

enum class Coll : int { Allreduce = 0, Bcast, Allgather, kCount };
enum class Path : int { Engine = 0, Staged, Passthrough, Error, kCount };

const char *coll_name(Coll c);  // "allreduce", ... (the JSON keys)
const char *path_name(Path p);  // "engine", "staged", "passthrough", "errors"

// Fields of one collective's entry, in the order of the flat counter vector.
// calls is derived (sum of the paths) so the hot path does two atomic adds.
enum class Field : int { Engine = 0, Staged, Passthrough, Errors, Bytes, kCount };
constexpr int kFields = static_cast<int>(Field::kCount);
constexpr int kColls = static_cast<int>(Coll::kCount);
constexpr int kCounters = kFields * kColls;

class Stats {
 public:
  void record(Coll c, Path p, std::uint64_t bytes) {
    const int base = static_cast<int>(c) * kFields;
    counters_[base + static_cast<int>(p)].fetch_add(1, std::memory_order_relaxed);
    if (bytes) counters_[base + static_cast<int>(Field::Bytes)].fetch_add(bytes, std::memory_order_relaxed);
  }
  // Flat snapshot (kCounters values) for aggregation across ranks.
  std::vector<std::uint64_t> snapshot() const;

 private:
  std::atomic<std::uint64_t> counters_[kCounters] = {};
};

Stats &process_stats();

// Element-wise sum of per-rank snapshots (what the MPI reduction computes).
std::vector<std::uint64_t> stats_sum(const std::vector<std::vector<std::uint64_t>> &per_rank);

// One JSON object keyed by collective name, from an aggregated snapshot.
std::string stats_to_json(const std::vector<std::uint64_t> &aggregated);

}  // namespace gcoll
