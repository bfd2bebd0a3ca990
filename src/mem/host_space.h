// Host memory space: one POSIX shared-memory segment per node communicator.
#pragma once

#include <mpi.h>

#include <cstdio>
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

// Segments left behind in /dev/shm. A segment is unlinked as soon as every rank of its
// node has mapped it, so only a job killed in between (SIGKILL during a communicator's
// first engine call) leaves one; names never collide (pid, counter, random part, O_EXCL),
// so the next job does not trip over it, but it holds memory. Removes (or, dry_run, only
// lists) gcoll's segments whose creator (the pid in the name) is not alive here and that
// are older than min_age_s (a live job's segment exists for milliseconds; the age also
// protects the segments of jobs in other pid namespaces that share /dev/shm). One line
// per segment on `out` (may be null). Returns how many were (or would be) removed, or -1
// when /dev/shm cannot be read.
int cleanup_segments(double min_age_s, bool dry_run, std::FILE *out);

}  // namespace gcoll
