// base/foreign.h (ForeignScope: what other software changes of the process is put back)
// and base/log.h's shared warnings (once per job, by the lowest rank that holds one).
#include <dlfcn.h>
#include <fenv.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "base/foreign.h"
#include "base/log.h"

namespace gcoll {
namespace {

void app_handler(int) {}
void foreign_handler(int) {}

struct SavedAction {
  explicit SavedAction(int sig) : sig_(sig) { sigaction(sig, nullptr, &old_); }
  ~SavedAction() { sigaction(sig_, &old_, nullptr); }
  int sig_;
  struct sigaction old_;
};

void set_handler(int sig, void (*h)(int)) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = h;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

void (*handler_of(int sig))(int) {
  struct sigaction sa;
  sigaction(sig, nullptr, &sa);
  return sa.sa_handler;
}

TEST(ForeignScope, PutsBackWhatTheForeignCodeChanged) {
  SavedAction keep_usr1(SIGUSR1), keep_hup(SIGHUP);
  set_handler(SIGUSR1, app_handler);
  set_handler(SIGHUP, SIG_DFL);
  const int round = fegetround();
  stack_t before;
  sigaltstack(nullptr, &before);
  sigset_t mask_before;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask_before);
  errno = 1234;
  std::vector<char> stack(1 << 16);
  {
    ForeignScope scope;
    EXPECT_TRUE(in_foreign_scope());
    // What UCX's constructor does: its handlers, an alternate stack; and others' habits.
    set_handler(SIGUSR1, foreign_handler);
    set_handler(SIGHUP, foreign_handler);
    stack_t ss{stack.data(), 0, stack.size()};
    sigaltstack(&ss, nullptr);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    fesetround(round == FE_UPWARD ? FE_DOWNWARD : FE_UPWARD);
    sigset_t changed;
    scope.changed_signals(&changed);
    EXPECT_EQ(sigismember(&changed, SIGUSR1), 1);
    EXPECT_EQ(sigismember(&changed, SIGHUP), 1);
    EXPECT_EQ(sigismember(&changed, SIGUSR2), 0);
    errno = 5;
  }
  EXPECT_FALSE(in_foreign_scope());
  EXPECT_EQ(errno, 1234);
  EXPECT_EQ(handler_of(SIGUSR1), &app_handler);
  EXPECT_EQ(handler_of(SIGHUP), SIG_DFL);
  EXPECT_EQ(fegetround(), round);
  stack_t after;
  sigaltstack(nullptr, &after);
  EXPECT_EQ(after.ss_flags & SS_DISABLE, before.ss_flags & SS_DISABLE);
  if (!(before.ss_flags & SS_DISABLE)) EXPECT_EQ(after.ss_sp, before.ss_sp);
  sigset_t mask_after;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask_after);
  EXPECT_EQ(sigismember(&mask_after, SIGUSR2), sigismember(&mask_before, SIGUSR2));
}

TEST(ForeignScope, KeepsSignalsWhenAskedTo) {
  SavedAction keep(SIGUSR1);
  set_handler(SIGUSR1, app_handler);
  {
    ForeignScope scope(ForeignScope::Signals::Keep);
    set_handler(SIGUSR1, foreign_handler);
  }
  EXPECT_EQ(handler_of(SIGUSR1), &foreign_handler);
}

TEST(ForeignScope, Nests) {
  SavedAction keep(SIGUSR1);
  set_handler(SIGUSR1, app_handler);
  {
    ForeignScope outer;
    {
      ForeignScope inner;
      set_handler(SIGUSR1, foreign_handler);
    }
    EXPECT_TRUE(in_foreign_scope());
    EXPECT_EQ(handler_of(SIGUSR1), &app_handler);
  }
  EXPECT_FALSE(in_foreign_scope());
}

// UCX's libucs, loaded for the first time through dlopen_foreign, keeps none of the
// handlers its constructor installs. (Skipped where libucs cannot be loaded, or is loaded
// already: then its constructor ran before and nothing is installed now.)
TEST(ForeignScope, LoadingUcxLeavesTheHandlers) {
  if (void *h = dlopen("libucs.so.0", RTLD_LAZY | RTLD_NOLOAD)) {
    dlclose(h);
    GTEST_SKIP() << "libucs.so.0 is loaded already in this process";
  }
  SavedAction keep_segv(SIGSEGV), keep_hup(SIGHUP);
  set_handler(SIGSEGV, app_handler);
  // SIGHUP as the process had it (SIG_IGN under nohup, which the test job may run under).
  const sighandler_t hup = handler_of(SIGHUP);
  void *h = dlopen_foreign("libucs.so.0", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) GTEST_SKIP() << "no libucs.so.0: " << dlerror();
  EXPECT_EQ(handler_of(SIGSEGV), &app_handler);
  EXPECT_EQ(handler_of(SIGHUP), hup);
}

TEST(SharedWarnings, LowestHolderReportsEachOnceAndEveryHolderForgets) {
  log_defer_shared(true);
  const auto bit = [](SharedWarning w) { return 1u << static_cast<int>(w); };
  warn_shared(SharedWarning::TopoFile, "first text %d", 1);
  warn_shared(SharedWarning::TopoFile, "second text");
  EXPECT_EQ(shared_warnings_pending(), bit(SharedWarning::TopoFile));
  // Rank 2 of 4; ranks 1, 2 and 3 hold it: rank 1 prints, rank 2 forgets it, and does not
  // hold it again.
  std::uint32_t masks[4] = {0, bit(SharedWarning::TopoFile), bit(SharedWarning::TopoFile),
                            bit(SharedWarning::TopoFile)};
  testing::internal::CaptureStderr();
  shared_warnings_report(masks, 4, 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(shared_warnings_pending(), 0u);
  warn_shared(SharedWarning::TopoFile, "again");
  EXPECT_EQ(shared_warnings_pending(), 0u);
  // As rank 1, the lowest holder: one line, the first text, the count.
  warn_shared(SharedWarning::EngineSetup, "engine text %d", 1);
  warn_shared(SharedWarning::EngineSetup, "engine text %d", 2);
  for (std::uint32_t &m : masks) m = m ? bit(SharedWarning::EngineSetup) : 0;
  testing::internal::CaptureStderr();
  shared_warnings_report(masks, 4, 1);
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("WARN: engine text 1 (3 of 4 ranks)\n"), std::string::npos) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  // What no exchange reported goes out at finalize, on its own rank; then at once.
  warn_shared(SharedWarning::NicAcrossSocket, "left over");
  testing::internal::CaptureStderr();
  shared_warnings_flush();
  EXPECT_NE(testing::internal::GetCapturedStderr().find("WARN: left over\n"), std::string::npos);
  testing::internal::CaptureStderr();
  warn_shared(SharedWarning::DeviceEngineSetup, "after finalize");
  EXPECT_NE(testing::internal::GetCapturedStderr().find("WARN: after finalize\n"), std::string::npos);
  EXPECT_EQ(shared_warnings_pending(), 0u);
}

}  // namespace
}  // namespace gcoll
