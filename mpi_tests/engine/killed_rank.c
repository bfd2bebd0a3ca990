/* A rank dies (SIGKILL) in the middle of a loop of engine collectives. The job must end
 * (an error from the survivors, or mpirun aborting them) instead of hanging, and no
 * shared-memory segment may be left behind: killed_rank.sh checks both. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int n = 1 << 16;
  float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
  for (int i = 0; i < n; ++i) in[i] = (float)rank;
  for (int it = 0; it < 100000; ++it) {
    if (it == 50 && rank == size - 1) raise(SIGKILL);
    int rc = MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      char msg[MPI_MAX_ERROR_STRING];
      int len;
      MPI_Error_string(rc, msg, &len);
      printf("rank %d: iteration %d failed: %s\n", rank, it, msg);
      fflush(stdout);
      _exit(3);
    }
  }
  printf("rank %d: no failure seen\n", rank);
  MPI_Finalize();
  return 0;
}
