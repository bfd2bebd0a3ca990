// Host memory space: one POSIX shared-memory segment per node communicator.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>

#include "mem/memspace.h"

namespace gcoll {

struct HostSpaceOptions {
  std::size_t bank_bytes = 1 << 20;  // per rank and bank
  double timeout_s = 0;              // 0: wait for peers forever (dead peers are still detected)
  std::function<void()> progress;    // called while waiting (keeps the network moving)
};

// Collective over node_comm (all ranks on one machine). The segment is named per job and
// creator, and unlinked as soon as every peer mapped it: nothing is left in /dev/shm after
// the run, even if it is killed.
Status create_host_space(MPI_Comm node_comm, const HostSpaceOptions &opt, std::unique_ptr<MemSpace> *out);

}  // namespace gcoll
