// Shared harness for the gcoll MPI test programs (GoogleTest under mpirun).
//
// Every test program links harness.cc, which provides main():
//   - MPI_Init / MPI_Finalize around RUN_ALL_TESTS;
//   - only rank 0 keeps GoogleTest's console printer; the other ranks print their own
//     failures (prefixed with "[rank N]") to stderr;
//   - after every test the ranks agree on the verdict (PMPI_Allreduce): a test that
//     failed on any rank is marked failed on rank 0 too, with the failing ranks named;
//   - the exit code is nonzero on every rank if any rank failed;
//   - a watchdog thread ends the program with a message naming the running test and
//     phase when the whole program runs longer than GCOLLTEST_TIMEOUT seconds
//     (default 240), so CTest sees a failure instead of a hang.
//
// Rules for writing tests with this harness:
//   - every rank must run the same tests in the same order and make the same sequence of
//     collective calls; never return early from a test on some ranks only (no ASSERT_*
//     around collectives: compute a local `ok` and use EXPECT_ALL_RANKS(ok));
//   - references are always computed with PMPI_* on copies of the same inputs.
#pragma once

#include <mpi.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gct {

int world_rank();
int world_size();

// Agree on a local verdict across all ranks of `comm` (PMPI_Allreduce with MPI_LAND).
// Collective: every rank of comm must call it.
bool all_ranks(bool local_ok, MPI_Comm comm = MPI_COMM_WORLD);

// What the running test is doing right now (shown by the watchdog on a hang and in
// failure reports). Cheap; call it freely.
void set_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Print one failure line to stderr, prefixed with the rank and the current test.
// At most GCOLLTEST_MAX_REPORTS (default 20) lines per rank and test are printed; the
// rest are counted.
void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// True when GCOLLTEST_VERBOSE=1 (extra output on rank 0).
bool verbose();

const char *op_name(MPI_Op op);
std::string type_name(MPI_Datatype t);
std::string error_class_name(int cls);
int error_class(int rc);  // MPI_Error_class of a return code (MPI_SUCCESS stays 0)

// A communicator used by a test, with a printable description.
struct TestComm {
  MPI_Comm comm = MPI_COMM_NULL;
  std::string name;  // e.g. "split_odd_even(size=2)"
  bool owned = false;
  int rank = 0;
  int size = 0;
};

// Kinds of communicators every collective is tested on.
enum class CommKind { World, Dup, SplitOddEven, SplitReversed };
const char *comm_kind_name(CommKind k);
const std::vector<CommKind> &all_comm_kinds();
// Creates the communicator (collective over MPI_COMM_WORLD). SplitReversed uses
// key = size - rank, so the new rank order is the reverse of the world order.
TestComm make_comm(CommKind k);
inline void PrintTo(CommKind k, std::ostream *os) { *os << comm_kind_name(k); }
void free_comm(TestComm &c);

// RAII helper for TEST_P bodies.
class ScopedComm {
 public:
  explicit ScopedComm(CommKind k) : c_(make_comm(k)) {}
  ~ScopedComm() { free_comm(c_); }
  ScopedComm(const ScopedComm &) = delete;
  ScopedComm &operator=(const ScopedComm &) = delete;
  const TestComm &operator*() const { return c_; }
  const TestComm *operator->() const { return &c_; }

 private:
  TestComm c_;
};

}  // namespace gct

// The verdict of `ok` agreed across all ranks of MPI_COMM_WORLD: every rank records
// the same EXPECT result. Collective.
#define EXPECT_ALL_RANKS(ok)                                                        \
  EXPECT_TRUE(::gct::all_ranks(static_cast<bool>(ok)))                              \
      << "check failed on at least one rank (details on that rank's stderr): " #ok

// Same, over a sub-communicator (every rank of `comm` must call it).
#define EXPECT_ALL_RANKS_IN(comm, ok)                                               \
  EXPECT_TRUE(::gct::all_ranks(static_cast<bool>(ok), (comm)))                      \
      << "check failed on at least one rank (details on that rank's stderr): " #ok
