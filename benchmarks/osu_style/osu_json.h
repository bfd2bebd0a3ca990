/*
 * osu_json: the -J FILE results of the osu_* benchmarks (README.md, "Results as JSON";
 * the schema: results.schema.json). One record per (type, size), written by rank 0 at
 * the end of the run, each with what a regression or plotting tool needs on its own: the
 * collective, bytes, count, type, ranks, nodes, memory, the path gcoll's calls took (from
 * gcoll's per-process counters when libgcoll.so is in the process: gcoll_call_count,
 * found with dlsym; "mpi" otherwise), the times, nccl-tests' algbw and busbw, and gcoll's
 * commit and GCOLL_* settings.
 */
#ifndef GCOLL_OSU_JSON_H
#define GCOLL_OSU_JSON_H

#include <mpi.h>
#include <stddef.h>

#define OSU_JSON_MAX_ALGOS 32

/* gcoll's counters of one stats line (rank 0's process): the four paths and every
 * algorithm of the collective's table. */
typedef struct {
  long long path[4]; /* engine, staged, passthrough, errors */
  int nalgos;
  long long algo[OSU_JSON_MAX_ALGOS];
} osu_paths;

struct osu_bench;

/* Collective over `comm` (the node count); rank 0 keeps what the records share. Returns
 * 0, or -1 (rank 0: the file cannot be written; reported there). No-op without -J. */
int osu_json_begin(const char *path, const struct osu_bench *b, int device, int staged, int in_place, MPI_Comm comm);
/* This process's counters now (zeros without gcoll). */
void osu_json_mark(osu_paths *p);
/* One record (rank 0). Times in microseconds; nonblocking: avg is Overall and the
 * nonblocking columns are given too (else NULL). */
typedef struct {
  double avg, min, max;
  size_t iterations;
  int validated, errors;
  const double *nbc; /* overall, compute, comm, overlap (%) or NULL */
} osu_json_times;
void osu_json_record(const char *type_name, size_t type_size, size_t bytes, size_t count, double alg_bytes,
                     double bus_factor, const osu_json_times *t, const osu_paths *before, const osu_paths *after);
/* Rank 0 writes the file (after the last record). Returns 0 or -1 (reported). */
int osu_json_end(void);

#endif
