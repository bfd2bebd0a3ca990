#include "base/stats.h"

#include <algorithm>
#include <new>
#include <sstream>

#include "base/hot.h"

namespace gcoll {

const char *coll_name(Coll c) {
  switch (c) {
#define GCOLL_X(Name, lower, ...)     \
  case Coll::Name: return #lower;      \
  case Coll::I##lower: return "i" #lower; \
  case Coll::Name##_init: return #lower "_init";
    GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#define GCOLL_X(Name, lower) \
  case Coll::Name##_enqueue: return #lower "_enqueue";
    GCOLL_ENQUEUE_COLLS(GCOLL_X)
#undef GCOLL_X
    case Coll::Reduce_local: return "reduce_local";
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

const char *counter_name(Counter c) {
  switch (c) {
    case Counter::HiddenMpi: return "hidden_mpi_calls";
    case Counter::Agreements: return "memory_agreements";
    case Counter::PointerQueries: return "pointer_queries";
    case Counter::KindCacheHits: return "kind_cache_hits";
    case Counter::Deviations: return "deviations";
    case Counter::TopoOneGpu: return "device_topology_one_gpu";
    case Counter::TopoNvlink: return "device_topology_nvlink";
    case Counter::TopoPcie: return "device_topology_pcie";
    case Counter::TopoIslands: return "device_topology_islands";
    case Counter::TopoNoP2p: return "device_topology_no_p2p";
    case Counter::P2pProbeFailures: return "p2p_probe_failures";
    case Counter::P2pProbes: return "p2p_probes";
    case Counter::P2pProbeCacheHits: return "p2p_probe_cache_hits";
    case Counter::NicOrderedTopologies: return "nic_ordered_topologies";
    case Counter::NvlinkRings: return "device_nvlink_rings";
    case Counter::ProgressThreads: return "progress_threads";
    case Counter::AsyncEngineCalls: return "async_engine_calls";
    case Counter::StreamDeviceCalls: return "stream_device_calls";
    case Counter::CompressedCalls: return "compressed_allreduce_calls";
    case Counter::CompressedBytes: return "compressed_inter_node_bytes";
    case Counter::CompressedRawBytes: return "compressed_inter_node_bytes_uncompressed";
    case Counter::kCount: break;
  }
  return "?";
}

namespace detail {
__thread ThreadCache tl_stats_cache __attribute__((tls_model("initial-exec")));
__thread int tl_stats_form __attribute__((tls_model("initial-exec")));
__thread int tl_bytes_probe __attribute__((tls_model("initial-exec")));
}

namespace {
thread_local std::vector<std::pair<std::uint64_t, Stats::Block *>> tl_blocks;
}  // namespace

// The process's stats object in the hot section too (base/hot.h): the id every call
// compares (Stats::block) on the line of the reference. Never destroyed, as a heap object
// it was before: calls counted after static destruction still land somewhere valid.
namespace {
alignas(Stats) GCOLL_HOT_DATA unsigned char g_process_stats_storage[sizeof(Stats)];
}  // namespace
GCOLL_HOT_DATA Stats &g_process_stats = *new (g_process_stats_storage) Stats;

std::uint64_t Stats::next_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}

Stats::~Stats() {
  for (Block *b : blocks_) delete b;
}

Stats::Block &Stats::register_thread() {
  Block *b = nullptr;
  for (auto &ob : tl_blocks)
    if (ob.first == id_) b = ob.second;
  if (!b) {
    b = new Block;
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.push_back(b);
    tl_blocks.emplace_back(id_, b);
  }
  detail::tl_stats_cache.owner = id_;
  detail::tl_stats_cache.block = b;
  return *b;
}

std::vector<std::uint64_t> Stats::snapshot() const {
  std::vector<std::uint64_t> out(kCounters, 0);
  std::lock_guard<std::mutex> lock(mu_);
  for (const Block *b : blocks_)
    for (int k = 0; k < kCounters; ++k) out[k] += b->c[slot(k)].load(std::memory_order_relaxed);
  return out;
}

std::uint64_t Stats::total(Counter c) const {
  std::uint64_t n = 0;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Block *b : blocks_) n += b->c[slot(kLibBase + static_cast<int>(c))].load(std::memory_order_relaxed);
  return n;
}

std::vector<std::uint64_t> Stats::snapshot_max() const {
  std::vector<std::uint64_t> out(kMaxima, 0);
  std::lock_guard<std::mutex> lock(mu_);
  for (const Block *b : blocks_)
    for (int k = 0; k < kMaxima; ++k) out[k] = std::max<std::uint64_t>(out[k], b->max[k].load(std::memory_order_relaxed));
  return out;
}

std::vector<std::uint64_t> stats_sum(const std::vector<std::vector<std::uint64_t>> &per_rank) {
  std::vector<std::uint64_t> sum(kCounters, 0);
  for (const auto &r : per_rank)
    for (int k = 0; k < kCounters && k < static_cast<int>(r.size()); ++k) sum[k] += r[k];
  return sum;
}

std::string stats_to_json(const std::vector<std::uint64_t> &agg, const std::vector<std::uint64_t> &maxima,
                          const std::vector<AlgoName> &algos) {
  std::ostringstream o;
  o << "{\n";
  for (int c = 0; c < kColls; ++c) {
    const std::uint64_t *f = agg.data() + c * kFields;
    const auto at = [&](Field x) { return f[static_cast<int>(x)]; };
    const std::uint64_t calls = at(Field::Engine) + at(Field::Staged) + at(Field::Passthrough) + at(Field::Errors);
    o << "  \"" << coll_name(static_cast<Coll>(c)) << "\": {"
      << "\"calls\": " << calls << ", \"engine\": " << at(Field::Engine)
      << ", \"staged\": " << at(Field::Staged) << ", \"passthrough\": " << at(Field::Passthrough)
      << ", \"errors\": " << at(Field::Errors) << ", \"bytes\": " << at(Field::Bytes)
      << ", \"intra_node_bytes\": " << at(Field::IntraBytes) << ", \"inter_node_bytes\": " << at(Field::InterBytes)
      << ", \"inter_node_steps_max\": " << (c < static_cast<int>(maxima.size()) ? maxima[c] : 0)
      << ", \"algorithms\": {";
    bool first = true;
    for (size_t k = 0; k < algos.size() && k < static_cast<size_t>(kMaxAlgos); ++k) {
      if (algos[k].coll != static_cast<Coll>(c)) continue;
      o << (first ? "" : ", ") << "\"" << algos[k].name << "\": " << agg[kFields * kColls + k];
      first = false;
    }
    o << "}},\n";
  }
  // What the library itself cost, summed over ranks (README "Reading the stats").
  o << "  \"library\": {";
  for (int k = 0; k < kLibCounters; ++k)
    o << (k ? ", " : "") << "\"" << counter_name(static_cast<Counter>(k))
      << "\": " << (kLibBase + k < static_cast<int>(agg.size()) ? agg[kLibBase + k] : 0);
  o << "}\n}\n";
  return o.str();
}

}  // namespace gcoll
