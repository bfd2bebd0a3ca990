// The emulated GPU's devices (emulate.h): one, or the GPUs of a topology file
// (GCOLL_TOPO_FILE); each process's default device, each thread's current device, peer
// access between devices as the file's machine has it, and the IPC counters.
// Internal to src/cuda/emulate*.cc.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "topo/node_topo.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

// Decided once, at the first use: never changes afterwards.
struct Machine {
  bool from_file = false;             // the GPUs of config().topo_file
  topo::NodeTopo topo;                // from_file: the file's model (ordinal i = topo.gpus[i])
  std::vector<std::string> bus_ids;   // per ordinal, normalised
  std::vector<std::string> uuids;     // per ordinal, 16 bytes each
  int default_device = 0;             // local_rank % count()
  int count() const { return static_cast<int>(bus_ids.size()); }
};

// The process's machine (never destroyed).
const Machine &machine();

// The launcher's local rank: the first of OMPI_COMM_WORLD_LOCAL_RANK,
// MV2_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, PMI_LOCAL_RANK that is set to
// a number; 0 when none is.
int launcher_local_rank();

bool valid_device(int dev);
// valid_device, setting last_error ("no device 5 (there are 4, 0 to 3)") when it is not.
bool check_device(int dev);
// The calling thread's current device: the one it set, else the process's default.
int current_device();
// Makes `dev` the calling thread's current device; false (last_error set) when there is
// no such device.
bool set_current_device(int dev);

// What cudaDeviceCanAccessPeer says on the file's machine (topo::p2p_hardware; a device
// reaches itself; without a file every device is device 0): false for devices that are
// not there.
bool peer_hardware(int dev, int peer);
// Peer access that the hardware grants but that does not move the data (topo::p2p_broken).
bool peer_broken(int dev, int peer);

// IPC opens refused for want of peer access, and opens across a broken pair (mapped as a
// private copy): process-wide counts (gcoll_emu_denied_ipc_opens / _broken_ipc_opens).
extern std::atomic<std::uint64_t> g_denied_ipc_opens;
// Waits for every stream (free, device_synchronize, an IPC close) made on a thread that runs a
// stream-ordered call (cuda/stream_order.h): on a GPU such a wait can hang, the
// application's stream waiting for that very call (emu::stream_ordered_device_waits).
extern std::atomic<std::uint64_t> g_stream_ordered_device_waits;
extern std::atomic<std::uint64_t> g_broken_ipc_opens;

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
