/*
 * osu_iallreduce: MPI_Iallreduce (MPI_SUM) latency and overlap, OMB 7.x compatible
 * ("Non-blocking Allreduce Latency Test"): the pure communication latency of
 * MPI_Iallreduce + MPI_Wait, then the same with a dummy computation of that length
 * between the two, and how much of the communication it hid. -l: MPI_IN_PLACE.
 * See README.md for the options and the output format.
 */
#include "osu_common.h"

static double alg_bytes(size_t size, int nprocs) {
  (void)nprocs;
  return (double)size;
}
static double bus_factor(int nprocs) { return 2.0 * (nprocs - 1) / nprocs; }

static void istart(osu_ctx *c, int count, MPI_Request *req) {
  const void *send = c->opt->in_place ? MPI_IN_PLACE : c->sbuf;
  OSU_MPI(MPI_Iallreduce(send, c->rbuf, count, c->type->dtype, MPI_SUM, c->comm, req));
}

/* device -> pinned host, MPI on host; the result goes back after the wait */
static void istart_staged(osu_ctx *c, int count, MPI_Request *req) {
  size_t bytes = (size_t)count * c->type->size;
  if (c->opt->in_place) {
    osu_to_host(c, c->hr, c->rbuf, bytes);
    OSU_MPI(MPI_Iallreduce(MPI_IN_PLACE, c->hr, count, c->type->dtype, MPI_SUM, c->comm, req));
  } else {
    osu_to_host(c, c->hs, c->sbuf, bytes);
    OSU_MPI(MPI_Iallreduce(c->hs, c->hr, count, c->type->dtype, MPI_SUM, c->comm, req));
  }
}

static void ifinish_staged(osu_ctx *c, int count) {
  osu_to_device(c, c->rbuf, c->hr, (size_t)count * c->type->size);
}

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_iallreduce",
      .title = "Non-blocking Allreduce",
      .has_in_place = 1,
      .has_root = 0,
      .uses_sbuf = 1,
      .rbuf_per_rank = 0,
      .alg_bytes = alg_bytes,
      .bus_factor = bus_factor,
      .fill = osu_allreduce_fill,
      .check = osu_allreduce_check,
      .repeatable = osu_allreduce_repeatable,
      .nonblocking = 1,
      .istart = istart,
      .istart_staged = istart_staged,
      .ifinish_staged = ifinish_staged,
  };
  return osu_main(&bench, argc, argv);
}
