// What every collective's argument file (pmpi/calls/<name>.cc) calls: run_call() checks
// the communicator, finds its team (pmpi/comm_state.h) and runs the call's path
// (coll/team_call.h) behind the exception guard, errors raised through the communicator's
// error handler (pmpi/errors.h).
#pragma once

#include <mpi.h>

#include <cstdint>

#include "base/stats.h"
#include "coll/team_call.h"
#include "pmpi/comm_state.h"
#include "pmpi/errors.h"
#include "pmpi/mpi_types.h"
#include "pmpi/runtime.h"

namespace gcoll {

// Size in bytes of `count` elements, for stats (after the MPI accepted the datatype).
std::uint64_t payload(long long count, MPI_Datatype type);
// The same for a predefined datatype, its size remembered per thread.
std::uint64_t payload_predefined(long long count, MPI_Datatype type);

bool valid_buffer(const void *p, long long count);
int comm_size(MPI_Comm comm);
// The collectives without an engine algorithm (pmpi/calls/reduce.cc and after):
// whether any of the n counts is negative (an array the MPI reads), their sum, and the
// bytes of the blocks of a v-form (sum of counts x type size).
bool any_negative(const int *counts, int n);
long long sum_of(const int *counts, int n);
// A prepare() for them: the engine has no algorithm, so it never takes the call (host
// buffers go to the MPI, device ones are staged, each rank by its own buffers).
inline bool engine_declines(CollArgs *, PackPlan *) { return false; }

template <class Prepare, class Mpi, class Staged, class Bytes>
inline int dispatch(Coll coll, const char *func, MPI_Comm comm, Buffers bufs, Prepare &&prepare, Mpi &&mpi,
                    Staged &&staged, Bytes &&bytes) {
  if (comm == MPI_COMM_NULL) {  // Open MPI 4.1.4 segfaults on this in MPI_Allgather
    process_stats().record(coll, Path::Error, 0);
    return raise_error(comm, Status::ErrComm, func, "the communicator is MPI_COMM_NULL");
  }
  // The communicator's team (a thread-local memory makes this a few ns).
  CommState *cs = nullptr;
  if (!ok(comm_state(comm, &cs))) cs = nullptr;  // an invalid communicator: the MPI reports it
  if (cs && cs->inter) cs = nullptr;              // the engine never takes intercommunicators
  return team_call(cs, coll, func, bufs, prepare, mpi, staged, bytes,
                   [&](Status st, const char *why) { return raise_error(comm, st, func, why); });
}

// dispatch() behind the exception boundary (errors.h): a C++ exception from gcoll's own
// code becomes MPI_ERR_NO_MEM / MPI_ERR_INTERN through the error handler, counted as an
// error, and never reaches the application.
template <class Prepare, class Mpi, class Staged, class Bytes>
inline int run_call(Coll coll, const char *func, MPI_Comm comm, Buffers bufs, Prepare &&prepare, Mpi &&mpi,
                    Staged &&staged, Bytes &&bytes) {
  return guarded(
      comm, func, [&] { return dispatch(coll, func, comm, bufs, prepare, mpi, staged, bytes); },
      [&] { process_stats().record(coll, Path::Error, 0); });
}

}  // namespace gcoll
