/* Test-only: makes an MPI that spins while it waits yield the CPU, as Open MPI does with
 * OMPI_MCA_mpi_yield_when_idle=1 (cmake/GcollMpiTest.cmake). MPICH's ch4:ucx device polls
 * ucp_worker_progress() without ever yielding: with more ranks than cores (CI: 2 cores,
 * up to 5 ranks) each wait burns a whole time slice, and one correctness test took 80-240 s
 * instead of a few. Preloaded under the MPI test programs of builds for such MPIs only
 * (GCOLL_MPI other than openmpi): every ucp_worker_progress() call that found nothing to
 * do is followed by sched_yield(). Never part of libgcoll.so. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

typedef unsigned (*progress_fn)(void *);

unsigned ucp_worker_progress(void *worker) {
  static progress_fn real;
  if (!real) real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
  const unsigned n = real(worker);
  if (n == 0) sched_yield();
  return n;
}
