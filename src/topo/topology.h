// Node structure of a communicator: which ranks share a node (physical, or virtual with
// GCOLL_RANKS_PER_NODE), the node communicator, and the rails.
//
// Nodes are numbered by their lowest communicator rank, local ranks by communicator rank
// order inside the node (the host engine's), or by (order key, communicator rank) where an
// order key is given (the device engine's: its GPU's distance to a NIC, coll/device_topo.h,
// so that local rank 0 and rail 0 are nearest the network); every rank computes the same
// layout from the same gathered keys.
//
// Rails and uneven nodes: with L_min = the smallest node's size, rail j (j < L_min) is
// the communicator of local rank j of every node (rail rank = node index). Every node has
// all L_min rails. A rank whose local rank is >= L_min has no rail: it contributes its
// data inside its node and receives results from its node's rail ranks.
#pragma once

#include <mpi.h>

#include <vector>

#include "base/status.h"

namespace gcoll {

struct Topology {
  int size = 0, rank = 0;                // in the communicator
  int num_nodes = 0, node = 0;           // my node's index
  int local_size = 0, local_rank = 0;    // in my node
  int min_local = 0;                     // L_min: number of rails
  std::vector<int> node_of;              // comm rank -> node index
  std::vector<int> local_of;             // comm rank -> local rank
  std::vector<std::vector<int>> members; // node index -> comm ranks by local rank
  MPI_Comm node_comm = MPI_COMM_NULL;    // my node's ranks (by local rank)
  MPI_Comm rail_comm = MPI_COMM_NULL;    // my rail (by node index), or MPI_COMM_NULL
  // The device engine's NVLink ring (coll/device_topo.h), on a node whose GPUs are P2P
  // only along a cycle: my node's local ranks in ring order; each rank reads only its
  // predecessor's memory. Across nodes only where every node has one (each its own).
  // Empty everywhere else (every host topology).
  std::vector<int> ring;

  bool has_rail() const { return local_rank < min_local; }
  bool uneven() const {  // some node has ranks without a rail
    for (const auto &m : members)
      if (static_cast<int>(m.size()) != min_local) return true;
    return false;
  }
  int node_size(int n) const { return static_cast<int>(members[n].size()); }
  Topology() = default;
  Topology(const Topology &) = delete;
  Topology &operator=(const Topology &) = delete;
  ~Topology();
};

// Collective over `comm`. ranks_per_node = 0: physical nodes; k > 0: each physical node
// is cut into virtual nodes of k consecutive local ranks (the last may be smaller).
Status build_topology(MPI_Comm comm, int ranks_per_node, Topology *out);

// The device engine's topology where a node's GPUs form several P2P islands, or where
// its ranks are put in another order (coll/device_topo.h): each island of `host`'s nodes
// is a node of its own (island 0 everywhere: the host's nodes), its ranks by (order,
// communicator rank). `island`: my island's id inside my node (the same for every rank of
// the island); `order`: my order key. Collective over `comm`.
Status build_topology_islands(MPI_Comm comm, const Topology &host, int island, int order, Topology *out);

// Pure layout computation from each rank's node key (equal keys = same node) and, where
// given, order key (nullptr: ranks of a node by comm rank; else by (order key, comm
// rank)), for tests. Fills everything but the communicators.
void compute_layout(const std::vector<int> &node_key, int my_rank, Topology *t,
                    const std::vector<int> *order_key = nullptr);

}  // namespace gcoll
