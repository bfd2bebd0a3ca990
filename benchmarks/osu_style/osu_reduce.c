/*
 * osu_reduce: MPI_Reduce (MPI_SUM) latency to a root, OMB 7.x compatible (root 0 unless
 * -k fixed:N or -k rotate). -l: MPI_IN_PLACE at the root (its input in the receive
 * buffer). See README.md for the options and the output format.
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

static int in_place_here(const osu_ctx *c) { return c->opt->in_place && c->rank == c->root; }

static void call(osu_ctx *c, int count) {
  OSU_MPI(OSU_COLL(c, Reduce)(in_place_here(c) ? MPI_IN_PLACE : c->sbuf, c->rbuf, count, c->type->dtype, MPI_SUM, c->root,
                     c->comm));
}

/* device -> pinned host, MPI on host, the root's result host -> device */
static void call_staged(osu_ctx *c, int count) {
  size_t bytes = (size_t)count * c->type->size;
  if (in_place_here(c)) {
    osu_to_host(c, c->hr, c->rbuf, bytes);
    OSU_MPI(MPI_Reduce(MPI_IN_PLACE, c->hr, count, c->type->dtype, MPI_SUM, c->root, c->comm));
  } else {
    osu_to_host(c, c->hs, c->sbuf, bytes);
    OSU_MPI(MPI_Reduce(c->hs, c->hr, count, c->type->dtype, MPI_SUM, c->root, c->comm));
  }
  if (c->rank == c->root) osu_to_device(c, c->rbuf, c->hr, bytes);
}

static long input(long m, int r, size_t i, int seed) { return (long)(((size_t)r * 3 + i + (size_t)seed) % (size_t)m); }

static void fill(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count, bytes = n * c->type->size;
  long m = osu_reduce_modulus(c->type, c->nprocs);
  void *in = in_place_here(c) ? c->hr : c->hs;
  for (size_t i = 0; i < n; i++) osu_set(c->type, in, i, input(m, c->rank, i, seed));
  if (in_place_here(c)) {
    osu_to_device(c, c->rbuf, c->hr, bytes);
    return;
  }
  osu_to_device(c, c->sbuf, c->hs, bytes);
  for (size_t i = 0; i < n; i++) osu_set(c->type, c->hr, i, OSU_SENTINEL);
  osu_to_device(c, c->rbuf, c->hr, bytes);
}

/* the root: the sum; every other rank: its receive buffer untouched */
static long check(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count;
  long m = osu_reduce_modulus(c->type, c->nprocs), errors = 0;
  osu_to_host(c, c->hr, c->rbuf, n * c->type->size);
  for (size_t i = 0; i < n; i++) {
    long want = OSU_SENTINEL;
    if (c->rank == c->root) {
      want = 0;
      for (int r = 0; r < c->nprocs; r++) want += input(m, r, i, seed);
    }
    if (osu_get(c->type, c->hr, i) != (double)want) errors++;
  }
  return errors;
}

/* in place, every call reduces the previous result again; with -k rotate, the ranks that
   were roots earlier hold a sum where the last call's check wants the sentinel */
static int repeatable(const osu_ctx *c) { return !c->opt->in_place && !c->opt->root_rotate; }

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_reduce",
      .title = "Reduce",
      .has_in_place = 1,
      .has_root = 1,
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
