// Per-process call counters and their aggregation into the stats JSON file.
// No MPI here: src/pmpi gathers the counters of all ranks and calls stats_to_json.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/coll_list.h"

namespace gcoll {

// The collectives (base/coll_list.h), in the list's order: the blocking forms (the only
// ones the engine runs), then the nonblocking ones, then the persistent ones.
enum class Coll : int {
#define GCOLL_X(Name, ...) Name,
  GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#define GCOLL_X(Name, lower, ...) I##lower,
  GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#define GCOLL_X(Name, ...) Name##_init,
  GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
  // The stream-ordered form (issue 30: MPIX_<Name>_enqueue, pmpi/stream.cc), for the rows
  // that have one (GCOLL_ENQUEUE_COLLS); the call runs on the stream communicator's proxy
  // thread as the blocking one, counted here (StatsFormScope) with the path it took.
#define GCOLL_X(Name, lower) Name##_enqueue,
  GCOLL_ENQUEUE_COLLS(GCOLL_X)
#undef GCOLL_X
  Reduce_local,  // MPI_Reduce_local: no communicator, one form (pmpi/calls/reduce_local.cc)
  kCount
};
// How an application called a collective (base/coll_list.h: every row has the three).
enum class Form : int { Blocking = 0, Nonblocking, Persistent, Enqueue };
enum class Path : int { Engine = 0, Staged, Passthrough, Error, kCount };

const char *coll_name(Coll c);  // "allreduce", ... (the JSON keys)
const char *path_name(Path p);  // "engine", "staged", "passthrough", "errors"

// Fields of one collective's entry, in the order of the flat counter vector.
// calls is derived (sum of the paths) so the hot path does two atomic adds.
// intra/inter: bytes this rank sent inside its node / to other nodes (engine calls).
enum class Field : int { Engine = 0, Staged, Passthrough, Errors, Bytes, IntraBytes, InterBytes, kCount };
constexpr int kFields = static_cast<int>(Field::kCount);
constexpr int kColls = static_cast<int>(Coll::kCount);
// The rows of the call list: Coll::Allreduce .. the last row's blocking form.
#define GCOLL_X(...) +1
constexpr int kBlockingColls = 0 GCOLL_COLLS(GCOLL_X);
#undef GCOLL_X
// The line of the stats a blocking collective's other form counts on (the stream-ordered
// form: the blocking line itself for a row without one).
constexpr Coll coll_form(Coll blocking, Form f) {
  if (f == Form::Enqueue) {
    switch (blocking) {
#define GCOLL_X(Name, lower) \
  case Coll::Name: return Coll::Name##_enqueue;
      GCOLL_ENQUEUE_COLLS(GCOLL_X)
#undef GCOLL_X
      default: return blocking;
    }
  }
  return static_cast<Coll>(static_cast<int>(blocking) + static_cast<int>(f) * kBlockingColls);
}
constexpr int kMaxAlgos = 64;                            // engine algorithms, by table index
// What the library itself costs, whatever the collective (the JSON's "library" object):
//   HiddenMpi:      MPI calls gcoll makes on its own inside an intercepted call: the
//                   memory-kind agreements and the one-time agreement of their settings
//                   per communicator (src/coll/team_memory.cc); the engine's agreements on a
//                   communicator (its settings and setup, once; the device space's setup,
//                   once) and the completion of its calls between nodes (a barrier on the
//                   rail for calls >= 1 KiB, an agreement over the communicator for device
//                   calls: one per call, coll/engine.cc). Not counted: the MPI calls inside
//                   building the topology, the node segment and the UCX group (once per
//                   communicator: splits, address exchange);
//   Agreements:     memory-kind agreements among them (src/coll/team_memory.cc);
//   PointerQueries: driver pointer queries (cuPointerGetAttributes, or the emulated
//                   GPU's registry lookup) made to classify a buffer;
//   KindCacheHits:  buffers classified from the memory-kind cache, without a query;
//   Deviations:     engine calls in which this rank's buffers were not of the agreed
//                   kind and were copied to a buffer that is (src/coll/deviate.cc).
//   Topo*:          device spaces created, by the topology class of the rank's node
//                   (topo/node_topo.h: TopoClass; coll/device_topo.h): one per rank and
//                   communicator that set up the device engine;
//   P2pProbeFailures: GPU pairs whose P2P failed the data probe (coll/device_topo.cc),
//                   counted by the node's first rank of each communicator that found them
//                   (probed, or known from an earlier probe of the process: a failure stays);
//   P2pProbes:      GPU pairs this process's data probe ran on (distinct peer GPUs of its
//                   own, per probe): once per pair and process, not per communicator;
//   P2pProbeCacheHits: GPU pairs whose probe a new communicator skipped because both of
//                   its ranks' processes knew the outcome (coll/device_topo.cc);
//   NicOrderedTopologies: device topologies whose nodes' ranks were put in the order of
//                   their GPUs' distance to a NIC (the rank nearest one leads, rail j is
//                   each node's j-th nearest: coll/device_topo.h), one per rank and
//                   communicator, where some node's order is not its ranks' own;
//   NvlinkRings:    device spaces created on an NVLink ring (coll/device_topo.h: one node
//                   whose GPUs are P2P only along a cycle), one per rank and communicator.
//   ProgressThreads: progress threads started (coll/async_queue.h: one per communicator
//                   whose nonblocking calls the engine took);
//   AsyncEngineCalls: nonblocking calls and persistent starts the engine took (queued for
//                   the progress thread).
//   StreamDeviceCalls: enqueued calls (MPIX_<Name>_enqueue) queued as kernels on the
//                   application's stream (coll/stream_device.h), not on the proxy thread.
//   CompressedCalls: allreduces that ran compressed (@compressed: GCOLL_ALLREDUCE_COMPRESS or
//                   the info key gcoll_allreduce_compress; docs/compression.md);
//   CompressedBytes: bytes they sent between nodes, compressed (also in the allreduce line's
//                   inter_node_bytes);
//   CompressedRawBytes: what those messages would have been uncompressed.
enum class Counter : int {
  HiddenMpi = 0,
  Agreements,
  PointerQueries,
  KindCacheHits,
  Deviations,
  TopoOneGpu,
  TopoNvlink,
  TopoPcie,
  TopoIslands,
  TopoNoP2p,
  P2pProbeFailures,
  P2pProbes,
  P2pProbeCacheHits,
  NicOrderedTopologies,
  NvlinkRings,
  ProgressThreads,
  AsyncEngineCalls,
  StreamDeviceCalls,
  CompressedCalls,
  CompressedBytes,
  CompressedRawBytes,
  kCount
};
constexpr int kLibCounters = static_cast<int>(Counter::kCount);
const char *counter_name(Counter c);  // "hidden_mpi_calls", ... (the JSON keys)
constexpr int kLibBase = kFields * kColls + kMaxAlgos;  // where they lie in the flat vector
constexpr int kCounters = kLibBase + kLibCounters;      // summed over ranks
// Maxima over calls and ranks: inter-node steps (network sends) of one call, per collective.
constexpr int kMaxima = kColls;

// What the engine adds to a call's record.
struct EngineRecord {
  int algo = -1;                 // table index
  std::uint64_t intra = 0, inter = 0;
  int inter_steps = 0;
};

// Names for the JSON file: algorithm table index -> (collective, name).
struct AlgoName {
  Coll coll;
  const char *name;
};

// Counters are per thread (one block per thread and Stats object, written only by its
// thread with relaxed load+store: no lock-prefixed instruction on the hot path) and
// summed on snapshot. Blocks of exited threads stay registered, so no count is lost.
class Stats;
namespace detail {
struct ThreadCache {  // trivial (no initialisers): zero TLS, __thread (comm_state.h: LastLookup)
  std::uint64_t owner;
  void *block;
};
// This thread's block of the Stats object it used last (initial-exec TLS: one load, no
// __tls_get_addr call, on every intercepted call).
extern __thread ThreadCache tl_stats_cache __attribute__((tls_model("initial-exec")));
// The form this thread's blocking calls are counted as (StatsFormScope): 0, blocking.
extern __thread int tl_stats_form __attribute__((tls_model("initial-exec")));
// A call's stats bytes computed before the MPI has seen its arguments (coll/team_call.h:
// the repeated-call check): 1 while they are, 2 once a datatype's size was not known
// without asking the MPI (pmpi/call.cc: payload; asking could report a bad handle through
// the error handler before the call does); 0 otherwise.
extern __thread int tl_bytes_probe __attribute__((tls_model("initial-exec")));
}  // namespace detail

// A blocking collective's line, or its `form`'s while a StatsFormScope is open on the
// thread (lines of other forms are left as they are).
inline Coll line_of(Coll c) {
  const int f = detail::tl_stats_form;
  if (__builtin_expect(f == 0, 1) || static_cast<int>(c) >= kBlockingColls) return c;
  return coll_form(c, static_cast<Form>(f));
}

// While it lives, the thread's blocking calls count on `f`'s lines: a stream-ordered call
// (MPIX_<Name>_enqueue) runs as the blocking call on the proxy thread (pmpi/stream.cc).
class StatsFormScope {
 public:
  explicit StatsFormScope(Form f) : saved_(detail::tl_stats_form) { detail::tl_stats_form = static_cast<int>(f); }
  ~StatsFormScope() { detail::tl_stats_form = saved_; }
  StatsFormScope(const StatsFormScope &) = delete;
  StatsFormScope &operator=(const StatsFormScope &) = delete;

 private:
  int saved_;
};

class Stats {
 public:
  // A thread's counters. Each collective's row of kFields counters on a cache line of its
  // own (kRow slots: a call's count and bytes are one line, never two); then the
  // algorithms' and the library's counters. snapshot() gives them in the flat order.
  static constexpr int kRow = 8;
  static_assert(kFields <= kRow, "a collective's counters fit one cache line");
  static constexpr int kSlots = kColls * kRow + (kCounters - kFields * kColls);
  // The slot of flat counter k.
  static constexpr int slot(int k) {
    return k < kFields * kColls ? k / kFields * kRow + k % kFields : kColls * kRow + (k - kFields * kColls);
  }
  struct alignas(64) Block {
    std::atomic<std::uint64_t> c[kSlots] = {};
    std::atomic<std::uint64_t> max[kMaxima] = {};
  };

  Stats() = default;
  Stats(const Stats &) = delete;
  Stats &operator=(const Stats &) = delete;
  ~Stats();

  void record(Coll c, Path p, std::uint64_t bytes) {
    c = line_of(c);
    Block &b = block();
    const int base = static_cast<int>(c) * kRow;
    bump(b.c[base + static_cast<int>(p)], 1);
    bump(b.c[base + static_cast<int>(Field::Bytes)], bytes);
  }
  void record_engine(Coll c, const EngineRecord &r) {
    c = line_of(c);
    Block &b = block();
    const int base = static_cast<int>(c) * kRow;
    bump(b.c[base + static_cast<int>(Field::IntraBytes)], r.intra);
    bump(b.c[base + static_cast<int>(Field::InterBytes)], r.inter);
    if (r.algo >= 0 && r.algo < kMaxAlgos) bump(b.c[slot(kFields * kColls + r.algo)], 1);
    auto &m = b.max[static_cast<int>(c)];
    if (static_cast<std::uint64_t>(r.inter_steps) > m.load(std::memory_order_relaxed))
      m.store(static_cast<std::uint64_t>(r.inter_steps), std::memory_order_relaxed);
  }
  void count(Counter c, std::uint64_t n = 1) { bump(block().c[slot(kLibBase + static_cast<int>(c))], n); }
  // This process's total of one library counter (all threads).
  std::uint64_t total(Counter c) const;
  // Flat snapshots for aggregation across ranks: kCounters sums, kMaxima maxima.
  std::vector<std::uint64_t> snapshot() const;
  std::vector<std::uint64_t> snapshot_max() const;

 private:
  static void bump(std::atomic<std::uint64_t> &x, std::uint64_t v) {
    x.store(x.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
  Block &block() {
    if (__builtin_expect(detail::tl_stats_cache.owner == id_, 1))
      return *static_cast<Block *>(detail::tl_stats_cache.block);
    return register_thread();
  }
  Block &register_thread();

  static std::uint64_t next_id();
  std::uint64_t id_ = next_id();  // first: read by every call (block())
  mutable std::mutex mu_;
  std::vector<Block *> blocks_;
};

// The process's counters (never destroyed: threads may still count during exit).
extern Stats &g_process_stats;
inline Stats &process_stats() { return g_process_stats; }

// Element-wise sum of per-rank snapshots (what the MPI reduction computes).
std::vector<std::uint64_t> stats_sum(const std::vector<std::vector<std::uint64_t>> &per_rank);

// One JSON object keyed by collective name, from aggregated snapshots.
std::string stats_to_json(const std::vector<std::uint64_t> &sums, const std::vector<std::uint64_t> &maxima,
                          const std::vector<AlgoName> &algos);

}  // namespace gcoll
