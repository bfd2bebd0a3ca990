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

#include "base/config.h"
#include "topo/node_topo.h"

namespace gcoll {
namespace topo {

const NodeTopo &node_topology();

// Where node_topology() got its facts, for gcoll_info and logs ("file /x.xml", "CUDA, hwloc,
// NVML", "CUDA, hwloc (no NVML)", ...).
const std::string &node_topology_source();
// Why GCOLL_TOPO_FILE could not be used ("/x.xml: line 12: ..."), empty where it was (or is
// unset): node_topology() then holds what detection found, and the library has warned once;
// gcoll_info --topology exits non-zero on it.
const std::string &node_topology_file_error();

// ---- the steps of node_topology(), for tests and tools ------------------------------

// What node_topology() computes under settings `c` (c.topo_file, c.cuda, c.cuda_emulate),
// without caching and without the dump; *source as node_topology_source().
NodeTopo build_node_topology(const Config &c, std::string *source, std::string *file_error = nullptr);

// Whether gcoll was built with hwloc (else the two below answer false).
bool hwloc_supported();
// hwloc's view of this machine / of an hwloc XML export (lstopo --of xml): NUMA nodes
// that have CPUs (affinity: their cpusets, as wide as the machine's), the PCI tree above
// NVIDIA GPUs (class 0x0300 / 0x0302, vendor 0x10de) and NICs (OpenFabrics devices, else
// network interfaces, below a PCI function) as NCCL builds it: host bridges (class
// 0x060000, bus id domain:secondary bus:00.0), then one node per PCIe switch (its upstream
// port; root ports and downstream ports skipped). false with *error where hwloc fails.
bool topo_from_hwloc(NodeTopo *out, std::string *error);
bool topo_from_hwloc_xml(const std::string &path, NodeTopo *out, std::string *error);

// Fills what the file model omits from a detected one, by GPU bus id: uuids, sm, NUMA node
// and NUMA affinity (by os index), NVLinks of GPUs the file gives none, pair states the
// file leaves Default. Values in the file win.
void merge_detected(NodeTopo *file, const NodeTopo &detected);

// GCOLL_TOPO_DUMP_FILE's %h (host name) and %p (process id) expanded.
std::string expand_dump_path(const std::string &pattern);

}  // namespace topo
}  // namespace gcoll
