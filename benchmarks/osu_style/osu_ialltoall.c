/*
 * osu_ialltoall: MPI_Ialltoall latency and overlap, OMB 7.x compatible ("Non-blocking
 * All-to-All Personalized Exchange Latency Test"): the size is what each rank sends to
 * each other rank (send and receive buffers hold nprocs times that). -l: MPI_IN_PLACE
 * (the receive buffer is the input). See README.md for the options and the output
 * format.
 */
#include "osu_common.h"

static double alg_bytes(size_t size, int nprocs) { return (double)size * nprocs; }
static double bus_factor(int nprocs) { return (double)(nprocs - 1) / nprocs; }

static void istart(osu_ctx *c, int count, MPI_Request *req) {
  if (c->opt->in_place)
    OSU_MPI(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->rbuf, count, c->type->dtype, c->comm, req));
  else
    OSU_MPI(MPI_Ialltoall(c->sbuf, count, c->type->dtype, c->rbuf, count, c->type->dtype, c->comm, req));
}

/* device -> pinned host, MPI on host; the result goes back after the wait */
static void istart_staged(osu_ctx *c, int count, MPI_Request *req) {
  size_t all = (size_t)count * c->type->size * (size_t)c->nprocs;
  if (c->opt->in_place) {
    osu_to_host(c, c->hr, c->rbuf, all);
    OSU_MPI(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->hr, count, c->type->dtype, c->comm, req));
  } else {
    osu_to_host(c, c->hs, c->sbuf, all);
    OSU_MPI(MPI_Ialltoall(c->hs, count, c->type->dtype, c->hr, count, c->type->dtype, c->comm, req));
  }
}

static void ifinish_staged(osu_ctx *c, int count) {
  osu_to_device(c, c->rbuf, c->hr, (size_t)count * c->type->size * (size_t)c->nprocs);
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
      .name = "osu_ialltoall",
      .title = "Non-blocking All-to-All Personalized Exchange",
      .has_in_place = 1,
      .has_root = 0,
      .uses_sbuf = 1,
      .rbuf_per_rank = 1,
      .sbuf_per_rank = 1,
      .alg_bytes = alg_bytes,
      .bus_factor = bus_factor,
      .fill = fill,
      .check = check,
      .repeatable = repeatable,
      .nonblocking = 1,
      .istart = istart,
      .istart_staged = istart_staged,
      .ifinish_staged = ifinish_staged,
  };
  return osu_main(&bench, argc, argv);
}
