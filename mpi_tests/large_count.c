/* The MPI-4 large-count calls (MPI_Allreduce_c, MPI_Bcast_c, MPI_Allgather_c; MPI_Reduce_c,
 * MPI_Gatherv_c, MPI_Scatterv_c, MPI_Reduce_scatter_c with MPI_Count / MPI_Aint arrays) under an MPI
 * that has them (MPICH 4; issue 14): run preloaded with GCOLL_STATS_FILE set; each call's
 * result is checked, and after MPI_Finalize rank 0 reads gcoll's stats file and checks
 * that every call was seen, with its bytes (counts that fit an int take gcoll's path;
 * larger ones, which this test does not make, are counted as passthrough).
 * Exit 0 PASS, 1 FAIL. Does not link gcoll. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The number after "<key>": inside the object of collective `coll` in the stats JSON. */
static long long field(const char *json, const char *coll, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": {", coll);
  const char *o = strstr(json, pat);
  if (!o) return -1;
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *f = strstr(o, pat);
  const char *end = strchr(o, '}');
  if (!f || (end && f > end)) return -1;
  return atoll(f + strlen(pat));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *path = getenv("GCOLL_STATS_FILE");
  if (rank == 0 && path) remove(path); /* a file left by an earlier run must not count */
  PMPI_Barrier(MPI_COMM_WORLD);
  int v[4] = {rank, rank + 1, rank, rank}, r[4], g[64];
  bad += MPI_Allreduce_c(v, r, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
  for (int i = 0; i < 4; ++i) bad += r[i] != size * (size - 1) / 2 + (i == 1 ? size : 0);
  bad += MPI_Allreduce_c(MPI_IN_PLACE, v, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS;
  bad += v[0] != size - 1;
  int b[3] = {rank, rank, rank};
  bad += MPI_Bcast_c(b, 3, MPI_INT, size - 1, MPI_COMM_WORLD) != MPI_SUCCESS;
  for (int i = 0; i < 3; ++i) bad += b[i] != size - 1;
  bad += MPI_Allgather_c(&rank, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD) != MPI_SUCCESS;
  for (int i = 0; i < size && i < 64; ++i) bad += g[i] != i;
  /* The collectives without an engine algorithm, arrays as MPI_Count / MPI_Aint (gcoll
   * converts the entries the rank's MPI reads to int arrays) */
  MPI_Count cnt[64];
  MPI_Aint dsp[64];
  for (int i = 0; i < size && i < 64; ++i) {
    cnt[i] = 1;
    dsp[i] = size - 1 - i; /* reverse order */
  }
  int rd[3] = {rank, 1, 2}, rdo[3] = {-1, -1, -1};
  bad += MPI_Reduce_c(rd, rdo, 3, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD) != MPI_SUCCESS;
  if (rank == size - 1) bad += rdo[0] != size * (size - 1) / 2 || rdo[1] != size || rdo[2] != 2 * size;
  for (int i = 0; i < 64; ++i) g[i] = -1;
  bad += MPI_Gatherv_c(&rank, 1, MPI_INT, g, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS;
  if (rank == 0)
    for (int i = 0; i < size && i < 64; ++i) bad += g[size - 1 - i] != i;
  int x = -1;
  for (int i = 0; i < size && i < 64; ++i) g[size - 1 - i] = 10 * i;
  bad += MPI_Scatterv_c(g, cnt, dsp, MPI_INT, &x, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS;
  bad += x != 10 * rank;
  for (int i = 0; i < size && i < 64; ++i) g[i] = rank + i;
  x = -1;
  bad += MPI_Reduce_scatter_c(g, &x, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
  bad += x != size * rank + size * (size - 1) / 2;
  int total = 0;
  PMPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank != 0) return 0;
  FILE *f = path ? fopen(path, "r") : NULL;
  static char json[1 << 16];
  size_t n = f ? fread(json, 1, sizeof json - 1, f) : 0;
  if (f) fclose(f);
  json[n] = '\0';
  if (!n) {
    printf("FAIL: no stats file (GCOLL_STATS_FILE=%s): is libgcoll.so preloaded?\n", path ? path : "(unset)");
    return 1;
  }
  /* calls and bytes summed over ranks: 2 allreduces of 4 ints, 1 bcast of 3, 1 allgather of 1 per rank; 1
   * reduce of 3 ints; 1 gatherv and 1 scatterv of one int per rank (the root: all of them); 1 reduce_scatter
   * of one int per rank (its input: size ints) */
  const long long want[7][2] = {{2LL * size, 2LL * size * 16}, {size, size * 12LL},      {size, 4LL * size * size},
                                {size, 12LL * size},           {size, 4LL * (2 * size - 1)}, {size, 4LL * (2 * size - 1)},
                                {size, 4LL * size * size}};
  const char *colls[7] = {"allreduce", "bcast", "allgather", "reduce", "gatherv", "scatterv", "reduce_scatter"};
  for (int c = 0; c < 7; ++c) {
    const long long calls = field(json, colls[c], "calls"), bytes = field(json, colls[c], "bytes");
    if (calls != want[c][0] || bytes != want[c][1]) {
      printf("FAIL: %s: stats say %lld calls, %lld bytes; expected %lld, %lld\n", colls[c], calls, bytes, want[c][0],
             want[c][1]);
      ++total;
    }
  }
  printf("%s: %d ranks, %d wrong results or stats\n", total ? "FAIL" : "PASS", size, total);
  return total ? 1 : 0;
}
