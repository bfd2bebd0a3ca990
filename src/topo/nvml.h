// NVML loaded at run time (no link dependency; every symbol optional), and an emulated
// NVML that answers from a topology model (the emulated GPU's, so that the NVML code runs
// in CI). Used by detection (topo/detect.h) for NVLink counts and remote ends, P2P status,
// uuids and CPU affinity.
//
// The few NVML types and constants gcoll needs are declared here (there is no nvml.h in
// the toolkit gcoll builds with). Checked against NVIDIA's nvml.h (NVML API 12, as shipped
// in cuda-nvml-dev 12.2 and vendored by NVIDIA/go-nvml):
//   nvmlPciInfo_t (the layout the _v2/_v3 functions fill): char busIdLegacy[16]; unsigned
//     domain, bus, device, pciDeviceId, pciSubSystemId; char busId[32]   (68 bytes)
//   NVML_SUCCESS 0, NVML_ERROR_INVALID_ARGUMENT 2, NVML_ERROR_NOT_SUPPORTED 3,
//   NVML_ERROR_NOT_FOUND 6; NVML_FEATURE_ENABLED 1; NVML_NVLINK_MAX_LINKS 18;
//   NVML_P2P_CAPS_INDEX_READ 0, _WRITE 1, _NVLINK 2; NVML_P2P_STATUS_OK 0, _NOT_SUPPORTED 5;
//   NVML_NVLINK_DEVICE_TYPE_GPU 0, _IBMNPU 1, _SWITCH 2, _UNKNOWN 0xff;
//   NVML_DEVICE_UUID_V2_BUFFER_SIZE 96.
// Enums are passed as int (C enums with these values are int-sized).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "topo/node_topo.h"

namespace gcoll {
namespace topo {

namespace nvml {

using Return = int;                   // nvmlReturn_t
using Device = struct nvmlDevice_st *;  // nvmlDevice_t (opaque)

constexpr Return kSuccess = 0;
constexpr Return kErrorInvalidArgument = 2;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNotFound = 6;

constexpr int kFeatureDisabled = 0;  // nvmlEnableState_t
constexpr int kFeatureEnabled = 1;
constexpr unsigned kNvlinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

constexpr int kP2pCapsRead = 0;    // nvmlGpuP2PCapsIndex_t
constexpr int kP2pCapsWrite = 1;
constexpr int kP2pCapsNvlink = 2;
constexpr int kP2pStatusOk = 0;    // nvmlGpuP2PStatus_t
constexpr int kP2pStatusNotSupported = 5;

constexpr int kNvlinkDeviceGpu = 0x00;  // nvmlIntNvLinkDeviceType_t
constexpr int kNvlinkDeviceIbmNpu = 0x01;
constexpr int kNvlinkDeviceSwitch = 0x02;
constexpr int kNvlinkDeviceUnknown = 0xff;

constexpr unsigned kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

struct PciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];  // "0000:07:00.0"
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;     // device id << 16 | vendor id
  unsigned pciSubSystemId;
  char busId[32];        // "00000000:07:00.0"
};
static_assert(sizeof(PciInfo) == 68, "nvmlPciInfo_t is 68 bytes");

}  // namespace nvml

// NVML as a table of functions, one per NVML entry point gcoll uses, each with that entry
// point's arguments and NVML's return codes. An empty function: the symbol is not there
// (that question stays unanswered). The real table calls into libnvidia-ml; the emulated
// one answers from a model.
struct NvmlApi {
  std::string name;  // "NVML" / "emulated NVML" (logs)
  std::function<nvml::Return()> init;                                           // nvmlInit_v2
  std::function<nvml::Return()> shutdown;                                       // nvmlShutdown
  std::function<nvml::Return(const char *bus_id, nvml::Device *)> device_by_bus_id;  // nvmlDeviceGetHandleByPciBusId_v2
  std::function<nvml::Return(nvml::Device, char *uuid, unsigned length)> uuid;  // nvmlDeviceGetUUID
  // nvmlDeviceGetCudaComputeCapability
  std::function<nvml::Return(nvml::Device, int *major, int *minor)> compute_capability;
  // nvmlDeviceGetNvLinkState: *active = kFeatureEnabled / kFeatureDisabled
  std::function<nvml::Return(nvml::Device, unsigned link, int *active)> nvlink_state;
  // nvmlDeviceGetNvLinkRemotePciInfo_v2
  std::function<nvml::Return(nvml::Device, unsigned link, nvml::PciInfo *)> nvlink_remote_pci;
  // nvmlDeviceGetNvLinkRemoteDeviceType: kNvlinkDevice*
  std::function<nvml::Return(nvml::Device, unsigned link, int *type)> nvlink_remote_type;
  // nvmlDeviceGetP2PStatus(a, b, kP2pCaps*, *status = kP2pStatus*)
  std::function<nvml::Return(nvml::Device, nvml::Device, int index, int *status)> p2p_status;
  // nvmlDeviceGetCpuAffinity: `words` unsigned longs, bit i of word w = CPU w * 64 + i
  std::function<nvml::Return(nvml::Device, unsigned words, unsigned long *set)> cpu_affinity;
  // nvmlDeviceGetNumaNodeId (only platforms where GPU memory is a NUMA node answer)
  std::function<nvml::Return(nvml::Device, unsigned *node)> numa_node;
};

// libnvidia-ml.so.1 (dlopen, once per process; never closed), or nullptr where it cannot be
// loaded or has no nvmlInit_v2 / nvmlDeviceGetHandleByPciBusId_v2. Thread-safe.
const NvmlApi *real_nvml();

// An NVML for the machine `t` describes, answering from a copy of it:
//   - handles for t's GPUs by bus id (any spelling pci_bus_id_normalise takes), uuid
//     where t has one, compute capability where t has sm;
//   - NVLinks numbered per GPU: nvlinks[g][j] links to each peer j in GPU order, then
//     nvswitch_links links to an NVSwitch (its bus id: t's first PCI node of class
//     0x068000, else 0000:ff:00.0); links up to NVML_NVLINK_MAX_LINKS answer disabled
//     past those, higher links are an invalid argument;
//   - P2P read / write status OK where p2p_hardware(t, a, b), else NOT_SUPPORTED (the
//     NVLink index: OK where the pair has NVLinks);
//   - CPU affinity: the GPU's NUMA node's mask (NOT_SUPPORTED where t does not know it);
//     no NUMA node id (as on x86 machines).
NvmlApi emulated_nvml(const NodeTopo &t);

// Asks NVML about the model's GPUs (by bus id) and fills what the model does not know:
//   - uuid where empty; sm where 0;
//   - NVLinks: a GPU's links to other GPUs and to NVSwitches, only where the model has no
//     NVLink fact for the GPUs concerned (no link to any GPU nor to a switch): a model
//     read from a file keeps the file's links;
//   - a Denied pair state where NVML says P2P read or write is not OK, only where the pair
//     has no state (Default) and the model's path would have allowed hardware P2P
//     (p2p_hardware): across NUMA nodes without NVLink the model already says no;
//   - the GPU's NUMA node where unknown (-1): the model's NUMA node whose CPU mask shares
//     the most CPUs with NVML's CPU affinity, else the one NVML's NUMA node id names.
// Calls init first and shutdown last where the table has them. false (the model
// untouched) where NVML does not initialise or knows none of the model's GPUs.
bool fill_from_nvml(const NvmlApi &api, NodeTopo *t);

// NCCL's affinity strings ("0000ffff,00000000,0000ffff": 32-bit hex words, most
// significant first) <-> CPU bit sets (word i holds CPUs 32i .. 32i+31). parse: empty
// on text that is not such a mask.
std::vector<std::uint32_t> parse_affinity(const std::string &s);
// `words` words at least (0: as many as the highest CPU needs, at least one).
std::string format_affinity(const std::vector<std::uint32_t> &mask, size_t words = 0);

}  // namespace topo
}  // namespace gcoll
