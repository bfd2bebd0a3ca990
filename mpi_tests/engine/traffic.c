/* One float MPI_Allreduce of COUNT elements (argv[1]), checked, for the traffic test:
 * traffic_check.py reads the stats file gcoll wrote and compares the bytes and steps
 * between nodes with the schedule's formulae. Then one checked MPI_Bcast and one
 * MPI_Allgather, which the check expects to be counted as engine calls too.
 * Does not link gcoll (run preloaded). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long n = argc > 1 ? atol(argv[1]) : 1;
  float *in = malloc((n ? n : 1) * sizeof *in), *out = malloc((n ? n : 1) * sizeof *out);
  for (long i = 0; i < n; ++i) in[i] = (float)((rank + i) % 7);
  MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  long bad = 0;
  for (long i = 0; i < n; ++i) {
    float expect = 0;
    for (int r = 0; r < size; ++r) expect += (float)((r + i) % 7);
    bad += out[i] != expect;
  }
  int b[3] = {rank, rank, rank}, g[64];
  MPI_Bcast(b, 3, MPI_INT, size - 1, MPI_COMM_WORLD);
  bad += b[0] != size - 1 || b[2] != size - 1;
  MPI_Allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < size && r < 64; ++r) bad += g[r] != r;
  long total = 0;
  PMPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: %ld wrong elements\n", total ? "FAIL" : "PASS", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
