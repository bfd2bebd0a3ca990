/*
 * osu_allreduce: MPI_Allreduce (MPI_SUM) latency, OMB 7.x compatible.
 * See README.md for the options and the output format.
 */
#include "osu_common.h"

#include <string.h>

static double alg_bytes(size_t size, int nprocs) {
  (void)nprocs;
  return (double)size;
}
static double bus_factor(int nprocs) { return 2.0 * (nprocs - 1) / nprocs; }

static void call(osu_ctx *c, int count) {
  const void *send = c->opt->in_place ? MPI_IN_PLACE : c->sbuf;
  OSU_MPI(OSU_COLL(c, Allreduce)(send, c->rbuf, count, c->type->dtype, MPI_SUM, c->comm));
}

/* device -> pinned host, MPI on host, host -> device */
static void call_staged(osu_ctx *c, int count) {
  size_t bytes = (size_t)count * c->type->size;
  if (c->opt->in_place) {
    osu_to_host(c, c->hr, c->rbuf, bytes);
    OSU_MPI(MPI_Allreduce(MPI_IN_PLACE, c->hr, count, c->type->dtype, MPI_SUM, c->comm));
  } else {
    osu_to_host(c, c->hs, c->sbuf, bytes);
    OSU_MPI(MPI_Allreduce(c->hs, c->hr, count, c->type->dtype, MPI_SUM, c->comm));
  }
  osu_to_device(c, c->rbuf, c->hr, bytes);
}

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_allreduce",
      .title = "Allreduce",
      .has_in_place = 1,
      .has_root = 0,
      .uses_sbuf = 1,
      .rbuf_per_rank = 0,
      .alg_bytes = alg_bytes,
      .bus_factor = bus_factor,
      .call = call,
      .pairable = 1,
      .call_staged = call_staged,
      .fill = osu_allreduce_fill,
      .check = osu_allreduce_check,
      .repeatable = osu_allreduce_repeatable,
  };
  return osu_main(&bench, argc, argv);
}
