/*
 * osu_alltoall: MPI_Alltoall latency, OMB 7.x compatible: the size is what each rank
 * sends to each other rank (send and receive buffers hold nprocs times that). -l:
 * MPI_IN_PLACE (the receive buffer is the input). See README.md for the options and the
 * output format.
 */
#include "osu_common.h"

static double alg_bytes(size_t size, int nprocs) { return (double)size * nprocs; }
static double bus_factor(int nprocs) { return (double)(nprocs - 1) / nprocs; }

static void call(osu_ctx *c, int count) {
  if (c->opt->in_place)
    OSU_MPI(OSU_COLL(c, Alltoall)(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->rbuf, count, c->type->dtype, c->comm));
  else
    OSU_MPI(OSU_COLL(c, Alltoall)(c->sbuf, count, c->type->dtype, c->rbuf, count, c->type->dtype, c->comm));
}

/* device -> pinned host, MPI on host, host -> device */
static void call_staged(osu_ctx *c, int count) {
  size_t all = (size_t)count * c->type->size * (size_t)c->nprocs;
  if (c->opt->in_place) {
    osu_to_host(c, c->hr, c->rbuf, all);
    OSU_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->hr, count, c->type->dtype, c->comm));
  } else {
    osu_to_host(c, c->hs, c->sbuf, all);
    OSU_MPI(MPI_Alltoall(c->hs, count, c->type->dtype, c->hr, count, c->type->dtype, c->comm));
  }
  osu_to_device(c, c->rbuf, c->hr, all);
}

/* what rank `from` sends to rank `to`, element i */
static long value(int from, int to, size_t i, int seed) {
  return (long)(((size_t)from * 11 + (size_t)to * 3 + i + (size_t)seed) % 100);
}

static void fill(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count, all = n * c->type->size * (size_t)c->nprocs;
  void *in = c->opt->in_place ? c->hr : c->hs;
  for (int to = 0; to < c->nprocs; to++)
    for (size_t i = 0; i < n; i++) osu_set(c->type, in, (size_t)to * n + i, value(c->rank, to, i, seed));
  if (c->opt->in_place) {
    osu_to_device(c, c->rbuf, c->hr, all);
    return;
  }
  osu_to_device(c, c->sbuf, c->hs, all);
  for (size_t i = 0; i < n * (size_t)c->nprocs; i++) osu_set(c->type, c->hr, i, OSU_SENTINEL);
  osu_to_device(c, c->rbuf, c->hr, all);
}

static long check(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count;
  osu_to_host(c, c->hr, c->rbuf, n * c->type->size * (size_t)c->nprocs);
  long errors = 0;
  for (int from = 0; from < c->nprocs; from++)
    for (size_t i = 0; i < n; i++)
      if (osu_get(c->type, c->hr, (size_t)from * n + i) != (double)value(from, c->rank, i, seed)) errors++;
  return errors;
}

/* in place, every call exchanges the previous result again */
static int repeatable(const osu_ctx *c) { return !c->opt->in_place; }

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_alltoall",
      .title = "All-to-All Personalized Exchange",
      .has_in_place = 1,
      .has_root = 0,
      .uses_sbuf = 1,
      .rbuf_per_rank = 1,
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
