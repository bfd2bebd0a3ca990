/*
 * osu_scatter: MPI_Scatter latency, OMB 7.x compatible: the size is what each rank
 * receives; the root (0 unless -k) sends nprocs times that. -l: MPI_IN_PLACE at the root
 * (its block stays in its send buffer). See README.md for the options and the output
 * format.
 */
#include "osu_common.h"

static double alg_bytes(size_t size, int nprocs) { return (double)size * nprocs; }
static double bus_factor(int nprocs) { return (double)(nprocs - 1) / nprocs; }

static int in_place_here(const osu_ctx *c) { return c->opt->in_place && c->rank == c->root; }

static void call(osu_ctx *c, int count) {
  if (in_place_here(c))
    OSU_MPI(OSU_COLL(c, Scatter)(c->sbuf, count, c->type->dtype, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->root, c->comm));
  else
    OSU_MPI(OSU_COLL(c, Scatter)(c->sbuf, count, c->type->dtype, c->rbuf, count, c->type->dtype, c->root, c->comm));
}

/* the root's blocks device -> pinned host, MPI on host, my block host -> device */
static void call_staged(osu_ctx *c, int count) {
  size_t bytes = (size_t)count * c->type->size;
  if (c->rank == c->root) osu_to_host(c, c->hs, c->sbuf, bytes * (size_t)c->nprocs);
  if (in_place_here(c)) {
    OSU_MPI(MPI_Scatter(c->hs, count, c->type->dtype, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->root, c->comm));
    return;
  }
  OSU_MPI(MPI_Scatter(c->hs, count, c->type->dtype, c->hr, count, c->type->dtype, c->root, c->comm));
  osu_to_device(c, c->rbuf, c->hr, bytes);
}

static long value(int r, size_t i, int seed) { return (long)(((size_t)r * 5 + i + (size_t)seed) % 100); }

static void fill(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count, bytes = n * c->type->size;
  for (int r = 0; r < c->nprocs; r++)
    for (size_t i = 0; i < n; i++)
      osu_set(c->type, c->hs, (size_t)r * n + i, c->rank == c->root ? value(r, i, seed) : OSU_SENTINEL);
  osu_to_device(c, c->sbuf, c->hs, bytes * (size_t)c->nprocs);
  for (size_t i = 0; i < n; i++) osu_set(c->type, c->hr, i, OSU_SENTINEL);
  osu_to_device(c, c->rbuf, c->hr, bytes);
}

/* my block from the root (in place at the root: its receive buffer untouched) */
static long check(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count;
  osu_to_host(c, c->hr, c->rbuf, n * c->type->size);
  long errors = 0;
  for (size_t i = 0; i < n; i++) {
    long want = in_place_here(c) ? OSU_SENTINEL : value(c->rank, i, seed);
    if (osu_get(c->type, c->hr, i) != (double)want) errors++;
  }
  return errors;
}

/* with -k rotate the blocks of the last call came from a root whose buffer fill() did not write */
static int repeatable(const osu_ctx *c) { return !c->opt->root_rotate; }

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_scatter",
      .title = "Scatter",
      .has_in_place = 1,
      .has_root = 1,
      .uses_sbuf = 1,
      .sbuf_per_rank = 1,
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
