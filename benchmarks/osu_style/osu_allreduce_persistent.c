/*
 * osu_allreduce_persistent: persistent MPI_Allreduce (MPI_SUM) latency, OMB 7.x
 * compatible ("Allreduce Persistent Latency Test", as OMB 7.4 names it): per message
 * size one request from MPI_Allreduce_init (Open MPI 4.x: MPIX_Allreduce_init, see
 * osu_persistent.h), then every iteration is MPI_Start + MPI_Wait on it; the output is
 * osu_allreduce's. Built against an MPI without persistent collectives, it prints the
 * title and a line saying so, and exits 0. See README.md for the options and the output
 * format.
 */
#include "osu_common.h"
#include "osu_persistent.h"

static double alg_bytes(size_t size, int nprocs) {
  (void)nprocs;
  return (double)size;
}
static double bus_factor(int nprocs) { return 2.0 * (nprocs - 1) / nprocs; }

/* the current size's request: made by prepare, freed by release */
static MPI_Request preq = MPI_REQUEST_NULL;

/* on the device buffers, or with --staged on the host buffers the call copies through */
static void prepare(osu_ctx *c, int count) {
#ifdef OSU_ALLREDUCE_INIT
  const int staged = c->opt->staged;
  const void *send = c->opt->in_place ? MPI_IN_PLACE : staged ? c->hs : c->sbuf;
  void *recv = staged ? c->hr : c->rbuf;
  OSU_MPI(OSU_ALLREDUCE_INIT(send, recv, count, c->type->dtype, MPI_SUM, c->comm, MPI_INFO_NULL, &preq));
#else
  (void)c;
  (void)count;
#endif
}

static void release(osu_ctx *c) {
  (void)c;
  if (preq != MPI_REQUEST_NULL) OSU_MPI(MPI_Request_free(&preq));
}

static void call(osu_ctx *c, int count) {
  (void)c;
  (void)count;
  OSU_MPI(MPI_Start(&preq));
  OSU_MPI(MPI_Wait(&preq, MPI_STATUS_IGNORE));
}

/* device -> pinned host, the request on host buffers, host -> device */
static void call_staged(osu_ctx *c, int count) {
  size_t bytes = (size_t)count * c->type->size;
  if (c->opt->in_place)
    osu_to_host(c, c->hr, c->rbuf, bytes);
  else
    osu_to_host(c, c->hs, c->sbuf, bytes);
  OSU_MPI(MPI_Start(&preq));
  OSU_MPI(MPI_Wait(&preq, MPI_STATUS_IGNORE));
  osu_to_device(c, c->rbuf, c->hr, bytes);
}

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_allreduce_persistent",
      .title = "Allreduce Persistent",
      .has_in_place = 1,
      .has_root = 0,
      .uses_sbuf = 1,
      .rbuf_per_rank = 0,
      .alg_bytes = alg_bytes,
      .bus_factor = bus_factor,
      .call = call,
      .call_staged = call_staged,
      .fill = osu_allreduce_fill,
      .check = osu_allreduce_check,
      .repeatable = osu_allreduce_repeatable,
      .prepare = prepare,
      .release = release,
#ifndef OSU_ALLREDUCE_INIT
      .unavailable = "this MPI has no persistent allreduce (MPI_Allreduce_init of MPI 4.0, or "
                     "Open MPI's MPIX_Allreduce_init from <mpi-ext.h>)",
#endif
  };
  return osu_main(&bench, argc, argv);
}
