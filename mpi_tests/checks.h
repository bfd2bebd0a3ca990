// One checked call of each collective: the MPI_* call under test and the PMPI_*
// reference run on copies of the same inputs, then the results are compared.
//
// Every function here is collective over c.comm and returns this rank's verdict; it
// prints a line (gct::report) for the first problem it finds: rank, collective,
// datatype, op, count, communicator, root, first differing index and the values.
// Checks made besides the comparison with the reference:
//   - both calls return MPI_SUCCESS;
//   - the send buffer is unchanged;
//   - the bytes after the receive buffer (a guard zone) are untouched;
//   - for floating-point reductions, every rank of the communicator got the same bits.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness.h"
#include "types.h"

namespace gct {

// True when rc is MPI_SUCCESS; else reports "fn returned MPI_ERR_X (rc) for ctx".
bool check_rc(int rc, const char *fn, const std::string &ctx);
// Collective over comm: whether every rank passed the same h.
bool same_on_all_ranks(uint64_t h, MPI_Comm comm);

// Bytes after every receive buffer that must stay untouched.
constexpr size_t kGuardBytes = 64;

// Receive buffers (reference and tested) start filled with this pattern.
std::vector<unsigned char> patterned(size_t payload_bytes);
bool guard_intact(const std::vector<unsigned char> &buf, size_t payload_bytes);

// What the data movement checks (bcast, allgather) need to know about a datatype.
struct DataSpec {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::string name;
  size_t extent = 0;                 // bytes per element in the buffer
  std::vector<unsigned char> mask;   // significant bytes of one element
  std::function<void(void *, size_t n, int rank, uint32_t seed)> fill;
};
DataSpec spec_of(const TypeDesc &t);
// For a derived datatype (lower bound 0): random bytes, compared on every byte of the
// extent, so holes (gaps of a vector type) must be left as they were, as PMPI leaves them.
DataSpec spec_of_derived(MPI_Datatype t, const std::string &name);

// Committed derived datatypes with lower bound 0: contiguous(3 x MPI_INT),
// vector(3 blocks of 2 MPI_DOUBLE, stride 4) (gaps between blocks), MPI_INT resized to
// extent 12 (gap after each element), struct{char; double at 8} (padding).
struct DerivedType {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::string name;
};
std::vector<DerivedType> make_derived_types();
void free_derived_types(std::vector<DerivedType> &v);

// Datatypes whose elements are `ints` MPI_INTs each (lower bound 0), in several layouts,
// for calls where each rank uses another datatype with the same type signature:
// MPI_INT; contiguous(3); a vector with a gap; an indexed type whose ints lie out of
// order in memory; MPI_INT resized with a gap; two ints at byte 4 of a 12-byte element.
struct IntLayout {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int ints = 1;  // ints per element
  std::string name;
  bool owned = false;
};
std::vector<IntLayout> int_layouts();
void free_layouts(std::vector<IntLayout> &v);
// The DataSpec of one of them.
DataSpec spec_of_layout(const IntLayout &l);

bool check_allreduce(const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count,
                     bool in_place, uint32_t seed);

// Every rank's input: count x size elements (size: the communicator's); the result (this
// rank's block of the reduction) compared with PMPI_Reduce_scatter_block's. In place: the
// input in the receive buffer, the result its first block.
bool check_reduce_scatter_block(const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count, bool in_place,
                                uint32_t seed);

bool check_bcast(const TestComm &c, const DataSpec &d, size_t count, int root, uint32_t seed);

// in_place: MPI_IN_PLACE as sendbuf (sendcount 0, sendtype MPI_DATATYPE_NULL, as the
// standard says they are ignored). recv may differ from send (same type signature):
// send_count elements of send.type per rank, recv_count of recv.type per rank.
bool check_allgather(const TestComm &c, const DataSpec &send, size_t send_count,
                     const DataSpec &recv, size_t recv_count, bool in_place, uint32_t seed);
inline bool check_allgather(const TestComm &c, const DataSpec &d, size_t count, bool in_place,
                            uint32_t seed) {
  return check_allgather(c, d, count, d, count, in_place, seed);
}

// A seed for the next case; the same sequence on every rank.
uint32_t next_seed();

// Counts every matrix test uses, and the large count (above 1M elements).
const std::vector<size_t> &small_counts();  // 0, 1, 7 (fewer than 8 ranks), 1001 (odd)
constexpr size_t kLargeCount = (size_t{1} << 20) + 3;

}  // namespace gct
