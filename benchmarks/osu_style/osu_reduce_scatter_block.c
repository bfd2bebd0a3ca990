/*
 * osu_reduce_scatter_block: MPI_Reduce_scatter_block (MPI_SUM) latency, OMB 7.x
 * compatible. As in OMB, the message size is the send buffer (every rank's input): each
 * rank receives size / ranks of it (whole elements; the rest of the input is not sent).
 * See README.md for the options and the output format.
 */
#include "osu_common.h"

#include <string.h>

static double alg_bytes(size_t size, int nprocs) {
  (void)nprocs;
  return (double)size;
}
static double bus_factor(int nprocs) { return (double)(nprocs - 1) / nprocs; }

static int block_of(const osu_ctx *c, int count) { return count / c->nprocs; }

static void call(osu_ctx *c, int count) {
  const void *send = c->opt->in_place ? MPI_IN_PLACE : c->sbuf;
  OSU_MPI(OSU_COLL(c, Reduce_scatter_block)(send, c->rbuf, block_of(c, count), c->type->dtype, MPI_SUM, c->comm));
}

/* device -> pinned host, MPI on host, host -> device (the result block) */
static void call_staged(osu_ctx *c, int count) {
  const int block = block_of(c, count);
  size_t in_bytes = (size_t)block * c->nprocs * c->type->size, out_bytes = (size_t)block * c->type->size;
  if (c->opt->in_place) {
    osu_to_host(c, c->hr, c->rbuf, in_bytes);
    OSU_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, c->hr, block, c->type->dtype, MPI_SUM, c->comm));
  } else {
    osu_to_host(c, c->hs, c->sbuf, in_bytes);
    OSU_MPI(MPI_Reduce_scatter_block(c->hs, c->hr, block, c->type->dtype, MPI_SUM, c->comm));
  }
  osu_to_device(c, c->rbuf, c->hr, out_bytes);
}

/* input of rank r at index i: (r + i + seed) mod m, small enough for an exact sum */
static long input(long m, int r, size_t i, int seed) {
  return (long)(((size_t)r + i + (size_t)seed) % (size_t)m);
}

static void fill(osu_ctx *c, int count, int seed) {
  const size_t total = (size_t)block_of(c, count) * c->nprocs;
  const size_t bytes = total * c->type->size;
  long m = osu_reduce_modulus(c->type, c->nprocs);
  void *in = c->opt->in_place ? c->hr : c->hs;
  for (size_t i = 0; i < total; i++) osu_set(c->type, in, i, input(m, c->rank, i, seed));
  if (c->opt->in_place) {
    osu_to_device(c, c->rbuf, c->hr, bytes);
  } else {
    osu_to_device(c, c->sbuf, c->hs, bytes);
    for (size_t i = 0; i < total; i++) osu_set(c->type, c->hr, i, OSU_SENTINEL);
    osu_to_device(c, c->rbuf, c->hr, bytes);
  }
}

static long check(osu_ctx *c, int count, int seed) {
  const size_t block = (size_t)block_of(c, count);
  long m = osu_reduce_modulus(c->type, c->nprocs);
  osu_to_host(c, c->hr, c->rbuf, block * c->type->size);
  long errors = 0;
  for (size_t j = 0; j < block; j++) {
    long want = 0;
    for (int r = 0; r < c->nprocs; r++) want += input(m, r, (size_t)c->rank * block + j, seed);
    if (osu_get(c->type, c->hr, j) != (double)want) errors++;
  }
  return errors;
}

/* in place, every call reduces the previous results again */
static int repeatable(const osu_ctx *c) { return !c->opt->in_place; }

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_reduce_scatter_block",
      .title = "Reduce_scatter_block",
      .has_in_place = 1,
      .has_root = 0,
      .uses_sbuf = 1,
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
