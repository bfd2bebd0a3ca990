#include <gtest/gtest.h>

#include "coll/decide.h"

namespace gcoll {
namespace {

DispatchInput in(CallMem mem, bool host_engine, bool supports, bool local_device = false, bool device_engine = true) {
  DispatchInput d;
  d.mem = mem;
  d.host_buffers_engine = host_engine;
  d.engine_supports = supports;
  d.local_device = local_device;
  d.device_engine = device_engine;
  return d;
}

TEST(Dispatch, HostBuffersGoToMpiUnlessEngineRequestedAndSupported) {
  EXPECT_EQ(decide(in(CallMem::Host, false, false)), Path::Passthrough);
  EXPECT_EQ(decide(in(CallMem::Host, false, true)), Path::Passthrough);
  EXPECT_EQ(decide(in(CallMem::Host, true, false)), Path::Passthrough);
  EXPECT_EQ(decide(in(CallMem::Host, true, true)), Path::Engine);
}

TEST(Dispatch, DeviceBuffersNeverReachTheMpi) {
  for (int he = 0; he < 2; ++he) {
    EXPECT_EQ(decide(in(CallMem::Device, he, true, true)), Path::Engine);
    EXPECT_EQ(decide(in(CallMem::Device, he, false, true)), Path::Staged);
    EXPECT_EQ(decide(in(CallMem::Device, he, true, true, false)), Path::Staged);  // GCOLL_DEVICE_BUFFERS=staged
    EXPECT_EQ(decide(in(CallMem::Mixed, he, true, true)), Path::Staged);
    EXPECT_EQ(decide(in(CallMem::Mixed, he, false, true)), Path::Staged);
  }
}

TEST(Dispatch, MixedCallsNeverTakeTheEngine) {
  for (int he = 0; he < 2; ++he)
    for (int sup = 0; sup < 2; ++sup) {
      EXPECT_EQ(decide(in(CallMem::Mixed, he, sup, false)), Path::Passthrough);
      EXPECT_EQ(decide(in(CallMem::Mixed, he, sup, true)), Path::Staged);
    }
}

// The agreed kind and this rank's own may differ (between agreements, memory.h): outside
// the engine each rank goes by its own buffers; engine calls stay engine calls (the rank
// deviates through scratch, coll/deviate.h).
TEST(Dispatch, OwnBuffersDecideOutsideTheEngine) {
  EXPECT_EQ(decide(in(CallMem::Device, false, false, false)), Path::Passthrough);  // a host rank: no staging
  EXPECT_EQ(decide(in(CallMem::Device, false, true, false, false)), Path::Passthrough);
  EXPECT_EQ(decide(in(CallMem::Device, false, true, false)), Path::Engine);  // deviates
  EXPECT_EQ(decide(in(CallMem::Host, false, true, true)), Path::Staged);     // MPI: staged
  EXPECT_EQ(decide(in(CallMem::Host, true, true, true)), Path::Engine);      // host engine: deviates
}

// Rank uniformity: every input but local_device is rank-uniform by contract. Ranks that
// differ only in local_device must take protocol-compatible paths: both engine, or both
// in {staged, passthrough}.
TEST(Dispatch, RanksThatDifferOnlyInTheirOwnMemoryAgree) {
  for (int mem = 0; mem < 3; ++mem)
    for (int he = 0; he < 2; ++he)
      for (int de = 0; de < 2; ++de)
        for (int sup = 0; sup < 2; ++sup) {
          const Path a = decide(in(static_cast<CallMem>(mem), he, sup, false, de));
          const Path b = decide(in(static_cast<CallMem>(mem), he, sup, true, de));
          EXPECT_EQ(a == Path::Engine, b == Path::Engine) << mem << he << de << sup;
          if (!sup) EXPECT_NE(a, Path::Engine) << "engine chosen for unsupported arguments";
        }
}

}  // namespace
}  // namespace gcoll
