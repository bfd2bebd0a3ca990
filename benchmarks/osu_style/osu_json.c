/* osu_json.h: the -J FILE results. */
#define _GNU_SOURCE
#include "osu_json.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "osu_common.h"

extern char **environ;

/* gcoll's query functions (include/gcoll/gcoll.h), when libgcoll.so is in the process. */
typedef long long (*call_count_fn)(const char *, const char *);
typedef const char *(*algo_name_fn)(const char *, int);
typedef const char *(*text_fn)(void);

static struct {
  int on;            /* -J given (every rank) */
  FILE *out;         /* rank 0 */
  char *records;     /* rank 0: the records' text, comma-separated */
  size_t len, cap;
  char line[64];     /* gcoll's stats line of the benchmark: "allreduce", "iallreduce", ... */
  char head[8192];   /* what every record repeats: collective, ranks, nodes, memory, gcoll */
  call_count_fn count;
  algo_name_fn algo_name;
  const char *algos[OSU_JSON_MAX_ALGOS];
  int nalgos;
  int rank;
} J;

static void append(const char *s) {
  size_t n = strlen(s);
  if (J.len + n + 1 > J.cap) {
    size_t cap = J.cap ? J.cap * 2 : 65536;
    while (cap < J.len + n + 1) cap *= 2;
    char *p = realloc(J.records, cap);
    if (!p) return; /* the record is lost; osu_json_end reports a short file */
    J.records = p;
    J.cap = cap;
  }
  memcpy(J.records + J.len, s, n + 1);
  J.len += n;
}

/* A JSON string of `s` (escaped) into buf. */
static void jstr(char *buf, size_t cap, const char *s) {
  size_t k = 0;
  if (cap < 3) return;
  buf[k++] = '"';
  for (; s && *s && k + 8 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      buf[k++] = '\\';
      buf[k++] = (char)c;
    } else if (c < 0x20) {
      k += (size_t)snprintf(buf + k, cap - k, "\\u%04x", c);
    } else {
      buf[k++] = (char)c;
    }
  }
  buf[k++] = '"';
  buf[k] = '\0';
}

/* gcoll's stats line for a benchmark: osu_allreduce -> allreduce, osu_iallreduce ->
 * iallreduce, osu_allreduce_persistent -> allreduce_init, osu_allreduce_enqueue ->
 * allreduce_enqueue. */
static void stats_line(const char *bench, char *out, size_t cap) {
  const char *s = strncmp(bench, "osu_", 4) == 0 ? bench + 4 : bench;
  snprintf(out, cap, "%s", s);
  char *p = strstr(out, "_persistent");
  if (p) snprintf(p, cap - (size_t)(p - out), "_init");
}

int osu_json_begin(const char *path, const struct osu_bench *b, int device, int staged, int in_place, MPI_Comm comm) {
  memset(&J, 0, sizeof J);
  if (!path) return 0;
  J.on = 1;
  MPI_Comm_rank(comm, &J.rank);
  int nprocs = 1;
  MPI_Comm_size(comm, &nprocs);
  /* nodes: the ranks that share memory with no lower rank */
  MPI_Comm shm;
  int lrank = 0, leaders = 0;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
  MPI_Comm_rank(shm, &lrank);
  MPI_Comm_free(&shm);
  int lead = lrank == 0;
  MPI_Allreduce(&lead, &leaders, 1, MPI_INT, MPI_SUM, comm);
  int failed = 0;
  if (J.rank == 0) {
    J.out = fopen(path, "w");
    if (!J.out) {
      fprintf(stderr, "%s: -J %s: cannot write the file\n", b->name, path);
      failed = 1;
    }
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm);
  if (failed) {
    J.on = 0;
    return -1;
  }
  if (J.rank != 0) return 0;
  stats_line(b->name, J.line, sizeof J.line);
  J.count = (call_count_fn)dlsym(RTLD_DEFAULT, "gcoll_call_count");
  J.algo_name = (algo_name_fn)dlsym(RTLD_DEFAULT, "gcoll_algorithm_name");
  text_fn version = (text_fn)dlsym(RTLD_DEFAULT, "gcoll_version");
  text_fn commit = (text_fn)dlsym(RTLD_DEFAULT, "gcoll_build_commit");
  if (J.count && J.algo_name)
    for (J.nalgos = 0; J.nalgos < OSU_JSON_MAX_ALGOS && (J.algos[J.nalgos] = J.algo_name(J.line, J.nalgos));)
      J.nalgos++;
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  char *nl = strchr(mpi, '\n');
  if (nl) *nl = '\0';
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char q1[512], q2[512], q3[1024], q4[128], q5[128];
  jstr(q1, sizeof q1, J.line);
  jstr(q2, sizeof q2, b->name);
  jstr(q3, sizeof q3, mpi);
  jstr(q4, sizeof q4, host);
  time_t now = time(NULL);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  jstr(q5, sizeof q5, date);
  int k = snprintf(J.head, sizeof J.head,
                   "\"collective\": %s, \"benchmark\": %s, \"ranks\": %d, \"nodes\": %d, \"memory\": \"%s\", "
                   "\"staged\": %s, \"in_place\": %s, \"mpi_library\": %s, \"host\": %s, \"date\": %s, ",
                   q1, q2, nprocs, leaders, device ? "cuda" : "host", staged ? "true" : "false",
                   in_place ? "true" : "false", q3, q4, q5);
  if (!version) {
    snprintf(J.head + k, sizeof J.head - (size_t)k, "\"gcoll\": null");
    return 0;
  }
  char v[128], c[128];
  jstr(v, sizeof v, version());
  jstr(c, sizeof c, commit ? commit() : "unknown");
  k += snprintf(J.head + k, sizeof J.head - (size_t)k, "\"gcoll\": {\"version\": %s, \"commit\": %s, \"settings\": {",
                v, c);
  int first = 1;
  for (char **e = environ; *e && k < (int)sizeof J.head - 600; e++) {
    if (strncmp(*e, "GCOLL_", 6) != 0) continue;
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    char name[256], val[256], qn[300], qv[600];
    snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
    snprintf(val, sizeof val, "%s", eq + 1);
    jstr(qn, sizeof qn, name);
    jstr(qv, sizeof qv, val);
    k += snprintf(J.head + k, sizeof J.head - (size_t)k, "%s%s: %s", first ? "" : ", ", qn, qv);
    first = 0;
  }
  snprintf(J.head + k, sizeof J.head - (size_t)k, "}}");
  return 0;
}

void osu_json_mark(osu_paths *p) {
  static const char *paths[4] = {"engine", "staged", "passthrough", "errors"};
  memset(p, 0, sizeof *p);
  if (!J.on || J.rank != 0 || !J.count) return;
  for (int i = 0; i < 4; i++) p->path[i] = J.count(J.line, paths[i]);
  char at[128];
  for (int i = 0; i < J.nalgos; i++) {
    snprintf(at, sizeof at, "@%s", J.algos[i]);
    p->algo[i] = J.count(J.line, at);
  }
  p->nalgos = J.nalgos;
}

/* "engine@twoshot", "staged", "passthrough", several joined by "+" (most calls first);
 * "mpi" without gcoll in the process; "none" when gcoll saw no call. */
static void path_summary(const osu_paths *d, char *out, size_t cap) {
  static const char *paths[4] = {"engine", "staged", "passthrough", "errors"};
  if (!J.count) {
    snprintf(out, cap, "mpi");
    return;
  }
  out[0] = '\0';
  int used[4 + OSU_JSON_MAX_ALGOS] = {0};
  for (;;) {
    long long best = 0;
    int which = -1;
    for (int i = 1; i < 4; i++)
      if (!used[i] && d->path[i] > best) best = d->path[i], which = i;
    for (int a = 0; a < d->nalgos; a++)
      if (!used[4 + a] && d->algo[a] > best) best = d->algo[a], which = 4 + a;
    if (which < 0) break;
    used[which] = 1;
    size_t n = strlen(out);
    if (which >= 4)
      snprintf(out + n, cap - n, "%sengine@%s", n ? "+" : "", J.algos[which - 4]);
    else
      snprintf(out + n, cap - n, "%s%s", n ? "+" : "", paths[which]);
  }
  if (!out[0]) snprintf(out, cap, d->path[0] > 0 ? "engine" : "none");
}

void osu_json_record(const char *type_name, size_t type_size, size_t bytes, size_t count, double alg_bytes,
                     double bus_factor, const osu_json_times *t, const osu_paths *before, const osu_paths *after) {
  if (!J.on || J.rank != 0) return;
  osu_paths d;
  memset(&d, 0, sizeof d);
  for (int i = 0; i < 4; i++) d.path[i] = after->path[i] - before->path[i];
  d.nalgos = after->nalgos;
  for (int a = 0; a < d.nalgos; a++) d.algo[a] = after->algo[a] - before->algo[a];
  char summary[512], qs[600], qt[128];
  path_summary(&d, summary, sizeof summary);
  jstr(qs, sizeof qs, summary);
  jstr(qt, sizeof qt, type_name);
  const double algbw = t->avg > 0 ? alg_bytes / (t->avg * 1e-6) / 1e9 : 0.0;
  char rec[16384];
  int k = snprintf(rec, sizeof rec,
                   "%s\n  {%s, \"type\": %s, \"type_size\": %zu, \"bytes\": %zu, \"count\": %zu, \"path\": %s, ",
                   J.len ? "," : "", J.head, qt, type_size, bytes, count, qs);
  if (J.count) {
    k += snprintf(rec + k, sizeof rec - (size_t)k,
                  "\"calls\": {\"engine\": %lld, \"staged\": %lld, \"passthrough\": %lld, \"errors\": %lld, "
                  "\"algorithms\": {",
                  d.path[0], d.path[1], d.path[2], d.path[3]);
    int first = 1;
    for (int a = 0; a < d.nalgos; a++) {
      if (!d.algo[a]) continue;
      k += snprintf(rec + k, sizeof rec - (size_t)k, "%s\"%s\": %lld", first ? "" : ", ", J.algos[a], d.algo[a]);
      first = 0;
    }
    k += snprintf(rec + k, sizeof rec - (size_t)k, "}}, ");
  } else {
    k += snprintf(rec + k, sizeof rec - (size_t)k, "\"calls\": null, ");
  }
  k += snprintf(rec + k, sizeof rec - (size_t)k,
                "\"iterations\": %zu, \"time_us\": {\"min\": %.3f, \"avg\": %.3f, \"max\": %.3f}, "
                "\"algbw_GBps\": %.6f, \"busbw_GBps\": %.6f, \"validation\": %s",
                t->iterations, t->min, t->avg, t->max, algbw, algbw * bus_factor,
                !t->validated ? "null" : t->errors ? "\"fail\"" : "\"pass\"");
  if (t->nbc)
    k += snprintf(rec + k, sizeof rec - (size_t)k,
                  ", \"nonblocking\": {\"overall_us\": %.3f, \"compute_us\": %.3f, \"pure_comm_us\": %.3f, "
                  "\"overlap_pct\": %.3f}",
                  t->nbc[0], t->nbc[1], t->nbc[2], t->nbc[3]);
  snprintf(rec + k, sizeof rec - (size_t)k, "}");
  append(rec);
}

int osu_json_end(void) {
  if (!J.on || J.rank != 0) return 0;
  int rc = 0;
  if (fprintf(J.out, "{\"schema\": \"gcoll-osu-results/1\", \"records\": [%s\n]}\n", J.records ? J.records : "") < 0)
    rc = -1;
  if (fclose(J.out) != 0) rc = -1;
  if (rc) fprintf(stderr, "-J: writing the results failed\n");
  free(J.records);
  memset(&J, 0, sizeof J);
  return rc;
}
