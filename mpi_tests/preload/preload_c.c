/*
 * preload_c: plain MPI C program (does not link gcoll, includes no gcoll header)
 * run under `mpirun -x LD_PRELOAD=libgcoll.so`.
 *
 * It makes a fixed, program-specific number of MPI_Allreduce, MPI_Bcast and
 * MPI_Allgather calls per rank, checks every result against a formula, and prints
 * on rank 0:
 *   GCOLL_EXPECT np=<size>
 *   GCOLL_EXPECT <coll> calls_per_rank=<n> calls=<total over ranks> bytes=<total>
 *   PASS | FAIL nfail=<n>
 * where bytes follows gcoll's stats definition (data in the result buffer per
 * rank: allreduce count*size, bcast count*size, allgather
 * recvcount*size(recvtype)*comm_size, with MPI_Type_size: padding and holes of a
 * datatype are not data), summed over calls and ranks. The tallies
 * are summed with MPI_Reduce, counted like the program's other calls.
 * Exits non-zero on any failure. Per-rank call counts must match
 * GCOLL_PRELOAD_CALLS_c in CMakeLists.txt.
 */
#include <mpi.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { AR = 0, BC = 1, AG = 2, RS = 3, RD = 4, GA = 5, GV = 6, SC = 7, SV = 8, AA = 9, RSC = 10, AV = 11, NCOLL = 12 };
static const char *coll_name[NCOLL] = {"allreduce", "bcast",   "allgather", "reduce_scatter_block",
                                       "reduce",    "gather",  "gatherv",   "scatter",
                                       "scatterv",  "alltoall", "reduce_scatter", "allgatherv"};
static long long tally_calls[NCOLL];
static long long tally_bytes[NCOLL];
static int rank, size, nfail;

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "preload_c: watchdog expired (hang?), aborting\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(3);
}

static long long size_of(MPI_Datatype t) {
  int sz;
  MPI_Type_size(t, &sz);
  return (long long)sz;
}

/* Record one call: result-buffer bytes per gcoll's definition. */
static void tally(int coll, int count, MPI_Datatype t, MPI_Comm comm) {
  long long b = (long long)count * size_of(t);
  if (coll == AG || coll == RS || coll == AA || coll == RSC || coll == AV) { /* the gathered result; the whole input */
    int csize;
    MPI_Comm_size(comm, &csize);
    b *= csize;
  }
  tally_calls[coll]++;
  tally_bytes[coll] += b;
}

static void check(int ok, const char *what, long idx, double got, double want) {
  if (!ok) {
    if (nfail < 20)
      fprintf(stderr, "preload_c rank %d: FAIL %s [%ld]: got %.17g want %.17g\n", rank, what,
              idx, got, want);
    nfail++;
  }
}

static void rc_check(int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "preload_c rank %d: FAIL %s returned %d\n", rank, what, rc);
    nfail++;
  }
}

int main(int argc, char **argv) {
  signal(SIGALRM, on_alarm);
  alarm(120);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long long np = size;
  const long long sum_ranks = np * (np - 1) / 2;

  MPI_Comm dup, half;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const int color = rank % 2;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
  int hrank, hsize;
  MPI_Comm_rank(half, &hrank);
  MPI_Comm_size(half, &hsize);
  /* world ranks in `half` are color, color+2, ...: their sum */
  long long half_sum = 0;
  for (int r = color; r < size; r += 2) half_sum += r;

  /* ------------------------------ MPI_Allreduce ------------------------------ */
  { /* 1: MPI_INT sum, separate buffers */
    int s[5], r[5];
    for (int i = 0; i < 5; i++) s[i] = rank + i;
    rc_check(MPI_Allreduce(s, r, 5, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "allreduce int");
    tally(AR, 5, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < 5; i++)
      check(r[i] == sum_ranks + (long long)i * np, "allreduce int sum", i, r[i],
            (double)(sum_ranks + (long long)i * np));
  }
  { /* 2: MPI_IN_PLACE, MPI_DOUBLE max, 1000 elements */
    enum { N = 1000 };
    double *v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++) v[i] = 0.5 * rank + i;
    rc_check(MPI_Allreduce(MPI_IN_PLACE, v, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
             "allreduce in-place double");
    tally(AR, N, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
      check(v[i] == 0.5 * (np - 1) + i, "allreduce in-place double max", i, v[i],
            0.5 * (np - 1) + i);
    free(v);
  }
  { /* 3: MPI_FLOAT sum on a dup'ed communicator (small integers: exact) */
    float s[3], r[3];
    for (int i = 0; i < 3; i++) s[i] = (float)(rank + 1) * (float)(i + 1);
    rc_check(MPI_Allreduce(s, r, 3, MPI_FLOAT, MPI_SUM, dup), "allreduce float");
    tally(AR, 3, MPI_FLOAT, dup);
    for (int i = 0; i < 3; i++) {
      double want = (double)(np * (np + 1) / 2) * (i + 1);
      check(r[i] == (float)want, "allreduce float sum", i, r[i], want);
    }
  }
  { /* 4: MPI_LONG_LONG product: np! */
    long long s = rank + 1, r = 0, want = 1;
    for (long long k = 2; k <= np; k++) want *= k;
    rc_check(MPI_Allreduce(&s, &r, 1, MPI_LONG_LONG, MPI_PROD, MPI_COMM_WORLD),
             "allreduce long long");
    tally(AR, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
    check(r == want, "allreduce long long prod", 0, (double)r, (double)want);
  }
  { /* 5: MPI_INT sum of world ranks on the split communicator, in place */
    int v[2] = {rank, 1};
    rc_check(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_SUM, half), "allreduce split");
    tally(AR, 2, MPI_INT, half);
    check(v[0] == half_sum, "allreduce split sum", 0, v[0], (double)half_sum);
    check(v[1] == hsize, "allreduce split count", 1, v[1], hsize);
  }
  { /* 6: 512 KiB of doubles (larger message path) */
    enum { N = 65536 };
    double *s = malloc(N * sizeof *s), *r = malloc(N * sizeof *r);
    for (int i = 0; i < N; i++) s[i] = (double)(rank + 1) + (double)(i % 97);
    rc_check(MPI_Allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "allreduce big");
    tally(AR, N, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) {
      double want = (double)(np * (np + 1) / 2) + (double)np * (double)(i % 97);
      check(r[i] == want, "allreduce big sum", i, r[i], want);
    }
    free(s);
    free(r);
  }
  { /* 7: count 0 (legal; 0 bytes) */
    double s = 1.0, r = -7.0;
    rc_check(MPI_Allreduce(&s, &r, 0, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "allreduce count0");
    tally(AR, 0, MPI_DOUBLE, MPI_COMM_WORLD);
    check(r == -7.0, "allreduce count0 untouched", 0, r, -7.0);
  }
  { /* 8: MPI_SHORT_INT maxloc: a pair type whose extent (padded) exceeds its size */
    struct { short v; int loc; } p[2], q[2];
    p[0].v = (short)rank;        p[0].loc = rank;
    p[1].v = (short)(size - rank); p[1].loc = rank;
    rc_check(MPI_Allreduce(p, q, 2, MPI_SHORT_INT, MPI_MAXLOC, MPI_COMM_WORLD), "allreduce short_int");
    tally(AR, 2, MPI_SHORT_INT, MPI_COMM_WORLD);
    check(q[0].v == size - 1 && q[0].loc == size - 1, "allreduce short_int maxloc", 0, q[0].loc, size - 1);
    check(q[1].v == size && q[1].loc == 0, "allreduce short_int maxloc", 1, q[1].loc, 0);
  }
  /* 9..18: a loop of 8-byte allreduces, in place every other iteration */
  for (int it = 0; it < 10; it++) {
    double s = rank * 2.0 + it, r = 0.0;
    if (it % 2) {
      r = s;
      rc_check(MPI_Allreduce(MPI_IN_PLACE, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
               "allreduce loop in-place");
    } else {
      rc_check(MPI_Allreduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "allreduce loop");
    }
    tally(AR, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    double want = 2.0 * (double)sum_ranks + (double)np * it;
    check(r == want, "allreduce loop", it, r, want);
  }

  /* -------------------------------- MPI_Bcast -------------------------------- */
  { /* 1: MPI_INT from root 0 */
    int v[4];
    for (int i = 0; i < 4; i++) v[i] = rank == 0 ? 100 + i : -1;
    rc_check(MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD), "bcast int");
    tally(BC, 4, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) check(v[i] == 100 + i, "bcast int root0", i, v[i], 100 + i);
  }
  { /* 2: MPI_DOUBLE from the last rank (non-zero root) */
    enum { N = 100 };
    const int root = size - 1;
    double v[N];
    for (int i = 0; i < N; i++) v[i] = rank == root ? root * 1000.0 + i * 0.25 : -1.0;
    rc_check(MPI_Bcast(v, N, MPI_DOUBLE, root, MPI_COMM_WORLD), "bcast double");
    tally(BC, N, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
      check(v[i] == root * 1000.0 + i * 0.25, "bcast double root last", i, v[i],
            root * 1000.0 + i * 0.25);
  }
  { /* 3: MPI_CHAR string from root 1 (non-zero) on the dup'ed communicator */
    const int root = 1 % size;
    char want[17], v[17];
    snprintf(want, sizeof want, "gcoll-root-%05d", root);
    if (rank == root)
      memcpy(v, want, sizeof v);
    else
      memset(v, 'x', sizeof v);
    rc_check(MPI_Bcast(v, 17, MPI_CHAR, root, dup), "bcast char");
    tally(BC, 17, MPI_CHAR, dup);
    check(memcmp(v, want, sizeof v) == 0, "bcast char root 1", 0, 0, 0);
  }
  { /* 4: MPI_LONG on the split communicator from its last local rank */
    const int root = hsize - 1;
    long v = hrank == root ? 4242L + color : 0L;
    rc_check(MPI_Bcast(&v, 1, MPI_LONG, root, half), "bcast split");
    tally(BC, 1, MPI_LONG, half);
    check(v == 4242L + color, "bcast split", 0, (double)v, 4242.0 + color);
  }
  { /* 5: MPI_FLOAT from root 0, 3 elements */
    float v[3];
    for (int i = 0; i < 3; i++) v[i] = rank == 0 ? 1.5f * (i + 1) : 0.0f;
    rc_check(MPI_Bcast(v, 3, MPI_FLOAT, 0, MPI_COMM_WORLD), "bcast float");
    tally(BC, 3, MPI_FLOAT, MPI_COMM_WORLD);
    for (int i = 0; i < 3; i++) check(v[i] == 1.5f * (i + 1), "bcast float", i, v[i], 1.5 * (i + 1));
  }

  { /* 6: resized MPI_INT (extent 8, size 4) from the last rank: every other int moves;
     *    bytes count the data (3 x 4), as gcoll's stats define them */
    MPI_Datatype spaced;
    MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &spaced);
    MPI_Type_commit(&spaced);
    const int root = size - 1;
    int v[6];
    for (int i = 0; i < 6; i++) v[i] = rank == root ? 50 + i : -1;
    rc_check(MPI_Bcast(v, 3, spaced, root, MPI_COMM_WORLD), "bcast resized");
    tally(BC, 3, spaced, MPI_COMM_WORLD);
    for (int i = 0; i < 6; i++) {
      int want = (i % 2 == 0 || rank == root) ? 50 + i : -1; /* gaps stay untouched */
      check(v[i] == want, "bcast resized", i, v[i], want);
    }
    MPI_Type_free(&spaced);
  }

  /* ------------------------------ MPI_Allgather ------------------------------ */
  { /* 1: MPI_INT, 2 per rank */
    int s[2] = {rank * 10, rank * 10 + 1};
    int *r = malloc(2 * size * sizeof *r);
    rc_check(MPI_Allgather(s, 2, MPI_INT, r, 2, MPI_INT, MPI_COMM_WORLD), "allgather int");
    tally(AG, 2, MPI_INT, MPI_COMM_WORLD);
    for (int q = 0; q < size; q++)
      for (int j = 0; j < 2; j++)
        check(r[2 * q + j] == q * 10 + j, "allgather int", 2 * q + j, r[2 * q + j], q * 10 + j);
    free(r);
  }
  { /* 2: MPI_IN_PLACE, MPI_DOUBLE, 3 per rank */
    double *r = malloc(3 * size * sizeof *r);
    for (int k = 0; k < 3 * size; k++) r[k] = -1.0;
    for (int j = 0; j < 3; j++) r[3 * rank + j] = rank + 0.125 * j;
    rc_check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 3, MPI_DOUBLE, MPI_COMM_WORLD),
             "allgather in-place double");
    tally(AG, 3, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int q = 0; q < size; q++)
      for (int j = 0; j < 3; j++)
        check(r[3 * q + j] == q + 0.125 * j, "allgather in-place double", 3 * q + j,
              r[3 * q + j], q + 0.125 * j);
    free(r);
  }
  { /* 3: MPI_FLOAT, 1 per rank, on the dup'ed communicator */
    float s = (float)rank * 3.0f;
    float *r = malloc(size * sizeof *r);
    rc_check(MPI_Allgather(&s, 1, MPI_FLOAT, r, 1, MPI_FLOAT, dup), "allgather float");
    tally(AG, 1, MPI_FLOAT, dup);
    for (int q = 0; q < size; q++) check(r[q] == q * 3.0f, "allgather float", q, r[q], q * 3.0);
    free(r);
  }
  { /* 4: MPI_IN_PLACE, MPI_INT on the split communicator (world ranks) */
    int *r = malloc(hsize * sizeof *r);
    for (int k = 0; k < hsize; k++) r[k] = -1;
    r[hrank] = rank;
    rc_check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 1, MPI_INT, half),
             "allgather split");
    tally(AG, 1, MPI_INT, half);
    for (int k = 0; k < hsize; k++) check(r[k] == color + 2 * k, "allgather split", k, r[k], color + 2 * k);
    free(r);
  }
  { /* 5: send 2 x MPI_INT, receive 1 x contiguous(2, MPI_INT): bytes use the recv type */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int s[2] = {rank + 7, -rank};
    int *r = malloc(2 * size * sizeof *r);
    rc_check(MPI_Allgather(s, 2, MPI_INT, r, 1, pair, MPI_COMM_WORLD), "allgather derived");
    tally(AG, 1, pair, MPI_COMM_WORLD);
    for (int q = 0; q < size; q++) {
      check(r[2 * q] == q + 7, "allgather derived", 2 * q, r[2 * q], q + 7);
      check(r[2 * q + 1] == -q, "allgather derived", 2 * q + 1, r[2 * q + 1], -q);
    }
    MPI_Type_free(&pair);
    free(r);
  }

  /* -------------------------- MPI_Reduce_scatter_block -------------------------- */
  {
    /* rank q's input element k: q + k; rank r gets block r (2 ints): sum over q of q + 2r + j */
    int *s = (int *)malloc(sizeof(int) * 2 * (size_t)size), r[2] = {-1, -1};
    for (int k = 0; k < 2 * size; k++) s[k] = rank + k;
    rc_check(MPI_Reduce_scatter_block(s, r, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "reduce_scatter_block int");
    tally(RS, 2, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < 2; j++) {
      const int want = size * (2 * rank + j) + size * (size - 1) / 2;
      check(r[j] == want, "reduce_scatter_block int", j, r[j], want);
    }
    free(s);
    /* in place, one double per rank, on the duplicate */
    double *d = (double *)malloc(sizeof(double) * (size_t)size);
    for (int k = 0; k < size; k++) d[k] = 0.5 * (rank + 1) * (k + 1);
    rc_check(MPI_Reduce_scatter_block(MPI_IN_PLACE, d, 1, MPI_DOUBLE, MPI_SUM, dup), "reduce_scatter_block in place");
    tally(RS, 1, MPI_DOUBLE, dup);
    const double want = 0.5 * (rank + 1) * size * (size + 1) / 2.0;
    check(d[0] == want, "reduce_scatter_block in place", 0, d[0], want);
    free(d);
  }

  /* ---- the collectives without an engine algorithm: 3 ints per rank, the root moving ---- */
  {
    int *s = malloc(sizeof(int) * 3 * (size_t)size), *r = malloc(sizeof(int) * 3 * (size_t)size);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int q = 0; q < size; q++) {
      counts[q] = 3;
      displs[q] = 3 * (size - 1 - q); /* blocks in reverse rank order */
    }
    const int root = size - 1;
    /* reduce (in place at the root) */
    for (int j = 0; j < 3; j++) s[j] = r[j] = rank + j;
    rc_check(MPI_Reduce(rank == root ? MPI_IN_PLACE : s, r, 3, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD), "reduce");
    tally(RD, 3, MPI_INT, MPI_COMM_WORLD);
    if (rank == root)
      for (int j = 0; j < 3; j++) check(r[j] == size * j + size * (size - 1) / 2, "reduce", j, r[j], 0);
    /* gather, gatherv: rank q's block holds 10 q + j */
    for (int v = 0; v < 2; v++) {
      for (int j = 0; j < 3; j++) s[j] = 10 * rank + j;
      for (int k = 0; k < 3 * size; k++) r[k] = -1;
      if (v == 0) rc_check(MPI_Gather(s, 3, MPI_INT, r, 3, MPI_INT, root, MPI_COMM_WORLD), "gather");
      else rc_check(MPI_Gatherv(s, 3, MPI_INT, r, counts, displs, MPI_INT, root, MPI_COMM_WORLD), "gatherv");
      tally(v ? GV : GA, rank == root ? 3 * size : 3, MPI_INT, MPI_COMM_WORLD);
      if (rank == root)
        for (int q = 0; q < size; q++)
          for (int j = 0; j < 3; j++) {
            const int at = (v ? displs[q] : 3 * q) + j;
            check(r[at] == 10 * q + j, v ? "gatherv" : "gather", at, r[at], 10 * q + j);
          }
    }
    /* scatter, scatterv: rank q gets 10 q + j */
    for (int v = 0; v < 2; v++) {
      for (int q = 0; q < size; q++)
        for (int j = 0; j < 3; j++) s[(v ? displs[q] : 3 * q) + j] = 10 * q + j;
      for (int j = 0; j < 3; j++) r[j] = -1;
      if (v == 0) rc_check(MPI_Scatter(s, 3, MPI_INT, r, 3, MPI_INT, root, MPI_COMM_WORLD), "scatter");
      else rc_check(MPI_Scatterv(s, counts, displs, MPI_INT, r, 3, MPI_INT, root, MPI_COMM_WORLD), "scatterv");
      tally(v ? SV : SC, rank == root ? 3 * size : 3, MPI_INT, MPI_COMM_WORLD);
      for (int j = 0; j < 3; j++) check(r[j] == 10 * rank + j, v ? "scatterv" : "scatter", j, r[j], 10 * rank + j);
    }
    /* alltoall (in place): element j of block q on rank p is 100 p + 10 q + j */
    for (int q = 0; q < size; q++)
      for (int j = 0; j < 3; j++) r[3 * q + j] = 100 * rank + 10 * q + j;
    rc_check(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 3, MPI_INT, MPI_COMM_WORLD), "alltoall");
    tally(AA, 3, MPI_INT, MPI_COMM_WORLD);
    for (int q = 0; q < size; q++)
      for (int j = 0; j < 3; j++)
        check(r[3 * q + j] == 100 * q + 10 * rank + j, "alltoall", 3 * q + j, r[3 * q + j], 100 * q + 10 * rank + j);
    /* reduce_scatter: element k of every rank p is p + k; rank r gets the sums of its block */
    for (int k = 0; k < 3 * size; k++) s[k] = rank + k;
    rc_check(MPI_Reduce_scatter(s, r, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "reduce_scatter");
    tally(RSC, 3, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < 3; j++) {
      const int want = size * (3 * rank + j) + size * (size - 1) / 2;
      check(r[j] == want, "reduce_scatter", j, r[j], want);
    }
    /* allgatherv (in place) */
    for (int k = 0; k < 3 * size; k++) r[k] = -1;
    for (int j = 0; j < 3; j++) r[displs[rank] + j] = 10 * rank + j;
    rc_check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, counts, displs, MPI_INT, MPI_COMM_WORLD),
             "allgatherv");
    tally(AV, 3, MPI_INT, MPI_COMM_WORLD);
    for (int q = 0; q < size; q++)
      for (int j = 0; j < 3; j++) check(r[displs[q] + j] == 10 * q + j, "allgatherv", displs[q] + j, r[displs[q] + j], 0);
    free(s);
    free(r);
    free(counts);
    free(displs);
  }
  /* the report's three MPI_Reduce calls below are counted too */
  tally(RD, NCOLL, MPI_LONG_LONG, MPI_COMM_WORLD);
  tally(RD, NCOLL, MPI_LONG_LONG, MPI_COMM_WORLD);
  tally(RD, 1, MPI_INT, MPI_COMM_WORLD);

  /* ------------------------------- report ------------------------------------ */
  long long calls_tot[NCOLL], bytes_tot[NCOLL];
  int nfail_tot = 0;
  MPI_Reduce(tally_calls, calls_tot, NCOLL, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(tally_bytes, bytes_tot, NCOLL, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&nfail, &nfail_tot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("GCOLL_EXPECT np=%d\n", size);
    for (int c = 0; c < NCOLL; c++)
      printf("GCOLL_EXPECT %s calls_per_rank=%lld calls=%lld bytes=%lld\n", coll_name[c],
             tally_calls[c], calls_tot[c], bytes_tot[c]);
    if (nfail_tot == 0)
      printf("preload_c: PASS\n");
    else
      printf("preload_c: FAIL nfail=%d\n", nfail_tot);
    fflush(stdout);
  }
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return (rank == 0 ? nfail_tot : nfail) != 0;
}
