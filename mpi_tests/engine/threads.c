/* Collectives from several threads at once under MPI_THREAD_MULTIPLE (issue 15): each
 * thread runs its own loop of MPI_Allreduce, MPI_Bcast, MPI_Allgather, MPI_Reduce and
 * MPI_Alltoall (issue 23) on its own
 * communicator (a dup of MPI_COMM_WORLD, made in the main thread), with sizes from 0 to
 * 256 KiB, in place or not, and every result checked exactly (integer sums, known
 * values). Run preloaded with libgcoll.so: host buffers through the engine
 * (GCOLL_HOST_BUFFERS=engine) or through passthrough, and with -DGCOLL_THREADS_DEVICE
 * (gcoll_gpu_threads, linking gcoll_gpu_api) threads of odd index use device buffers
 * (a real GPU, or the emulated GPU with GCOLL_CUDA=emulate).
 *
 * usage: threads THREADS ITERATIONS. Prints PASS or FAIL with the wrong elements; exit 77
 * ("SKIPPED") when the MPI does not provide MPI_THREAD_MULTIPLE (or no GPU in the device
 * build). A watchdog ends a hang. Does not link gcoll. */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GCOLL_THREADS_DEVICE
#include "gpu_api.h"
#endif

static int rank, size, iters;
static MPI_Comm comms[16];
static long wrong[16];

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "threads: watchdog expired (deadlock?), aborting\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(3);
}

/* Buffers of one thread: host, or device with a host mirror. */
struct buf {
  int device;
  void *p;      /* what the collective gets */
  int *h;       /* host view (the same as p for host buffers) */
  size_t bytes;
};

static void buf_init(struct buf *b, size_t bytes, int device) {
  b->device = device;
  b->bytes = bytes;
  b->h = malloc(bytes ? bytes : 1);
  b->p = b->h;
#ifdef GCOLL_THREADS_DEVICE
  if (device && gpu_malloc(&b->p, bytes ? bytes : 1, GPU_MEM_DEVICE) != 0) {
    fprintf(stderr, "threads: gpu_malloc failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#endif
}

static void to_dev(struct buf *b, size_t bytes) {
#ifdef GCOLL_THREADS_DEVICE
  if (b->device && bytes) gpu_memcpy(b->p, b->h, bytes);
#else
  (void)b, (void)bytes;
#endif
}

static void from_dev(struct buf *b, size_t bytes) {
#ifdef GCOLL_THREADS_DEVICE
  if (b->device && bytes) gpu_memcpy(b->h, b->p, bytes);
#else
  (void)b, (void)bytes;
#endif
}

static void *run(void *arg) {
  const int t = (int)(long)arg;
  MPI_Comm comm = comms[t];
  const size_t maxn = 65536; /* ints: 256 KiB */
#ifdef GCOLL_THREADS_DEVICE
  const int device = t % 2;
#else
  const int device = 0;
#endif
  struct buf a, b;
  buf_init(&a, maxn * sizeof(int) * (size_t)size, device);
  buf_init(&b, maxn * sizeof(int) * (size_t)size, device);
  static const size_t counts[] = {0, 1, 7, 100, 1000, 4099, 16384, 65536};
  long bad = 0;
  for (int i = 0; i < iters; ++i) {
    const size_t n = counts[(i * 7 + t * 3) % 8];
    const int coll = (i + t) % 5, inplace = (i / 5 + t) % 2;
    if (coll == 0) { /* allreduce SUM of (rank + i + t + k) */
      for (size_t k = 0; k < n; ++k) a.h[k] = rank + i + t + (int)(k % 1000);
      to_dev(&a, n * sizeof(int));
      int rc = inplace ? MPI_Allreduce(MPI_IN_PLACE, a.p, (int)n, MPI_INT, MPI_SUM, comm)
                       : MPI_Allreduce(a.p, b.p, (int)n, MPI_INT, MPI_SUM, comm);
      struct buf *r = inplace ? &a : &b;
      from_dev(r, n * sizeof(int));
      bad += rc != MPI_SUCCESS;
      for (size_t k = 0; k < n; ++k) {
        const long expect = (long)size * (i + t + (int)(k % 1000)) + (long)size * (size - 1) / 2;
        bad += r->h[k] != expect;
      }
    } else if (coll == 1) { /* bcast from root (i % size) */
      const int root = (i + t) % size;
      for (size_t k = 0; k < n; ++k) a.h[k] = rank == root ? (int)(k * 31 + i + t) : -1;
      to_dev(&a, n * sizeof(int));
      bad += MPI_Bcast(a.p, (int)n, MPI_INT, root, comm) != MPI_SUCCESS;
      from_dev(&a, n * sizeof(int));
      for (size_t k = 0; k < n; ++k) bad += a.h[k] != (int)(k * 31 + i + t);
    } else if (coll == 3) { /* reduce SUM of (rank + i + t + k) to root (i + t) % size */
      const int root = (i + t) % size, ip = inplace && rank == root;
      for (size_t k = 0; k < n; ++k) a.h[k] = rank + i + t + (int)(k % 1000);
      to_dev(&a, n * sizeof(int));
      int rc = ip ? MPI_Reduce(MPI_IN_PLACE, a.p, (int)n, MPI_INT, MPI_SUM, root, comm)
                  : MPI_Reduce(a.p, b.p, (int)n, MPI_INT, MPI_SUM, root, comm);
      bad += rc != MPI_SUCCESS;
      if (rank == root) {
        struct buf *r = ip ? &a : &b;
        from_dev(r, n * sizeof(int));
        for (size_t k = 0; k < n; ++k) {
          const long expect = (long)size * (i + t + (int)(k % 1000)) + (long)size * (size - 1) / 2;
          bad += r->h[k] != expect;
        }
      }
    } else if (coll == 4) { /* alltoall of n / size + 1 ints per block */
      const size_t m = n / (size_t)size + 1;
      struct buf *in = inplace ? &b : &a;
      for (int q = 0; q < size; ++q)
        for (size_t k = 0; k < m; ++k) in->h[(size_t)q * m + k] = rank * 100000 + q * 1000 + (int)(k % 1000) + i;
      to_dev(in, m * sizeof(int) * (size_t)size);
      int rc = inplace ? MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b.p, (int)m, MPI_INT, comm)
                       : MPI_Alltoall(a.p, (int)m, MPI_INT, b.p, (int)m, MPI_INT, comm);
      bad += rc != MPI_SUCCESS;
      from_dev(&b, m * sizeof(int) * (size_t)size);
      for (int r = 0; r < size; ++r)
        for (size_t k = 0; k < m; ++k)
          bad += b.h[(size_t)r * m + k] != r * 100000 + rank * 1000 + (int)(k % 1000) + i;
    } else { /* allgather of n / size + 1 ints per rank */
      const size_t m = n / (size_t)size + 1;
      for (size_t k = 0; k < m * (size_t)size; ++k) b.h[k] = -1;
      for (size_t k = 0; k < m; ++k) {
        a.h[k] = rank * 100000 + (int)k + i;
        if (inplace) b.h[(size_t)rank * m + k] = a.h[k];
      }
      to_dev(&a, m * sizeof(int));
      to_dev(&b, m * sizeof(int) * (size_t)size);
      int rc = inplace ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b.p, (int)m, MPI_INT, comm)
                       : MPI_Allgather(a.p, (int)m, MPI_INT, b.p, (int)m, MPI_INT, comm);
      bad += rc != MPI_SUCCESS;
      from_dev(&b, m * sizeof(int) * (size_t)size);
      for (int r = 0; r < size; ++r)
        for (size_t k = 0; k < m; ++k) bad += b.h[(size_t)r * m + k] != r * 100000 + (int)k + i;
    }
  }
  wrong[t] = bad;
  free(a.h);
  free(b.h);
#ifdef GCOLL_THREADS_DEVICE
  if (device) {
    gpu_free(a.p, GPU_MEM_DEVICE);
    gpu_free(b.p, GPU_MEM_DEVICE);
  }
#endif
  return NULL;
}

int main(int argc, char **argv) {
  signal(SIGALRM, on_alarm);
  alarm(150);
  const int nthreads = argc > 1 ? atoi(argv[1]) : 4;
  iters = argc > 2 ? atoi(argv[2]) : 200;
  if (nthreads < 1 || nthreads > 16) return 2;
#ifdef GCOLL_THREADS_DEVICE
  int ndev = 0;
  if (gpu_device_count(&ndev) != 0 || ndev < 1) {
    printf("SKIPPED: no GPU (%s)\n", gpu_mode_name());
    return 77;
  }
  gpu_set_device(0);
#endif
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("SKIPPED: the MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
    MPI_Finalize();
    return 77;
  }
  for (int t = 0; t < nthreads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  pthread_t th[16];
  for (int t = 0; t < nthreads; ++t) pthread_create(&th[t], NULL, run, (void *)(long)t);
  for (int t = 0; t < nthreads; ++t) pthread_join(th[t], NULL);
  long bad = 0, total = 0;
  for (int t = 0; t < nthreads; ++t) bad += wrong[t];
  for (int t = 0; t < nthreads; ++t) MPI_Comm_free(&comms[t]);
  PMPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s: %d ranks x %d threads x %d calls, %ld wrong elements or failed calls\n", total ? "FAIL" : "PASS", size,
           nthreads, iters, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
