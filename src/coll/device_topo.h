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
//      bounded wait); a pair that fails is treated as no P2P, with one warning;
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
// The outcome is agreed through the agreement path (boot/bootstrap.h): every rank of the
// node sees the same gathered verdicts; whether any node has several islands is agreed
// over the communicator.
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
  bool split = false;             // some node of the communicator has several islands
  bool ring = false;              // one node, on its NVLink ring (step 5 above)
  std::unique_ptr<Topology> topo; // split: the device engine's topology (each island a node);
                                  // ring: the node, with Topology::ring
  int probe_failures = 0;         // GPU pairs of my node that failed the data probe
  std::string gpu_bus_id;         // mine
};

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

// gcoll_info --topology: the path each collective would take on device buffers of
// `bytes` sizes on this node topology, for `ranks` ranks (local rank r on GPU r % GPUs),
// decided as the engine decides it (P2P verdicts from the model under the settings, a
// pair marked broken as the data probe would find it, islands, the default selection
// rules and GCOLL_TUNE). One line per collective.
std::string device_paths_text(const topo::NodeTopo &t, int ranks);

}  // namespace gcoll
