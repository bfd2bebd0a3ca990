// gcoll_info --topology: the node topology as nvidia-smi topo -m prints it, and what gcoll
// makes of it (P2P verdicts, islands, NVLink rings, rail NICs, the path each collective
// would take). Pure text from the model, so golden outputs test it.
#pragma once

#include <string>

#include "topo/node_topo.h"

namespace gcoll {
namespace topo {

struct PrintOptions {
  P2pLevel level = P2pLevel::Pxb;  // GCOLL_P2P_LEVEL
  bool p2p_disable = false;        // GCOLL_P2P_DISABLE
  int ranks_per_gpu = 1;           // ranks sharing each GPU (local rank r uses GPU r % n)
  int ranks = 0;                   // ranks on the node (0: ranks_per_gpu x GPUs)
};

std::string format_topology(const NodeTopo &t, const PrintOptions &o);

}  // namespace topo
}  // namespace gcoll
