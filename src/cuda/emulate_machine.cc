// The emulated GPU's devices: see emulate_machine.h.
#include "cuda/emulate_machine.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "base/config.h"
#include "base/log.h"
#include "cuda/emulate_memory.h"
#include "topo/topo_xml.h"

namespace gcoll {
namespace cuda {
namespace emu_impl {

std::atomic<std::uint64_t> g_denied_ipc_opens{0};
std::atomic<std::uint64_t> g_stream_ordered_device_waits{0};
std::atomic<std::uint64_t> g_broken_ipc_opens{0};

namespace {

// Without a topology file: the one device of old, with the identity it always had.
constexpr char kOneUuid[16] = "gcoll-emu-gpu-0";
constexpr char kOneBusId[] = "0000:01:00.0";

// The same in every process that reads the same file, and different for different bus
// ids: "gemu" and the bus id itself (12 characters in the model's form), or for a longer
// one "gemu" and 12 bytes of two FNV-1a hashes of it.
std::string uuid_of(const std::string &bus_id) {
  std::string u = "gemu";
  if (bus_id.size() <= 12) {
    u += bus_id;
  } else {
    for (std::uint64_t seed : {1469598103934665603ull, 1099511628211ull * 31}) {
      std::uint64_t h = seed;
      for (unsigned char c : bus_id) h = (h ^ c) * 1099511628211ull;
      for (int i = 0; i < 6; ++i) u += static_cast<char>((h >> (8 * i)) & 0xff);
    }
  }
  u.resize(16, '\0');
  return u;
}

Machine *load() {
  auto *m = new Machine;
  const std::string &path = config().topo_file;
  if (!path.empty()) {
    std::string error;
    topo::NodeTopo t;
    bool good = false;
    try {
      good = topo::read_topo_file(path, &t, &error);
      if (good && t.gpus.empty()) {
        good = false;
        error = "it has no GPU";
      }
    } catch (const std::exception &e) {
      good = false;
      error = e.what();
    }
    if (good) {
      m->from_file = true;
      m->topo = std::move(t);
      m->topo.resize_pairs();
      for (const topo::Gpu &g : m->topo.gpus) {
        const std::string norm = topo::pci_bus_id_normalise(g.bus_id);
        m->bus_ids.push_back(norm.empty() ? g.bus_id : norm);
        m->uuids.push_back(uuid_of(m->bus_ids.back()));
      }
    } else {
      warn_shared(SharedWarning::EmuTopoFile,
                  "emulated GPU: cannot use the topology file %s (GCOLL_TOPO_FILE): %s; emulating one GPU",
                  path.c_str(), error.c_str());
    }
  }
  if (!m->from_file) {
    m->bus_ids.push_back(kOneBusId);
    m->uuids.push_back(std::string(kOneUuid, sizeof kOneUuid));
  }
  m->default_device = launcher_local_rank() % m->count();
  if (m->from_file)
    GCOLL_INFO("emulated GPU: %d GPUs from the topology file %s; this process's device %d (%s)", m->count(),
               path.c_str(), m->default_device, m->bus_ids[static_cast<std::size_t>(m->default_device)].c_str());
  return m;
}

// -1: this thread never set a device.
thread_local int t_device = -1;

}  // namespace

const Machine &machine() {
  static const Machine *const m = load();
  return *m;
}

int launcher_local_rank() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "SLURM_LOCALID", "PMI_LOCAL_RANK"}) {
    const char *v = foreign_env(name);
    if (!v || !*v) continue;
    char *end = nullptr;
    errno = 0;
    const long r = std::strtol(v, &end, 10);
    if (errno == 0 && *end == '\0' && r >= 0 && r <= 1 << 20) return static_cast<int>(r);
  }
  return 0;
}

bool valid_device(int dev) { return dev >= 0 && dev < machine().count(); }

int current_device() { return t_device >= 0 ? t_device : machine().default_device; }

bool check_device(int dev) {
  if (valid_device(dev)) return true;
  const int n = machine().count();
  if (n == 1)
    set_error("emulated GPU: no device %d (there is one, 0)", dev);
  else
    set_error("emulated GPU: no device %d (there are %d, 0 to %d)", dev, n, n - 1);
  return false;
}

bool set_current_device(int dev) {
  if (!check_device(dev)) return false;
  t_device = dev;
  return true;
}

bool peer_hardware(int dev, int peer) {
  if (!valid_device(dev) || !valid_device(peer)) return false;
  if (dev == peer) return true;
  return topo::p2p_hardware(machine().topo, dev, peer);
}

bool peer_broken(int dev, int peer) {
  if (!valid_device(dev) || !valid_device(peer) || dev == peer) return false;
  return topo::p2p_broken(machine().topo, dev, peer);
}

}  // namespace emu_impl
}  // namespace cuda
}  // namespace gcoll
