/*
 * gpu_stats: plain MPI + CUDA C program (does not link gcoll) run by gpu_stats_check.py
 * as `mpirun -x LD_PRELOAD=libgcoll.so -x GCOLL_STATS_FILE=... gcoll_gpu_stats`. Its
 * device work goes through gpu_api.h: the CUDA runtime, or with GCOLL_CUDA=emulate the
 * emulated GPU of the preloaded libgcoll.so.
 *
 * Each rank makes a fixed number of MPI_Allreduce, MPI_Bcast and MPI_Allgather calls
 * of three kinds, on MPI_COMM_WORLD (and of MPI_Reduce, MPI_Gather, MPI_Scatter,
 * MPI_Alltoall, MPI_Reduce_scatter, MPI_Allgatherv, MPI_Gatherv, MPI_Scatterv: 2 device
 * calls each and 1 host call, and of MPI_Reduce, MPI_Reduce_scatter, MPI_Alltoall and
 * MPI_Allgatherv, which have engine algorithms, one more large device call each; the
 * gathers and scatters have none: always staged):
 *   device predefined  cudaMalloc buffers, a predefined type (allreduce: MPI_FLOAT
 *                      with MPI_SUM) - gcoll's engine on one node, staged otherwise;
 *   device derived     cudaMalloc buffers, contiguous(2 x MPI_FLOAT), and for allreduce
 *                      a user-defined op (on that type and on MPI_FLOAT) - always staged;
 *   host               malloc buffers, MPI_FLOAT / MPI_INT - passthrough by default.
 * Every result is checked against a formula (the values are small integers, exact in
 * float). Rank 0 prints:
 *   GCOLL_EXPECT np=<size>
 *   GCOLL_EXPECT <coll> calls_per_rank=<n> calls=<total> bytes=<total>
 *   GCOLL_EXPECT_KINDS <coll> device_predefined=<total> device_derived=<total> host=<total>
 *   gpu_stats: PASS | gpu_stats: FAIL nfail=<n>
 * with bytes as gcoll's stats define them (result-buffer data per rank: allreduce and
 * bcast count * type size, allgather recvcount * type size * comm size), summed over
 * ranks. Rank 0 first prints "gpu_stats: <N> rank(s) on <device>" (the device: its name,
 * or "emulated GPU (GCOLL_CUDA=emulate)"). Without a usable GPU it prints
 * "SKIPPED: no GPU" and exits 77 before MPI_Init.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_api.h"

enum { AR = 0, BC = 1, AG = 2, RD = 3, GA = 4, SC = 5, AA = 6, RS = 7, AV = 8, GV = 9, SV = 10, NCOLL = 11 };
enum { DEV = 0, DER = 1, HOST = 2, NKIND = 3 };
static const char *coll_name[NCOLL] = {"allreduce", "bcast",   "allgather",      "reduce",
                                       "gather",    "scatter", "alltoall",       "reduce_scatter",
                                       "allgatherv", "gatherv", "scatterv"};
static long long tally_calls[NCOLL], tally_bytes[NCOLL], tally_kind[NCOLL][NKIND];
static int rank, size, nfail;

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "gpu_stats: watchdog expired (hang?), aborting\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(3);
}

static void gpu_check(int e, const char *what) {
  if (e == 0) return;
  fprintf(stderr, "gpu_stats rank %d: FAIL %s: %s (%s error %d)\n", rank, what, gpu_error_string(e),
          gpu_mode_name(), e);
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CK(x) gpu_check((x), #x)

static void tally(int coll, int kind, int count, MPI_Datatype t) {
  int sz = 0;
  MPI_Type_size(t, &sz);
  long long b = (long long)count * sz;
  if (coll == AG || coll == AA || coll == RS || coll == AV) b *= size;
  tally_calls[coll]++;
  tally_bytes[coll] += b;
  tally_kind[coll][kind]++;
}

static void rc_check(int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "gpu_stats rank %d: FAIL %s returned %d\n", rank, what, rc);
    nfail++;
  }
}

static void check(int ok, const char *what, long idx, double got, double want) {
  if (!ok) {
    if (nfail < 20)
      fprintf(stderr, "gpu_stats rank %d: FAIL %s [%ld]: got %.17g want %.17g\n", rank, what, idx, got, want);
    nfail++;
  }
}

/* Commutative user op on contiguous(2 x MPI_FLOAT) (and MPI_FLOAT): sum. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t) {
  int n = *len;
  if (*t != MPI_FLOAT) n *= 2;
  const float *a = (const float *)in;
  float *b = (float *)inout;
  for (int i = 0; i < n; i++) b[i] += a[i];
}

/* rank r, element i: small integers, exact in float for any sum over ranks */
static float val(int r, long i) { return (float)((r + 1) * 3 + (int)(i % 97)); }
static float sum_val(long i) {
  float s = 0;
  for (int r = 0; r < size; r++) s += val(r, i);
  return s;
}

int main(int argc, char **argv) {
  signal(SIGALRM, on_alarm);
  alarm(90); /* before gpu_stats_check.py's --timeout, so that a hang says so */
  int ndev = 0;
  int e = gpu_device_count(&ndev);
  if (e != 0 || ndev < 1) {
    printf("SKIPPED: no GPU (%s: %s)\n", gpu_mode_name(), e != 0 ? gpu_error_string(e) : "no device");
    return 77;
  }
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (lr) {
    e = gpu_set_device(atoi(lr) % ndev);
    if (e != 0) {
      fprintf(stderr, "gpu_stats: setting the device failed: %s (%s)\n", gpu_error_string(e), gpu_mode_name());
      return 1;
    }
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (!lr) CK(gpu_set_device(rank % ndev));
  if (rank == 0) {
    int dev = 0;
    char name[256];
    CK(gpu_get_device(&dev));
    CK(gpu_device_name(dev, name, sizeof name));
    printf("gpu_stats: %d rank(s) on %s\n", size, name);
    fflush(stdout);
  }

  /* One call per collective is large (8 MiB; allgather 1.2 MB per rank): above the sizes
   * that are staged on GPUs shared without MPS (coll/tune.cc, kTimeSlicedTune), so that
   * the engine gets calls there too (seen on an H200 without MPS: every smaller call
   * staged, as designed). */
  const long maxn = 1L << 21;
  float *h = malloc(sizeof(float) * maxn * size), *h2 = malloc(sizeof(float) * maxn * size);
  float *d, *d2;
  CK(gpu_malloc((void **)&d, sizeof(float) * maxn * size, GPU_MEM_DEVICE));
  CK(gpu_malloc((void **)&d2, sizeof(float) * maxn * size, GPU_MEM_DEVICE));
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_FLOAT, &pair);
  MPI_Type_commit(&pair);
  MPI_Op usum;
  MPI_Op_create(user_sum, 1, &usum);

  /* ---- allreduce: 12 device MPI_FLOAT sums, 4 derived, 2 user op, 3 host ---- */
  const int ar_counts[12] = {1, 2, 7, 64, 1000, 1001, 4096, 10007, 65536, 100003, 3, 1 << 21};
  for (int k = 0; k < 12; k++) {
    const int n = ar_counts[k];
    for (long i = 0; i < n; i++) h[i] = val(rank, i);
    CK(gpu_memcpy(d, h, sizeof(float) * n));
    if (k % 3 == 2) /* in place now and then */
      rc_check(MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "allreduce device in place");
    else
      rc_check(MPI_Allreduce(d, d2, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "allreduce device");
    tally(AR, DEV, n, MPI_FLOAT);
    CK(gpu_memcpy(h2, k % 3 == 2 ? d : d2, sizeof(float) * n));
    for (long i = 0; i < n; i++) check(h2[i] == sum_val(i), "allreduce device", i, h2[i], sum_val(i));
  }
  for (int k = 0; k < 6; k++) { /* 4 derived, 2 MPI_FLOAT; all with a user-defined op */
    const int derived = k < 4;
    const int n = derived ? 501 * (k + 1) : 999;
    const long nf = derived ? 2L * n : n;
    for (long i = 0; i < nf; i++) h[i] = val(rank, i);
    CK(gpu_memcpy(d, h, sizeof(float) * nf));
    /* a user-defined op in every case: Open MPI rejects MPI_SUM on a derived type */
    rc_check(MPI_Allreduce(d, d2, n, derived ? pair : MPI_FLOAT, usum, MPI_COMM_WORLD),
             "allreduce derived/user op");
    tally(AR, DER, n, derived ? pair : MPI_FLOAT);
    CK(gpu_memcpy(h2, d2, sizeof(float) * nf));
    for (long i = 0; i < nf; i++) check(h2[i] == sum_val(i), "allreduce derived/user op", i, h2[i], sum_val(i));
  }
  for (int k = 0; k < 3; k++) {
    const int n = 100 + k;
    for (long i = 0; i < n; i++) h[i] = val(rank, i);
    rc_check(MPI_Allreduce(h, h2, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "allreduce host");
    tally(AR, HOST, n, MPI_FLOAT);
    for (long i = 0; i < n; i++) check(h2[i] == sum_val(i), "allreduce host", i, h2[i], sum_val(i));
  }

  /* ---- bcast: 6 device MPI_INT, 2 derived, 2 host ---- */
  int *hi = (int *)h, *hi2 = (int *)h2;
  for (int k = 0; k < 10; k++) {
    const int kind = k < 6 ? DEV : k < 8 ? DER : HOST;
    const int root = k % size;
    const int n = kind == DER ? 777 : k == 5 ? 1 << 21 : 1 + 4099 * k;
    const long ni = kind == DER ? 2L * n : n;
    for (long i = 0; i < ni; i++) hi[i] = rank == root ? (int)(i * 7 + k) : -1;
    MPI_Datatype t = kind == DER ? pair : MPI_INT;
    if (kind == HOST) {
      rc_check(MPI_Bcast(hi, n, t, root, MPI_COMM_WORLD), "bcast host");
      memcpy(hi2, hi, sizeof(int) * ni);
    } else {
      CK(gpu_memcpy(d, hi, sizeof(int) * ni));
      rc_check(MPI_Bcast(d, n, t, root, MPI_COMM_WORLD), "bcast device");
      CK(gpu_memcpy(hi2, d, sizeof(int) * ni));
    }
    tally(BC, kind, n, t);
    for (long i = 0; i < ni; i++) check(hi2[i] == (int)(i * 7 + k), "bcast", i, hi2[i], (double)(i * 7 + k));
  }

  /* ---- allgather: 6 device MPI_FLOAT (2 in place), 2 derived, 2 host ---- */
  for (int k = 0; k < 10; k++) {
    const int kind = k < 6 ? DEV : k < 8 ? DER : HOST;
    const int n = kind == DER ? 300 : k == 5 ? 300000 : 1 + 1237 * k;
    const long nf = kind == DER ? 2L * n : n;
    const int in_place = kind == DEV && k % 3 == 1;
    MPI_Datatype t = kind == DER ? pair : MPI_FLOAT;
    for (long i = 0; i < nf * size; i++) h[i] = -1.0f;
    for (long i = 0; i < nf; i++) h[(in_place ? rank * nf : 0) + i] = val(rank, i);
    if (kind == HOST) {
      memcpy(h2 + rank * nf, h, sizeof(float) * nf);
      rc_check(MPI_Allgather(h, n, t, h2, n, t, MPI_COMM_WORLD), "allgather host");
    } else {
      if (in_place) {
        CK(gpu_memcpy(d2, h, sizeof(float) * nf * size));
        rc_check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d2, n, t, MPI_COMM_WORLD),
                 "allgather device in place");
      } else {
        CK(gpu_memcpy(d, h, sizeof(float) * nf));
        rc_check(MPI_Allgather(d, n, t, d2, n, t, MPI_COMM_WORLD), "allgather device");
      }
      CK(gpu_memcpy(h2, d2, sizeof(float) * nf * size));
    }
    tally(AG, kind, n, t);
    for (int r = 0; r < size; r++)
      for (long i = 0; i < nf; i++)
        check(h2[r * nf + i] == val(r, i), "allgather", r * nf + i, h2[r * nf + i], val(r, i));
  }

  /* ---- the other collectives: 2 device calls each (the gathers and scatters, which have
   * no engine algorithm: staged), 1 host call (passthrough); n floats per block, the root
   * moving. (Bytes as the stats count them: the root of a gather or scatter the whole, the
   * others their block.) ---- */
  for (int k = 0; k < 3; k++) {
    const int kind = k < 2 ? DEV : HOST;
    const int n = k == 1 ? 4099 : 3 + k;
    const int root = k % size;
    float *s = kind == DEV ? d : h, *r = kind == DEV ? d2 : h2;
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int q = 0; q < size; q++) {
      counts[q] = n;
      displs[q] = q * n;
    }
#define PUT(buf, i) (kind == DEV ? (void)CK(gpu_memcpy(buf, h, sizeof(float) * (size_t)(i))) : (void)0)
#define GET(buf, i) (kind == DEV ? (void)CK(gpu_memcpy(h2, buf, sizeof(float) * (size_t)(i))) : (void)0)
    /* reduce, reduce_scatter: input element i of rank q is val(q, i) */
    for (long i = 0; i < (long)n * size; i++) h[i] = val(rank, i);
    PUT(s, (long)n * size);
    rc_check(MPI_Reduce(s, r, n, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD), "reduce");
    tally(RD, kind, n, MPI_FLOAT);
    if (rank == root) {
      GET(r, n);
      for (long i = 0; i < n; i++) check(h2[i] == sum_val(i), "reduce", i, h2[i], sum_val(i));
    }
    rc_check(MPI_Reduce_scatter(s, r, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "reduce_scatter");
    tally(RS, kind, n, MPI_FLOAT);
    GET(r, n);
    for (long i = 0; i < n; i++)
      check(h2[i] == sum_val(rank * n + i), "reduce_scatter", i, h2[i], sum_val(rank * n + i));
    /* gather, gatherv, allgatherv: rank q's block is val(q, i) */
    for (int c = 0; c < 3; c++) {
      const int coll = c == 0 ? GA : c == 1 ? GV : AV;
      for (long i = 0; i < n; i++) h[i] = val(rank, i);
      PUT(s, n);
      if (coll == GA) rc_check(MPI_Gather(s, n, MPI_FLOAT, r, n, MPI_FLOAT, root, MPI_COMM_WORLD), "gather");
      else if (coll == GV)
        rc_check(MPI_Gatherv(s, n, MPI_FLOAT, r, counts, displs, MPI_FLOAT, root, MPI_COMM_WORLD), "gatherv");
      else rc_check(MPI_Allgatherv(s, n, MPI_FLOAT, r, counts, displs, MPI_FLOAT, MPI_COMM_WORLD), "allgatherv");
      tally(coll, kind, coll != AV && rank == root ? n * size : n, MPI_FLOAT);
      if (coll == AV || rank == root) {
        GET(r, (long)n * size);
        for (int q = 0; q < size; q++)
          for (long i = 0; i < n; i++) check(h2[q * n + i] == val(q, i), coll_name[coll], i, h2[q * n + i], val(q, i));
      }
    }
    /* scatter, scatterv, alltoall: rank q's block j is val(q, j * n + i) */
    for (int c = 0; c < 3; c++) {
      const int coll = c == 0 ? SC : c == 1 ? SV : AA;
      for (long i = 0; i < (long)n * size; i++) h[i] = val(rank, i);
      PUT(s, (long)n * size);
      if (coll == SC) rc_check(MPI_Scatter(s, n, MPI_FLOAT, r, n, MPI_FLOAT, root, MPI_COMM_WORLD), "scatter");
      else if (coll == SV)
        rc_check(MPI_Scatterv(s, counts, displs, MPI_FLOAT, r, n, MPI_FLOAT, root, MPI_COMM_WORLD), "scatterv");
      else rc_check(MPI_Alltoall(s, n, MPI_FLOAT, r, n, MPI_FLOAT, MPI_COMM_WORLD), "alltoall");
      tally(coll, kind, coll != AA && rank == root ? n * size : n, MPI_FLOAT);
      GET(r, (long)n * size);
      for (int q = 0; q < (coll == AA ? size : 1); q++)
        for (long i = 0; i < n; i++) {
          const float want = val(coll == AA ? q : root, (long)rank * n + i);
          check(h2[q * n + i] == want, coll_name[coll], i, h2[q * n + i], want);
        }
    }
#undef PUT
#undef GET
    free(counts);
    free(displs);
  }

  /* ---- one large device call each of reduce, reduce_scatter, alltoall and allgatherv:
   * above the sizes that are staged on GPUs shared without MPS (coll/tune.cc,
   * kTimeSlicedTune: reduce below 4 MiB, the others below 1 MiB, in the bytes the engine
   * selects by: reduce and reduce_scatter the whole input, alltoall one block, allgatherv
   * the whole result), so that the engine gets calls of these too where the GPU is
   * time-sliced (seen on an H200 without MPS: every smaller call staged, as designed). ---- */
  {
    const int nr = 1 << 21; /* reduce: 8 MiB */
    const int nb = 1 << 18; /* reduce_scatter, alltoall, allgatherv: 1 MiB blocks */
    const int root = size - 1;
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int q = 0; q < size; q++) {
      counts[q] = nb;
      displs[q] = q * nb;
    }
    for (long i = 0; i < nr; i++) h[i] = val(rank, i);
    CK(gpu_memcpy(d, h, sizeof(float) * nr));
    rc_check(MPI_Reduce(d, d2, nr, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD), "reduce large");
    tally(RD, DEV, nr, MPI_FLOAT);
    if (rank == root) {
      CK(gpu_memcpy(h2, d2, sizeof(float) * nr));
      for (long i = 0; i < nr; i++) check(h2[i] == sum_val(i), "reduce large", i, h2[i], sum_val(i));
    }
    for (long i = 0; i < (long)nb * size; i++) h[i] = val(rank, i);
    CK(gpu_memcpy(d, h, sizeof(float) * nb * size));
    rc_check(MPI_Reduce_scatter(d, d2, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "reduce_scatter large");
    tally(RS, DEV, nb, MPI_FLOAT);
    CK(gpu_memcpy(h2, d2, sizeof(float) * nb));
    for (long i = 0; i < nb; i++)
      check(h2[i] == sum_val((long)rank * nb + i), "reduce_scatter large", i, h2[i], sum_val((long)rank * nb + i));
    /* alltoall: rank q's block j is val(q, j * nb + i) (h still holds this rank's) */
    rc_check(MPI_Alltoall(d, nb, MPI_FLOAT, d2, nb, MPI_FLOAT, MPI_COMM_WORLD), "alltoall large");
    tally(AA, DEV, nb, MPI_FLOAT);
    CK(gpu_memcpy(h2, d2, sizeof(float) * nb * size));
    for (int q = 0; q < size; q++)
      for (long i = 0; i < nb; i++) {
        const float want = val(q, (long)rank * nb + i);
        check(h2[(long)q * nb + i] == want, "alltoall large", (long)q * nb + i, h2[(long)q * nb + i], want);
      }
    /* allgatherv: rank q's block is val(q, i) */
    CK(gpu_memcpy(d, h, sizeof(float) * nb));
    rc_check(MPI_Allgatherv(d, nb, MPI_FLOAT, d2, counts, displs, MPI_FLOAT, MPI_COMM_WORLD), "allgatherv large");
    tally(AV, DEV, nb, MPI_FLOAT);
    CK(gpu_memcpy(h2, d2, sizeof(float) * nb * size));
    for (int q = 0; q < size; q++)
      for (long i = 0; i < nb; i++)
        check(h2[(long)q * nb + i] == val(q, i), "allgatherv large", (long)q * nb + i, h2[(long)q * nb + i], val(q, i));
    free(counts);
    free(displs);
  }

  /* ---- report (PMPI_Reduce: not counted by gcoll) ---- */
  long long calls_tot[NCOLL], bytes_tot[NCOLL], kind_tot[NCOLL][NKIND];
  int nfail_tot = 0;
  PMPI_Reduce(tally_calls, calls_tot, NCOLL, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  PMPI_Reduce(tally_bytes, bytes_tot, NCOLL, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  PMPI_Reduce(tally_kind, kind_tot, NCOLL * NKIND, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  PMPI_Reduce(&nfail, &nfail_tot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("GCOLL_EXPECT np=%d\n", size);
    for (int c = 0; c < NCOLL; c++) {
      printf("GCOLL_EXPECT %s calls_per_rank=%lld calls=%lld bytes=%lld\n", coll_name[c], tally_calls[c],
             calls_tot[c], bytes_tot[c]);
      printf("GCOLL_EXPECT_KINDS %s device_predefined=%lld device_derived=%lld host=%lld\n", coll_name[c],
             kind_tot[c][DEV], kind_tot[c][DER], kind_tot[c][HOST]);
    }
    if (nfail_tot == 0)
      printf("gpu_stats: PASS\n");
    else
      printf("gpu_stats: FAIL nfail=%d\n", nfail_tot);
    fflush(stdout);
  }
  MPI_Op_free(&usum);
  MPI_Type_free(&pair);
  CK(gpu_free(d, GPU_MEM_DEVICE));
  CK(gpu_free(d2, GPU_MEM_DEVICE));
  free(h);
  free(h2);
  MPI_Finalize();
  return (rank == 0 ? nfail_tot : nfail) != 0;
}
