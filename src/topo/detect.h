// The node topology this process uses (topo/node_topo.h), once per process:
//   - GCOLL_TOPO_FILE set: the file (topo/topo_xml.h); what it omits (uuids, NUMA
//     affinity, NVLinks where the file has none) is filled from detection where
//     detection knows the same GPU (by bus id); values in the file win.
//   - else detection: CUDA for the GPUs this process can see (bus ids, uuids, compute
//     capability), hwloc for the PCI tree, NUMA nodes and network devices (I/O discovery
//     enabled before loading; parents walked by hand, never hwloc's common-ancestor
//     helper on I/O objects), NVML loaded at run time (topo/nvml.h) for NVLink counts and
//     remote ends, P2P status and CPU affinity.
// Written to GCOLL_TOPO_DUMP_FILE when that is set. Never fails: what cannot be detected
// stays unknown (an empty model where nothing is known).
#pragma once

#include <string>

#include "topo/node_topo.h"

namespace gcoll {
namespace topo {

const NodeTopo &node_topology();

// Where node_topology() got its facts, for gcoll_info and logs ("file /x.xml", "CUDA, hwloc,
// NVML", "CUDA, hwloc (no NVML)", ...).
const std::string &node_topology_source();

}  // namespace topo
}  // namespace gcoll
