// MPI_Allgatherv: its arguments -> the engine's call (coll/allgather.cc: the allgather's
// pipeline with uneven blocks), the MPI's and the staged one (pmpi/call.h). Every rank
// sends sendcount x sendtype and receives block i (recvcounts[i] x recvtype) at displs[i]
// extents, for each rank i of the communicator (an intercommunicator's remote group). In
// place: this rank's block is its input. A staged call copies back the blocks the MPI
// writes, never the bytes between them.
//
// The engine goes by type signature (coll/pack.h), from what MPI requires equal on every
// rank: block i carries recvcounts[i] x size(recvtype) bytes on every rank; displacements
// and datatypes may differ per rank (the same signature), so they shape only this rank's
// local copies (CollArgs::block_offsets) or its packing: a rank whose receive type is not
// one run per block, or whose send layout is not, takes the same engine call on packed
// host scratch (the blocks one after the other), unpacked block by block at its
// displacements after the call.
#include <algorithm>
#include <vector>

#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

int allgatherv(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active())
    return pmpi_allgatherv(form, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int n = comm == MPI_COMM_NULL ? 0 : comm_group_size(comm);
  // Negative counts: reported here (MPICH crashes on some); a missing array goes to the MPI.
  const bool negative = any_negative(recvcounts, n) || (!in_place && sendcount < 0);
  const long long total = sum_of(recvcounts, n);
  Buffers bufs;
  if (!in_place && sendcount > 0) bufs.send = sendbuf;
  if (recvcounts && displs && total > 0) bufs.recv = recvbuf;
  // The engine's view of the blocks (CollArgs::block_bytes, block_offsets): this call's,
  // [bytes of n blocks][their offsets], on the stack up to kSmall / 2 ranks (an engine op
  // keeps its own copy: coll/engine_op.cc), else one allocation.
  constexpr int kSmall = 64;
  std::size_t small[kSmall];
  std::vector<std::size_t> large;
  const auto prepare = [&](CollArgs *a, PackPlan *plan) {
    const int rank = comm_rank(comm);
    ByteLayout elem, most, sl;
    int max_count = 0;
    for (int i = 0; recvcounts && i < n; ++i) max_count = std::max(max_count, recvcounts[i]);
    // `most`: the largest block's layout; direct (one run per block) for every block then.
    if (!recvcounts || !displs || negative || rank < 0 || rank >= n || !byte_layout(1, recvtype, &elem) ||
        !byte_layout(max_count, recvtype, &most) || !valid_buffer(recvbuf, total))
      return false;
    const MPI_Aint extent = elem.extent;
    // The send signature must carry exactly my block.
    if (!in_place && (!byte_layout(sendcount, sendtype, &sl) || !valid_buffer(sendbuf, sendcount) ||
                      sl.bytes != elem.bytes * static_cast<std::size_t>(recvcounts[rank])))
      return false;
    std::size_t *blocks = small;
    if (2 * n > kSmall) {
      large.assign(2 * static_cast<std::size_t>(n), 0);
      blocks = large.data();
    } else {
      std::fill_n(small, 2 * n, std::size_t{0});
    }
    std::size_t *block_bytes = blocks, *block_offsets = blocks + n;
    // Byte offsets of the blocks from recvbuf; negative displacements: from the lowest
    // block, where the engine's recvbuf then points (unsigned arithmetic, modulo 2^64).
    MPI_Aint lo = 0;
    for (int i = 0; i < n; ++i) {
      block_bytes[i] = elem.bytes * static_cast<std::size_t>(recvcounts[i]);
      if (!block_bytes[i]) continue;
      const MPI_Aint off = static_cast<MPI_Aint>(displs[i]) * extent + most.offset;
      block_offsets[i] = static_cast<std::size_t>(off);
      lo = std::min(lo, off);
    }
    for (int i = 0; i < n; ++i)
      if (block_bytes[i]) block_offsets[i] -= static_cast<std::size_t>(lo);
    a->sendbuf = in_place ? nullptr : sendbuf;
    a->recvbuf = static_cast<char *>(recvbuf) + lo;
    a->dtype = DType::Uint8;
    a->elem = 1;
    a->count = elem.bytes * static_cast<std::size_t>(total);
    a->block_bytes = block_bytes;
    a->block_offsets = block_offsets;
    if (!in_place && sl.bytes) plan->send = PackSide{const_cast<void *>(sendbuf), sendcount, sendtype, sl, false};
    if (a->count) {
      plan->recv = PackSide{recvbuf, 0, recvtype, most, false};
      plan->recv.counts = recvcounts;
      plan->recv.displs = displs;
    }
    return true;
  };
  return run_call(
      Coll::Allgatherv, form, "MPI_Allgatherv", comm, bufs, prepare,
      [&] {
        if (negative) return raise_error(comm, Status::ErrCount, func_of(Coll::Allgatherv, form), "negative count");
        return pmpi_allgatherv(form, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {raise_error(comm, Status::ErrCount, func_of(Coll::Allgatherv, form), "negative count")};
        return staged_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, sb);
      },
      [&] { return payload(total, recvtype); });
}

unsigned long long allgatherv_large_bytes(const void *, MPI_Count, MPI_Datatype, void *, const MPI_Count recvcounts[],
                                          const MPI_Aint[], MPI_Datatype recvtype, MPI_Comm comm) {
  const int n = array_length(comm, ArrayRanks::Group, 0);
  long long total = 0;
  for (int i = 0; recvcounts && i < n; ++i) total += recvcounts[i] > 0 ? recvcounts[i] : 0;
  return payload(total, recvtype);
}

}  // namespace gcoll
