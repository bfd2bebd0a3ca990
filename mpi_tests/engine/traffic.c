/* One float MPI_Allreduce of COUNT elements (argv[1]), checked, for the traffic test:
 * traffic_check.py reads the stats file gcoll wrote and compares the bytes and steps
 * between nodes with the schedule's formulae. Then one checked MPI_Bcast and one
 * MPI_Allgather, which the check expects to be counted as engine calls too, and one
 * checked MPI_Reduce and MPI_Reduce_scatter of the COUNT elements, MPI_Alltoall of blocks
 * of COUNT / size elements and MPI_Allgatherv of the reduce-scatter's uneven blocks
 * (their bytes and steps between nodes checked too).
 * Does not link gcoll (run preloaded).
 *
 * Built twice: gcoll_engine_traffic (host buffers) and, with -DGCOLL_TRAFFIC_DEVICE,
 * gcoll_gpu_traffic (mpi_tests/gpu/CMakeLists.txt, linking gcoll_gpu_api): there the
 * allreduce's input and output, the bcast buffer and the allgather's send and receive
 * buffers are device memory (gpu_api.h: a real GPU, or gcoll's emulated GPU with
 * GCOLL_CUDA=emulate), filled from host arrays with gpu_memcpy and copied back for the
 * same checks. Rank r uses device local_rank % count (device 0 on a one-GPU machine and
 * on the emulated GPU). Without a usable GPU the device build prints "SKIPPED: no GPU"
 * and exits 77 before MPI_Init. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef GCOLL_TRAFFIC_DEVICE
#include <signal.h>
#include <unistd.h>

#include "gpu_api.h"

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "gcoll_gpu_traffic: watchdog expired (hang?), aborting\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(3);
}

static void gpu_check(int e, const char *what) {
  if (e == 0) return;
  fprintf(stderr, "gcoll_gpu_traffic: FAIL %s: %s (%s error %d)\n", what, gpu_error_string(e), gpu_mode_name(), e);
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CK(x) gpu_check((x), #x)

/* A device copy of `bytes` bytes of host memory h. */
static void *to_device(const void *h, size_t bytes) {
  void *d = NULL;
  CK(gpu_malloc(&d, bytes ? bytes : 1, GPU_MEM_DEVICE));
  if (bytes) CK(gpu_memcpy(d, h, bytes));
  return d;
}
#endif

int main(int argc, char **argv) {
#ifdef GCOLL_TRAFFIC_DEVICE
  signal(SIGALRM, on_alarm);
  alarm(200); /* before traffic_check.py's timeout (240 s), so that a hang says so */
  int ndev = 0;
  int e = gpu_device_count(&ndev);
  if (e != 0 || ndev < 1) {
    printf("SKIPPED: no GPU (%s: %s)\n", gpu_mode_name(), e != 0 ? gpu_error_string(e) : "no device");
    return 77;
  }
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (lr && (e = gpu_set_device(atoi(lr) % ndev)) != 0) {
    fprintf(stderr, "gcoll_gpu_traffic: setting the device failed: %s (%s)\n", gpu_error_string(e), gpu_mode_name());
    return 1;
  }
#endif
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long n = argc > 1 ? atol(argv[1]) : 1;
  const size_t nbytes = (size_t)n * sizeof(float);
#ifdef GCOLL_TRAFFIC_DEVICE
  if (!lr) CK(gpu_set_device(rank % ndev));
  if (rank == 0) {
    int dev = 0;
    char name[256];
    CK(gpu_get_device(&dev));
    CK(gpu_device_name(dev, name, sizeof name));
    printf("gcoll_gpu_traffic: %d rank(s) on %s, device buffers\n", size, name);
    fflush(stdout);
  }
#endif
  float *in = malloc((n ? n : 1) * sizeof *in), *out = malloc((n ? n : 1) * sizeof *out);
  for (long i = 0; i < n; ++i) in[i] = (float)((rank + i) % 7);
#ifdef GCOLL_TRAFFIC_DEVICE
  float *din = to_device(in, nbytes), *dout = NULL;
  CK(gpu_malloc((void **)&dout, nbytes ? nbytes : 1, GPU_MEM_DEVICE));
  MPI_Allreduce(din, dout, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (nbytes) CK(gpu_memcpy(out, dout, nbytes));
  CK(gpu_free(din, GPU_MEM_DEVICE));
  CK(gpu_free(dout, GPU_MEM_DEVICE));
#else
  (void)nbytes;
  MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#endif
  long bad = 0;
  for (long i = 0; i < n; ++i) {
    float expect = 0;
    for (int r = 0; r < size; ++r) expect += (float)((r + i) % 7);
    bad += out[i] != expect;
  }
  int b[3] = {rank, rank, rank};
  int *g = malloc((size_t)size * sizeof *g);
#ifdef GCOLL_TRAFFIC_DEVICE
  int *db = to_device(b, sizeof b);
  MPI_Bcast(db, 3, MPI_INT, size - 1, MPI_COMM_WORLD);
  CK(gpu_memcpy(b, db, sizeof b));
  CK(gpu_free(db, GPU_MEM_DEVICE));
  for (int r = 0; r < size; ++r) g[r] = -1;
  int *dsend = to_device(&rank, sizeof rank), *dg = to_device(g, (size_t)size * sizeof *g);
  MPI_Allgather(dsend, 1, MPI_INT, dg, 1, MPI_INT, MPI_COMM_WORLD);
  CK(gpu_memcpy(g, dg, (size_t)size * sizeof *g));
  CK(gpu_free(dsend, GPU_MEM_DEVICE));
  CK(gpu_free(dg, GPU_MEM_DEVICE));
#else
  MPI_Bcast(b, 3, MPI_INT, size - 1, MPI_COMM_WORLD);
  MPI_Allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD);
#endif
  bad += b[0] != size - 1 || b[2] != size - 1;
  for (int r = 0; r < size; ++r) bad += g[r] != r;
  /* MPI_Reduce of the same input to rank 1 % size (not node 0's first rank), and
   * MPI_Reduce_scatter of it in uneven blocks: rank r gets about (r + 1) shares. */
  const int root = 1 % size;
  int *counts = malloc((size_t)size * sizeof *counts);
  long shares = (long)size * (size + 1) / 2, given = 0;
  for (int r = 0; r < size; ++r) given += counts[r] = (int)(n / shares * (r + 1));
  counts[size - 1] += (int)(n - given);
  long mine0 = 0;
  for (int r = 0; r < rank; ++r) mine0 += counts[r];
  for (long i = 0; i < n; ++i) out[i] = -1;
#ifdef GCOLL_TRAFFIC_DEVICE
  din = to_device(in, nbytes);
  dout = to_device(out, nbytes);
  MPI_Reduce(din, dout, (int)n, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
  if (nbytes) CK(gpu_memcpy(out, dout, nbytes));
#else
  MPI_Reduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
#endif
  for (long i = 0; rank == root && i < n; ++i) {
    float expect = 0;
    for (int r = 0; r < size; ++r) expect += (float)((r + i) % 7);
    bad += out[i] != expect;
  }
  for (long i = 0; i < n; ++i) out[i] = -1;
#ifdef GCOLL_TRAFFIC_DEVICE
  if (nbytes) CK(gpu_memcpy(dout, out, nbytes));
  MPI_Reduce_scatter(din, dout, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (nbytes) CK(gpu_memcpy(out, dout, nbytes));
  CK(gpu_free(din, GPU_MEM_DEVICE));
  CK(gpu_free(dout, GPU_MEM_DEVICE));
#else
  MPI_Reduce_scatter(in, out, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#endif
  for (long i = 0; i < counts[rank]; ++i) {
    float expect = 0;
    for (int r = 0; r < size; ++r) expect += (float)((r + mine0 + i) % 7);
    bad += out[i] != expect;
  }
  /* MPI_Alltoall of blocks of max(1, COUNT / size) floats, and MPI_Allgatherv of the
   * reduce-scatter's uneven blocks (at least one float each). */
  const long blk = n / size > 0 ? n / size : 1;
  float *a2s = malloc((size_t)(blk * size) * sizeof *a2s), *a2r = malloc((size_t)(blk * size) * sizeof *a2r);
  for (long i = 0; i < blk * size; ++i) a2s[i] = (float)(rank * 1000 + (i / blk) * 10 + i % 7);
  int *agc = malloc((size_t)size * sizeof *agc), *agd = malloc((size_t)size * sizeof *agd);
  long agt = 0;
  for (int r = 0; r < size; ++r) {
    agc[r] = counts[r] > 0 ? counts[r] : 1;
    agd[r] = (int)agt;
    agt += agc[r];
  }
  float *ags = malloc((size_t)agc[rank] * sizeof *ags), *agr = malloc((size_t)agt * sizeof *agr);
  for (long i = 0; i < agc[rank]; ++i) ags[i] = (float)(rank * 3 + i % 5);
#ifdef GCOLL_TRAFFIC_DEVICE
  {
    const size_t ab = (size_t)(blk * size) * sizeof(float);
    float *d1 = to_device(a2s, ab), *d2 = to_device(a2r, ab);
    MPI_Alltoall(d1, (int)blk, MPI_FLOAT, d2, (int)blk, MPI_FLOAT, MPI_COMM_WORLD);
    CK(gpu_memcpy(a2r, d2, ab));
    CK(gpu_free(d1, GPU_MEM_DEVICE));
    CK(gpu_free(d2, GPU_MEM_DEVICE));
    float *d3 = to_device(ags, (size_t)agc[rank] * sizeof(float)), *d4 = to_device(agr, (size_t)agt * sizeof(float));
    MPI_Allgatherv(d3, agc[rank], MPI_FLOAT, d4, agc, agd, MPI_FLOAT, MPI_COMM_WORLD);
    CK(gpu_memcpy(agr, d4, (size_t)agt * sizeof(float)));
    CK(gpu_free(d3, GPU_MEM_DEVICE));
    CK(gpu_free(d4, GPU_MEM_DEVICE));
  }
#else
  MPI_Alltoall(a2s, (int)blk, MPI_FLOAT, a2r, (int)blk, MPI_FLOAT, MPI_COMM_WORLD);
  MPI_Allgatherv(ags, agc[rank], MPI_FLOAT, agr, agc, agd, MPI_FLOAT, MPI_COMM_WORLD);
#endif
  for (long i = 0; i < blk * size; ++i) bad += a2r[i] != (float)((i / blk) * 1000 + rank * 10 + (rank * blk + i % blk) % 7);
  for (int r = 0; r < size; ++r)
    for (long i = 0; i < agc[r]; ++i) bad += agr[agd[r] + i] != (float)(r * 3 + i % 5);
  free(a2s);
  free(a2r);
  free(agc);
  free(agd);
  free(ags);
  free(agr);
  free(counts);
  long total = 0;
  PMPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: %ld wrong elements\n", total ? "FAIL" : "PASS", total);
  free(in);
  free(out);
  free(g);
  MPI_Finalize();
  return total ? 1 : 0;
}
