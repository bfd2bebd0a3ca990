// gcoll_cleanup_segments (include/gcoll/gcoll.h): segments left in /dev/shm by killed jobs
// (mem/host_space.h, cleanup_segments). Used by `gcoll_info --cleanup`.
#include "gcoll/gcoll.h"

#include "base/log.h"
#include "mem/host_space.h"

#define GCOLL_EXPORT __attribute__((visibility("default")))

namespace {
constexpr double kMinAgeSeconds = 60;  // a live job's segment exists for milliseconds
}

extern "C" GCOLL_EXPORT int gcoll_cleanup_segments(FILE *out, int dry_run) {
  try {
    return gcoll::cleanup_segments(kMinAgeSeconds, dry_run != 0, out);
  } catch (...) {
    gcoll::log_exception("gcoll_cleanup_segments");
    return -1;
  }
}
