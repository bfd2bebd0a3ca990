/* The CUDA driver in a process under gcoll (issue 28; found on an H200: a program that never
 * used CUDA ended with the driver's thread and descriptors on /dev/nvidia*, because gcoll
 * loaded the driver to classify buffers). gcoll loads it only once the application has
 * loaded libcuda.so.1 itself (src/cuda/driver_gate.h). A plain MPI program, neither linked
 * to gcoll nor including its headers; run under cuda_late_check.py with the CUDA toolkit's
 * stub driver (its functions all fail) on LD_LIBRARY_PATH as libcuda.so.1, so that whoever
 * dlopens libcuda.so.1 finds one.
 *
 * usage: cuda_late never|late|early
 *   never  host collectives (blocking and nonblocking, on MPI_COMM_WORLD and on a duplicate),
 *          the same buffers again and again: libcuda.so.1 must not be mapped after MPI_Init,
 *          after the collectives, or after MPI_Finalize.
 *   late   the same, then the program dlopens libcuda.so.1 itself and makes collectives on
 *          fresh buffers: gcoll must then probe the driver (its GCOLL_DEBUG=INFO line
 *          "probing the driver"; cuda_late_check.py looks for it).
 *   early  libcuda.so.1 dlopened right after MPI_Init, before any collective: the probe at
 *          the first classification.
 * Each rank prints "counters <rank> <calls> <pointer_queries> <kind_cache_hits>" (gcoll's
 * counters, where gcoll is preloaded) after the repeated collectives; rank 0 prints
 * "cuda_late: ok" when every rank's checks passed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank;
static int g_bad;

/* Whether a file named libcuda.so* is mapped in this process. */
static int libcuda_mapped(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[4096];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    char *slash = strrchr(line, '/');
    if (slash && strncmp(slash + 1, "libcuda.so", 10) == 0) found = 1;
  }
  fclose(f);
  return found;
}

static void expect_unmapped(const char *when) {
  const int m = libcuda_mapped();
  if (m != 0) {
    fprintf(stderr, "rank %d: libcuda.so.1 is mapped %s%s\n", g_rank, when, m < 0 ? " (cannot read maps)" : "");
    g_bad = 1;
  }
}

static long long counter(const char *name) {
  long long (*f)(const char *) = (long long (*)(const char *))dlsym(RTLD_DEFAULT, "gcoll_library_counter");
  return f ? f(name) : -1;
}

/* Collectives on host buffers: `rounds` times on the same buffers; results checked. */
static void collectives(MPI_Comm comm, int *a, int *b, int n, int rounds) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < n; ++i) a[i] = i + r;
    MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < n; ++i)
      if (b[i] != (i + r) * size) g_bad = 1;
    MPI_Request q;
    MPI_Iallreduce(a, b, n, MPI_INT, MPI_MAX, comm, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; ++i)
      if (b[i] != i + r) g_bad = 1;
    MPI_Bcast(b, n, MPI_INT, 0, comm);
  }
  if (g_bad) fprintf(stderr, "rank %d: wrong results\n", g_rank);
}

static void load_libcuda(const char *when) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    fprintf(stderr, "rank %d: cannot dlopen libcuda.so.1 %s: %s\n", g_rank, when, dlerror());
    g_bad = 1;
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "never") && strcmp(mode, "late") && strcmp(mode, "early")) {
    fprintf(stderr, "usage: %s never|late|early\n", argv[0]);
    return 2;
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  expect_unmapped("after MPI_Init");
  if (!strcmp(mode, "early")) load_libcuda("after MPI_Init");

  enum { N = 64, ROUNDS = 100 };
  int *a = calloc(N, sizeof(int)), *b = calloc(N, sizeof(int));
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const long long q0 = counter("pointer_queries"), h0 = counter("kind_cache_hits");
  collectives(MPI_COMM_WORLD, a, b, N, ROUNDS);
  collectives(dup, a, b, N, ROUNDS);
  const long long q1 = counter("pointer_queries"), h1 = counter("kind_cache_hits");
  printf("counters %d %d %lld %lld\n", g_rank, 2 * 3 * ROUNDS, q1 - q0, h1 - h0);
  fflush(stdout);
  if (strcmp(mode, "early")) expect_unmapped("after host collectives");

  if (!strcmp(mode, "late")) {
    load_libcuda("after host collectives");
    /* Fresh buffers (the old ones stay allocated: other addresses), as device buffers
     * would be: their classification looks at the process again. */
    int *c = calloc(N, sizeof(int)), *d = calloc(N, sizeof(int));
    collectives(MPI_COMM_WORLD, c, d, N, 2);
    collectives(dup, c, d, N, 2);
    free(c);
    free(d);
  }
  MPI_Comm_free(&dup);
  free(a);
  free(b);
  int all_ok = !g_bad, every = 0;
  MPI_Allreduce(&all_ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Finalize();
  if (!strcmp(mode, "never")) expect_unmapped("after MPI_Finalize");
  if (g_rank == 0 && every && !g_bad) printf("cuda_late: ok\n");
  return every && !g_bad ? 0 : 1;
}
