// Per-communicator state, kept in an attribute of the communicator (freed by the
// attribute's delete callback when the application frees the communicator) and in a
// registry, so that communicators the application never frees are released inside
// MPI_Finalize. Created on demand by the paths that need it (never on the passthrough
// hot path: an attribute lookup costs about 15 ns, several % of an 8-byte allreduce).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/status.h"
#include "coll/engine.h"

namespace gcoll {

struct CommState {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 0;
  int rank = 0;
  bool inter = false;
  std::uint64_t id = 0;               // process-local, for logs
  std::atomic<std::uint64_t> seq{0};  // collectives run through gcoll on this communicator

  enum class EngineState { Untried, Ready, Unavailable };
  std::mutex engine_mu;
  EngineState engine_state = EngineState::Untried;
  std::unique_ptr<Engine> engine;  // released with the state (communicator freed / finalize)
};

// Returns the state of `comm`, creating it (local work only, no communication).
Status comm_state(MPI_Comm comm, CommState **out);

int live_comm_states();

// Inside MPI_Finalize: releases the state of every communicator still alive and the keyval.
void release_all_comm_states();

}  // namespace gcoll
