// The process-wide variables every intercepted call reads (pmpi/runtime.h: the library's
// mode; pmpi/mpi_flavor.h: whether the MPI is a foreign one; pmpi/comm_state.h: the
// generation of the communicators' states; base/stats.h: the process's stats), defined in
// one section of their own: packed into a cache line or two of one page, instead of a line
// on each of several pages that a rank sharing its core with another meets cold after
// every switch between them.
#pragma once

#define GCOLL_HOT_DATA __attribute__((section("gcoll_hot")))
