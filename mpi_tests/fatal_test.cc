// Under the default error handler (MPI_ERRORS_ARE_FATAL), a bad call must abort the job,
// as the MPI does. Usage: gcoll_mpi_fatal allreduce|bcast|allgather|control
//
// The bad call is a negative count. If the call returns, the program says so on stdout
// ("UNEXPECTED-RETURN") and exits 0, so CTest's WILL_FAIL turns that into a failure;
// an abort exits nonzero (Open MPI's fatal handler makes mpirun exit with the error
// code, 2 for MPI_ERR_COUNT). `control` makes a valid call and must exit 0, showing
// that the program itself runs.
#include <mpi.h>

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *mode = argc > 1 ? argv[1] : "";
  int send[4] = {1, 2, 3, 4}, recv[64] = {0};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = MPI_SUCCESS;
  if (!strcmp(mode, "allreduce")) {
    rc = MPI_Allreduce(send, recv, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  } else if (!strcmp(mode, "bcast")) {
    rc = MPI_Bcast(send, -1, MPI_INT, 0, MPI_COMM_WORLD);
  } else if (!strcmp(mode, "allgather")) {
    rc = MPI_Allgather(send, -1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
  } else if (!strcmp(mode, "control")) {
    rc = MPI_Allreduce(send, recv, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) rc = MPI_Bcast(send, 4, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) rc = MPI_Allgather(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "[rank %d] control: valid call returned %d\n", rank, rc);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (rank == 0) printf("control: valid calls returned MPI_SUCCESS\n");
    MPI_Finalize();
    return 0;
  } else {
    fprintf(stderr, "usage: %s allreduce|bcast|allgather|control\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 64);
  }
  printf("[rank %d] UNEXPECTED-RETURN: MPI_%s with a negative count returned %d under "
         "MPI_ERRORS_ARE_FATAL instead of aborting\n",
         rank, mode, rc);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
