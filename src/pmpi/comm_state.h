// Per-communicator state (the communicator's team, coll/team.h), kept in an attribute of
// the communicator (freed by the attribute's delete callback when the application frees
// the communicator) and in a registry, so that communicators the application never frees are released inside
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
#include "coll/team.h"

namespace gcoll {

// The communicator's team (coll/team.h), held by the attribute.
struct CommState : Team {};

namespace detail {
// Each thread's last lookup; a state freed since then (whichever) makes it stale.
struct LastLookup {
  // No initialisers: zero-initialised TLS. Declared __thread, not thread_local: an extern
  // thread_local is reached through a check of its TLS init function (a GOT load and a
  // branch) in every other file; __thread (trivial types only) is one %fs-relative load.
  // No handle matches before `state` is set.
  MPI_Comm comm;
  CommState *state;
  std::uint64_t generation;
};
extern __thread LastLookup t_last __attribute__((tls_model("initial-exec")));
extern std::atomic<std::uint64_t> g_generation;  // bumped whenever a state is freed
Status comm_state_slow(MPI_Comm comm, CommState **out);
}  // namespace detail

// The thread's last lookup if it was `comm` and is still current, else nullptr (nothing
// asked, nothing created).
inline CommState *comm_state_cached(MPI_Comm comm) {
  const detail::LastLookup &l = detail::t_last;
  if (l.comm == comm && l.state != nullptr && l.generation == detail::g_generation.load(std::memory_order_acquire))
    return l.state;
  return nullptr;
}

// Returns the state of `comm`, creating it (local work only, no communication). A few
// ns when the thread's last lookup was the same communicator.
inline Status comm_state(MPI_Comm comm, CommState **out) {
  if (CommState *cs = comm_state_cached(comm); __builtin_expect(cs != nullptr, 1)) {
    *out = cs;
    return Status::Ok;
  }
  return detail::comm_state_slow(comm, out);
}

// The state of `comm` if it has one (nullptr: none yet); creates nothing.
CommState *comm_state_peek(MPI_Comm comm);

int live_comm_states();

// Inside MPI_Finalize: releases the state of every communicator still alive and the keyval.
void release_all_comm_states();

}  // namespace gcoll
