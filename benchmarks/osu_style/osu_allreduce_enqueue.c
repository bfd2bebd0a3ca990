/*
 * osu_allreduce_enqueue: the stream-ordered allreduce, MPIX_Allreduce_enqueue (MPICH's
 * stream API; libgcoll.so provides it under the MPIs that lack it: include/gcoll/
 * mpix_stream.h, README "Stream-ordered collectives"), in OMB 7.x's output format
 * (osu_common, osu_allreduce's table).
 *
 * Per message size (after a barrier): warmup, then N = -i back-to-back
 * MPIX_Allreduce_enqueue(MPI_SUM) calls on a stream communicator over MPI_COMM_WORLD,
 * followed by ONE synchronization of the CUDA stream; a rank's latency is that time / N,
 * Avg the mean over the ranks (Min/Max with -f). No barrier between the calls
 * (osu_allreduce has one after every call; its -d cuda run is the blocking comparison).
 *
 * It needs device buffers (-d cuda: an enqueued call is ordered on a CUDA stream):
 * without -d cuda it prints an error and exits with status 1. The GPU is reached through
 * osu_common (mpi_tests/gpu/gpu_api.h): the CUDA runtime, or gcoll's emulated GPU under
 * GCOLL_CUDA=emulate (libgcoll.so preloaded). Like the other osu_* it does not link
 * libgcoll: the MPIX_* functions are looked up at run time (dlsym), in libgcoll.so under
 * LD_PRELOAD or in an MPI that has them (MPICH >= 4.1); where there are none it says so
 * and exits with status 1.
 *
 * --graph CALLS: CALLS enqueued calls captured once per size into a CUDA graph
 * (cudaStreamBeginCapture), the warmup and the timed loop launches of it; latency = time /
 * calls launched (issue 30's "inside a graph" figure).
 *
 * MPI_Init_thread asks for MPI_THREAD_MULTIPLE (--thread-level asks for less); a comment
 * line says which level was granted: without MULTIPLE gcoll's enqueue calls are
 * host-synchronous (each waits for the stream and runs the collective before it returns).
 *
 * See README.md in this directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include "osu_common.h"

#include <dlfcn.h>
#include <stdio.h>

#include "gcoll/mpix_stream.h" /* MPIX_Stream (nothing where the MPI's mpi.h has the API) */
#ifdef OSU_HAVE_CUDA
#include "gpu_api.h"
#endif

static double alg_bytes(size_t size, int nprocs) {
  (void)nprocs;
  return (double)size;
}
static double bus_factor(int nprocs) { return 2.0 * (nprocs - 1) / nprocs; }

/* ---- the stream API, looked up at run time ---- */

static struct {
  int (*info_set_hex)(MPI_Info, const char *, const void *, int);
  int (*stream_create)(MPI_Info, MPIX_Stream *);
  int (*stream_free)(MPIX_Stream *);
  int (*stream_comm_create)(MPI_Comm, MPIX_Stream, MPI_Comm *);
  int (*allreduce_enqueue)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
} mpix;

static void *stream;                /* the cudaStream_t */
static MPIX_Stream mstream = MPIX_STREAM_NULL;
static MPI_Comm scomm = MPI_COMM_NULL; /* the stream communicator */

static const char *refuse(const osu_options *o) {
  if (o->accel != OSU_CUDA)
    return "needs -d cuda: MPIX_Allreduce_enqueue orders the call on a CUDA stream, so this "
           "benchmark measures it on device buffers only";
  if (o->staged) return "--staged does not apply: the enqueued call takes the device buffers";
  static const char *names[] = {"MPIX_Info_set_hex", "MPIX_Stream_create", "MPIX_Stream_free",
                                "MPIX_Stream_comm_create", "MPIX_Allreduce_enqueue"};
  void **slots[] = {(void **)&mpix.info_set_hex, (void **)&mpix.stream_create, (void **)&mpix.stream_free,
                    (void **)&mpix.stream_comm_create, (void **)&mpix.allreduce_enqueue};
  static char why[256];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    *slots[i] = dlsym(RTLD_DEFAULT, names[i]);
    if (!*slots[i]) {
      snprintf(why, sizeof why, "%s is not in this process: this MPI has no stream API (MPICH >= 4.1 "
               "has it); run with LD_PRELOAD=libgcoll.so", names[i]);
      return why;
    }
  }
  return NULL;
}

static void call(osu_ctx *c, int count);

#ifdef OSU_HAVE_CUDA
/* a CUDA stream, an MPIX_Stream on it, a stream communicator over MPI_COMM_WORLD; the
 * stream does not wait for the legacy one, which osu_common's copies (the buffers'
 * initial contents) may still be running on: they finish first */
static void setup(osu_ctx *c) {
  OSU_GPU(gpu_stream_create(&stream));
  OSU_GPU(gpu_device_synchronize());
  MPI_Info info;
  OSU_MPI(MPI_Info_create(&info));
  OSU_MPI(MPI_Info_set(info, "type", "cudaStream_t"));
  OSU_MPI(mpix.info_set_hex(info, "value", &stream, (int)sizeof stream));
  OSU_MPI(mpix.stream_create(info, &mstream));
  OSU_MPI(MPI_Info_free(&info));
  OSU_MPI(mpix.stream_comm_create(c->comm, mstream, &scomm));
}

static void flush(osu_ctx *c) {
  (void)c;
  OSU_GPU(gpu_stream_synchronize(stream));
}

/* --graph CALLS: the calls captured on the stream into one graph, launched as a whole */
static void *graph;
static void graph_capture(osu_ctx *c, int count, int calls) {
  OSU_GPU(gpu_stream_begin_capture(stream));
  for (int i = 0; i < calls; i++) call(c, count);
  OSU_GPU(gpu_stream_end_capture(stream, &graph));
}
static void graph_launch(osu_ctx *c) {
  (void)c;
  OSU_GPU(gpu_graph_launch(graph, stream));
}
static void graph_release(osu_ctx *c) {
  (void)c;
  OSU_GPU(gpu_graph_destroy(graph));
  graph = NULL;
}

static void teardown(osu_ctx *c) {
  flush(c);
  OSU_MPI(MPI_Comm_free(&scomm));
  OSU_MPI(mpix.stream_free(&mstream));
  OSU_GPU(gpu_stream_destroy(stream));
}
#endif

static void call(osu_ctx *c, int count) {
  const void *send = c->opt->in_place ? MPI_IN_PLACE : c->sbuf;
  OSU_MPI(mpix.allreduce_enqueue(send, c->rbuf, count, c->type->dtype, MPI_SUM, scomm));
}

/* Copies through the stream, ordered after the enqueued calls; done when it returns. */
static void copy(const osu_ctx *c, void *dst, const void *src, size_t bytes) {
  (void)c;
#ifdef OSU_HAVE_CUDA
  OSU_GPU(gpu_memcpy_async(dst, src, bytes, stream));
  OSU_GPU(gpu_stream_synchronize(stream));
#else
  (void)dst, (void)src, (void)bytes; /* never runs: refuse() */
#endif
}

/* osu_allreduce's validation, its copies on the stream */
static void fill(osu_ctx *c, int count, int seed) { osu_allreduce_fill_with(c, count, seed, copy); }
static long check(osu_ctx *c, int count, int seed) { return osu_allreduce_check_with(c, count, seed, copy); }

int main(int argc, char **argv) {
  static const osu_bench bench = {
      .name = "osu_allreduce_enqueue",
      .title = "Allreduce Enqueue",
      .has_in_place = 1,
      .uses_sbuf = 1,
      .alg_bytes = alg_bytes,
      .bus_factor = bus_factor,
      .call = call,
      .fill = fill,
      .check = check,
      .repeatable = osu_allreduce_repeatable,
      .back_to_back = 1,
      .thread_level = MPI_THREAD_MULTIPLE,
      .note = "MPIX_Allreduce_enqueue on a stream communicator: N calls back to back, then one "
              "stream synchronization; Avg Latency = time / N.",
      .refuse = refuse,
#ifdef OSU_HAVE_CUDA
      .flush = flush,
      .setup = setup,
      .teardown = teardown,
      .graph_capture = graph_capture,
      .graph_launch = graph_launch,
      .graph_release = graph_release,
#endif
  };
  return osu_main(&bench, argc, argv);
}
