#include "mem/numa_place.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <mutex>

#include "base/config.h"
#include "base/log.h"
#include "cuda/runtime.h"
#include "topo/detect.h"
#include "topo/node_topo.h"

namespace gcoll::numa_place {

namespace {

// <numaif.h> without libnuma: the two system calls and their constants.
constexpr int kMpolDefault = 0, kMpolPreferred = 1;
constexpr unsigned long kMaxNodes = 1024;
constexpr std::size_t kMaskWords = kMaxNodes / (8 * sizeof(unsigned long));

long get_mempolicy_(int *mode, unsigned long *mask, unsigned long maxnode) {
  return syscall(SYS_get_mempolicy, mode, mask, maxnode, nullptr, 0UL);
}
long set_mempolicy_(int mode, const unsigned long *mask, unsigned long maxnode) {
  return syscall(SYS_set_mempolicy, mode, mask, maxnode);
}

bool node_exists(int node) {
  std::ifstream f("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
  return f.good();
}

}  // namespace

int sysfs_numa_node(const std::string &bus_id, const std::string &sysfs_root) {
  std::string b = topo::pci_bus_id_normalise(bus_id);
  if (b.empty()) return -1;
  for (char &ch : b) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::ifstream f(sysfs_root + "/bus/pci/devices/" + b + "/numa_node");
  int node = -1;
  if (!(f >> node)) return -1;
  return node >= 0 ? node : -1;
}

int gpu_numa_node(int device) {
  static std::mutex mu;
  static std::map<int, int> *const cache = new std::map<int, int>;  // never destroyed
  std::lock_guard<std::mutex> g(mu);
  auto it = cache->find(device);
  if (it != cache->end()) return it->second;
  int node = -1;
  cuda::DeviceInfo di;
  if (device >= 0 && ok(cuda::runtime().device_info(device, &di))) {
    const std::string bus = topo::pci_bus_id_normalise(di.pci_bus_id);
    if (!config().topo_file.empty()) {
      const topo::NodeTopo &t = topo::node_topology();
      const int g2 = t.gpu_index(bus);
      if (g2 >= 0 && t.gpus[g2].numa >= 0) node = t.numa[t.gpus[g2].numa].os_index;
    } else {
      node = sysfs_numa_node(bus);
    }
    GCOLL_INFO("staging memory of GPU %d (%s): NUMA node %d%s", device, bus.c_str(), node,
               node < 0 ? " (unknown: left to the kernel)" : "");
  }
  (*cache)[device] = node;
  return node;
}

PreferNode::PreferNode(int node) {
  if (node < 0 || static_cast<unsigned long>(node) >= kMaxNodes || !node_exists(node)) return;
  int mode = -1;
  unsigned long mask[kMaskWords] = {};
  if (get_mempolicy_(&mode, mask, kMaxNodes) != 0 || mode != kMpolDefault) return;  // the thread's own policy wins
  unsigned long want[kMaskWords] = {};
  want[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
  active_ = set_mempolicy_(kMpolPreferred, want, kMaxNodes) == 0;
}

PreferNode::~PreferNode() {
  if (active_) set_mempolicy_(kMpolDefault, nullptr, 0);
}

}  // namespace gcoll::numa_place
