// The node topology model: what one machine's GPUs, PCI tree, NUMA nodes and NICs are, and
// how they connect. Pure data (no MPI, no CUDA, no hwloc): filled by detection
// (topo/detect.h: CUDA, hwloc, NVML) or read from a topology file in NCCL's XML dialect
// (topo/topo_xml.h), and unit-tested on its own.
//
// GPUs are keyed by PCI bus id ("0000:07:00.0", lower case, domain included), never by a
// CUDA ordinal, which CUDA_VISIBLE_DEVICES renumbers per process.
//
// Vocabulary (nvidia-smi topo -m, NCCL):
//   NV#   NVLink, # links (direct, or both GPUs on NVSwitches: then # is the smaller of
//         the two GPUs' link counts to switches)
//   PIX   at most one PCIe switch (bridge) between the two
//   PXB   several PCIe switches, no host bridge
//   PHB   through a PCIe host bridge (the CPU)
//   NODE  between PCIe host bridges inside one NUMA node
//   SYS   across NUMA nodes (the SMP interconnect: QPI, UPI, Infinity Fabric)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/config.h"  // P2pLevel

namespace gcoll {
namespace topo {

// Ordered by distance; the first values match P2pLevel (Loc = same GPU).
enum class PathClass : int { Loc = 0, Nv = 1, Pix = 2, Pxb = 3, Phb = 4, Node = 5, Sys = 6 };
const char *path_name(PathClass p);  // "X" (Loc), "NV", "PIX", "PXB", "PHB", "NODE", "SYS"

// A node of the PCI tree (a switch or bridge, or an endpoint: GPU, NIC, other).
struct PciNode {
  std::string bus_id;          // normalised (pci_bus_id_normalise)
  int parent = -1;             // index in NodeTopo::pci; -1: attached to its NUMA node's host bridge
  int numa = -1;               // index in NodeTopo::numa of the CPU it hangs from (-1: unknown)
  std::uint32_t class_code = 0;  // PCI class (0x060400 bridge, 0x030200 3D controller, 0x020000 network, ...)
  // Attributes kept as read, written back by the dump (link_speed, link_width, vendor, device, ...).
  std::vector<std::pair<std::string, std::string>> attrs;
};

struct Numa {
  int os_index = -1;         // NCCL's cpu numaid
  std::string affinity;      // CPU mask as NCCL writes it ("0000ffff,0000ffff"); empty: unknown
  std::vector<std::pair<std::string, std::string>> attrs;  // arch, vendor, familyid, modelid ...
};

struct Gpu {
  std::string bus_id;   // the key
  std::string uuid;     // "GPU-xxxxxxxx-..." where known (NVML, CUDA), else empty
  int pci = -1;         // its PciNode (index), -1: not in the PCI tree (then its path to anything is SYS)
  int numa = -1;        // index in NodeTopo::numa, -1: unknown
  int sm = 0;           // compute capability x10 (NCCL's sm attribute), 0: unknown
  int dev = -1;         // the ordinal the file or detection gave it (informational only)
  int nvswitch_links = 0;  // NVLinks to NVSwitches
  // The gpu element's other attributes (NCCL's rank, gdr ...), kept for the dump.
  std::vector<std::pair<std::string, std::string>> attrs;
};

struct Nic {
  std::string name;     // "mlx5_0" (NCCL's net name)
  std::string bus_id;   // its PCI function (may be empty: then path to every GPU is SYS)
  int pci = -1;         // its PciNode
  int numa = -1;
  int speed_mbps = 0;
  bool gdr = false;     // GPUDirect RDMA capable (NCCL's gdr attribute)
  std::vector<std::pair<std::string, std::string>> attrs;  // the net element's other attributes
};

// gcoll's own facts about a GPU pair (file: <gcoll_p2p target="bus id" state="denied|broken"/>
// inside a <gpu>, which NCCL's reader ignores; detection: NVML P2P status, the data probe).
enum class PairState : int { Default = 0, Denied = 1, Broken = 2 };

struct NodeTopo {
  std::vector<Numa> numa;
  std::vector<PciNode> pci;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  // n x n over gpus (n = gpus.size()): direct NVLinks between two GPUs (symmetric).
  std::vector<std::vector<int>> nvlinks;
  // n x n: gcoll's pair facts (symmetric).
  std::vector<std::vector<PairState>> pair;

  int gpu_index(const std::string &bus_id) const;  // -1: not there
  int nic_index(const std::string &name) const;
  // Makes nvlinks and pair n x n after gpus changed (keeps what is there).
  void resize_pairs();
};

// Puts the GPUs in PCI bus id order (domain, bus, device, function: nvidia-smi's, NVML's and
// CUDA_DEVICE_ORDER=PCI_BUS_ID's order), permuting nvlinks and pair along; GPUs whose bus id
// is no bus id come last, in the order they had. What a topology file or detection gives
// goes through it, so that GPU i means the same GPU everywhere gcoll prints or selects one.
void sort_gpus_by_bus_id(NodeTopo *t);

// "0000:07:00.0" from "7:0.0", "00000000:07:00.0" (NVML's 8-digit domain), "0000:07:00" (no
// function: .0), upper case; empty for text that is not a bus id.
std::string pci_bus_id_normalise(const std::string &s);

// Path between two GPUs (indices), and between a GPU and a NIC.
PathClass gpu_path(const NodeTopo &t, int a, int b);
int gpu_nv_links(const NodeTopo &t, int a, int b);  // NV#: 0 when not NVLink
PathClass nic_path(const NodeTopo &t, int gpu, int nic);
// The PCI part alone, between two PciNodes (indices; -1: not in the tree, then SYS); two
// functions of one node are PIX. What nic_path and gpu_path use below NVLink.
PathClass pci_path(const NodeTopo &t, int a, int b);

// Whether gcoll lets GPUs a and b read each other's memory (before the data probe): the
// same GPU always; never where the pair is Denied, `disable` or level LOC; NVLink
// always otherwise; else the PCI path up to `level`.
bool p2p_allowed(const NodeTopo &t, int a, int b, P2pLevel level, bool disable);
// What CUDA itself reports for the pair on such a machine (cudaDeviceCanAccessPeer): not
// Denied, and not across NUMA nodes without NVLink (the emulated GPU's answer).
bool p2p_hardware(const NodeTopo &t, int a, int b);
bool p2p_broken(const NodeTopo &t, int a, int b);

// Graph helpers over a symmetric adjacency matrix m (m[i][i] ignored).
// Connected components: component id per vertex, numbered by their lowest vertex's order.
std::vector<int> components(const std::vector<std::vector<bool>> &m);
// A partition into cliques (every pair inside one part adjacent), each part as large as a
// greedy pass in vertex order makes it; part id per vertex, numbered by lowest vertex.
// Equal to components() where every component is a clique.
std::vector<int> clique_partition(const std::vector<std::vector<bool>> &m);
// A cycle through every vertex of `members` along edges of m (a Hamiltonian cycle),
// starting at members' first vertex, or empty when there is none (or fewer than 3
// members; 2 members joined form the cycle {a, b}).
std::vector<int> find_ring(const std::vector<std::vector<bool>> &m, const std::vector<int> &members);

// The NIC each GPU's rail uses: for every GPU in `gpus` (indices, one per rank or per GPU
// in use, repeats allowed), the nearest NIC by nic_path; ties spread round robin over the
// tied NICs in the order the GPUs come. -1 where there is no NIC.
std::vector<int> choose_nics(const NodeTopo &t, const std::vector<int> &gpus);
// The NIC's device as UCX names it (UCX_NET_DEVICES): "mlx5_0:1" (its port attribute,
// NCCL's net port), else the name itself ("eth0").
std::string ucx_device_name(const Nic &n);

// Whole-node summary of the GPUs in `gpus` (indices, repeats allowed) for P2P verdicts
// p2p (over the same indices as t.gpus): what the path choice and the stats name.
enum class TopoClass : int {
  OneGpu = 0,      // every rank on one GPU
  NvlinkAll = 1,   // every pair of distinct GPUs P2P over NVLink / NVSwitch
  PcieAll = 2,     // every pair P2P, some only over PCIe
  Islands = 3,     // several P2P cliques (including NVLink that is not all-to-all)
  NoP2p = 4,       // no pair of distinct GPUs P2P
  NoGpu = 5,       // no GPU at all (a topology without one; classify() of no GPU). Only
                   // the printer meets it: the device topology (coll/device_topo) always
                   // has the rank's own GPU.
};
const char *topo_class_name(TopoClass c);  // "one-gpu", "nvlink", "pcie", "islands", "no-p2p", "no-gpu"
TopoClass classify(const NodeTopo &t, const std::vector<int> &gpus, const std::vector<std::vector<bool>> &p2p);

}  // namespace topo
}  // namespace gcoll
