// Per-communicator state, kept in an attribute of the communicator (freed by the
// attribute's delete callback when the application frees the communicator) and in a
// registry, so that communicators the application never frees are released inside
// MPI_Finalize. Created at the first collective call on it (an attribute lookup
// costs about 15 ns, several % of an 8-byte allreduce, so each thread remembers the last
// communicator it looked up; a freed state invalidates every thread's memory).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/stats.h"
#include "base/status.h"
#include "coll/engine.h"
#include "pmpi/local_memory.h"

namespace gcoll {

struct CommState {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 0;
  int rank = 0;
  bool inter = false;
  std::uint64_t id = 0;               // process-local, for logs
  std::atomic<std::uint64_t> seq{0};  // collectives run through gcoll on this communicator

  // Agreed once, at the first collective call on it (memory.cc: agree_once, every setting
  // that must be equal on every rank, base/uniform_settings.h): whether any rank can hold
  // device memory (-1: not yet agreed), and the settings every rank uses.
  int gpu = -1;
  bool host_engine = false;     // GCOLL_HOST_BUFFERS=engine on every rank
  bool uniform_memory = false;  // GCOLL_UNIFORM_MEMORY on every rank
  bool device_engine = true;    // GCOLL_DEVICE_BUFFERS=engine on every rank
  bool engine_settings = true;  // the settings that shape the engine's schedules are equal
  int timeout_s = 0;            // GCOLL_TIMEOUT as agreed (the smallest nonzero value)
  int device = -1;              // this rank's GPU for the device engine (set at its first device call)
  int agree_interval = 1;       // GCOLL_MEMORY_AGREE_INTERVAL, equal on every rank (else 1)

  // The memory kinds agreed for the engine-eligible calls of this communicator, one entry
  // per collective and size class (memory.cc: agree_memory). Every field changes only at
  // calls every rank makes with the same key, so they are equal on all ranks.
  struct AgreedKind {
    std::uint64_t calls = 0;     // calls with this key so far
    std::uint64_t next = 0;      // the call (index) that agrees next
    std::uint64_t interval = 0;  // calls between the last agreement and the next
    int bits = -1;               // what the last agreement found (memory.cc), -1: none yet
    std::uint64_t answer = 0;    // that answer as memory.h's CallMemory (its bytes)
  };
  static constexpr int kSizeClasses = 65;  // 0 bytes, then [2^(k-1), 2^k) for k = 1..64
  AgreedKind agreed[kColls][kSizeClasses];
  KindMemo memo;  // the last call's buffers and what they were (memory.h: classify_call)

  EngineSlot engine;  // gcoll's engine for it; released with the state (freed / finalize)
};

namespace detail {
// Each thread's last lookup; a state freed since then (whichever) makes it stale.
struct LastLookup {
  // No initialisers: a trivial type in zero-initialised TLS is reached directly, without
  // a TLS init function (and its __tls_get_addr) on every lookup. No handle matches
  // before `state` is set.
  MPI_Comm comm;
  CommState *state;
  std::uint64_t generation;
};
extern thread_local LastLookup t_last __attribute__((tls_model("initial-exec")));
extern std::atomic<std::uint64_t> g_generation;  // bumped whenever a state is freed
Status comm_state_slow(MPI_Comm comm, CommState **out);
}  // namespace detail

// Returns the state of `comm`, creating it (local work only, no communication). A few
// ns when the thread's last lookup was the same communicator.
inline Status comm_state(MPI_Comm comm, CommState **out) {
  const detail::LastLookup &l = detail::t_last;
  if (__builtin_expect(l.comm == comm && l.state != nullptr &&
                           l.generation == detail::g_generation.load(std::memory_order_acquire),
                       1)) {
    *out = l.state;
    return Status::Ok;
  }
  return detail::comm_state_slow(comm, out);
}

int live_comm_states();

// Inside MPI_Finalize: releases the state of every communicator still alive and the keyval.
void release_all_comm_states();

}  // namespace gcoll
