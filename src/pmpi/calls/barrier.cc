// MPI_Barrier (and MPI_Ibarrier, MPI_Barrier_init): no buffers, so always the MPI's own
// call, seen and counted (pmpi/call.h).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int barrier(const CallForm &form, MPI_Comm comm) {
  if (!library_active()) return pmpi_barrier(form, comm);
  const auto mpi = [&] { return pmpi_barrier(form, comm); };
  return run_call(
      Coll::Barrier, form, "MPI_Barrier", comm, Buffers{}, engine_declines, mpi,
      [&](StagedBuffers) -> StagedResult { return {mpi()}; }, [] { return std::uint64_t{0}; });
}

}  // namespace gcoll
