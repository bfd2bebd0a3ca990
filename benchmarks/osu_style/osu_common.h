/*
 * osu_common: what the osu_* collective benchmarks share: OMB 7.x
 * options, buffers (host or CUDA device), the timing loops (blocking, and OMB's
 * overlap method for the nonblocking ones), validation helpers and OMB-format output.
 * Each benchmark file describes its collective in an osu_bench (how to call or start
 * it directly and staged, how to fill inputs and check results) and hands it to
 * osu_main().
 *
 * These are plain MPI programs: they never link libgcoll, so they measure whatever
 * MPI_Allreduce / MPI_Iallreduce / MPI_Bcast / ... the process resolves (the MPI
 * library, or libgcoll.so under LD_PRELOAD).
 */
#ifndef GCOLL_OSU_COMMON_H
#define GCOLL_OSU_COMMON_H

#include <mpi.h>
#include <stddef.h>

#include "osu_json.h"

/* OMB 7.x constants (c/util/osu_util.h). The version printed in the header line is
 * the OMB release whose output format these benchmarks reproduce. */
#define OSU_OMB_VERSION "7.3"
#define OSU_FIELD_WIDTH 18
#define OSU_FLOAT_PRECISION 2
#define OSU_COLL_LOOP_SMALL 1000
#define OSU_COLL_SKIP_SMALL 100
#define OSU_COLL_LOOP_LARGE 100
#define OSU_COLL_SKIP_LARGE 10
#define OSU_LARGE_MESSAGE_SIZE 8192
#define OSU_MAX_MSG_SIZE_COLL (1 << 20)
#define OSU_MIN_MESSAGE_SIZE 1
#define OSU_MAX_MEM_LIMIT ((size_t)512 * 1024 * 1024)
#define OSU_MAX_MEM_LOWER_LIMIT ((size_t)1024 * 1024)
#define OSU_MAX_TYPES 16

enum osu_accel { OSU_HOST = 0, OSU_CUDA = 1 };

/* Element types -T can name. */
typedef enum {
  OSU_T_CHAR, OSU_T_SIGNED_CHAR, OSU_T_UNSIGNED_CHAR, OSU_T_SHORT, OSU_T_UNSIGNED_SHORT,
  OSU_T_INT, OSU_T_UNSIGNED, OSU_T_LONG, OSU_T_UNSIGNED_LONG, OSU_T_LONG_LONG,
  OSU_T_UNSIGNED_LONG_LONG, OSU_T_FLOAT, OSU_T_DOUBLE
} osu_kind;

typedef struct {
  const char *option; /* spelling after -T, lower case: "mpi_int" */
  osu_kind kind;
  MPI_Datatype dtype;
  size_t size;
  double max_exact; /* largest value a reduction may produce and still be stored exactly */
} osu_type;

typedef struct {
  enum osu_accel accel;
  int staged;           /* --staged: device buffers copied through host memory around MPI */
  int show_full;        /* -f */
  int validate;         /* -c */
  int in_place;         /* -l */
  int root;             /* -k fixed:N (bcast) */
  int root_rotate;      /* -k rotate (bcast) */
  int busbw;            /* --busbw */
  int max_rank_time;    /* --max-rank-time */
  int num_probes;       /* -t CALLS (nonblocking): MPI_Test calls during the dummy compute */
  int thread_level;     /* --thread-level (benchmarks with osu_bench.thread_level) */
  int graph;            /* --graph CALLS (benchmarks with osu_bench.graph_capture): 0 none */
  int thread_granted;   /* what MPI_Init_thread granted, the minimum over the ranks */
  const char *json;     /* -J FILE: the results as JSON records too (osu_json.h) */
  int paired;           /* --paired: each size's calls also as PMPI_* (the MPI's own), alternating */
  size_t min_size, max_size, mem_limit;
  size_t iterations, iterations_large, skip, skip_large;
  int ntypes;
  const osu_type *types[OSU_MAX_TYPES];
} osu_options;

struct osu_bench;

/* Everything a collective needs for one call or one check. */
typedef struct osu_ctx {
  const struct osu_bench *bench;
  const osu_options *opt;
  MPI_Comm comm;
  int rank, nprocs;
  const osu_type *type;
  int root;          /* bcast root of the current call */
  void *sbuf, *rbuf; /* the benchmark's buffers: device memory with -d cuda */
  void *hs, *hr;     /* host buffers of the same sizes: staging (--staged) and validation;
                        the same pointers as sbuf/rbuf for host memory */
  int pmpi;          /* --paired: this call is the MPI's own (PMPI_*), not MPI_* */
} osu_ctx;

/* The collective a benchmark's call() makes: MPI_<Name>, or with --paired in the PMPI
 * half of the loop PMPI_<Name> (under LD_PRELOAD=libgcoll.so: the MPI's own call, what
 * the MPI alone runs, in the same process and the same minutes). */
#define OSU_COLL(c, Name) ((c)->pmpi ? PMPI_##Name : MPI_##Name)

/* What a benchmark file provides. */
typedef struct osu_bench {
  const char *name;  /* "osu_allreduce" */
  const char *title; /* "Allreduce": "# OSU MPI Allreduce Latency Test v7.3";
                        "Non-blocking Allreduce", "Allreduce Persistent" */
  int has_in_place;  /* -l */
  int has_root;      /* -k */
  int uses_sbuf;     /* 0: one buffer (bcast) */
  int rbuf_per_rank; /* receive buffer holds one message per rank (allgather) */
  int sbuf_per_rank; /* send buffer holds one message per rank (alltoall, scatter) */
  /* nccl-tests conventions: bytes moved per call for algbw, and the bus factor. */
  double (*alg_bytes)(size_t size, int nprocs);
  double (*bus_factor)(int nprocs);
  /* One call with ctx->sbuf/rbuf (direct) or through ctx->hs/hr (staged). */
  void (*call)(osu_ctx *c, int count);
  void (*call_staged)(osu_ctx *c, int count);
  int pairable; /* call() makes its collective through OSU_COLL: --paired applies */
  /* Validation: fill inputs from (rank, index, seed) and put a sentinel in the outputs;
     count this rank's wrong elements after one or more calls. */
  void (*fill)(osu_ctx *c, int count, int seed);
  long (*check)(osu_ctx *c, int count, int seed);
  /* Whether repeating the call on the same buffers leaves the result unchanged
     (then the buffers of the timed loop are checked too). */
  int (*repeatable)(const osu_ctx *c);
  /* Nonblocking benchmarks (OMB's osu_i*): istart starts the collective on ctx->sbuf/rbuf
     (istart_staged: on ctx->hs/hr, after copying the inputs there); osu_common completes
     it with MPI_Wait and then, with --staged, calls ifinish_staged (the result back to the
     device). call/call_staged are unused. Output: OMB's Overall / Compute / Pure Comm. /
     Overlap table. */
  int nonblocking;
  void (*istart)(osu_ctx *c, int count, MPI_Request *req);
  void (*istart_staged)(osu_ctx *c, int count, MPI_Request *req);
  void (*ifinish_staged)(osu_ctx *c, int count);
  /* Optional, around one size's measurement (persistent requests): prepare(c, count)
     before its first call, release(c) after its last (validation included). */
  void (*prepare)(osu_ctx *c, int count);
  void (*release)(osu_ctx *c);
  /* Non-NULL: why this build cannot run the benchmark (an MPI without the call); it
     prints the title and this reason as a comment line, measures nothing, exits 0. */
  const char *unavailable;
  /* Optional, for calls that complete later (stream-ordered ones):
     back_to_back: the timed calls follow each other without a barrier and the loop is
     timed as a whole (after the warmup and a barrier); --max-rank-time does not apply.
     flush: with back_to_back, once after the warmup calls and once after the timed calls,
     inside the timed interval; and after the call of each validation check. */
  int back_to_back;
  void (*flush)(osu_ctx *c);
  /* Non-zero: MPI_Init_thread asks for this level (--thread-level asks for another) and a
     comment line says the level granted (the minimum over the ranks). 0: MPI_Init. */
  int thread_level;
  const char *note; /* non-NULL: a comment line after the title */
  /* After MPI_Init, on every rank, no collective calls: NULL, or why this process cannot
     run the benchmark (the first such rank prints "name: reason", exit status 1). */
  const char *(*refuse)(const osu_options *o);
  /* Optional, with back_to_back and flush (--graph CALLS): graph_capture captures CALLS
     calls on the buffers into a graph (once per size, after the barrier), graph_launch
     queues one launch of it, graph_release frees it (after the timed launches). */
  void (*graph_capture)(osu_ctx *c, int count, int calls);
  void (*graph_launch)(osu_ctx *c);
  void (*graph_release)(osu_ctx *c);
  /* Once, around all the sizes: after the buffers are made, before they are freed. */
  void (*setup)(osu_ctx *c);
  void (*teardown)(osu_ctx *c);
} osu_bench;

int osu_main(const osu_bench *bench, int argc, char **argv);

/* ---- helpers for the benchmark files ---- */
void osu_mpi_check(int err, const char *what);
#define OSU_MPI(call) osu_mpi_check((call), #call)
void osu_to_device(const osu_ctx *c, void *dst, const void *src, size_t bytes);
void osu_to_host(const osu_ctx *c, void *dst, const void *src, size_t bytes);
void osu_set(const osu_type *t, void *buf, size_t i, long v);
double osu_get(const osu_type *t, const void *buf, size_t i);
/* Values a benchmark stores are small integers in [0, 100]; a sentinel outside them. */
#define OSU_SENTINEL 127
/* Modulus m for reduction inputs v in [0, m): the sum over nprocs ranks stays exact. */
long osu_reduce_modulus(const osu_type *t, int nprocs);

/* The MPI_SUM allreduce benchmarks' validation (osu_allreduce, osu_iallreduce,
 * osu_allreduce_persistent, osu_allreduce_enqueue): rank r's input at index i is
 * (r + i + seed) mod osu_reduce_modulus, so every sum is exact; outputs get a sentinel.
 * The _with forms move the bytes with `copy` (host <-> the benchmark's buffers) instead
 * of osu_to_device / osu_to_host. repeatable: not in place (then every call adds the
 * ranks' results again). */
typedef void (*osu_copy_fn)(const osu_ctx *c, void *dst, const void *src, size_t bytes);
void osu_allreduce_fill_with(osu_ctx *c, int count, int seed, osu_copy_fn to_device);
long osu_allreduce_check_with(osu_ctx *c, int count, int seed, osu_copy_fn to_host);
void osu_allreduce_fill(osu_ctx *c, int count, int seed);
long osu_allreduce_check(osu_ctx *c, int count, int seed);
int osu_allreduce_repeatable(const osu_ctx *c);
#ifdef OSU_HAVE_CUDA
/* a gpu_api.h call's status: non-zero aborts with its message */
void osu_gpu_check(int e, const char *what);
#define OSU_GPU(call) osu_gpu_check((call), #call)
#endif

#endif
