#include <gtest/gtest.h>

#include "pmpi/dispatch.h"

namespace gcoll {
namespace {

DispatchInput in(MemKind mem, bool host_engine, bool supports) {
  DispatchInput d;
  d.mem = mem;
  d.host_buffers_engine = host_engine;
  d.engine_supports = supports;
  return d;
}

TEST(Dispatch, HostBuffersGoToMpiUnlessEngineRequestedAndSupported) {
  EXPECT_EQ(decide(in(MemKind::Host, false, false)), Path::Passthrough);
  EXPECT_EQ(decide(in(MemKind::Host, false, true)), Path::Passthrough);
  EXPECT_EQ(decide(in(MemKind::Host, true, false)), Path::Passthrough);
  EXPECT_EQ(decide(in(MemKind::Host, true, true)), Path::Engine);
}

TEST(Dispatch, DeviceBuffersNeverReachTheMpi) {
  EXPECT_EQ(decide(in(MemKind::Device, false, true)), Path::Engine);
  EXPECT_EQ(decide(in(MemKind::Device, true, true)), Path::Engine);
  EXPECT_EQ(decide(in(MemKind::Device, false, false)), Path::Staged);
  EXPECT_EQ(decide(in(MemKind::Device, true, false)), Path::Staged);
}

// Rank uniformity: ranks may differ only in what dispatch cannot see as uniform (none of
// the inputs, by contract), and where two inputs give different paths, those paths must
// be protocol-compatible unless the difference is in a rank-uniform input.
TEST(Dispatch, EngineChoiceDependsOnlyOnUniformInputs) {
  for (int mem = 0; mem < 2; ++mem)
    for (int he = 0; he < 2; ++he)
      for (int sup = 0; sup < 2; ++sup) {
        const Path p = decide(in(static_cast<MemKind>(mem), he, sup));
        // Same inputs, same answer (a pure function).
        EXPECT_EQ(p, decide(in(static_cast<MemKind>(mem), he, sup)));
        if (!sup) EXPECT_NE(p, Path::Engine) << "engine chosen for unsupported arguments";
      }
}

}  // namespace
}  // namespace gcoll
