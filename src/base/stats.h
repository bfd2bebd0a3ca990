// Per-process call counters and their aggregation into the stats JSON file.
// No MPI here: src/pmpi gathers the counters of all ranks and calls stats_to_json.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
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

// Counters are per thread (one block per thread and Stats object, written only by its
// thread with relaxed load+store: no lock-prefixed instruction on the hot path) and
// summed on snapshot. Blocks of exited threads stay registered, so no count is lost.
class Stats {
 public:
  struct alignas(64) Block {
    std::atomic<std::uint64_t> c[kCounters] = {};
  };

  Stats() = default;
  Stats(const Stats &) = delete;
  Stats &operator=(const Stats &) = delete;
  ~Stats();

  void record(Coll c, Path p, std::uint64_t bytes) {
    Block &b = block();
    const int base = static_cast<int>(c) * kFields;
    bump(b.c[base + static_cast<int>(p)], 1);
    bump(b.c[base + static_cast<int>(Field::Bytes)], bytes);
  }
  // Flat snapshot (kCounters values) for aggregation across ranks.
  std::vector<std::uint64_t> snapshot() const;

 private:
  static void bump(std::atomic<std::uint64_t> &x, std::uint64_t v) {
    x.store(x.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
  Block &block();
  Block &register_thread();

  mutable std::mutex mu_;
  std::vector<Block *> blocks_;
  std::uint64_t id_ = next_id();
  static std::uint64_t next_id();
};

Stats &process_stats();

// Element-wise sum of per-rank snapshots (what the MPI reduction computes).
std::vector<std::uint64_t> stats_sum(const std::vector<std::vector<std::uint64_t>> &per_rank);

// One JSON object keyed by collective name, from an aggregated snapshot.
std::string stats_to_json(const std::vector<std::uint64_t> &aggregated);

}  // namespace gcoll
