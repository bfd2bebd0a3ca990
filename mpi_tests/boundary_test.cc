// gcoll_mpi_boundary: no C++ exception from gcoll reaches the application.
//   Boundary.*     the boundary itself (pmpi/errors.h, linked here from gcoll_core): an
//                  exception becomes MPI_ERR_NO_MEM (std::bad_alloc) or MPI_ERR_INTERN
//                  through the communicator's error handler; callbacks MPI makes into
//                  gcoll never throw.
//   EngineSetup.*  run with GCOLL_HOST_BUFFERS=engine GCOLL_CHUNK_SIZE=1G: the engine's
//                  4 x chunk scratch cannot be allocated under a lowered address-space
//                  limit (std::bad_alloc inside the collective setup); every rank must
//                  still agree to fall back to the MPI, and the call gives the PMPI result.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include "harness.h"
#include "pmpi/errors.h"

namespace gct {
namespace {

int g_handler_calls = 0;
int g_handler_class = MPI_SUCCESS;

void counting_handler(MPI_Comm *, int *code, ...) {
  ++g_handler_calls;
  MPI_Error_class(*code, &g_handler_class);
}

TEST(Boundary, ExceptionsBecomeMpiErrorsThroughTheHandler) {
  MPI_Comm c;
  PMPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Errhandler h;
  PMPI_Comm_create_errhandler(counting_handler, &h);
  PMPI_Comm_set_errhandler(c, h);
  bool ok = true;
  int counted = 0;
  const auto count = [&] { ++counted; };

  g_handler_calls = 0;
  int rc = gcoll::guarded(c, "test", []() -> int { throw std::bad_alloc(); }, count);
  if (rc != MPI_ERR_NO_MEM || g_handler_calls != 1 || g_handler_class != MPI_ERR_NO_MEM || counted != 1) {
    report("std::bad_alloc: rc %d (want MPI_ERR_NO_MEM), handler called %d time(s) with class %d, counted %d", rc,
           g_handler_calls, g_handler_class, counted);
    ok = false;
  }
  g_handler_calls = 0;
  rc = gcoll::guarded(c, "test", []() -> int { throw std::runtime_error("boom"); }, count);
  if (rc != MPI_ERR_INTERN || g_handler_calls != 1 || g_handler_class != MPI_ERR_INTERN || counted != 2) {
    report("std::runtime_error: rc %d (want MPI_ERR_INTERN), handler called %d time(s) with class %d, counted %d",
           rc, g_handler_calls, g_handler_class, counted);
    ok = false;
  }
  g_handler_calls = 0;
  rc = gcoll::guarded(c, "test", []() -> int { throw 42; }, count);  // not even a std::exception
  if (rc != MPI_ERR_INTERN || g_handler_calls != 1) {
    report("throw 42: rc %d (want MPI_ERR_INTERN), handler called %d time(s)", rc, g_handler_calls);
    ok = false;
  }
  g_handler_calls = 0;
  rc = gcoll::guarded(c, "test", [] { return MPI_SUCCESS; }, count);
  if (rc != MPI_SUCCESS || g_handler_calls != 0 || counted != 3) {
    report("no exception: rc %d, handler called %d time(s), counted %d", rc, g_handler_calls, counted);
    ok = false;
  }
  if (gcoll::no_throw("test", [] { throw std::bad_alloc(); }) || !gcoll::no_throw("test", [] {})) {
    report("no_throw does not report what happened");
    ok = false;
  }
  PMPI_Errhandler_free(&h);
  PMPI_Comm_free(&c);
  EXPECT_ALL_RANKS(ok);
}

// Lowers this process's address-space limit to what it maps now plus `extra` bytes, and
// restores it when destroyed.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(unsigned long long extra) {
    getrlimit(RLIMIT_AS, &saved_);
    unsigned long long vm_kib = 0;
    if (FILE *f = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "VmSize: %llu kB", &vm_kib) == 1) break;
      std::fclose(f);
    }
    rlimit r = saved_;
    r.rlim_cur = static_cast<rlim_t>(vm_kib * 1024 + extra);
    set_ = vm_kib > 0 && setrlimit(RLIMIT_AS, &r) == 0;
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  bool set() const { return set_; }

 private:
  rlimit saved_{};
  bool set_ = false;
};

TEST(EngineSetup, AllocationFailureFallsBackToTheMpi) {
  const char *chunk = std::getenv("GCOLL_CHUNK_SIZE");
  if (!chunk || std::strcmp(chunk, "1G") != 0) GTEST_SKIP() << "needs GCOLL_CHUNK_SIZE=1G (see the CTest test)";
  int n = 0;
  PMPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm c;
  PMPI_Comm_dup(MPI_COMM_WORLD, &c);  // a communicator without an engine yet
  PMPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  const int count = 4099;
  std::vector<int> in(count), ref(count), got(count, -1);
  for (int i = 0; i < count; ++i) in[static_cast<size_t>(i)] = world_rank() * 1000 + i;
  PMPI_Allreduce(in.data(), ref.data(), count, MPI_INT, MPI_SUM, c);
  bool ok = true;
  int rc = MPI_SUCCESS;
  {
    // Room for the node's shared segment (2 x ranks x chunk) and 2 GiB more, not for the
    // engine's 4 GiB scratch on top.
    AddressSpaceLimit limit((2ull * static_cast<unsigned long long>(n) << 30) + (2ull << 30));
    if (!limit.set()) {
      report("could not lower RLIMIT_AS");
      ok = false;
    }
    rc = MPI_Allreduce(in.data(), got.data(), count, MPI_INT, MPI_SUM, c);
  }
  if (rc != MPI_SUCCESS) {
    report("MPI_Allreduce returned %s", error_class_name(error_class(rc)).c_str());
    ok = false;
  } else if (got != ref) {
    report("MPI_Allreduce after a failed engine setup differs from PMPI_Allreduce");
    ok = false;
  }
  PMPI_Comm_free(&c);
  EXPECT_ALL_RANKS(ok);
}

}  // namespace
}  // namespace gct
