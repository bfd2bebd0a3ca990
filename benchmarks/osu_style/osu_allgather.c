/*
 * osu_allgather: MPI_Allgather latency, OMB 7.x compatible. The size is what each
 * rank contributes; the receive buffer holds nprocs times that.
 * See README.md for the options and the output format.
 */
#include "osu_common.h"

/* nccl-tests count the whole gathered buffer */
static double alg_bytes(size_t size, int nprocs) { return (double)size * nprocs; }
static double bus_factor(int nprocs) { return (double)(nprocs - 1) / nprocs; }

static void call(osu_ctx *c, int count) {
  if (c->opt->in_place)
    OSU_MPI(OSU_COLL(c, Allgather)(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->rbuf, count, c->type->dtype,
                          c->comm));
  else
    OSU_MPI(OSU_COLL(c, Allgather)(c->sbuf, count, c->type->dtype, c->rbuf, count, c->type->dtype,
                          c->comm));
}

/* own block device -> pinned host, MPI on host, whole result host -> device */
static void call_staged(osu_ctx *c, int count) {
  size_t bytes = (size_t)count * c->type->size;
  if (c->opt->in_place) {
    size_t off = (size_t)c->rank * bytes;
    osu_to_host(c, (char *)c->hr + off, (const char *)c->rbuf + off, bytes);
    OSU_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->hr, count, c->type->dtype,
                          c->comm));
  } else {
    osu_to_host(c, c->hs, c->sbuf, bytes);
    OSU_MPI(MPI_Allgather(c->hs, count, c->type->dtype, c->hr, count, c->type->dtype, c->comm));
  }
  osu_to_device(c, c->rbuf, c->hr, bytes * (size_t)c->nprocs);
}

/* block of rank r at index i */
static long value(int r, size_t i, int seed) {
  return (long)(((size_t)r * 7 + i + (size_t)seed) % 100);
}

static void fill(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count, bytes = n * c->type->size;
  for (int r = 0; r < c->nprocs; r++)
    for (size_t i = 0; i < n; i++)
      osu_set(c->type, c->hr, (size_t)r * n + i,
              c->opt->in_place && r == c->rank ? value(r, i, seed) : OSU_SENTINEL);
  osu_to_device(c, c->rbuf, c->hr, bytes * (size_t)c->nprocs);
  if (!c->opt->in_place) {
    for (size_t i = 0; i < n; i++) osu_set(c->type, c->hs, i, value(c->rank, i, seed));
    osu_to_device(c, c->sbuf, c->hs, bytes);
  }
}

static long check(osu_ctx *c, int count, int seed) {
  size_t n = (size_t)count;
  osu_to_host(c, c->hr, c->rbuf, n * c->type->size * (size_t)c->nprocs);
  long errors = 0;
  for (int r = 0; r < c->nprocs; r++)
    for (size_t i = 0; i < n; i++)
      if (osu_get(c->type, c->hr, (size_t)r * n + i) != (double)value(r, i, seed)) errors++;
  return errors;
}

static int repeatable(const osu_ctx *c) {
  (void)c;
  return 1;
}

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_allgather",
      .title = "Allgather",
      .has_in_place = 1,
      .has_root = 0,
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
