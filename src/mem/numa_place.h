// Where the host memory that stages a GPU's data lives (issue 22): on the GPU's NUMA node,
// so that its copies to and from the GPU do not cross the CPUs' interconnect. The calling
// thread's memory policy prefers that node while pinned memory is allocated (the pages
// are faulted in, and pinned, by the allocation itself); nothing else changes.
//   - The GPU's node: GCOLL_TOPO_FILE's, where one is given (the node topology), else the
//     kernel's (/sys/bus/pci/devices/<bus id>/numa_node, what hwloc reads too).
//   - Left alone: a node that is unknown (-1: one-node machines, many VMs) or not on this
//     machine, and a thread that already has a memory policy of its own (numactl
//     --membind, the launcher's binding): the user's placement wins.
#pragma once

#include <string>

namespace gcoll::numa_place {

// The NUMA node of the PCI device `bus_id` (any spelling topo::pci_bus_id_normalise
// takes) under `sysfs_root` (default "/sys"), or -1 when unknown.
int sysfs_numa_node(const std::string &bus_id, const std::string &sysfs_root = "/sys");

// The NUMA node of CUDA device `device` (cached per device), or -1.
int gpu_numa_node(int device);

// While alive: the calling thread prefers NUMA node `node` for new pages (MPOL_PREFERRED),
// unless node < 0, the node is not on this machine, or the thread has a policy of its
// own; the previous policy comes back at the end. active(): whether it changed anything.
class PreferNode {
 public:
  explicit PreferNode(int node);
  ~PreferNode();
  PreferNode(const PreferNode &) = delete;
  PreferNode &operator=(const PreferNode &) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
};

}  // namespace gcoll::numa_place
