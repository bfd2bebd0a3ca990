/*
 * osu_common.c: options, buffers, timing loops, validation plumbing and output shared
 * by the osu_* benchmarks. The output format, option spellings, defaults and timing
 * method are those of OSU Micro-Benchmarks 7.x (osu_util.c, osu_util_mpi.c,
 * osu_allreduce.c, and osu_iallreduce.c for the nonblocking ones); see README.md in
 * this directory.
 */
#define _GNU_SOURCE
#include "osu_common.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef OSU_HAVE_CUDA
/* -d cuda: device buffers through mpi_tests/gpu/gpu_api.h: the CUDA runtime, or with
 * GCOLL_CUDA=emulate gcoll's emulated GPU (libgcoll.so preloaded), so that the gpu.osu
 * tests also run on machines without a GPU. */
#include "gpu_api.h"
#endif

/* ---- element types ------------------------------------------------------------- */

static osu_type osu_types[] = {
    {"mpi_char", OSU_T_CHAR, MPI_CHAR, sizeof(char), 127.0},
    {"mpi_signed_char", OSU_T_SIGNED_CHAR, MPI_SIGNED_CHAR, sizeof(signed char), 127.0},
    {"mpi_unsigned_char", OSU_T_UNSIGNED_CHAR, MPI_UNSIGNED_CHAR, sizeof(unsigned char), 255.0},
    {"mpi_short", OSU_T_SHORT, MPI_SHORT, sizeof(short), 32767.0},
    {"mpi_unsigned_short", OSU_T_UNSIGNED_SHORT, MPI_UNSIGNED_SHORT, sizeof(unsigned short), 65535.0},
    {"mpi_int", OSU_T_INT, MPI_INT, sizeof(int), 2147483647.0},
    {"mpi_unsigned", OSU_T_UNSIGNED, MPI_UNSIGNED, sizeof(unsigned), 4294967295.0},
    {"mpi_long", OSU_T_LONG, MPI_LONG, sizeof(long), 9007199254740992.0},
    {"mpi_unsigned_long", OSU_T_UNSIGNED_LONG, MPI_UNSIGNED_LONG, sizeof(unsigned long), 9007199254740992.0},
    {"mpi_long_long", OSU_T_LONG_LONG, MPI_LONG_LONG, sizeof(long long), 9007199254740992.0},
    {"mpi_unsigned_long_long", OSU_T_UNSIGNED_LONG_LONG, MPI_UNSIGNED_LONG_LONG,
     sizeof(unsigned long long), 9007199254740992.0},
    {"mpi_float", OSU_T_FLOAT, MPI_FLOAT, sizeof(float), 16777216.0},
    {"mpi_double", OSU_T_DOUBLE, MPI_DOUBLE, sizeof(double), 9007199254740992.0},
};
#define OSU_NTYPES ((int)(sizeof(osu_types) / sizeof(osu_types[0])))

static const osu_type *osu_find_type(const char *name) {
  for (int i = 0; i < OSU_NTYPES; i++)
    if (strcasecmp(name, osu_types[i].option) == 0) return &osu_types[i];
  if (strcasecmp(name, "mpi_long_long_int") == 0) return osu_find_type("mpi_long_long");
  return NULL;
}

void osu_set(const osu_type *t, void *buf, size_t i, long v) {
  switch (t->kind) {
    case OSU_T_CHAR: ((char *)buf)[i] = (char)v; break;
    case OSU_T_SIGNED_CHAR: ((signed char *)buf)[i] = (signed char)v; break;
    case OSU_T_UNSIGNED_CHAR: ((unsigned char *)buf)[i] = (unsigned char)v; break;
    case OSU_T_SHORT: ((short *)buf)[i] = (short)v; break;
    case OSU_T_UNSIGNED_SHORT: ((unsigned short *)buf)[i] = (unsigned short)v; break;
    case OSU_T_INT: ((int *)buf)[i] = (int)v; break;
    case OSU_T_UNSIGNED: ((unsigned *)buf)[i] = (unsigned)v; break;
    case OSU_T_LONG: ((long *)buf)[i] = v; break;
    case OSU_T_UNSIGNED_LONG: ((unsigned long *)buf)[i] = (unsigned long)v; break;
    case OSU_T_LONG_LONG: ((long long *)buf)[i] = v; break;
    case OSU_T_UNSIGNED_LONG_LONG: ((unsigned long long *)buf)[i] = (unsigned long long)v; break;
    case OSU_T_FLOAT: ((float *)buf)[i] = (float)v; break;
    case OSU_T_DOUBLE: ((double *)buf)[i] = (double)v; break;
  }
}

double osu_get(const osu_type *t, const void *buf, size_t i) {
  switch (t->kind) {
    case OSU_T_CHAR: return ((const char *)buf)[i];
    case OSU_T_SIGNED_CHAR: return ((const signed char *)buf)[i];
    case OSU_T_UNSIGNED_CHAR: return ((const unsigned char *)buf)[i];
    case OSU_T_SHORT: return ((const short *)buf)[i];
    case OSU_T_UNSIGNED_SHORT: return ((const unsigned short *)buf)[i];
    case OSU_T_INT: return ((const int *)buf)[i];
    case OSU_T_UNSIGNED: return ((const unsigned *)buf)[i];
    case OSU_T_LONG: return (double)((const long *)buf)[i];
    case OSU_T_UNSIGNED_LONG: return (double)((const unsigned long *)buf)[i];
    case OSU_T_LONG_LONG: return (double)((const long long *)buf)[i];
    case OSU_T_UNSIGNED_LONG_LONG: return (double)((const unsigned long long *)buf)[i];
    case OSU_T_FLOAT: return ((const float *)buf)[i];
    case OSU_T_DOUBLE: return ((const double *)buf)[i];
  }
  return 0.0;
}

long osu_reduce_modulus(const osu_type *t, int nprocs) {
  /* inputs in [0, m): the sum is at most (m - 1) * nprocs <= max_exact */
  double m = t->max_exact / (double)nprocs + 1.0;
  if (m > 16.0) m = 16.0;
  if (m < 1.0) m = 1.0;
  return (long)m;
}

/* ---- the allreduce benchmarks' validation ----------------------------------------- */

static long allreduce_input(long m, int r, size_t i, int seed) {
  return (long)(((size_t)r + i + (size_t)seed) % (size_t)m);
}

void osu_allreduce_fill_with(osu_ctx *c, int count, int seed, osu_copy_fn to_device) {
  size_t bytes = (size_t)count * c->type->size;
  long m = osu_reduce_modulus(c->type, c->nprocs);
  void *in = c->opt->in_place ? c->hr : c->hs;
  for (size_t i = 0; i < (size_t)count; i++) osu_set(c->type, in, i, allreduce_input(m, c->rank, i, seed));
  if (!c->opt->in_place) {
    to_device(c, c->sbuf, c->hs, bytes);
    for (size_t i = 0; i < (size_t)count; i++) osu_set(c->type, c->hr, i, OSU_SENTINEL);
  }
  to_device(c, c->rbuf, c->hr, bytes);
}

long osu_allreduce_check_with(osu_ctx *c, int count, int seed, osu_copy_fn to_host) {
  size_t bytes = (size_t)count * c->type->size;
  long m = osu_reduce_modulus(c->type, c->nprocs);
  to_host(c, c->hr, c->rbuf, bytes);
  long errors = 0;
  for (size_t i = 0; i < (size_t)count; i++) {
    long want = 0;
    for (int r = 0; r < c->nprocs; r++) want += allreduce_input(m, r, i, seed);
    if (osu_get(c->type, c->hr, i) != (double)want) errors++;
  }
  return errors;
}

void osu_allreduce_fill(osu_ctx *c, int count, int seed) { osu_allreduce_fill_with(c, count, seed, osu_to_device); }
long osu_allreduce_check(osu_ctx *c, int count, int seed) { return osu_allreduce_check_with(c, count, seed, osu_to_host); }
int osu_allreduce_repeatable(const osu_ctx *c) { return !c->opt->in_place; }

/* ---- errors ---------------------------------------------------------------------- */

static const char *osu_prog = "osu_benchmark";

void osu_mpi_check(int err, const char *what) {
  if (err == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(err, msg, &len);
  fprintf(stderr, "%s: %s failed: %s\n", osu_prog, what, msg);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
}

#ifdef OSU_HAVE_CUDA
void osu_gpu_check(int e, const char *what) {
  if (e == 0) return;
  fprintf(stderr, "%s: %s failed: %s (%s error %d)\n", osu_prog, what, gpu_error_string(e),
          gpu_mode_name(), e);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
}
#define OSU_CUDA(call) osu_gpu_check((call), #call)
#endif

/* ---- options --------------------------------------------------------------------- */

typedef struct {
  char opt;              /* 0: long option only */
  const char *name;      /* long name */
  int has_arg;
  const char *help;      /* lines separated by '\n' */
  int which;             /* 0: every benchmark, 1: in-place ones, 2: rooted ones,
                            3: blocking ones, 4: nonblocking ones, 5: those with a
                            thread level, 6: blocking ones with a barrier after each call,
                            7: those with graph capture, 8: pairable ones (--paired) */
} osu_optdef;

enum { OPT_STAGED = 256, OPT_BUSBW, OPT_MAX_RANK_TIME, OPT_THREAD_LEVEL, OPT_GRAPH, OPT_PAIRED };

static const osu_optdef osu_optdefs[] = {
    {'d', "accelerator", required_argument,
     "TYPE - use accelerator device buffers, which can be of TYPE `cuda'\n"
     "or `host' (uses standard host buffers if not specified)", 0},
    {'h', "help", no_argument, "print this help", 0},
    {'v', "version", no_argument, "print version info", 0},
    {'f', "full", no_argument,
     "print full format listing (MIN/MAX latency and ITERATIONS\n"
     "displayed in addition to AVERAGE latency)", 0},
    {'m', "message-size", required_argument,
     "[MIN:]MAX - set the minimum and/or the maximum message size to MIN and/or MAX\n"
     "bytes respectively. Examples:\n"
     "-m 128      // min = default, max = 128\n"
     "-m 2:128    // min = 2, max = 128\n"
     "-m 2:       // min = 2, max = default", 0},
    {'i', "iterations", required_argument,
     "ITER - number of iterations for timing (default 1000;\n"
     "100 above 8192 bytes)", 0},
    {'x', "warmup", required_argument,
     "ITER - set number of warmup\n"
     "iterations to skip before timing (default 100; 10 above 8192 bytes)", 0},
    {'M', "mem-limit", required_argument,
     "SIZE - set per process maximum memory consumption to SIZE bytes\n"
     "(default 536870912)", 0},
    {'c', "validation", no_argument,
     "Enable validation. Disabled by default. Prints Pass/Fail per size\n"
     "and exits with status 1 on the first failure", 0},
    {'T', "type", required_argument,
     "[all,mpi_char,mpi_int,mpi_float] - Set MPI_TYPE . Default:MPI_CHAR.\n"
     "Also: mpi_signed_char, mpi_unsigned_char, mpi_short, mpi_unsigned_short,\n"
     "mpi_unsigned, mpi_long, mpi_unsigned_long, mpi_long_long,\n"
     "mpi_unsigned_long_long, mpi_double. Repeat -T for several types.", 0},
    {'l', "in-place", no_argument, "Run benchmark with MPI_IN_PLACE support.", 1},
    {'k', "root-rank", required_argument,
     "Set root rank. Default: fixed:0\n"
     "-k fixed:[RANK] //Fixed root rank.\n"
     "-k rotate       //Rotate root rank for each iteration.\n"
     "-k RANK         //Same as fixed:RANK.", 2},
    {'t', "num-test-calls", required_argument,
     "CALLS - set the number of MPI_Test() calls during the dummy computation,\n"
     "set CALLS to 100, 1000, or any number > 0 (default 0: none).", 4},
    {0, "staged", OPT_STAGED,
     "with -d cuda: copy the device buffers to pinned host memory\n"
     "(cudaMemcpy), run MPI on host buffers, copy the result back; the\n"
     "copies are inside the timed call (baseline for an MPI that is not\n"
     "CUDA-aware)", 0},
    {0, "busbw", OPT_BUSBW,
     "add AlgBW(GB/s) and BusBW(GB/s) columns (nccl-tests conventions;\n"
     "from the average latency)", 3},
    {0, "max-rank-time", OPT_MAX_RANK_TIME,
     "add a MaxRank Avg(us) column: for every iteration the slowest\n"
     "rank's time, averaged over the iterations", 6},
    {0, "thread-level", OPT_THREAD_LEVEL,
     "LEVEL - what MPI_Init_thread asks for: single, funneled,\n"
     "serialized or multiple (default: the benchmark's)", 5},
    {0, "graph", OPT_GRAPH,
     "CALLS - capture CALLS calls into one CUDA graph (cudaStreamBeginCapture)\n"
     "and time launches of it: per-call latency = time / calls launched\n"
     "(default 0: no graph)", 7},
    {0, "paired", OPT_PAIRED,
     "add a PMPI Avg(us) column: each size's calls made both as MPI_*\n"
     "(the library under LD_PRELOAD) and as PMPI_* (the MPI's own call),\n"
     "in alternating blocks of the same run, each half with its own\n"
     "barrier (host buffers)", 8},
    {'J', "json", required_argument,
     "FILE - also write the results to FILE as JSON, one record per size\n"
     "(rank 0; README.md \"Results as JSON\", schema results.schema.json)", 0},
};
#define OSU_NOPTDEFS ((int)(sizeof(osu_optdefs) / sizeof(osu_optdefs[0])))

static int osu_optdef_applies(const osu_bench *b, const osu_optdef *d) {
  return d->which == 0 || (d->which == 1 && b->has_in_place) || (d->which == 2 && b->has_root) ||
         (d->which == 3 && !b->nonblocking) || (d->which == 4 && b->nonblocking) ||
         (d->which == 5 && b->thread_level) ||
         (d->which == 6 && !b->nonblocking && !b->back_to_back) || (d->which == 7 && b->graph_capture) ||
         (d->which == 8 && b->pairable);
}

static void osu_print_help(const osu_bench *b) {
  fprintf(stdout, "Usage: %s [options]\n", b->name);
  fprintf(stdout, "Options:\n");
  for (int i = 0; i < OSU_NOPTDEFS; i++) {
    const osu_optdef *d = &osu_optdefs[i];
    if (!osu_optdef_applies(b, d)) continue;
    if (d->opt)
      fprintf(stdout, "  -%c, --%-20s", d->opt, d->name);
    else
      fprintf(stdout, "      --%-20s", d->name);
    const char *line = d->help;
    int first = 1;
    while (line && *line) {
      const char *nl = strchr(line, '\n');
      int len = nl ? (int)(nl - line) : (int)strlen(line);
      if (first)
        fprintf(stdout, "%.*s\n", len, line);
      else
        fprintf(stdout, "%28s%.*s\n", "", len, line);
      first = 0;
      line = nl ? nl + 1 : NULL;
    }
  }
#ifndef OSU_HAVE_CUDA
  fprintf(stdout, "  (this build has no CUDA support: -d cuda is not available)\n");
#endif
  fflush(stdout);
}

typedef struct {
  char message[512];
  char word[256]; /* the offending option as typed, e.g. "-m abc" */
} osu_bad_usage;

enum { PO_OKAY, PO_BAD_USAGE, PO_HELP_MESSAGE, PO_VERSION_MESSAGE };

static int osu_bad(osu_bad_usage *bad, const char *word, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(bad->message, sizeof bad->message, fmt, ap);
  va_end(ap);
  snprintf(bad->word, sizeof bad->word, "%s", word ? word : "");
  return PO_BAD_USAGE;
}

static int osu_parse_size(const char *s, size_t *out) {
  if (!s || !*s) return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-') return -1;
  *out = (size_t)v;
  return 0;
}

static int osu_parse_int(const char *s, long lo, long *out) {
  if (!s || !*s) return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > INT_MAX) return -1;
  *out = v;
  return 0;
}

/* -m [MIN:]MAX, MIN:, :MAX (OMB's set_message_size, with numbers checked). */
static int osu_parse_message_size(const char *arg, osu_options *o) {
  const char *colon = strchr(arg, ':');
  if (!colon) return osu_parse_size(arg, &o->max_size);
  if (strchr(colon + 1, ':')) return -1;
  char min_s[64];
  size_t n = (size_t)(colon - arg);
  if (n >= sizeof min_s) return -1;
  memcpy(min_s, arg, n);
  min_s[n] = '\0';
  if (n > 0) {
    size_t v;
    if (osu_parse_size(min_s, &v) || v == 0) return -1;
    o->min_size = v;
  }
  if (colon[1]) {
    if (osu_parse_size(colon + 1, &o->max_size)) return -1;
  } else if (n == 0) {
    return -1; /* ":" alone */
  }
  return 0;
}

static int osu_parse_options(const osu_bench *b, int argc, char **argv, osu_options *o,
                             osu_bad_usage *bad) {
  memset(o, 0, sizeof *o);
  o->accel = OSU_HOST;
  o->min_size = OSU_MIN_MESSAGE_SIZE;
  o->max_size = OSU_MAX_MSG_SIZE_COLL;
  o->mem_limit = OSU_MAX_MEM_LIMIT;
  o->iterations = OSU_COLL_LOOP_SMALL;
  o->iterations_large = OSU_COLL_LOOP_LARGE;
  o->skip = OSU_COLL_SKIP_SMALL;
  o->skip_large = OSU_COLL_SKIP_LARGE;
  o->thread_level = b->thread_level;

  char optstring[64] = "+:d:hvfm:i:x:M:cT:J:";
  if (b->has_in_place) strcat(optstring, "l");
  if (b->has_root) strcat(optstring, "k:");
  if (b->nonblocking) strcat(optstring, "t:");
  struct option longopts[OSU_NOPTDEFS + 1];
  int nl = 0;
  for (int i = 0; i < OSU_NOPTDEFS; i++) {
    const osu_optdef *d = &osu_optdefs[i];
    if (!osu_optdef_applies(b, d)) continue;
    longopts[nl].name = d->name;
    longopts[nl].has_arg = d->opt                                                       ? d->has_arg
                           : d->has_arg == OPT_THREAD_LEVEL || d->has_arg == OPT_GRAPH ? required_argument
                                                                                       : no_argument;
    longopts[nl].flag = NULL;
    longopts[nl].val = d->opt ? d->opt : d->has_arg; /* long-only: OPT_* code */
    nl++;
  }
  memset(&longopts[nl], 0, sizeof longopts[nl]);

  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
    char word[256]; /* the option as OMB prints it: "-m abc" */
    if (c > 0 && c < 256)
      snprintf(word, sizeof word, "-%c%s%s", c, optarg ? " " : "", optarg ? optarg : "");
    else
      snprintf(word, sizeof word, "%s", argv[optind - 1]);
    switch (c) {
      case 'h': return PO_HELP_MESSAGE;
      case 'v': return PO_VERSION_MESSAGE;
      case 'f': o->show_full = 1; break;
      case 'c': o->validate = 1; break;
      case 'l': o->in_place = 1; break;
      case 'm':
        if (osu_parse_message_size(optarg, o) || o->min_size > o->max_size)
          return osu_bad(bad, word, "Invalid Message Size");
        break;
      case 'i': {
        long v;
        if (osu_parse_int(optarg, 1, &v))
          return osu_bad(bad, word, "Invalid Number of Iterations");
        o->iterations = o->iterations_large = (size_t)v;
        break;
      }
      case 'x': {
        long v;
        if (osu_parse_int(optarg, 0, &v))
          return osu_bad(bad, word, "Invalid Number of Warmup Iterations");
        o->skip = o->skip_large = (size_t)v;
        break;
      }
      case 'M': {
        size_t v;
        if (osu_parse_size(optarg, &v)) return osu_bad(bad, word, "Invalid Memory Limit");
        if (v < OSU_MAX_MEM_LOWER_LIMIT) {
          fprintf(stderr, "Requested memory limit too low, using [%zu] instead.\n",
                  (size_t)OSU_MAX_MEM_LOWER_LIMIT);
          v = OSU_MAX_MEM_LOWER_LIMIT;
        }
        o->mem_limit = v;
        break;
      }
      case 'd':
        if (strcasecmp(optarg, "cuda") == 0) {
#ifdef OSU_HAVE_CUDA
          o->accel = OSU_CUDA;
#else
          return osu_bad(bad, word,
                         "CUDA Support Not Enabled\n"
                         "%s was built without CUDA (GCOLL_HAVE_CUDA was OFF when it was "
                         "configured); rebuild with CUDA to use -d cuda",
                         b->name);
#endif
        } else if (strcasecmp(optarg, "host") == 0) {
          o->accel = OSU_HOST;
        } else {
          return osu_bad(bad, word, "Invalid Accel Type Specified");
        }
        break;
      case 'T':
        if (strcasecmp(optarg, "all") == 0) {
          const char *all[] = {"mpi_char", "mpi_int", "mpi_float"};
          for (int i = 0; i < 3; i++) {
            if (o->ntypes >= OSU_MAX_TYPES) return osu_bad(bad, word, "Too Many Datatypes");
            o->types[o->ntypes++] = osu_find_type(all[i]);
          }
        } else {
          const osu_type *t = osu_find_type(optarg);
          if (!t) return osu_bad(bad, word, "Invalid MPI Datatype");
          if (o->ntypes >= OSU_MAX_TYPES) return osu_bad(bad, word, "Too Many Datatypes");
          o->types[o->ntypes++] = t;
        }
        break;
      case 'k': {
        long v;
        if (strncasecmp(optarg, "rotate", 7) == 0) {
          o->root_rotate = 1;
        } else if (strncasecmp(optarg, "fixed:", 6) == 0 &&
                   osu_parse_int(optarg + 6, 0, &v) == 0) {
          o->root = (int)v;
        } else if (osu_parse_int(optarg, 0, &v) == 0) {
          o->root = (int)v;
        } else {
          return osu_bad(bad, word,
                         "Invalid root rank. Valid: fixed:RANK, rotate or RANK");
        }
        break;
      }
      case 't': {
        long v;
        if (osu_parse_int(optarg, 0, &v)) return osu_bad(bad, word, "Invalid Number of Probes");
        o->num_probes = (int)v;
        break;
      }
      case 'J': o->json = optarg; break;
      case OPT_STAGED: o->staged = 1; break;
      case OPT_BUSBW: o->busbw = 1; break;
      case OPT_MAX_RANK_TIME: o->max_rank_time = 1; break;
      case OPT_PAIRED: o->paired = 1; break;
      case OPT_GRAPH: {
        long v = 0;
        if (osu_parse_int(optarg, 1, &v)) return osu_bad(bad, word, "Invalid number of calls per graph");
        o->graph = (int)v;
        break;
      }
      case OPT_THREAD_LEVEL: {
        const char *names[] = {"single", "funneled", "serialized", "multiple"};
        const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                              MPI_THREAD_MULTIPLE};
        int k = 0;
        while (k < 4 && strcasecmp(optarg, names[k]) != 0) k++;
        if (k == 4) return osu_bad(bad, word, "Invalid Thread Level (single, funneled, serialized, multiple)");
        o->thread_level = levels[k];
        break;
      }
      case ':':
      default: {
        /* optopt names a short option; 0 means an unknown or incomplete long option */
        if (optopt > 0 && optopt < 256)
          snprintf(word, sizeof word, "-%c", optopt);
        else
          snprintf(word, sizeof word, "%s", argv[optind - 1]);
        return osu_bad(bad, word,
                       c == ':' ? "Option Missing Required Argument" : "Invalid option");
      }
    }
  }
  if (optind < argc) return osu_bad(bad, argv[optind], "Invalid argument");
  if (o->staged && o->accel != OSU_CUDA)
    return osu_bad(bad, "--staged", "--staged needs -d cuda");
  if (o->paired && (o->accel != OSU_HOST || o->max_rank_time))
    return osu_bad(bad, "--paired", "--paired takes host buffers and no --max-rank-time");
  if (o->ntypes == 0) o->types[o->ntypes++] = osu_find_type("mpi_char");
  return PO_OKAY;
}

/* ---- device ---------------------------------------------------------------------- */

#ifdef OSU_HAVE_CUDA
/* The GPU is chosen from the launcher's local rank before MPI_Init, as OMB does. */
static int osu_local_rank(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                        "MPI_LOCALRANKID", "SLURM_LOCALID", "PMI_LOCAL_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return atoi(v);
  }
  return 0;
}
#endif

static int osu_init_device(const osu_options *o, char *err, size_t errlen) {
  if (o->accel != OSU_CUDA) return 0;
#ifdef OSU_HAVE_CUDA
  int count = 0;
  int e = gpu_device_count(&count);
  if (e != 0) {
    snprintf(err, errlen, "no usable CUDA device: the device count (%s) failed: %s (error %d)",
             gpu_mode_name(), gpu_error_string(e), e);
    return -1;
  }
  if (count <= 0) {
    snprintf(err, errlen, "no usable CUDA device: %s found none", gpu_mode_name());
    return -1;
  }
  int dev = osu_local_rank() % count;
  e = gpu_set_device(dev); /* and its primary context, now */
  if (e != 0) {
    snprintf(err, errlen, "cannot use CUDA device %d: %s (%s error %d)", dev, gpu_error_string(e),
             gpu_mode_name(), e);
    return -1;
  }
  return 0;
#else
  snprintf(err, errlen, "built without CUDA support");
  return -1;
#endif
}

static void *osu_alloc_host(size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = 1;
  if (posix_memalign(&p, 4096, bytes)) {
    fprintf(stderr, "%s: cannot allocate %zu bytes of host memory\n", osu_prog, bytes);
    MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
  }
  return p;
}

static void *osu_alloc(const osu_options *o, size_t bytes, int pinned_host) {
#ifdef OSU_HAVE_CUDA
  if (o->accel == OSU_CUDA) {
    void *p = NULL;
    if (bytes == 0) bytes = 1;
    OSU_CUDA(gpu_malloc(&p, bytes, pinned_host ? GPU_MEM_PINNED : GPU_MEM_DEVICE));
    return p;
  }
#endif
  (void)o;
  (void)pinned_host;
  return osu_alloc_host(bytes);
}

static void osu_free(const osu_options *o, void *p, int pinned_host) {
  if (!p) return;
#ifdef OSU_HAVE_CUDA
  if (o->accel == OSU_CUDA) {
    OSU_CUDA(gpu_free(p, pinned_host ? GPU_MEM_PINNED : GPU_MEM_DEVICE));
    return;
  }
#endif
  (void)o;
  (void)pinned_host;
  free(p);
}

void osu_to_device(const osu_ctx *c, void *dst, const void *src, size_t bytes) {
  if (dst == src || bytes == 0) return;
#ifdef OSU_HAVE_CUDA
  if (c->opt->accel == OSU_CUDA) {
    OSU_CUDA(gpu_memcpy(dst, src, bytes));
    return;
  }
#endif
  (void)c;
  memcpy(dst, src, bytes);
}

void osu_to_host(const osu_ctx *c, void *dst, const void *src, size_t bytes) {
  if (dst == src || bytes == 0) return;
#ifdef OSU_HAVE_CUDA
  if (c->opt->accel == OSU_CUDA) {
    OSU_CUDA(gpu_memcpy(dst, src, bytes));
    return;
  }
#endif
  (void)c;
  memcpy(dst, src, bytes);
}

static void osu_fill_bytes(const osu_ctx *c, void *dev, void *host, size_t bytes, int value) {
  if (!dev) return;
  memset(host, value, bytes);
  osu_to_device(c, dev, host, bytes);
}

/* ---- agreement ------------------------------------------------------------------ */

/* Every rank gets op(local over all ranks). Uses MPI_Reduce_scatter_block, which gcoll
 * does not take over, so a wrong MPI_Allreduce under test cannot hide its own errors. */
static int osu_agree(MPI_Comm comm, int nprocs, int local, MPI_Op op) {
  int *all = (int *)malloc((size_t)nprocs * sizeof(int));
  if (!all) MPI_Abort(comm, EXIT_FAILURE);
  for (int i = 0; i < nprocs; i++) all[i] = local;
  int out = 0;
  OSU_MPI(MPI_Reduce_scatter_block(all, &out, 1, MPI_INT, op, comm));
  free(all);
  return out;
}

/* ---- output ---------------------------------------------------------------------- */

static void osu_print_title(const osu_bench *b, const osu_options *o) {
  fprintf(stdout, "# OSU MPI%s %s Latency Test v%s\n", o->accel == OSU_CUDA ? "-CUDA" : "",
          b->title, OSU_OMB_VERSION);
}

static const char *osu_thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown level";
  }
}

static void osu_print_preamble(const osu_bench *b, const osu_options *o) {
  fprintf(stdout, "\n");
  osu_print_title(b, o);
  if (b->note) fprintf(stdout, "# %s\n", b->note);
  if (b->thread_level)
    fprintf(stdout, "# MPI_Init_thread: asked for %s, granted %s.\n",
            osu_thread_level_name(o->thread_level), osu_thread_level_name(o->thread_granted));
  if (o->staged)
    fprintf(stdout, "# Staged: device buffers copied to/from pinned host memory around each "
                    "MPI call (inside the timed call).\n");
#ifdef OSU_HAVE_CUDA
  /* Timings on the emulated GPU mean nothing: say so where they are printed. */
  if (o->accel == OSU_CUDA && gpu_emulated())
    fprintf(stdout, "# Device buffers on the %s: a test mode, not a measurement.\n", gpu_mode_name());
#endif
  if (b->nonblocking) fprintf(stdout, "# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait\n\n");
  fflush(stdout);
}

/* OMB's print_only_header_nbc: the nonblocking table */
static void osu_print_header_nbc(const osu_options *o) {
  fprintf(stdout, "%-*s", 10, "# Size");
  fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Overall(us)");
  fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Compute(us)");
  if (o->show_full) {
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Coll. Init(us)");
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "MPI_Test(us)");
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "MPI_Wait(us)");
  }
  fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Pure Comm.(us)");
  if (o->show_full) {
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Min Comm.(us)");
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Max Comm.(us)");
  }
  fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Overlap(%)");
  if (o->validate) fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Validation");
  fprintf(stdout, "\n");
  fflush(stdout);
}

static void osu_print_header(const osu_bench *b, const osu_options *o) {
  if (b->nonblocking) {
    osu_print_header_nbc(o);
    return;
  }
  fprintf(stdout, "%-*s", 10, "# Size");
  fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Avg Latency(us)");
  if (o->paired) fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "PMPI Avg(us)");
  if (o->show_full) {
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Min Latency(us)");
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Max Latency(us)");
    fprintf(stdout, "%*s", 12, "Iterations");
  }
  if (o->validate) fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "Validation");
  if (o->max_rank_time) fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "MaxRank Avg(us)");
  if (o->busbw) {
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "AlgBW(GB/s)");
    fprintf(stdout, "%*s", OSU_FIELD_WIDTH, "BusBW(GB/s)");
  }
  fprintf(stdout, "\n");
  fflush(stdout);
}

typedef struct {
  double avg, min, max, max_rank;
  double pmpi_avg; /* --paired: Avg of the PMPI_* half */
  size_t iterations;
  osu_paths before, after; /* -J: gcoll's counters around the timed calls (rank 0) */
  int errors;
  /* nonblocking: means over ranks of each rank's mean per iteration (us); comm_min and
     comm_max over ranks; compute excludes the MPI_Test calls (OMB's cpu - test) */
  double overall, compute, init, test, wait, comm, comm_min, comm_max, overlap;
} osu_row;

/* OMB's print_stats_nbc */
static void osu_print_row_nbc(const osu_options *o, size_t size, const osu_row *r) {
  const int w = OSU_FIELD_WIDTH, p = OSU_FLOAT_PRECISION;
  fprintf(stdout, "%-*zu", 10, size);
  fprintf(stdout, "%*.*f%*.*f", w, p, r->overall, w, p, r->compute);
  if (o->show_full) fprintf(stdout, "%*.*f%*.*f%*.*f", w, p, r->init, w, p, r->test, w, p, r->wait);
  fprintf(stdout, "%*.*f", w, p, r->comm);
  if (o->show_full) fprintf(stdout, "%*.*f%*.*f", w, p, r->comm_min, w, p, r->comm_max);
  fprintf(stdout, "%*.*f", w, p, r->overlap);
  if (o->validate) fprintf(stdout, "%*s", w, r->errors ? "Fail" : "Pass");
  fprintf(stdout, "\n");
  fflush(stdout);
}

static void osu_print_row(const osu_bench *b, const osu_options *o, int nprocs, size_t size,
                          const osu_row *r) {
  if (b->nonblocking) {
    osu_print_row_nbc(o, size, r);
    return;
  }
  fprintf(stdout, "%-*zu", 10, size);
  fprintf(stdout, "%*.*f", OSU_FIELD_WIDTH, OSU_FLOAT_PRECISION, r->avg);
  if (o->paired) fprintf(stdout, "%*.*f", OSU_FIELD_WIDTH, OSU_FLOAT_PRECISION, r->pmpi_avg);
  if (o->show_full)
    fprintf(stdout, "%*.*f%*.*f%*zu", OSU_FIELD_WIDTH, OSU_FLOAT_PRECISION, r->min,
            OSU_FIELD_WIDTH, OSU_FLOAT_PRECISION, r->max, 12, r->iterations);
  if (o->validate) fprintf(stdout, "%*s", OSU_FIELD_WIDTH, r->errors ? "Fail" : "Pass");
  if (o->max_rank_time)
    fprintf(stdout, "%*.*f", OSU_FIELD_WIDTH, OSU_FLOAT_PRECISION, r->max_rank);
  if (o->busbw) {
    double algbw = r->avg > 0 ? b->alg_bytes(size, nprocs) / (r->avg * 1e-6) / 1e9 : 0.0;
    fprintf(stdout, "%*.*f%*.*f", OSU_FIELD_WIDTH, OSU_FLOAT_PRECISION, algbw, OSU_FIELD_WIDTH,
            OSU_FLOAT_PRECISION, algbw * b->bus_factor(nprocs));
  }
  fprintf(stdout, "\n");
  fflush(stdout);
}

/* ---- the measurement ------------------------------------------------------------- */

static void osu_istart(osu_ctx *c, int count, MPI_Request *req) {
  if (c->opt->staged)
    c->bench->istart_staged(c, count, req);
  else
    c->bench->istart(c, count, req);
}

static void osu_iwait(osu_ctx *c, int count, MPI_Request *req) {
  OSU_MPI(MPI_Wait(req, MPI_STATUS_IGNORE));
  if (c->opt->staged) c->bench->ifinish_staged(c, count);
}

/* One complete call: the blocking call, or start + MPI_Wait. */
static void osu_call(osu_ctx *c, int count) {
  if (c->bench->nonblocking) {
    MPI_Request req = MPI_REQUEST_NULL;
    osu_istart(c, count, &req);
    osu_iwait(c, count, &req);
  } else if (c->opt->staged) {
    c->bench->call_staged(c, count);
  } else {
    c->bench->call(c, count);
  }
}

/* Validation after a size's timed loops: the buffers of the loop when repeating the call
 * keeps the result, then fresh calls on new inputs (every root in turn with -k rotate).
 * Returns the number of ranks that found an error. */
static int osu_validate(osu_ctx *c, int count) {
  const osu_options *o = c->opt;
  const osu_bench *b = c->bench;
  long local_errors = 0;
  if (b->repeatable(c)) local_errors += b->check(c, count, 0);
  int nroots = b->has_root && o->root_rotate ? c->nprocs : 1;
  for (int k = 0; k < nroots; k++) {
    c->root = o->root_rotate ? k : o->root;
    b->fill(c, count, 1 + k);
    OSU_MPI(MPI_Barrier(c->comm));
    osu_call(c, count);
    if (b->flush) b->flush(c);
    local_errors += b->check(c, count, 1 + k);
  }
  return osu_agree(c->comm, c->nprocs, local_errors > 0 ? 1 : 0, MPI_SUM);
}

/* --paired: n iterations of OMB's loop (each call timed alone, a barrier after it), the
 * calls and barriers made as MPI_* (pmpi 0) or PMPI_* (pmpi 1: the MPI's own, as it runs
 * without the library). Returns the time in the calls. The root rotates with the
 * iteration as in the plain loop. */
#define OSU_PAIRED_BLOCKS 10
static double osu_paired_loop(osu_ctx *c, int count, size_t n, int pmpi) {
  double timer = 0.0;
  c->pmpi = pmpi;
  for (size_t i = 0; i < n; i++) {
    if (c->opt->root_rotate) c->root = (int)(i % (size_t)c->nprocs);
    double t_start = MPI_Wtime();
    c->bench->call(c, count);
    double t_stop = MPI_Wtime();
    OSU_MPI(pmpi ? PMPI_Barrier(c->comm) : MPI_Barrier(c->comm));
    timer += t_stop - t_start;
  }
  c->pmpi = 0;
  return timer;
}

/* One message size: OMB 7.x's loop. A barrier before the loop; every iteration times
 * the call alone on each rank and is followed by a barrier outside the timed region.
 * Avg = mean over ranks of each rank's mean time per call; Min/Max = over ranks. */
static void osu_measure(osu_ctx *c, size_t size, int count, size_t iters, size_t skip,
                        double *times, osu_row *row) {
  const osu_options *o = c->opt;
  const osu_bench *b = c->bench;

  c->root = o->root_rotate ? 0 : o->root;
  if (o->validate) b->fill(c, count, 0);
  if (b->prepare) b->prepare(c, count);

  osu_json_mark(&row->before);
  OSU_MPI(MPI_Barrier(c->comm));
  double timer = 0.0;
  if (b->back_to_back && o->graph) {
    /* --graph: o->graph calls captured once into a graph; the warmup and the timed calls
       are launches of it (at least one each), timed as a whole */
    const size_t per = (size_t)o->graph;
    const size_t launches = (iters + per - 1) / per, warm = (skip + per - 1) / per;
    b->graph_capture(c, count, o->graph);
    for (size_t i = 0; i < (warm ? warm : 1); i++) b->graph_launch(c);
    b->flush(c);
    OSU_MPI(MPI_Barrier(c->comm));
    double t_start = MPI_Wtime();
    for (size_t i = 0; i < launches; i++) b->graph_launch(c);
    b->flush(c);
    timer = MPI_Wtime() - t_start;
    b->graph_release(c);
    iters = launches * per;
    times = NULL;
  } else if (b->back_to_back) {
    /* the warmup, then the timed calls without barriers, timed as a whole */
    for (size_t i = 0; i < skip; i++) osu_call(c, count);
    if (b->flush) b->flush(c);
    OSU_MPI(MPI_Barrier(c->comm));
    double t_start = MPI_Wtime();
    for (size_t i = 0; i < iters; i++) {
      if (o->root_rotate) c->root = (int)(i % (size_t)c->nprocs);
      osu_call(c, count);
    }
    if (b->flush) b->flush(c);
    timer = MPI_Wtime() - t_start;
    times = NULL;
  }
  double pmpi_timer = 0.0;
  if (o->paired) {
    /* --paired: both halves' warmup, then OSU_PAIRED_BLOCKS blocks of iters / blocks calls
       of each half, the order flipping every block (gcoll first, then the MPI first) */
    osu_paired_loop(c, count, skip, 0);
    osu_paired_loop(c, count, skip, 1);
    const size_t blocks = iters < OSU_PAIRED_BLOCKS ? iters : OSU_PAIRED_BLOCKS;
    for (size_t k = 0; k < blocks; k++) {
      const size_t n = iters / blocks + (k < iters % blocks ? 1 : 0);
      const int first = (int)(k % 2);
      const double t_first = osu_paired_loop(c, count, n, first);
      const double t_second = osu_paired_loop(c, count, n, !first);
      timer += first ? t_second : t_first;
      pmpi_timer += first ? t_first : t_second;
    }
    times = NULL;
  }
  for (size_t i = 0; !b->back_to_back && !o->paired && i < iters + skip; i++) {
    if (o->root_rotate) c->root = (int)(i % (size_t)c->nprocs);
    double t_start = MPI_Wtime();
    osu_call(c, count);
    double t_stop = MPI_Wtime();
    OSU_MPI(MPI_Barrier(c->comm));
    if (i >= skip) {
      timer += t_stop - t_start;
      if (times) times[i - skip] = t_stop - t_start;
    }
  }
  osu_json_mark(&row->after);
  double latency = timer * 1e6 / (double)iters;
  if (o->paired) {
    double mine = pmpi_timer * 1e6 / (double)iters, sum_p = 0.0;
    OSU_MPI(MPI_Reduce(&mine, &sum_p, 1, MPI_DOUBLE, MPI_SUM, 0, c->comm));
    row->pmpi_avg = sum_p / c->nprocs;
  }

  double sum = 0.0;
  OSU_MPI(MPI_Reduce(&latency, &row->min, 1, MPI_DOUBLE, MPI_MIN, 0, c->comm));
  OSU_MPI(MPI_Reduce(&latency, &row->max, 1, MPI_DOUBLE, MPI_MAX, 0, c->comm));
  OSU_MPI(MPI_Reduce(&latency, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, c->comm));
  row->avg = sum / c->nprocs;
  row->iterations = iters;

  row->max_rank = 0.0;
  if (times) {
    double *slowest = c->rank == 0 ? (double *)malloc(iters * sizeof(double)) : NULL;
    if (c->rank == 0 && !slowest) MPI_Abort(c->comm, EXIT_FAILURE);
    OSU_MPI(MPI_Reduce(times, slowest, (int)iters, MPI_DOUBLE, MPI_MAX, 0, c->comm));
    if (c->rank == 0) {
      double acc = 0.0;
      for (size_t i = 0; i < iters; i++) acc += slowest[i];
      row->max_rank = acc * 1e6 / (double)iters;
      free(slowest);
    }
  }

  row->errors = o->validate ? osu_validate(c, count) : 0;
  if (b->release) b->release(c);
  (void)size;
}

/* ---- the nonblocking measurement (OMB 7.x osu_iallreduce.c) ------------------------ */

/* OMB's dummy computation: a 25 x 25 float kernel repeated until the target time has
 * been spent in it (osu_util_mpi.c: init_arrays, compute_on_host, do_compute_cpu). */
#define OSU_DIM 25
static float osu_a[OSU_DIM][OSU_DIM], osu_x[OSU_DIM], osu_y[OSU_DIM];

static void osu_init_arrays(void) {
  for (int i = 0; i < OSU_DIM; i++) {
    osu_x[i] = osu_y[i] = 1.0f;
    for (int j = 0; j < OSU_DIM; j++) osu_a[i][j] = 2.0f;
  }
}

static void osu_compute_on_host(void) {
  for (int i = 0; i < OSU_DIM; i++)
    for (int j = 0; j < OSU_DIM; j++) osu_x[i] = osu_x[i] + osu_a[i][j] * osu_a[j][i] + osu_y[j];
}

static void osu_do_compute_cpu(double target_seconds) {
  double elapsed = 0.0;
  while (elapsed < target_seconds) {
    double t1 = MPI_Wtime();
    osu_compute_on_host();
    elapsed += MPI_Wtime() - t1;
  }
}

/* OMB's dummy_compute / do_compute_and_probe on the CPU: `seconds` of computation; with
 * -t N in N slices, each followed by an MPI_Test of the request. Returns the time spent
 * in MPI_Test. */
static double osu_dummy_compute(const osu_options *o, double seconds, MPI_Request *req) {
  if (o->num_probes <= 0) {
    osu_do_compute_cpu(seconds);
    return 0.0;
  }
  double slice = seconds / o->num_probes, test_time = 0.0;
  for (int k = 0; k < o->num_probes; k++) {
    osu_do_compute_cpu(slice);
    int flag = 0;
    double t1 = MPI_Wtime();
    OSU_MPI(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
    test_time += MPI_Wtime() - t1;
  }
  return test_time;
}

/* One message size, as OMB 7.x's nonblocking benchmarks. First the pure communication
 * latency: warmup + timed iterations of start + MPI_Wait, each followed by a barrier
 * outside the timed region. Then the overlap run, as many iterations: start (Coll. Init),
 * the dummy computation for this rank's pure communication latency (Compute, with -t its
 * MPI_Test calls apart), MPI_Wait; Overall is the whole iteration. Every time is a rank's
 * mean per iteration, averaged over the ranks (Min/Max Comm. over the ranks), and
 * Overlap(%) = max(0, 100 - 100 * (Overall - Compute) / Pure Comm.). */
static void osu_measure_nbc(osu_ctx *c, int count, size_t iters, size_t skip, osu_row *row) {
  const osu_options *o = c->opt;
  const osu_bench *b = c->bench;

  c->root = o->root_rotate ? 0 : o->root;
  if (o->validate) b->fill(c, count, 0);
  if (b->prepare) b->prepare(c, count);

  osu_json_mark(&row->before);
  OSU_MPI(MPI_Barrier(c->comm));
  double timer = 0.0;
  for (size_t i = 0; i < iters + skip; i++) {
    if (o->root_rotate) c->root = (int)(i % (size_t)c->nprocs);
    double t_start = MPI_Wtime();
    osu_call(c, count);
    double t_stop = MPI_Wtime();
    OSU_MPI(MPI_Barrier(c->comm));
    if (i >= skip) timer += t_stop - t_start;
  }
  const double comm_s = timer / (double)iters; /* the computation's target */

  osu_init_arrays();
  OSU_MPI(MPI_Barrier(c->comm));
  double overall = 0.0, compute = 0.0, init = 0.0, test = 0.0, wait = 0.0;
  for (size_t i = 0; i < iters + skip; i++) {
    if (o->root_rotate) c->root = (int)(i % (size_t)c->nprocs);
    MPI_Request req = MPI_REQUEST_NULL;
    double t_start = MPI_Wtime();
    double t_init = MPI_Wtime();
    osu_istart(c, count, &req);
    t_init = MPI_Wtime() - t_init;
    double t_comp = MPI_Wtime();
    double t_test = osu_dummy_compute(o, comm_s, &req);
    t_comp = MPI_Wtime() - t_comp;
    double t_wait = MPI_Wtime();
    osu_iwait(c, count, &req);
    t_wait = MPI_Wtime() - t_wait;
    double t_stop = MPI_Wtime();
    OSU_MPI(MPI_Barrier(c->comm));
    if (i >= skip) {
      overall += t_stop - t_start;
      compute += t_comp;
      init += t_init;
      test += t_test;
      wait += t_wait;
    }
  }

  osu_json_mark(&row->after);
  /* per rank, us per iteration; summed over ranks on rank 0 */
  const double us = 1e6 / (double)iters;
  double local[6] = {overall * us, compute * us, init * us, test * us, wait * us, comm_s * 1e6};
  double sum[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  OSU_MPI(MPI_Reduce(local, sum, 6, MPI_DOUBLE, MPI_SUM, 0, c->comm));
  OSU_MPI(MPI_Reduce(&local[5], &row->comm_min, 1, MPI_DOUBLE, MPI_MIN, 0, c->comm));
  OSU_MPI(MPI_Reduce(&local[5], &row->comm_max, 1, MPI_DOUBLE, MPI_MAX, 0, c->comm));
  row->overall = sum[0] / c->nprocs;
  row->test = sum[3] / c->nprocs;
  row->compute = sum[1] / c->nprocs - row->test; /* OMB prints cpu - test */
  row->init = sum[2] / c->nprocs;
  row->wait = sum[4] / c->nprocs;
  row->comm = sum[5] / c->nprocs;
  double overlap = row->comm > 0.0 ? 100.0 - (row->overall - row->compute) / row->comm * 100.0 : 0.0;
  row->overlap = overlap > 0.0 ? overlap : 0.0;
  row->iterations = iters;

  row->errors = o->validate ? osu_validate(c, count) : 0;
  if (b->release) b->release(c);
}

int osu_main(const osu_bench *b, int argc, char **argv) {
  osu_prog = b->name;
  osu_options opt;
  osu_bad_usage bad;
  memset(&bad, 0, sizeof bad);
  int po = osu_parse_options(b, argc, argv, &opt, &bad);

  /* Before MPI_Init, as OMB: pick the GPU from the local rank. Failures are reported
   * after MPI_Init so that one rank prints them and every rank exits cleanly. */
  char dev_err[512] = "";
  int dev_failed = po == PO_OKAY ? osu_init_device(&opt, dev_err, sizeof dev_err) != 0 : 0;

  int granted = MPI_THREAD_SINGLE;
  if (b->thread_level)
    OSU_MPI(MPI_Init_thread(&argc, &argv, po == PO_OKAY ? opt.thread_level : MPI_THREAD_SINGLE, &granted));
  else
    OSU_MPI(MPI_Init(&argc, &argv));
  int rank = 0, nprocs = 1;
  OSU_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OSU_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));

  switch (po) {
    case PO_BAD_USAGE:
      if (rank == 0) {
        fprintf(stderr, "%s [%s]\n\n", bad.message, bad.word);
        fflush(stderr);
        osu_print_help(b);
      }
      MPI_Finalize();
      return EXIT_FAILURE;
    case PO_HELP_MESSAGE:
      if (rank == 0) osu_print_help(b);
      MPI_Finalize();
      return EXIT_SUCCESS;
    case PO_VERSION_MESSAGE:
      if (rank == 0) {
        osu_print_title(b, &opt);
        fflush(stdout);
      }
      MPI_Finalize();
      return EXIT_SUCCESS;
    default:
      break;
  }

  if (b->unavailable) {
    if (rank == 0) {
      fprintf(stdout, "\n");
      osu_print_title(b, &opt);
      fprintf(stdout, "# Not measured: %s\n", b->unavailable);
      fflush(stdout);
    }
    MPI_Finalize();
    return EXIT_SUCCESS;
  }

  int first_failed = osu_agree(MPI_COMM_WORLD, nprocs, dev_failed ? rank : INT_MAX, MPI_MIN);
  if (first_failed != INT_MAX) {
    if (rank == first_failed) {
      fprintf(stderr,
              "%s: -d cuda: %s%s. Not measuring: device buffers were asked for and this "
              "benchmark never falls back to host memory.\n",
              b->name, dev_err, nprocs > 1 ? " (first failing rank shown)" : "");
      fflush(stderr);
    }
    MPI_Finalize();
    return EXIT_FAILURE;
  }
  const char *refused = b->refuse ? b->refuse(&opt) : NULL;
  first_failed = osu_agree(MPI_COMM_WORLD, nprocs, refused ? rank : INT_MAX, MPI_MIN);
  if (first_failed != INT_MAX) {
    if (rank == first_failed) {
      fprintf(stderr, "%s: %s\n", b->name, refused);
      fflush(stderr);
    }
    MPI_Finalize();
    return EXIT_FAILURE;
  }
  if (b->thread_level) opt.thread_granted = osu_agree(MPI_COMM_WORLD, nprocs, granted, MPI_MIN);

  if (nprocs < 2) {
    if (rank == 0) fprintf(stderr, "This test requires at least two processes\n");
    MPI_Finalize();
    return EXIT_FAILURE;
  }
  if (b->has_root && opt.root >= nprocs) {
    if (rank == 0)
      fprintf(stderr, "%s: Root rank('-k') cannot be more than number of processes\n", b->name);
    MPI_Finalize();
    return EXIT_FAILURE;
  }

  /* OMB's check_mem_limit */
  size_t per_rank_factor = b->rbuf_per_rank || b->sbuf_per_rank ? (size_t)nprocs : 1;
  if (opt.max_size * per_rank_factor > opt.mem_limit) {
    opt.max_size = opt.mem_limit / per_rank_factor;
    if (rank == 0)
      fprintf(stderr,
              "Warning! Limiting max message size to: %zu. Increase -M, --mem-limit for "
              "higher message sizes.\n",
              opt.max_size);
  }

  osu_ctx c;
  memset(&c, 0, sizeof c);
  c.bench = b;
  c.opt = &opt;
  c.comm = MPI_COMM_WORLD;
  c.rank = rank;
  c.nprocs = nprocs;
  const size_t sbytes = b->uses_sbuf ? opt.max_size * (b->sbuf_per_rank ? (size_t)nprocs : 1) : 0;
  const size_t rbytes = opt.max_size * (b->rbuf_per_rank ? (size_t)nprocs : 1);
  const int device = opt.accel == OSU_CUDA;
  /* device buffers are allocated once, at the largest size, as OMB does */
  if (sbytes) c.sbuf = osu_alloc(&opt, sbytes, 0);
  c.rbuf = osu_alloc(&opt, rbytes, 0);
  if (device) {
    if (sbytes) c.hs = osu_alloc(&opt, sbytes, 1);
    c.hr = osu_alloc(&opt, rbytes, 1);
  } else {
    c.hs = c.sbuf;
    c.hr = c.rbuf;
  }
  /* OMB's initial contents: send buffer bytes 1, receive buffer 0 */
  if (sbytes) osu_fill_bytes(&c, c.sbuf, c.hs, sbytes, 1);
  osu_fill_bytes(&c, c.rbuf, c.hr, rbytes, b->uses_sbuf ? 0 : 1);

  size_t max_iters = opt.iterations > opt.iterations_large ? opt.iterations : opt.iterations_large;
  double *times = opt.max_rank_time ? (double *)malloc(max_iters * sizeof(double)) : NULL;
  if (opt.max_rank_time && !times) MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);

  if (b->setup) b->setup(&c);
  if (osu_json_begin(opt.json, b, device, opt.staged, opt.in_place, MPI_COMM_WORLD) != 0) {
    MPI_Finalize();
    return EXIT_FAILURE;
  }
  if (rank == 0) osu_print_preamble(b, &opt);

  int errors = 0;
  size_t failed_size = 0;
  size_t iters = opt.iterations, skip = opt.skip;
  for (int t = 0; t < opt.ntypes && !errors; t++) {
    c.type = opt.types[t];
    if (rank == 0) {
      char name[MPI_MAX_OBJECT_NAME];
      int len = 0;
      OSU_MPI(MPI_Type_get_name(c.type->dtype, name, &len));
      fprintf(stdout, "# Datatype: %s.\n", name);
      fflush(stdout);
      osu_print_header(b, &opt);
    }
    for (size_t size = opt.min_size; size <= opt.max_size && size > 0; size *= 2) {
      size_t count = size / c.type->size;
      if (count == 0) continue;
      if (count > INT_MAX) break;
      if (size > OSU_LARGE_MESSAGE_SIZE) {
        iters = opt.iterations_large;
        skip = opt.skip_large;
      }
      osu_row row;
      memset(&row, 0, sizeof row);
      if (b->nonblocking)
        osu_measure_nbc(&c, (int)count, iters, skip, &row);
      else
        osu_measure(&c, size, (int)count, iters, skip, times, &row);
      if (rank == 0) osu_print_row(b, &opt, nprocs, size, &row);
      if (rank == 0 && opt.json) {
        char name[MPI_MAX_OBJECT_NAME];
        int len = 0;
        OSU_MPI(MPI_Type_get_name(c.type->dtype, name, &len));
        const double nbc[4] = {row.overall, row.compute, row.comm, row.overlap};
        osu_json_times jt = {b->nonblocking ? row.overall : row.avg, row.min, row.max, row.iterations,
                             opt.validate, row.errors, b->nonblocking ? nbc : NULL};
        if (b->nonblocking) jt.min = jt.max = row.overall; /* OMB gives no per-rank spread of Overall */
        osu_json_record(name, c.type->size, size, count, b->alg_bytes(size, nprocs), b->bus_factor(nprocs), &jt,
                        &row.before, &row.after);
      }
      OSU_MPI(MPI_Barrier(MPI_COMM_WORLD));
      if (row.errors) {
        errors = row.errors;
        failed_size = size;
        break;
      }
    }
  }

  if (b->teardown) b->teardown(&c);
  const int json_failed = osu_json_end() != 0;
  free(times);
  osu_free(&opt, c.sbuf, 0);
  osu_free(&opt, c.rbuf, 0);
  if (device) {
    osu_free(&opt, c.hs, 1);
    osu_free(&opt, c.hr, 1);
  }
  OSU_MPI(MPI_Finalize());
#ifdef OSU_HAVE_CUDA
  if (device) gpu_device_reset(); /* as OMB's cleanup_accel, after MPI_Finalize */
#endif

  if (errors) {
    if (rank == 0) {
      fprintf(stdout, "DATA VALIDATION ERROR: %s exited with status %d on message size %zu.\n",
              argv[0], EXIT_FAILURE, failed_size);
      fflush(stdout);
    }
    return EXIT_FAILURE;
  }
  return json_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
