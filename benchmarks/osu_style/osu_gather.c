/*
 * osu_gather: MPI_Gather latency, OMB 7.x compatible: the size is what each rank sends;
 * the root (0 unless -k) receives nprocs times that. -l: MPI_IN_PLACE at the root (its
 * block already in place). See README.md for the options and the output format.
 */
#include "osu_common.h"

static double alg_bytes(size_t size, int nprocs) { return (double)size * nprocs; }
static double bus_factor(int nprocs) { return (double)(nprocs - 1) / nprocs; }

static int in_place_here(const osu_ctx *c) { return c->opt->in_place && c->rank == c->root; }

static void call(osu_ctx *c, int count) {
  if (in_place_here(c))
    OSU_MPI(OSU_COLL(c, Gather)(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->rbuf, count, c->type->dtype, c->root, c->comm));
  else
    OSU_MPI(OSU_COLL(c, Gather)(c->sbuf, count, c->type->dtype, c->rbuf, count, c->type->dtype, c->root, c->comm));
}

/* my block device -> pinned host, MPI on host, the root's result host -> device */
static void call_staged(osu_ctx *c, int count) {
  size_t bytes = (size_t)count * c->type->size;
  if (in_place_here(c)) {
    size_t off = (size_t)c->rank * bytes;
    osu_to_host(c, (char *)c->hr + off, (const char *)c->rbuf + off, bytes);
    OSU_MPI(MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->hr, count, c->type->dtype, c->root, c->comm));
  } else {
    osu_to_host(c, c->hs, c->sbuf, bytes);
    OSU_MPI(MPI_Gather(c->hs, count, c->type->dtype, c->hr, count, c->type->dtype, c->root, c->comm));
  }
  if (c->rank == c->root) osu_to_device(c, c->rbuf, c->hr, bytes * (size_t)c->nprocs);
}

static long value(int r, size_t i, int seed) { return (long)(((size_t)r * 7 + i + (size_t)seed) % 100); }

static void fill(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count, bytes = n * c->type->size;
  for (int r = 0; r < c->nprocs; r++)
    for (size_t i = 0; i < n; i++)
      osu_set(c->type, c->hr, (size_t)r * n + i, in_place_here(c) && r == c->rank ? value(r, i, seed) : OSU_SENTINEL);
  osu_to_device(c, c->rbuf, c->hr, bytes * (size_t)c->nprocs);
  for (size_t i = 0; i < n; i++) osu_set(c->type, c->hs, i, value(c->rank, i, seed));
  osu_to_device(c, c->sbuf, c->hs, bytes);
}

/* the root: every block; the others: their receive buffer untouched */
static long check(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count;
  osu_to_host(c, c->hr, c->rbuf, n * c->type->size * (size_t)c->nprocs);
  long errors = 0;
  for (int r = 0; r < c->nprocs; r++)
    for (size_t i = 0; i < n; i++) {
      long want = c->rank == c->root ? value(r, i, seed) : OSU_SENTINEL;
      if (osu_get(c->type, c->hr, (size_t)r * n + i) != (double)want) errors++;
    }
  return errors;
}

/* with -k rotate, earlier roots hold blocks where the last call's check wants sentinels */
static int repeatable(const osu_ctx *c) { return !c->opt->root_rotate; }

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_gather",
      .title = "Gather",
      .has_in_place = 1,
      .has_root = 1,
      .uses_sbuf = 1,
      .rbuf_per_rank = 1,
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
