// The settings that must be equal on every rank of a communicator (settings_table()'s
// `differ` column), agreed at the communicator's first call, all at once: each rank's vote
// is a vector of numbers (uniform_vote), the ranks learn the minimum and the maximum of
// each (boot/bootstrap.h: min_max), and agreed_settings() reads the outcome from them, the
// same on every rank. A setting whose values differ gets the outcome its `differ` text
// names (never a hang, a crash or a wrong result) and one warning per process (see
// difference_message). Pure: unit-tested without MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/config.h"

namespace gcoll {

struct UniformDifference {
  std::string setting;  // GCOLL_...
  std::string lo, hi;   // the smallest and the largest value among the ranks ("" for strings)
  std::string outcome;  // the table's `differ` text
};

struct AgreedSettings {
  // Every rank took part in the vote as gcoll: false when what arrived is not gcoll's (a
  // rank with GCOLL_ENABLE=0 or without libgcoll.so made its own collective call at the
  // same time: the communicator's collectives no longer pair up; detected where the data
  // shows it, which MPI does not promise).
  bool all_gcoll = true;
  bool same_build = true;      // every rank runs a gcoll of this build (else: the MPI for everything)
  bool gpu = false;            // some rank can hold device memory
  bool host_engine = false;    // GCOLL_HOST_BUFFERS=engine on every rank
  bool device_engine = true;   // GCOLL_DEVICE_BUFFERS=engine on every rank
  bool uniform_memory = false; // GCOLL_UNIFORM_MEMORY=1 on every rank
  bool progress_thread = false; // GCOLL_PROGRESS_THREAD=on on every rank
  bool thread_multiple = false; // the MPI granted MPI_THREAD_MULTIPLE on every rank
  int agree_interval = 1;      // GCOLL_MEMORY_AGREE_INTERVAL, equal on every rank (else 1)
  int timeout_s = 0;           // GCOLL_TIMEOUT: the smallest nonzero value (0: none anywhere)
  int allreduce_compress = 0;  // GCOLL_ALLREDUCE_COMPRESS's choice, equal on every rank (else 0: off)
  bool engine = true;          // the settings that shape the engine's schedules are equal
  std::vector<UniformDifference> differences;
};

// This rank's vote, from its settings (`effective`: parse_config's, every setting's value
// as a string), whether it can hold device memory at all, and whether its MPI granted
// MPI_THREAD_MULTIPLE (MPI_Query_thread).
std::vector<long long> uniform_vote(const EnvList &effective, bool gpu_usable, bool thread_multiple = false);
// The outcome, from the minimum and the maximum of every vote entry over the ranks.
AgreedSettings agreed_settings(const std::vector<long long> &lo, const std::vector<long long> &hi);
// "GCOLL_X differs between the ranks of a communicator (A to B): outcome".
std::string difference_message(const UniformDifference &d);

// 65536 -> "64K", 1048576 -> "1M", 3000 -> "3000" (what parse_size reads back).
std::string format_size(std::uint64_t bytes);

}  // namespace gcoll
