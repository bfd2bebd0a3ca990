// The collectives of issue 23 (MPI_Reduce, MPI_Gather, MPI_Scatter, MPI_Alltoall,
// MPI_Reduce_scatter, MPI_Allgatherv, MPI_Gatherv, MPI_Scatterv; the engine has
// algorithms for four of them): one call of each as a case, shared by the host checks (check_case,
// gather_reduce_test.cc) and the device ones (gpu/gpu_util.h: dev_check_case).
//
// A case is this rank's initial send and receive buffers and the call on given buffers,
// either the MPI_* call under test or the PMPI_* reference. The check runs the reference
// on host copies, the call under test on other copies (host, or device memory), and
// compares the WHOLE receive buffer byte for byte: the result, and every byte the MPI does
// not write (a non-root's unused buffer, the gaps between a v-form's blocks, the holes of
// a datatype, the root's own block in place) as it was. The send buffer must not change.
// Bit-exact, but for a floating-point reduction's result (CollCase::result_bytes), which
// gcoll's engine may sum in another order than the MPI: compared within the tolerances of
// types.h (TypeDesc::compare), as the allreduce's checks do.
//
// The v-forms' blocks: rank i's count is 0 for i % 3 == 1, else count + i x ceil(count /
// 2) (uneven, some empty); the blocks lie in reverse rank order with a gap of 2 elements
// after each (displacements out of order, bytes between blocks).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "checks.h"

namespace gct {

enum class Coll2 { Reduce, Gather, Scatter, Alltoall, ReduceScatter, Allgatherv, Gatherv, Scatterv };
const char *coll2_name(Coll2 k);
const std::vector<Coll2> &all_coll2();
bool is_reduction(Coll2 k);
bool has_root(Coll2 k);
// Where MPI allows MPI_IN_PLACE for it (on an intracommunicator; the root's only for the
// rooted ones).
bool allows_in_place(Coll2 k);

struct CollCase {
  std::string ctx;  // for messages: collective, type, op, count, communicator, root, in place
  std::vector<unsigned char> send, recv;  // this rank's initial buffers (recv: every byte compared)
  bool send_used = true;                  // false: MPI_IN_PLACE or not significant here
  // The call on (send, recv); reference: PMPI_*, else MPI_*.
  std::function<int(const void *send, void *recv, bool reference)> call;
  // Reductions: the result's first bytes of the receive buffer, compared element-wise
  // within the type's tolerance (count elements; the rest of the buffer bit-exact).
  size_t result_bytes = 0;
  std::function<size_t(const void *got, const void *ref, size_t *first, std::string *detail)> result_compare;
  // Where the MPI's own MPI_MAX / MPI_MIN on this unsigned type are wrong (compared as
  // signed, types.h reference_type): the reference above runs on a correct substitute
  // type, and this runs PMPI_* on the type itself, whose answer is accepted too (gcoll
  // hands staged and passed-through calls to that MPI). Empty elsewhere.
  std::function<int(const void *send, void *recv)> mpi_own;
};

// The answer of k.mpi_own on copies of k's buffers (empty when k has none, or it failed).
// Collective over the case's communicator when k.mpi_own is set (alike on every rank: it
// depends on the type and op only).
std::vector<unsigned char> mpi_own_result(const CollCase &k);

// Compares a tested receive buffer with the reference (see above); false, reported, at
// the first difference.
// `alt` (mpi_own_result): a second accepted answer where not empty.
bool compare_recv(const CollCase &k, const std::string &ctx, const unsigned char *got, const unsigned char *ref,
                  const std::vector<unsigned char> &alt = {});

// A reduction (Reduce, ReduceScatter) of predefined type t with op; `count`: Reduce's
// count, ReduceScatter's base count of the uneven blocks.
CollCase reduction_case(Coll2 k, const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count, int root,
                        bool in_place, uint32_t seed);
// A data movement of `count` elements per block (the v-forms: the base count): send and
// recv may be different datatypes of the same type signature, send_count x send for
// count x recv; the v-forms use recv's counts for both sides (send must be recv then).
CollCase movement_case(Coll2 k, const TestComm &c, const DataSpec &send, size_t send_count, const DataSpec &recv,
                       size_t count, int root, bool in_place, uint32_t seed);
inline CollCase movement_case(Coll2 k, const TestComm &c, const DataSpec &d, size_t count, int root, bool in_place,
                              uint32_t seed) {
  return movement_case(k, c, d, count, d, count, root, in_place, seed);
}

// The host check (see above). Collective over c.comm.
bool check_case(const TestComm &c, const CollCase &k);

}  // namespace gct
