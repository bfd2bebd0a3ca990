/*
 * osu_bcast: MPI_Bcast latency, OMB 7.x compatible ("Broadcast Latency Test").
 * See README.md for the options and the output format.
 */
#include "osu_common.h"

static double alg_bytes(size_t size, int nprocs) {
  (void)nprocs;
  return (double)size;
}
static double bus_factor(int nprocs) {
  (void)nprocs;
  return 1.0;
}

static void call(osu_ctx *c, int count) {
  OSU_MPI(OSU_COLL(c, Bcast)(c->rbuf, count, c->type->dtype, c->root, c->comm));
}

/* the root copies its device buffer to host, the others copy the result back */
static void call_staged(osu_ctx *c, int count) {
  size_t bytes = (size_t)count * c->type->size;
  if (c->rank == c->root) osu_to_host(c, c->hr, c->rbuf, bytes);
  OSU_MPI(MPI_Bcast(c->hr, count, c->type->dtype, c->root, c->comm));
  if (c->rank != c->root) osu_to_device(c, c->rbuf, c->hr, bytes);
}

static long value(size_t i, int seed) { return (long)((i * 3 + (size_t)seed) % 100); }

/* the root holds the pattern, the others a sentinel */
static void fill(osu_ctx *c, int count, int seed) {
  for (size_t i = 0; i < (size_t)count; i++)
    osu_set(c->type, c->hr, i, c->rank == c->root ? value(i, seed) : OSU_SENTINEL);
  osu_to_device(c, c->rbuf, c->hr, (size_t)count * c->type->size);
}

static long check(osu_ctx *c, int count, int seed) {
  osu_to_host(c, c->hr, c->rbuf, (size_t)count * c->type->size);
  long errors = 0;
  for (size_t i = 0; i < (size_t)count; i++)
    if (osu_get(c->type, c->hr, i) != (double)value(i, seed)) errors++;
  return errors;
}

static int repeatable(const osu_ctx *c) {
  (void)c;
  return 1;
}

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_bcast",
      .title = "Broadcast",
      .has_in_place = 0,
      .has_root = 1,
      .uses_sbuf = 0,
      .rbuf_per_rank = 0,
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
