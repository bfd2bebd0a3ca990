// The algorithm table: name, one-line description, supports(), run(), and for allreduce
// the inter-node schedule builder it runs (rail.h). A new hierarchical allreduce is one
// builder (its own file) plus one hier<builder>(name, description) row.
#include "coll/algorithms.h"

namespace gcoll {

namespace {

// An allreduce whose (type, op) the space's kernels take (CollArgs::reducible); every
// other collective moves bytes.
bool can_run(const CollArgs &a) { return !is_reduction(a.coll) || a.reducible; }

// The bank algorithms: everywhere but on a device space that fuses (its banks are the
// fused ops' there, memspace.h), and on the NVLink ring (they read every peer's bank; the
// ring's space maps only its neighbours').
bool banks(const CollArgs &a, const Topology &t) {
  return can_run(a) && !(a.mem == MemKind::Device && a.fused) && t.ring.empty();
}

// Device buffers on one node along its NVLink ring (Topology::ring).
bool device_ring(const CollArgs &a, const Topology &t) {
  return can_run(a) && a.mem == MemKind::Device && !t.ring.empty() && t.num_nodes == 1;
}

// Device buffers across nodes whose every node has an NVLink ring through all of its
// ranks (coll/device_topo.h: the device engine's nodes are the hosts', Topology::ring my
// node's ring), every node of the same size (every rank has a rail).
bool device_ring_nodes(const CollArgs &a, const Topology &t) {
  return can_run(a) && a.mem == MemKind::Device && !t.ring.empty() && t.num_nodes > 1 && !t.uneven();
}

// Device buffers on one node whose device space fuses (agreed at its creation); elements
// whose size divides the blocks' alignment (all but the long double types, which the
// CUDA kernels do not have anyway).
bool device_fused(const CollArgs &a, const Topology &t) {
  return can_run(a) && a.mem == MemKind::Device && a.fused && t.num_nodes == 1 && t.ring.empty() && a.elem > 0 &&
         kFusedAlign % a.elem == 0;
}

// Any device buffers: the staged path (the engine declines, the caller stages the call).
bool device_any(const CollArgs &a, const Topology &) { return a.mem == MemKind::Device; }

// Zero-copy on device buffers: one node, every rank's buffers exposed through CUDA IPC.
// At most 16 local ranks (kCudaMaxSources): one kernel pass reads every source before it
// writes, so an in-place destination may alias a source; a second pass would not.
bool device_one_node(const CollArgs &a, const Topology &t) {
  return can_run(a) && a.mem == MemKind::Device && a.zero_copy && t.num_nodes == 1 && t.local_size <= 16 &&
         t.ring.empty();
}

// reduce_scatter_block: one node through the banks; several nodes (host memory: its
// scratch is host memory) through the allreduce; device buffers on one node zero-copy,
// not in place (in place is rank-uniform: MPI requires MPI_IN_PLACE on all ranks or none).
bool rsb_node(const CollArgs &a, const Topology &t) { return banks(a, t) && t.num_nodes == 1; }
bool rsb_allreduce(const CollArgs &a, const Topology &t) {
  return banks(a, t) && a.mem == MemKind::Host && t.num_nodes > 1;
}
bool rsb_twoshot(const CollArgs &a, const Topology &t) { return device_one_node(a, t) && a.sendbuf != nullptr; }

// reduce, reduce_scatter, alltoall (issue 23): device buffers on one node, zero-copy.
// reduce_scatter not in place (rank-uniform: MPI_IN_PLACE on all ranks or none): a rank's
// result would overwrite input that peers still read, and without a scratch (a space that
// fuses has none) it could not keep the rest of its buffer as it was. Alltoall in place
// only where the space has no banks (it fuses: @hier cannot take it there).
bool not_in_place(const CollArgs &a, const Topology &t) { return device_one_node(a, t) && a.sendbuf != nullptr; }
bool alltoall_direct_ok(const CollArgs &a, const Topology &t) {
  return device_one_node(a, t) && (a.sendbuf != nullptr || !banks(a, t));
}

// reduce_scatter @hier: in place only where the input's order is the algorithm's
// (reduce_scatter_hier.cc); both in place and the topology are rank-uniform.
bool rs_hier(const CollArgs &a, const Topology &t) {
  return banks(a, t) && (a.sendbuf != nullptr || nodes_in_rank_order(t));
}

// reduce_scatter @rails, reduce_scatter_block @rails: host buffers on nodes of the same
// size, in place or not (reduce_scatter_rails.cc).
bool rails(const CollArgs &a, const Topology &t) { return banks(a, t) && reduce_scatter_rails_fits(a, t); }

// alltoall through the banks: P bytes (one of every block) must fit a bank.
bool alltoall_banks(const CollArgs &a, const Topology &t) { return banks(a, t) && alltoall_hier_fits(a, t); }

// The opt-in compressed allreduce (CollArgs::compress, agreed): host or device buffers (the
// agreed kind) on several nodes, MPI_FLOAT / MPI_DOUBLE with MPI_SUM; the ring between nodes
// (every rank the same bits). Not on an NVLink ring (@nvring_hier, uncompressed: banks()).
bool compressed(const CollArgs &a, const Topology &t) {
  return a.compress != Compress::Off && a.coll == Coll::Allreduce && compressible(a.dtype, a.op) &&
         t.num_nodes > 1 && banks(a, t);
}

// A hierarchical allreduce: intra-node reduce-scatter, `kSchedule` along every rail,
// intra-node allgather.
template <ScheduleBuilder kSchedule>
Algorithm hier(const char *name, const char *description) {
  return {Coll::Allreduce, name, description, banks, allreduce_hier<kSchedule>, kSchedule};
}

// Host buffers: the MPI's own collective (no run: the engine declines the call).
bool host_any(const CollArgs &a, const Topology &) { return a.mem == MemKind::Host; }

Algorithm mpi_row(Coll c) {
  return {c, "mpi",
          "host buffers: the MPI's own collective (the engine declines; the host crossovers pick it where the MPI "
          "is faster: GCOLL_HOST_TUNE)",
          host_any, nullptr};
}

}  // namespace

const std::vector<Algorithm> &algorithms() {
  static const std::vector<Algorithm> table = {
      {Coll::Allreduce, "oneshot",
       "each rank reduces the whole message from all node peers; recursive doubling between nodes on every rail",
       banks, allreduce_oneshot, schedule_rd},
      hier<schedule_rd>("rd", "intra-node reduce-scatter, recursive doubling of each slice along its rail, "
                              "intra-node allgather"),
      hier<schedule_ring>("ring", "intra-node reduce-scatter, ring allreduce of each slice along its rail, "
                                  "intra-node allgather"),
      hier<schedule_rabenseifner>("rabenseifner",
                                  "intra-node reduce-scatter, Rabenseifner (recursive-halving reduce-scatter + "
                                  "recursive-doubling allgather) of each slice along its rail, intra-node allgather"),
      {Coll::Allreduce, "compressed",
       "opt-in (GCOLL_ALLREDUCE_COMPRESS, info key gcoll_allreduce_compress), float/double sums on several "
       "nodes (host or device buffers): @ring with the data between nodes in bf16, fp16 or fp8 (docs/compression.md)",
       compressed, allreduce_hier<schedule_ring>, schedule_ring},
      {Coll::Allreduce, "twoshot",
       "device buffers on one node: reduce-scatter then allgather by reading peers' buffers in place (CUDA IPC)",
       device_one_node, allreduce_twoshot},
      {Coll::Allreduce, "fused",
       "device buffers on one node (MPS or a GPU per rank): one kernel per rank publishes its input, waits for the "
       "peers' flags in device memory and reduces all of them; one wait on the host",
       device_fused, allreduce_fused},
      {Coll::Allreduce, "nvring",
       "device buffers on one node whose GPUs are P2P only along an NVLink cycle: ring reduce-scatter and "
       "allgather, each rank reading only its predecessor's bank",
       device_ring, allreduce_nvring},
      {Coll::Allreduce, "nvring_hier",
       "device buffers across nodes, an NVLink ring in each: ring reduce-scatter in the node, "
       "allreduce of each rank's slice along its rail, ring allgather",
       device_ring_nodes, allreduce_nvring_hier},
      {Coll::Allreduce, "staged", "device buffers: copied to pinned host memory for the MPI's own allreduce",
       device_any, nullptr},
      {Coll::Bcast, "binomial", "binomial tree between nodes along one rail, then intra-node copy", banks,
       bcast_binomial},
      {Coll::Bcast, "scatter_ag",
       "intra-node scatter over all rails, binomial between nodes on every rail, intra-node allgather", banks,
       bcast_scatter_ag},
      {Coll::Bcast, "fused",
       "device buffers on one node (MPS or a GPU per rank): one kernel per rank; the others copy the root's bank "
       "once its flag is up",
       device_fused, bcast_fused},
      {Coll::Bcast, "nvring",
       "device buffers on one node along its NVLink ring: from the root around the ring, pipelined a bank at a "
       "time",
       device_ring, bcast_nvring},
      {Coll::Bcast, "nvring_hier",
       "device buffers across nodes, an NVLink ring in each: binomial along the root's local rank's rail, "
       "then around every node's ring from that rank",
       device_ring_nodes, bcast_nvring_hier},
      {Coll::Bcast, "staged", "device buffers: copied to pinned host memory for the MPI's own bcast", device_any,
       nullptr},
      {Coll::Allgather, "ring", "intra-node exchange, ring between nodes on every rail", banks, allgather_ring},
      {Coll::Allgather, "bruck", "intra-node exchange, Bruck between nodes on every rail", banks, allgather_bruck},
      {Coll::Allgather, "fused",
       "device buffers on one node (MPS or a GPU per rank): one kernel per rank publishes its block and copies "
       "everyone's once their flags are up",
       device_fused, allgather_fused},
      {Coll::Allgather, "nvring",
       "device buffers on one node along its NVLink ring: every block around the ring, a bank at a time",
       device_ring, allgather_nvring},
      {Coll::Allgather, "nvring_hier",
       "device buffers across nodes, an NVLink ring in each: each rank's block along its rail, then the "
       "rail's blocks around the node's ring",
       device_ring_nodes, allgather_nvring_hier},
      {Coll::Allgather, "staged", "device buffers: copied to pinned host memory for the MPI's own allgather",
       device_any, nullptr},
      {Coll::Allgatherv, "ring", "uneven blocks: intra-node exchange, ring between nodes on every rail", banks,
       allgather_ring},
      {Coll::Allgatherv, "bruck", "uneven blocks: intra-node exchange, Bruck between nodes on every rail", banks,
       allgather_bruck},
      {Coll::Allgatherv, "direct",
       "device buffers on one node: each rank copies every peer's block out of its send buffer (in place: its "
       "block of the receive buffer) into its own receive buffer (CUDA IPC)",
       device_one_node, allgatherv_direct},
      {Coll::Allgatherv, "nvring",
       "device buffers on one node along its NVLink ring: every (uneven) block around the ring, a bank at a time",
       device_ring, allgatherv_nvring},
      {Coll::Allgatherv, "nvring_hier",
       "device buffers across nodes, an NVLink ring in each: each rank's (uneven) block along its rail, "
       "then the rail's blocks around the node's ring",
       device_ring_nodes, allgatherv_nvring_hier},
      {Coll::Allgatherv, "staged", "device buffers: copied to pinned host memory for the MPI's own allgatherv",
       device_any, nullptr},
      {Coll::Reduce_scatter_block, "node",
       "one node: the input through the node's banks a chunk at a time, each rank reduces its own block from all "
       "peers",
       rsb_node, reduce_scatter_block_node},
      {Coll::Reduce_scatter_block, "twoshot",
       "device buffers on one node, not in place: each rank reduces its block reading peers' input in place (CUDA "
       "IPC): the allreduce two-shot's first half",
       rsb_twoshot, reduce_scatter_block_twoshot},
      {Coll::Reduce_scatter_block, "allreduce",
       "several nodes, host memory: the hierarchical allreduce (ring along the rails) a chunk at a time; each rank "
       "keeps its block",
       rsb_allreduce, reduce_scatter_block_allreduce},
      {Coll::Reduce_scatter_block, "hier",
       "several nodes: the reduce_scatter's @hier with equal blocks: the node's banks, a slice per rail, ring reduce-scatter "
       "along the rails (half the bytes between nodes of @allreduce)",
       [](const CollArgs &a, const Topology &t) { return rs_hier(a, t) && t.num_nodes > 1; },
       reduce_scatter_block_hier},
      {Coll::Reduce_scatter_block, "rails",
       "several nodes of the same size, host buffers: a piece of every block through the banks per round, each rank "
       "reduces its node's part of its rail's ranks' pieces, ring reduce-scatter along the rail ends each on its owner",
       rails, reduce_scatter_block_rails},
      {Coll::Reduce_scatter_block, "nvring",
       "device buffers on one node along its NVLink ring: the ring reduce-scatter with the blocks as segments",
       device_ring, reduce_scatter_block_nvring},
      {Coll::Reduce_scatter_block, "nvring_hier",
       "device buffers across nodes, an NVLink ring in each: the ring-and-rails allreduce a chunk at a "
       "time into the work area, each rank keeping its block",
       device_ring_nodes, reduce_scatter_block_nvring_hier},
      {Coll::Reduce_scatter_block, "staged",
       "device buffers: copied to pinned host memory for the MPI's own reduce_scatter_block", device_any, nullptr},
      {Coll::Reduce, "direct",
       "device buffers on one node: each rank reduces its slice reading every peer's input in place and writes it "
       "into the root's buffer (CUDA IPC)",
       device_one_node, reduce_direct},
      {Coll::Reduce, "hier",
       "each node reduces its ranks' input through the banks, a slice per rail; binomial reduce of the slices "
       "along the rails toward the root's node; the root collects them",
       banks, reduce_hier},
      {Coll::Reduce, "nvring",
       "device buffers on one node along its NVLink ring: a chain ending at the root, each rank adding its input to "
       "its predecessor's partial sum, pipelined a bank at a time",
       device_ring, reduce_nvring},
      {Coll::Reduce, "nvring_hier",
       "device buffers across nodes, an NVLink ring in each: the ring-and-rails allreduce a chunk at a time "
       "into the work area, the root keeping it",
       device_ring_nodes, reduce_nvring_hier},
      {Coll::Reduce, "staged", "device buffers: copied to pinned host memory for the MPI's own reduce", device_any,
       nullptr},
      {Coll::Reduce_scatter, "direct",
       "device buffers on one node, not in place: each rank reduces its own (uneven) block reading every peer's "
       "input in place (CUDA IPC)",
       not_in_place, reduce_scatter_direct},
      {Coll::Reduce_scatter, "hier",
       "each node reduces the input through the banks, a slice per rail; ring reduce-scatter along the rails with "
       "the nodes' blocks as segments; each rank collects its block from its node's rail ranks",
       rs_hier, reduce_scatter_hier},
      {Coll::Reduce_scatter, "rails",
       "several nodes of the same size, host buffers: reduce_scatter_block's @rails with the (uneven) blocks",
       rails, reduce_scatter_rails},
      {Coll::Reduce_scatter, "nvring",
       "device buffers on one node along its NVLink ring: the ring reduce-scatter with the (uneven) blocks as "
       "segments",
       device_ring, reduce_scatter_nvring},
      {Coll::Reduce_scatter, "nvring_hier",
       "device buffers across nodes, an NVLink ring in each: the ring-and-rails allreduce a chunk at a "
       "time into the work area, each rank keeping its (uneven) block",
       device_ring_nodes, reduce_scatter_nvring_hier},
      {Coll::Reduce_scatter, "staged", "device buffers: copied to pinned host memory for the MPI's own reduce_scatter",
       device_any, nullptr},
      {Coll::Alltoall, "direct",
       "device buffers on one node: each rank copies its block out of every peer's send buffer (CUDA IPC); in "
       "place (a space that fuses) each pair of blocks swapped by three XORs",
       alltoall_direct_ok, alltoall_direct},
      {Coll::Alltoall, "hier",
       "a chunk of every block through the node's banks; rail j carries its node's blocks for the ranks j, j+L_min, "
       "... of every other node, pairwise between nodes",
       alltoall_banks, alltoall_hier},
      {Coll::Alltoall, "nvring",
       "device buffers on one node along its NVLink ring: every block around the ring from its sender to its "
       "receiver, a piece of each per round",
       device_ring, alltoall_nvring},
      {Coll::Alltoall, "nvring_hier",
       "device buffers across nodes, an NVLink ring in each: around the node's ring the pieces for each "
       "local rank of every node, then pairwise along the rails",
       device_ring_nodes, alltoall_nvring_hier},
      {Coll::Alltoall, "staged", "device buffers: copied to pinned host memory for the MPI's own alltoall", device_any,
       nullptr},
      // Host buffers to the MPI's own collective (issue 32): the engine declines, every rank
      // alike (the rules that pick @mpi read rank-uniform facts only), and the call goes to
      // the MPI (passthrough). The host crossovers (tune.cc: kHostTune, GCOLL_HOST_TUNE) pick
      // it where the MPI was measured faster; GCOLL_TUNE=<coll>:lo-hi:@mpi forces it.
      mpi_row(Coll::Allreduce),
      mpi_row(Coll::Bcast),
      mpi_row(Coll::Allgather),
      mpi_row(Coll::Allgatherv),
      mpi_row(Coll::Reduce_scatter_block),
      mpi_row(Coll::Reduce),
      mpi_row(Coll::Reduce_scatter),
      mpi_row(Coll::Alltoall),
  };
  return table;
}

const Algorithm *find_algorithm(Coll c, const std::string &name) {
  for (const auto &a : algorithms())
    if (a.coll == c && name == a.name) return &a;
  return nullptr;
}

int algorithm_index(const Algorithm *a) { return static_cast<int>(a - algorithms().data()); }

}  // namespace gcoll
