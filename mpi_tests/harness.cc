// main() and helpers for the gcoll MPI test programs. See harness.h.
#include "harness.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace gct {
namespace {

int g_rank = 0;
int g_size = 1;
int g_max_reports = 20;
int g_reports = 0;      // printed in the current test
int g_suppressed = 0;   // not printed in the current test
bool g_verbose = false;

// Watchdog state. The strings are written by the test thread and read by the watchdog.
std::mutex g_mu;
std::condition_variable g_cv;
bool g_stop = false;
char g_test[256] = "(before the first test)";
char g_phase[512] = "";

void set_test(const char *name) {
  std::lock_guard<std::mutex> lk(g_mu);
  snprintf(g_test, sizeof g_test, "%s", name);
  g_phase[0] = '\0';
}

void watchdog(double seconds) {
  std::unique_lock<std::mutex> lk(g_mu);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(seconds));
  if (g_cv.wait_until(lk, deadline, [] { return g_stop; })) return;
  // Timed out. Do not call into MPI from here (the test thread may hold MPI locks and
  // the program runs at MPI_THREAD_SINGLE): print and leave; mpirun then ends the job.
  fprintf(stderr,
          "[rank %d] WATCHDOG: test program exceeded GCOLLTEST_TIMEOUT=%g s; "
          "running test: %s; phase: %s. Exiting with status 124.\n",
          g_rank, seconds, g_test, g_phase[0] ? g_phase : "(none)");
  fflush(stderr);
  fflush(stdout);
  _exit(124);
}

// On ranks other than 0: print failed assertions (the default printer is removed).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult &r) override {
    if (!r.failed()) return;
    // The "failed on N ranks" line added by AgreementListener is for rank 0's output.
    const char *file = r.file_name() ? r.file_name() : "";
    if (strstr(file, "harness.cc") != nullptr) return;
    std::string msg = r.message() ? r.message() : "";
    std::string out;
    size_t start = 0;
    while (start <= msg.size()) {  // every line prefixed with the rank
      size_t end = msg.find('\n', start);
      if (end == std::string::npos) end = msg.size();
      out += "[rank " + std::to_string(g_rank) + "]   " + msg.substr(start, end - start) + "\n";
      start = end + 1;
    }
    fprintf(stderr, "[rank %d] %s:%d: Failure in %s\n%s", g_rank, file, r.line_number(), g_test,
            out.c_str());
    fflush(stderr);
  }
};

// Tracks the running test for the watchdog and report(), and agrees on each test's
// verdict across ranks. GoogleTest calls OnTestEnd of later-appended listeners first,
// so a failure added here is printed by rank 0's default printer for this test.
class AgreementListener : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo &t) override {
    std::string name = std::string(t.test_suite_name()) + "." + t.name();
    set_test(name.c_str());
    g_reports = 0;
    g_suppressed = 0;
  }
  void OnTestEnd(const ::testing::TestInfo &t) override {
    int failed = t.result()->Failed() ? 1 : 0;
    int in[2] = {failed, failed ? g_rank : g_size};
    int out[2] = {0, 0};
    int sum_in = failed, nfailed = 0;
    PMPI_Allreduce(&sum_in, &nfailed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&in[1], &out[1], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (g_suppressed > 0) {
      fprintf(stderr, "[rank %d] %s: %d more failure line(s) not printed\n", g_rank, g_test,
              g_suppressed);
    }
    if (nfailed > 0 && !failed) {
      ADD_FAILURE() << "test failed on " << nfailed << " of " << g_size
                    << " rank(s); first failing rank: " << out[1]
                    << " (see its [rank N] lines on stderr)";
    }
    set_test("(between tests)");
  }
};

double env_double(const char *name, double def) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end = nullptr;
  double d = strtod(v, &end);
  return (end && *end == '\0') ? d : def;
}

}  // namespace

int world_rank() { return g_rank; }
int world_size() { return g_size; }
bool verbose() { return g_verbose; }

bool all_ranks(bool local_ok, MPI_Comm comm) {
  int in = local_ok ? 1 : 0, out = 0;
  PMPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, comm);
  return out != 0;
}

void set_phase(const char *fmt, ...) {
  std::lock_guard<std::mutex> lk(g_mu);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_phase, sizeof g_phase, fmt, ap);
  va_end(ap);
}

void report(const char *fmt, ...) {
  if (g_reports >= g_max_reports) {
    ++g_suppressed;
    return;
  }
  ++g_reports;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[rank %d] %s: %s\n", g_rank, g_test, buf);
  fflush(stderr);
}

const char *op_name(MPI_Op op) {
  struct {
    MPI_Op op;
    const char *name;
  } const ops[] = {
      {MPI_MAX, "MPI_MAX"},       {MPI_MIN, "MPI_MIN"},       {MPI_SUM, "MPI_SUM"},
      {MPI_PROD, "MPI_PROD"},     {MPI_LAND, "MPI_LAND"},     {MPI_LOR, "MPI_LOR"},
      {MPI_LXOR, "MPI_LXOR"},     {MPI_BAND, "MPI_BAND"},     {MPI_BOR, "MPI_BOR"},
      {MPI_BXOR, "MPI_BXOR"},     {MPI_MINLOC, "MPI_MINLOC"}, {MPI_MAXLOC, "MPI_MAXLOC"},
      {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"}, {MPI_OP_NULL, "MPI_OP_NULL"},
  };
  for (const auto &o : ops)
    if (o.op == op) return o.name;
  return "(user op)";
}

std::string type_name(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return "MPI_DATATYPE_NULL";
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  PMPI_Type_get_name(t, name, &len);
  return len > 0 ? std::string(name, len) : std::string("(derived datatype)");
}

std::string error_class_name(int cls) {
  struct {
    int cls;
    const char *name;
  } const classes[] = {
      {MPI_SUCCESS, "MPI_SUCCESS"},     {MPI_ERR_BUFFER, "MPI_ERR_BUFFER"},
      {MPI_ERR_COUNT, "MPI_ERR_COUNT"}, {MPI_ERR_TYPE, "MPI_ERR_TYPE"},
      {MPI_ERR_TAG, "MPI_ERR_TAG"},     {MPI_ERR_COMM, "MPI_ERR_COMM"},
      {MPI_ERR_RANK, "MPI_ERR_RANK"},   {MPI_ERR_ROOT, "MPI_ERR_ROOT"},
      {MPI_ERR_GROUP, "MPI_ERR_GROUP"}, {MPI_ERR_OP, "MPI_ERR_OP"},
      {MPI_ERR_ARG, "MPI_ERR_ARG"},     {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN"},
      {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"}, {MPI_ERR_OTHER, "MPI_ERR_OTHER"},
      {MPI_ERR_INTERN, "MPI_ERR_INTERN"}, {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM"},
  };
  for (const auto &c : classes)
    if (c.cls == cls) return c.name;
  return "error class " + std::to_string(cls);
}

int error_class(int rc) {
  if (rc == MPI_SUCCESS) return MPI_SUCCESS;
  int cls = -1;
  if (PMPI_Error_class(rc, &cls) != MPI_SUCCESS) return -1;
  return cls;
}

const char *comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::World: return "World";
    case CommKind::Dup: return "Dup";
    case CommKind::SplitOddEven: return "SplitOddEven";
    case CommKind::SplitReversed: return "SplitReversed";
  }
  return "?";
}

const std::vector<CommKind> &all_comm_kinds() {
  static const std::vector<CommKind> kinds = {CommKind::World, CommKind::Dup,
                                              CommKind::SplitOddEven, CommKind::SplitReversed};
  return kinds;
}

TestComm make_comm(CommKind k) {
  TestComm c;
  switch (k) {
    case CommKind::World:
      c.comm = MPI_COMM_WORLD;
      c.name = "MPI_COMM_WORLD";
      break;
    case CommKind::Dup:
      MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
      c.name = "dup(MPI_COMM_WORLD)";
      c.owned = true;
      break;
    case CommKind::SplitOddEven:
      MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &c.comm);
      c.name = std::string("split_odd_even(") + (g_rank % 2 ? "odd" : "even") + ")";
      c.owned = true;
      break;
    case CommKind::SplitReversed:
      MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &c.comm);
      c.name = "split_reversed(key=size-rank)";
      c.owned = true;
      break;
  }
  MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c.comm, &c.rank);
  MPI_Comm_size(c.comm, &c.size);
  c.name += "[size=" + std::to_string(c.size) + "]";
  return c;
}

void free_comm(TestComm &c) {
  if (c.owned && c.comm != MPI_COMM_NULL) MPI_Comm_free(&c.comm);
  c.comm = MPI_COMM_NULL;
  c.owned = false;
}

// Every program must run the collectives of gcoll, not the MPI's (link order, see
// mpi_tests/CMakeLists.txt). GCOLLTEST_PLAIN_MPI=1 skips this, to run the programs
// against plain MPI (linked without gcoll) while developing them.
extern "C" const char *gcoll_version(void) __attribute__((weak));

TEST(Harness, CollectivesResolveToGcoll) {
  if (env_double("GCOLLTEST_PLAIN_MPI", 0) != 0) GTEST_SKIP() << "GCOLLTEST_PLAIN_MPI=1";
  EXPECT_TRUE(gcoll_version != nullptr) << "the program is not linked with libgcoll.so";
  EXPECT_NE(reinterpret_cast<void *>(&MPI_Allreduce), reinterpret_cast<void *>(&PMPI_Allreduce));
  EXPECT_NE(reinterpret_cast<void *>(&MPI_Bcast), reinterpret_cast<void *>(&PMPI_Bcast));
  EXPECT_NE(reinterpret_cast<void *>(&MPI_Allgather), reinterpret_cast<void *>(&PMPI_Allgather));
}

}  // namespace gct

int main(int argc, char **argv) {
  // GCOLLTEST_THREAD_MULTIPLE=1: MPI_Init_thread asking for MPI_THREAD_MULTIPLE (the
  // progress thread then runs the engine's calls across nodes too: coll/team.h, thread_mpi).
  const char *tm = getenv("GCOLLTEST_THREAD_MULTIPLE");
  if (tm && strcmp(tm, "1") == 0) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) fprintf(stderr, "harness: the MPI granted thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  PMPI_Comm_rank(MPI_COMM_WORLD, &gct::g_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &gct::g_size);
  // Correctness tests check return codes themselves; the error-handling tests set
  // their own handlers.
  PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  PMPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

  ::testing::InitGoogleTest(&argc, argv);
  gct::g_max_reports = static_cast<int>(gct::env_double("GCOLLTEST_MAX_REPORTS", 20));
  gct::g_verbose = gct::env_double("GCOLLTEST_VERBOSE", 0) != 0;

  auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (gct::g_rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    delete listeners.Release(listeners.default_xml_generator());
    listeners.Append(new gct::RankFailurePrinter);
  }
  listeners.Append(new gct::AgreementListener);

  double timeout = gct::env_double("GCOLLTEST_TIMEOUT", 240);
  std::thread dog;
  if (timeout > 0) dog = std::thread(gct::watchdog, timeout);

  int local = RUN_ALL_TESTS();
  int global = 0;
  PMPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

  if (dog.joinable()) {
    {
      std::lock_guard<std::mutex> lk(gct::g_mu);
      gct::g_stop = true;
    }
    gct::g_cv.notify_all();
    dog.join();
  }
  if (gct::g_rank == 0 && global != 0 && local == 0)
    fprintf(stderr, "[rank 0] some test failed on another rank\n");
  MPI_Finalize();
  return global != 0 ? 1 : 0;
}
