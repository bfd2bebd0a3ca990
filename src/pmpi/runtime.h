// Library lifecycle: lazy initialisation on the first intercepted call, teardown inside
// MPI_Finalize (delete callback of an attribute on MPI_COMM_SELF), and stats output.
#pragma once

#include <atomic>

namespace gcoll {

enum class Mode : int { Uninit = 0, Active, Disabled, Finalized };

namespace detail {
extern std::atomic<int> g_mode;
bool init_slow();  // returns whether the library is active after initialisation
}

// True when the call should go through gcoll; false: straight to PMPI_*.
// Initialises on first use. Cheap on the hot path (one relaxed atomic load).
inline bool library_active() {
  const int m = detail::g_mode.load(std::memory_order_acquire);
  if (__builtin_expect(m == static_cast<int>(Mode::Active), 1)) return true;
  if (m == static_cast<int>(Mode::Uninit)) return detail::init_slow();
  return false;
}

// Called from the MPI_Finalize wrappers before PMPI_Finalize: writes the stats file
// (collective over MPI_COMM_WORLD, only when GCOLL_STATS_FILE is set).
void before_finalize();

}  // namespace gcoll
