// The device topology of a communicator: which of a node's ranks can read each other's
// GPU memory (P2P), decided once, at the communicator's first device call, before any
// byte of a call moves, and the same on every rank:
//   1. each rank's GPU (PCI bus id) is exchanged inside the node;
//   2. each rank says, for every peer, whether it may use P2P to the peer's GPU: the same
//      GPU always; else the node topology (topo/detect.h: a topology file, or detection)
//      under GCOLL_P2P_LEVEL and GCOLL_P2P_DISABLE, and what CUDA says
//      (cudaDeviceCanAccessPeer); a pair is P2P only where both of its ranks say so;
//   3. GCOLL_P2P_CHECK: every P2P pair of distinct GPUs is verified with data (each rank
//      writes a pattern through its peer's IPC mapping, the owner checks it, with a
//      bounded wait); a pair that fails is treated as no P2P, with one warning. Verdicts
//      and outcomes are kept per process for the pair of GPUs (bus ids): a later
//      communicator probes only the pairs that one of the two ranks' processes has not
//      probed yet (each rank says, in its gathered row, what it knows: the decision is the
//      same on every rank), and a pair that failed once stays without P2P;
//   4. the node's ranks are cut into islands (cliques of the P2P graph: inside one, every
//      rank reads every other's memory): one island is today's device engine; several
//      islands become the device engine's "nodes" (its own Topology: each island a node,
//      the hop between islands through host memory over the rails' transport, as between
//      nodes), so that one pair without P2P never sends the whole communicator through
//      the MPI;
//   5. except on a communicator of one node whose GPUs, not all P2P to each other, lie
//      on a cycle of NVLink pairs (DGX-1's hybrid cube mesh, or a subset of it): then the
//      device engine runs on the whole node along that ring (Topology::ring; the *_nvring
//      algorithms: each rank reads only its predecessor's memory, and maps only its two
//      ring neighbours'), never across a pair without NVLink and without host memory.
//      Across nodes likewise where every node has such a ring through all of its ranks
//      and the nodes are of one size (agreed over the communicator, as "several islands"
//      is): the device engine's nodes are the host's nodes, each along its own ring
//      (Topology::ring: my node's, in its local ranks), the rails between them (the
//      nvring_hier rows); else the islands of step 4.
//   6. across nodes, the ranks that talk to the network are the ones nearest a NIC: each
//      rank's GPU's path class to its nearest NIC (PIX/PXB before PHB before NODE before
//      SYS) is gathered with its bus id; where some node's ranks are not already in that
//      order, the device engine runs on a topology of its own whose local ranks are
//      (distance, communicator rank) (topo/topology.h: compute_layout's order key): local
//      rank 0, which single-rail steps use, is nearest a NIC, and rail j joins each node's
//      j-th nearest; ranks beyond the smallest node's size (no rail) are the farthest.
// The outcome is agreed through the agreement path (boot/bootstrap.h): every rank of the
// node sees the same gathered verdicts; whether any node has several islands, ranks out
// of NIC order, or no NVLink ring through all of its ranks is agreed over the
// communicator (one max).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "topo/node_topo.h"
#include "topo/topology.h"

namespace gcoll {

// What one node's ranks found (pure: unit-tested from verdict matrices).
struct NodeIslands {
  std::vector<int> island;  // local rank -> island id (its lowest local rank)
  int count = 1;            // islands on the node
  topo::TopoClass cls = topo::TopoClass::OneGpu;
  // Several islands, and a cycle through every rank along NVLink pairs that are P2P (the
  // ranks of one GPU next to each other): the local ranks in ring order, starting at 0.
  // Empty otherwise.
  std::vector<int> ring;
};

// From the node's verdicts: same_gpu[p][q] (the two ranks' GPUs are one), p2p[p][q] (both
// ranks said P2P, and the probe passed where it ran), nvlink[p][q] (the pair is NVLink in
// the node topology). Square, symmetric, over local ranks.
NodeIslands node_islands(const std::vector<std::vector<bool>> &same_gpu, const std::vector<std::vector<bool>> &p2p,
                         const std::vector<std::vector<bool>> &nvlink);

struct DeviceTopology {
  NodeIslands node;               // my node's
  bool split = false;             // the device engine has a topology and rails of its own:
                                  // some node has several islands, or (nic_ordered) some
                                  // node's ranks are reordered by NIC distance
  bool nic_ordered = false;       // step 6: some node's ranks are reordered
  bool ring = false;              // on its NVLink ring (step 5 above): one node, or (split
                                  // too) every node on its own ring, rails between them
  std::unique_ptr<Topology> topo; // split: the device engine's topology (each island a node,
                                  // local ranks by NIC distance); ring: the node, with
                                  // Topology::ring
  int probe_failures = 0;         // GPU pairs of my node without P2P by the data probe
                                  // (probed now, or by an earlier communicator)
  int probes = 0;                 // peer GPUs my process probed now
  int probe_cache_hits = 0;       // peer GPUs whose probe both processes had made before
  std::string gpu_bus_id;         // mine
};

// A GPU's distance to the network, for step 6: the path class (topo::PathClass, as an
// int) to its nearest NIC; PathClass::Sys + 1 where the node has no NIC, or the GPU is
// not in the topology. Smaller is nearer.
int nic_distance(const topo::NodeTopo &t, const std::string &gpu_bus_id);

// Whether local ranks ordered by (distance[r], r) differ from their own order (step 6).
bool nic_order_differs(const std::vector<int> &distance);

// Collective over `comm` (and its node communicator in `host`): the discovery above, for
// this rank's GPU `gpu`. ErrComm when an agreement fails; other failures of this rank's
// part (no device information) count as "no P2P to anyone" for it, never as an error.
Status discover_device_topology(MPI_Comm comm, const Topology &host, int gpu, double timeout_s,
                                DeviceTopology *out);

// The UCX network device of this process's rails (ucx::Options::net_devices): the NIC
// nearest its GPU (the current CUDA device) in the node topology, ties spread over the
// GPUs (topo::choose_nics over every GPU of the node), as UCX names it ("mlx5_0:1").
// Empty where the process has no GPU, the node no NIC, or on the emulated GPU (whose
// NICs are a file's, not this machine's: only logged). One warning per process when the
// nearest NIC is across the socket (SYS).
std::string rail_net_device();

// The islands (and NVLink ring) `ranks` ranks would find on the node topology `t` (local
// rank r on GPU r % GPUs): the P2P verdicts from the model under the settings, a pair
// marked broken as the data probe would find it; *dt is the device engine's layout (the
// islands as nodes, or one node along the ring), without communicators. For gcoll_info and
// the cost model's printout (no MPI). t must have a GPU and ranks > 0.
NodeIslands model_node_islands(const topo::NodeTopo &t, int ranks, Topology *dt);

// gcoll_info --topology: the path each collective would take on device buffers of
// `bytes` sizes on this node topology, for `ranks` ranks (local rank r on GPU r % GPUs),
// decided as the engine decides it (P2P verdicts from the model under the settings, a
// pair marked broken as the data probe would find it, islands, the default selection
// rules and GCOLL_TUNE). One line per collective.
std::string device_paths_text(const topo::NodeTopo &t, int ranks);

}  // namespace gcoll
