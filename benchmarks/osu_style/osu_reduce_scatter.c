/*
 * osu_reduce_scatter: MPI_Reduce_scatter (MPI_SUM) latency, OMB 7.x compatible: the
 * size is the send buffer (every rank's input); rank r receives recvcounts[r] elements
 * of the reduction, count / nprocs each with the remainder spread over the first ranks
 * (uneven counts). -l: MPI_IN_PLACE (the input in the receive buffer). See README.md
 * for the options and the output format.
 */
#include <stdlib.h>

#include "osu_common.h"

static double alg_bytes(size_t size, int nprocs) {
  (void)nprocs;
  return (double)size;
}
static double bus_factor(int nprocs) { return (double)(nprocs - 1) / nprocs; }

static int *counts; /* nprocs entries for the current count */

static void layout(const osu_ctx *c, int count) {
  if (!counts) {
    counts = (int *)malloc(sizeof(int) * (size_t)c->nprocs);
    if (!counts) MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
  }
  for (int r = 0; r < c->nprocs; r++) counts[r] = count / c->nprocs + (r < count % c->nprocs ? 1 : 0);
}
static size_t first(const osu_ctx *c, int r) {
  size_t off = 0;
  for (int q = 0; q < r; q++) off += (size_t)counts[q];
  return off;
}

static void call(osu_ctx *c, int count) {
  layout(c, count);
  OSU_MPI(OSU_COLL(c, Reduce_scatter)(c->opt->in_place ? MPI_IN_PLACE : c->sbuf, c->rbuf, counts, c->type->dtype, MPI_SUM,
                             c->comm));
}

/* device -> pinned host, MPI on host, my block host -> device */
static void call_staged(osu_ctx *c, int count) {
  layout(c, count);
  size_t in_bytes = (size_t)count * c->type->size, out_bytes = (size_t)counts[c->rank] * c->type->size;
  if (c->opt->in_place) {
    osu_to_host(c, c->hr, c->rbuf, in_bytes);
    OSU_MPI(MPI_Reduce_scatter(MPI_IN_PLACE, c->hr, counts, c->type->dtype, MPI_SUM, c->comm));
  } else {
    osu_to_host(c, c->hs, c->sbuf, in_bytes);
    OSU_MPI(MPI_Reduce_scatter(c->hs, c->hr, counts, c->type->dtype, MPI_SUM, c->comm));
  }
  osu_to_device(c, c->rbuf, c->hr, out_bytes);
}

static long input(long m, int r, size_t i, int seed) { return (long)(((size_t)r + 2 * i + (size_t)seed) % (size_t)m); }

static void fill(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count, bytes = n * c->type->size;
  long m = osu_reduce_modulus(c->type, c->nprocs);
  void *in = c->opt->in_place ? c->hr : c->hs;
  for (size_t i = 0; i < n; i++) osu_set(c->type, in, i, input(m, c->rank, i, seed));
  if (c->opt->in_place) {
    osu_to_device(c, c->rbuf, c->hr, bytes);
    return;
  }
  osu_to_device(c, c->sbuf, c->hs, bytes);
  for (size_t i = 0; i < n; i++) osu_set(c->type, c->hr, i, OSU_SENTINEL);
  osu_to_device(c, c->rbuf, c->hr, bytes);
}

static long check(osu_ctx *c, int count, int seed) {
  layout(c, count);
  const size_t mine = (size_t)counts[c->rank], off = first(c, c->rank);
  long m = osu_reduce_modulus(c->type, c->nprocs), errors = 0;
  osu_to_host(c, c->hr, c->rbuf, mine * c->type->size);
  for (size_t j = 0; j < mine; j++) {
    long want = 0;
    for (int r = 0; r < c->nprocs; r++) want += input(m, r, off + j, seed);
    if (osu_get(c->type, c->hr, j) != (double)want) errors++;
  }
  return errors;
}

/* in place, every call reduces the previous results again */
static int repeatable(const osu_ctx *c) { return !c->opt->in_place; }

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_reduce_scatter",
      .title = "Reduce_scatter",
      .has_in_place = 1,
      .has_root = 0,
      .uses_sbuf = 1,
      .alg_bytes = alg_bytes,
      .bus_factor = bus_factor,
      .call = call,
      .pairable = 1,
      .call_staged = call_staged,
      .fill = fill,
      .check = check,
      .repeatable = repeatable,
  };
  return osu_main(&bench, argc, argv);
}
