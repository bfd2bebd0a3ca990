/*
 * allreduce_overhead: per-call time of a small MPI_Allreduce, to measure what
 * interposing libgcoll.so costs. Plain MPI program (does not link gcoll): run it
 * with and without `-x LD_PRELOAD=libgcoll.so` (see run_overhead.sh).
 *
 *   allreduce_overhead [iterations=100000] [warmup=1000] [reps=1]
 *
 * Every rank runs `warmup` calls and an MPI_Barrier, then times `iterations` calls
 * of MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) (8 bytes,
 * separate send and receive buffers). Each of the `reps` repetitions also times,
 * right before or after (the order alternates), the same loop calling
 * PMPI_Allreduce directly: with the library preloaded that skips the wrapper, so
 * the two figures of one run differ by the wrapper's cost alone, under the same
 * machine noise; without it both name the same MPI function.
 * Rank 0 prints one line (times are rank 0's, minimum over the repetitions):
 *   allreduce_overhead np=<n> bytes=8 iters=<i> reps=<r> ns_per_call=<MPI_Allreduce> pmpi_ns_per_call=<PMPI_Allreduce>
 * The results are checked (exit status 1 if wrong).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double timed_loop(int use_pmpi, long iters, const double *in, double *out) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (use_pmpi) {
    for (long i = 0; i < iters; i++) PMPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  } else {
    for (long i = 0; i < iters; i++) MPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  return (MPI_Wtime() - t0) * 1e9 / (double)iters;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  long warmup = argc > 2 ? atol(argv[2]) : 1000;
  int reps = argc > 3 ? atoi(argv[3]) : 1;
  if (iters <= 0) iters = 100000;
  if (warmup < 0) warmup = 0;
  if (reps <= 0) reps = 1;

  const double want = (double)size * (size - 1) / 2.0;
  double in = (double)rank, out = 0.0;
  int bad = 0;
  for (long i = 0; i < warmup; i++)
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

  double best_mpi = 0.0, best_pmpi = 0.0;
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < 2; k++) {
      const int use_pmpi = (k + r) % 2; /* MPI first on even reps, PMPI first on odd */
      out = 0.0;
      double t = timed_loop(use_pmpi, iters, &in, &out);
      bad |= out != want;
      double *best = use_pmpi ? &best_pmpi : &best_mpi;
      if (r == 0 || t < *best) *best = t;
    }
  }

  int any_bad = 0;
  MPI_Reduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("allreduce_overhead np=%d bytes=8 iters=%ld reps=%d ns_per_call=%.2f pmpi_ns_per_call=%.2f\n",
           size, iters, reps, best_mpi, best_pmpi);
    if (any_bad) printf("allreduce_overhead: FAIL wrong allreduce result\n");
    fflush(stdout);
  }
  MPI_Finalize();
  return any_bad || bad;
}
