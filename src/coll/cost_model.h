// A cost model of the node (issue 31 item 5), after NCCL's tuning model
// (graph/tuning.cc: a latency per step plus bytes over the link's bandwidth, per
// algorithm): for each algorithm of the table, its time for a call on a device topology
// from the links' bandwidths and a few per-algorithm constants (one table,
// kCostConstants). docs/cost-model.md has the formulas, the constants and the predictions
// next to published nccl-tests results.
//
// Where it chooses: device buffers on nodes of several GPUs, after the user's GCOLL_TUNE
// rules and the rules of GPUs shared without MPS, before the default rules
// (tune.h: select_algorithm). Its inputs must be the same on every rank (every rank
// picks the same algorithm for a call): the link figures (CostLinks) are each rank's
// view of its own GPU in its node topology (a file or detection, per node), agreed once
// per communicator at the device space's setup (engine.cc: create_device_space): the
// smallest bandwidth of each link over all ranks (the slowest GPU bounds a collective),
// and the facts that are not numbers (the GPUs' class, the bank size, the network)
// must be equal on every rank, else the model is off for the communicator (one
// GCOLL_INFO line) and the default rules choose. Everything else it reads (the
// collective, its bytes, the topology, what supports() accepts) is rank-uniform already.
// Pure: no MPI, no CUDA; unit-tested on the topology files of tests/topo.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/stats.h"  // Coll
#include "topo/node_topo.h"

namespace gcoll {

// coll/engine.h, which includes this header (the engine holds the agreed links).
struct Algorithm;
struct CollArgs;
struct Topology;

// The per-algorithm constants, in microseconds and MB/s (= bytes per microsecond). One
// table (cost_model.cc), defaults until a GPU run measures them: each is derived from the
// few measurements of docs/gpu-validation.md (one H100/H200 shared by 4 ranks under MPS)
// or is an estimate; multi-GPU nodes are untested on a GPU.
struct CostConstants {
  double launch_us;       // one kernel launch and the host's wait for it
  double device_sync_us;  // one wait for every peer's flag in device memory (fused ops)
  double host_sync_us;    // one host round trip of the node (publish, sync, drain)
  double chunk_us;        // per bank chunk of a bank algorithm (ordering, copy set-up)
  double copy_us;         // one staged copy (cudaMemcpyAsync and its wait)
  double mpi_step_us;     // one step of the MPI's host collective (shared memory)
  double mpi_host_mbps;   // the MPI's host collective on staged copies, per rank
  double rail_step_us;    // one step between islands or nodes on a rail (UCX, pipelined)
  double host_copy_mbps;  // a rank's copies through host memory (between islands)
};
extern const CostConstants kCostConstants;

// The links of one node as one rank sees them (its GPU in the node topology), in whole
// numbers so that the ranks can agree on them (min and max of each).
struct CostLinks {
  std::int64_t valid = 0;          // 1: the rank's GPU is in the node topology, several GPUs
  std::int64_t cls = 0;            // topo::TopoClass of the node's GPUs in use
  std::int64_t nv_all_mbps = 0;    // NVLink to all peers at once (NVSwitch: all its links; else the sum)
  std::int64_t nv_pair_mbps = 0;   // NVLink to one peer (NVSwitch: all links; else the narrowest bundle)
  std::int64_t pcie_mbps = 0;      // the GPU's PCIe path to its CPU (narrowest link on it)
  std::int64_t sys_mbps = 0;       // between sockets (0: one NUMA node)
  std::int64_t net_mbps = 0;       // the GPU's nearest NIC (0: none)
  std::int64_t bank_bytes = 0;     // the device space's bank (GCOLL_DEVICE_CHUNK_SIZE)
  std::int64_t net_hop = 0;        // 1: the device engine's nodes are hosts (the NIC between them)
  static constexpr int kFields = 9;
  void to(std::int64_t *v) const;
  void from(const std::int64_t *v);
};

// One GPU's links (index `gpu` in t.gpus; `cls` the class of the GPUs in use). valid = 0
// where the GPU is not in the topology or cls is one-gpu / no-gpu.
CostLinks gpu_cost_links(const topo::NodeTopo &t, int gpu, topo::TopoClass cls, std::uint64_t bank_bytes,
                         bool net_hop);

// The agreement (pure; the engine exchanges min and max through its setup agreement):
// `lo` and `hi` the minimum and maximum of each field over the ranks. The bottleneck
// bandwidths; valid only where every rank was valid and the facts (class, bank, the
// network) are equal. *why: why not valid (static text; nullptr when valid).
CostLinks agree_cost_links(const CostLinks &lo, const CostLinks &hi, const char **why);

// nccl-tests' sizes and bus bandwidth: the whole message of a call (allgather, alltoall,
// reduce_scatter_block: the per-rank block x ranks; the others bytes()), and the bus factor
// (allreduce 2(n-1)/n; allgather, reduce_scatter(_block), alltoall, allgatherv (n-1)/n;
// bcast, reduce 1).
std::uint64_t whole_bytes(const CollArgs &a, int ranks);
double bus_factor(Coll c, int ranks);

// Predicted time in microseconds of `algo` for call `a` on topology `t` (any algorithm
// name: unknown names take a generic rule). Finite and positive.
double predict_us(const Algorithm &algo, const CollArgs &a, const Topology &t, const CostLinks &l);

// The model's pick: the fastest predicted of the collective's algorithms whose supports()
// accepts the call (table order breaks ties); nullptr where l is not valid or none
// supports it.
const Algorithm *model_pick(const CollArgs &a, const Topology &t, const CostLinks &l);

// gcoll_info --topology: the model's links for `ranks` ranks on this node topology (local
// rank r on GPU r % GPUs, the device topology as the engine finds it), then per
// collective the algorithm selected (GCOLL_TUNE, the model, the defaults), its predicted
// time and bus bandwidth at 8 B, 64 KiB, 16 MiB and 1 GiB.
std::string cost_model_text(const topo::NodeTopo &t, int ranks);

// For tests and cost_model_text: the device topology of `ranks` ranks on `t` as the engine
// would find it (P2P verdicts under the settings, islands, the NVLink ring), in *dt, and
// the links every rank would agree on. Returns the node's class.
topo::TopoClass model_device_topology(const topo::NodeTopo &t, int ranks, Topology *dt, CostLinks *links);

}  // namespace gcoll
