/* gcoll_soak: a long mix of MPI_Allreduce, MPI_Bcast and MPI_Allgather calls, every
 * result checked, with the process's resources sampled along the way (issue 15, part 3).
 * A plain MPI program: it does not link gcoll; run it with LD_PRELOAD=libgcoll.so
 * (benchmarks/soak.py, CTest engine.soak.small.np4 and gpu.soak.small.np4).
 *
 *   gcoll_soak [--calls N] [--seed S] [--comm-every K] [--samples M] [--warmup PCT]
 *              [--max-bytes B] [--device auto|off] [--realloc-every R] [--sweep 0|1]
 *              [--rss-slack-mib M] [--require-gcoll 0|1] [--timeout S]
 *
 * The mix. A pseudo-random sequence seeded by --seed and drawn identically on every rank
 * decides, call by call:
 *   - the collective: allreduce (45%: SUM or MAX on MPI_FLOAT, MPI_INT or MPI_DOUBLE),
 *     bcast (30%: root drawn, MPI_BYTE / MPI_INT / MPI_FLOAT / MPI_DOUBLE), allgather
 *     (25%, the same types);
 *   - the size, 0 to --max-bytes (default 4 MiB) of result buffer (allgather: the whole
 *     receive buffer, recvcount = size / type / ranks): 2% empty calls, else log-uniform
 *     within a class: 60% up to 1 KiB, 28% 1 KiB to 64 KiB, 9% 64 KiB to 1 MiB, 1% 1 MiB
 *     to the maximum (most calls small);
 *   - in place or not (30%; allreduce and allgather: MPI_IN_PLACE);
 *   - the communicator: MPI_COMM_WORLD (40%), or one of three created with
 *     MPI_Comm_dup / MPI_Comm_split (odd/even ranks) / MPI_Comm_split (ranks reversed),
 *     all freed and created anew every --comm-every calls (default 500);
 *   - the memory: host buffers; where a device is usable (gpu_api.h: a GPU, or gcoll's
 *     emulated GPU with GCOLL_CUDA=emulate; built with GCOLL_SOAK_DEVICE) also device
 *     buffers, all ranks alike (42%), or mixed in one call (8%: the ranks of one parity of
 *     the communicator on device memory, the others on host memory);
 *   - the buffers' offsets (64-byte steps within 4 KiB).
 * Buffers are allocated once, at their largest, and every --realloc-every comm cycles
 * (default 4; 0: never) unmapped and mapped again (host) or freed and allocated again
 * (device; every other time as pool memory, GPU_MEM_ASYNC), so that the library meets
 * freed and reused addresses. Host buffers are written whole when mapped, so that the
 * resident set does not depend on the sizes drawn. Before the mix, a warm-up sweep
 * (--sweep 1, the default; run_sweep below) makes every kind of call at the largest sizes.
 *
 * The checks. Inputs are small integers (exact in float under any order of summation),
 * periodic in the element index, so that every result is known analytically: every
 * element of every result is compared, and 64 guard bytes after it must be untouched;
 * every call of up to 64 KiB whose index is a multiple of 4 is also compared bit for bit
 * with PMPI_* (the MPI itself, not gcoll) run on host copies of the same inputs. Host
 * send buffers must be unchanged. A call that returns an error counts as one wrong
 * element. Wrong elements are counted; the first few are printed.
 *
 * The resources. At the start and then every --samples-th of the calls (default 10
 * samples, at the ends of comm cycles, after the cycle's communicators were freed), each
 * rank reads the fields of read_self() below: its resident set, that set less the
 * emulated GPU's device memory (memfd memory that a real GPU would not have in host
 * RAM), its descriptors, the node segments it has mapped (the library unlinks a segment
 * from /dev/shm as soon as every rank mapped it, so /dev/shm itself shows a live job's
 * segments only for an instant), the communicators gcoll holds state for, and its
 * emulated device memory; rank 0 counts the /dev/shm entries named gcoll.<pid>.* of this
 * job's processes (and of any process: shm_all, shown apart). Rank 0 prints one line per
 * sample (maxima over ranks), "soak: sample calls=<n> t=<s> rss_mib=... wrong=<n>", and
 * at the end "soak: summary key=value ..." and "soak: PASS" or "soak: FAIL <reasons>".
 * FAIL: a wrong element; a rank's host resident set at the end more than 5% above its
 * value at the first sample after the warm-up (--warmup, default 10% of the calls) AND
 * more than --rss-slack-mib above it (default 2 MiB: what a small run may move by
 * page tables and allocator noise alone); the same for its emulated device memory; a
 * rank's descriptors, mapped segments or gcoll communicators at the end above their
 * values after the warm-up, or more of this job's /dev/shm entries; and (--require-gcoll
 * 1, the default) libgcoll.so not loaded, or holding no communicator at the end (it took
 * no call: disabled, or staying out of the way). Exit 0 on PASS, 1 on FAIL, 3 when the
 * watchdog (--timeout seconds, default 3600) fires. No device: host buffers only, said
 * in the first line.
 *
 * Where glibc's malloc serves the library's, the MPI's or the emulation's large
 * temporary blocks, its sliding mmap threshold grows the heap by fragmentation for a
 * long time; benchmarks/soak.py and the CTest tests set MALLOC_MMAP_THRESHOLD_ on the
 * ranks so that what is measured is leaks, not the allocator (benchmarks/soak.py).  */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef GCOLL_SOAK_DEVICE
#include "gpu_api.h"
#endif

/* ---- settings ---------------------------------------------------------------------- */

static long opt_calls = 20000;
static unsigned long long opt_seed = 1;
static long opt_comm_every = 500;
static int opt_samples = 10;
static int opt_warmup_pct = 10;
static size_t opt_max_bytes = 4u << 20;
static int opt_device = 1; /* auto */
static int opt_realloc_every = 4;
static double opt_rss_slack_mib = 2.0;
static int opt_timeout = 3600;
static int opt_sweep = 1;
static int opt_require_gcoll = 1;

static int wrank, wsize;

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "soak: watchdog expired (hang?), aborting\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(3);
}

static void usage_exit(const char *why) {
  if (wrank == 0) fprintf(stderr, "soak: %s\n", why);
  MPI_Finalize();
  exit(2);
}

/* ---- the shared random sequence ----------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double rnd01(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }

/* ---- element values ----------------------------------------------------------------- */

enum { PERIOD = 427 }; /* lcm(61, 7) */

/* Rank r's element i: a small integer, periodic in i with PERIOD. */
static int val(int r, long i, unsigned salt) {
  return (int)((i + salt) % 61) + 64 * (int)((r * 5 + i) % 7) + r % 3 - 200;
}

enum ty { T_BYTE, T_INT, T_FLOAT, T_DOUBLE, NTY };
static const char *ty_name[NTY] = {"byte", "int", "float", "double"};
static const size_t ty_size[NTY] = {1, 4, 4, 8};
static MPI_Datatype ty_mpi(int t) {
  switch (t) {
    case T_BYTE: return MPI_BYTE;
    case T_INT: return MPI_INT;
    case T_FLOAT: return MPI_FLOAT;
    default: return MPI_DOUBLE;
  }
}

static void store(int t, void *p, long i, long v) {
  switch (t) {
    case T_BYTE: ((unsigned char *)p)[i] = (unsigned char)v; break;
    case T_INT: ((int *)p)[i] = (int)v; break;
    case T_FLOAT: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = (double)v; break;
  }
}
static double load(int t, const void *p, long i) {
  switch (t) {
    case T_BYTE: return ((const unsigned char *)p)[i];
    case T_INT: return ((const int *)p)[i];
    case T_FLOAT: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
  }
}

/* n elements of rank r's values, from element 0. */
static void fill(int t, void *p, long n, int r, unsigned salt) {
  if (n <= 0) return;
  long first = n < PERIOD ? n : PERIOD;
  for (long i = 0; i < first; ++i) store(t, p, i, val(r, i, salt));
  for (long i = PERIOD; i < n; i += PERIOD) {
    long k = n - i < PERIOD ? n - i : PERIOD;
    memcpy((char *)p + (size_t)i * ty_size[t], p, (size_t)k * ty_size[t]);
  }
}

/* ---- checking ----------------------------------------------------------------------- */

static long long wrong_total;   /* this rank's wrong elements */
static int reports_left = 12;   /* printed per rank */
static const char *coll_name[3] = {"allreduce", "bcast", "allgather"};

struct call {
  long index;
  int coll; /* 0 allreduce, 1 bcast, 2 allgather */
  int type, op_max, in_place, comm_id, root;
  int kind; /* 0 host, 1 device, 2 mixed */
  int my_dev; /* this rank's buffers on the device */
  size_t bytes;
  long count; /* allreduce / bcast: elements; allgather: elements per rank */
  unsigned salt;
  size_t off_s, off_r;
};
static const char *comm_name[4] = {"world", "dup", "split_parity", "split_reversed"};
static const char *kind_name[3] = {"host", "device", "mixed"};

static void report(const struct call *c, const char *what, long elem, double got, double want) {
  if (reports_left <= 0) return;
  --reports_left;
  fprintf(stderr,
          "soak rank %d: WRONG call %ld (%s %s%s, %s, %zu bytes, %s, %s%s, root %d): %s element %ld: got %.17g want "
          "%.17g\n",
          wrank, c->index, coll_name[c->coll], ty_name[c->type], c->coll == 0 ? (c->op_max ? " max" : " sum") : "",
          comm_name[c->comm_id], c->bytes, kind_name[c->kind], c->my_dev ? "this rank device" : "this rank host",
          c->in_place ? ", in place" : "", c->root, what, elem, got, want);
}

/* Compares n elements of `got` with the periodic table `tab` (PERIOD elements of the
 * same type); returns the wrong elements. */
static long compare_periodic(const struct call *c, int t, const void *got, const void *tab, long n, long base,
                             const char *what) {
  const size_t es = ty_size[t];
  long bad = 0;
  for (long i = 0; i < n; i += PERIOD) {
    long k = n - i < PERIOD ? n - i : PERIOD;
    const char *g = (const char *)got + (size_t)i * es;
    if (memcmp(g, tab, (size_t)k * es) == 0) continue;
    for (long j = 0; j < k; ++j)
      if (memcmp(g + (size_t)j * es, (const char *)tab + (size_t)j * es, es) != 0) {
        if (bad == 0) report(c, what, base + i + j, load(t, g, j), load(t, tab, j));
        ++bad;
      }
  }
  return bad;
}

static long check_guard(const struct call *c, const unsigned char *g, size_t n) {
  long bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (g[i] != 0xA5) {
      if (bad == 0) report(c, "guard byte after the result", (long)i, g[i], 0xA5);
      ++bad;
    }
  return bad;
}

/* ---- resources ---------------------------------------------------------------------- */

enum { GUARD = 64, OFFSET_ROOM = 4096 };

/* One rank's resources at a sample. Emulated device memory (GCOLL_CUDA=emulate) is
 * memfd memory named gcoll-emu-<pid>-<id> mapped into the processes: it counts in the
 * resident set, where a real GPU's memory would not, so it is counted apart. */
enum { F_RSS, F_HOST, F_VM, F_FDS, F_SEGS, F_STATES, F_DEV, F_PEER_N, F_PEER, NF };
static const char *f_name[NF] = {"rss", "host_rss", "vm", "fds", "segs", "gcoll_states", "dev", "peer_maps", "peer"};
/* libgcoll.so's gcoll_live_comm_states (include/gcoll/gcoll.h), when it is loaded. */
static int (*live_comm_states)(void);
static int (*gcoll_is_enabled)(void);
struct names {
  char (*v)[96];
  long long *size;
  int n, cap;
};
/* Adds `name` (mapping of `kib`) if new; returns its index. */
static int names_add(struct names *t, const char *name, long long kib) {
  for (int k = 0; k < t->n; ++k)
    if (strcmp(t->v[k], name) == 0) {
      if (kib > t->size[k]) t->size[k] = kib;
      return k;
    }
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 64;
    t->v = realloc(t->v, sizeof *t->v * (size_t)t->cap);
    t->size = realloc(t->size, sizeof *t->size * (size_t)t->cap);
    if (!t->v || !t->size) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  snprintf(t->v[t->n], sizeof t->v[0], "%s", name);
  t->size[t->n] = kib;
  return t->n++;
}

/*   rss      resident set (/proc/self/statm), KiB
 *   host_rss rss less the resident emulated device memory (own and peers'), KiB
 *   vm       virtual size, KiB
 *   fds      open descriptors (/proc/self/fd)
 *   segs     node segments mapped (distinct /dev/shm/gcoll.* in /proc/self/smaps)
 *   gcoll_states  communicators the library holds state for (gcoll_live_comm_states())
 *   dev      emulated device memory this process allocated and still maps (the
 *            application's buffers and the library's), KiB
 *   peer_maps, peer  other processes' emulated device allocations mapped here (IPC), and
 *            their size, KiB */
static void read_self(long long f[NF]) {
  memset(f, 0, sizeof(long long) * NF);
  long page = sysconf(_SC_PAGESIZE);
  FILE *fp = fopen("/proc/self/statm", "r");
  if (fp) {
    long long size = 0, res = 0;
    if (fscanf(fp, "%lld %lld", &size, &res) == 2) {
      f[F_VM] = size * page / 1024;
      f[F_RSS] = res * page / 1024;
    }
    fclose(fp);
  }
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
      if (e->d_name[0] != '.') f[F_FDS]++;
    closedir(d);
    f[F_FDS]--; /* the directory's own descriptor */
  }
  static struct names segs, own, peers;
  segs.n = own.n = peers.n = 0;
  char mine[64];
  snprintf(mine, sizeof mine, "gcoll-emu-%d-", (int)getpid());
  long long emu_rss = 0;
  int cur = 0; /* the mapping being read: 0 other, 1 own device, 2 peer device */
  fp = fopen("/proc/self/smaps", "r");
  if (fp) {
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
      unsigned long long lo, hi;
      char *p;
      if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, ' ') && line[0] != ' ') {
        const long long kib = (long long)((hi - lo) / 1024);
        cur = 0;
        line[strcspn(line, "\n")] = '\0';
        if ((p = strstr(line, "/dev/shm/gcoll.")) != NULL) {
          p[strcspn(p, " ")] = '\0';
          names_add(&segs, p, kib);
        } else if ((p = strstr(line, "gcoll-emu-")) != NULL) {
          p[strcspn(p, " ")] = '\0';
          if (strncmp(p, mine, strlen(mine)) == 0) cur = 1, names_add(&own, p, kib);
          else cur = 2, names_add(&peers, p, kib);
        }
      } else if (cur && strncmp(line, "Rss:", 4) == 0) {
        emu_rss += atoll(line + 4);
      }
    }
    fclose(fp);
  }
  f[F_HOST] = f[F_RSS] - emu_rss;
  f[F_STATES] = live_comm_states ? live_comm_states() : 0;
  f[F_SEGS] = segs.n;
  for (int k = 0; k < own.n; ++k) f[F_DEV] += own.size[k];
  f[F_PEER_N] = peers.n;
  for (int k = 0; k < peers.n; ++k) f[F_PEER] += peers.size[k];
}

/* /dev/shm entries gcoll.<pid>.*: those of the given pids, and all of them. */
static void count_shm(const int *pids, int npids, long long *job, long long *all) {
  *job = *all = 0;
  DIR *d = opendir("/dev/shm");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "gcoll", 5) != 0) continue;
    ++*all;
    if (strncmp(e->d_name, "gcoll.", 6) != 0) continue;
    int pid = atoi(e->d_name + 6);
    for (int k = 0; k < npids; ++k)
      if (pids[k] == pid) {
        ++*job;
        break;
      }
  }
  closedir(d);
}

/* ---- buffers ------------------------------------------------------------------------ */

static size_t buf_bytes; /* each buffer: the largest result + offset room + guard */
static unsigned char *h_send, *h_recv, *h_ref, *h_stage, *h_in, *h_tab;
static int realloc_count;

#ifdef GCOLL_SOAK_DEVICE
static int have_device;
static void *d_send, *d_recv;
static enum gpu_mem d_kind = GPU_MEM_DEVICE;

static void gpu_ck(int e, const char *what) {
  if (e == 0) return;
  fprintf(stderr, "soak rank %d: %s failed: %s (%s error %d)\n", wrank, what, gpu_error_string(e), gpu_mode_name(), e);
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CK(x) gpu_ck((x), #x)
#else
static const int have_device = 0;
#endif

static unsigned char *map_host(void) {
  void *p = mmap(NULL, buf_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("soak: mmap");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(p, 0x5A, buf_bytes); /* resident whatever sizes are drawn later */
  return p;
}

/* (Re)allocates the buffers the collectives see; the checking buffers stay. */
static void alloc_buffers(int first) {
  if (!first) {
    munmap(h_send, buf_bytes);
    munmap(h_recv, buf_bytes);
  }
  h_send = map_host();
  h_recv = map_host();
#ifdef GCOLL_SOAK_DEVICE
  if (have_device) {
    if (!first) {
      CK(gpu_free(d_send, d_kind));
      CK(gpu_free(d_recv, d_kind));
    }
    d_kind = realloc_count % 2 == 1 ? GPU_MEM_ASYNC : GPU_MEM_DEVICE;
    CK(gpu_malloc(&d_send, buf_bytes, d_kind));
    CK(gpu_malloc(&d_recv, buf_bytes, d_kind));
    CK(gpu_memset(d_send, 0x5A, buf_bytes));
    CK(gpu_memset(d_recv, 0x5A, buf_bytes));
    CK(gpu_device_synchronize());
  }
#endif
  ++realloc_count;
}

/* ---- the communicators -------------------------------------------------------------- */

static MPI_Comm comms[4];
static long comms_created;

static void make_comms(void) {
  comms[0] = MPI_COMM_WORLD;
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &comms[2]);
  MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &comms[3]);
  for (int k = 1; k < 4; ++k) MPI_Comm_set_errhandler(comms[k], MPI_ERRORS_RETURN);
  comms_created += 3;
}
static void free_comms(void) {
  for (int k = 1; k < 4; ++k) MPI_Comm_free(&comms[k]);
}

/* ---- one call ----------------------------------------------------------------------- */

static long long n_calls[3], n_kind[3], n_in_place, n_pmpi_checked, n_errors;

static size_t draw_bytes(void) {
  double u = rnd01(), v = rnd01();
  if (u < 0.02) return 0;
  double lo, hi; /* log2 bounds */
  if (u < 0.62) lo = 0, hi = 10;
  else if (u < 0.90) lo = 10, hi = 16;
  else if (u < 0.99) lo = 16, hi = 20;
  else lo = 20, hi = 22;
  double maxl = 0;
  for (size_t m = opt_max_bytes; m > 1; m >>= 1) maxl += 1;
  if (hi > maxl) hi = maxl;
  if (lo > hi) lo = hi;
  size_t b = (size_t)exp2(lo + (hi - lo) * v);
  if (b > opt_max_bytes) b = opt_max_bytes;
  return b;
}

static void draw(struct call *c, long index, int have_dev) {
  memset(c, 0, sizeof *c);
  c->index = index;
  double u = rnd01();
  c->coll = u < 0.45 ? 0 : u < 0.75 ? 1 : 2;
  uint64_t r = rnd();
  if (c->coll == 0) {
    static const int t[3] = {T_FLOAT, T_INT, T_DOUBLE};
    c->type = t[r % 3];
    c->op_max = (int)((r >> 8) & 1);
  } else {
    c->type = (int)(r % NTY);
  }
  c->bytes = draw_bytes();
  c->in_place = c->coll != 1 && rnd01() < 0.30;
  u = rnd01();
  c->comm_id = u < 0.40 ? 0 : u < 0.60 ? 1 : u < 0.80 ? 2 : 3;
  r = rnd();
  c->root = (int)(r % 1024);
  c->salt = (unsigned)((r >> 16) % 1000);
  c->off_s = (size_t)((r >> 32) % (OFFSET_ROOM / 64)) * 64;
  c->off_r = (size_t)((r >> 40) % (OFFSET_ROOM / 64)) * 64;
  u = rnd01();
  c->kind = !have_dev ? 0 : u < 0.50 ? 0 : u < 0.92 ? 1 : 2;
}

/* Host copies of this rank's buffers: h_stage for the receive buffer (device calls). */
static void run_call(struct call *c) {
  MPI_Comm comm = comms[c->comm_id];
  int cr, cn;
  MPI_Comm_rank(comm, &cr);
  MPI_Comm_size(comm, &cn);
  const int t = c->type;
  const size_t es = ty_size[t];
  MPI_Datatype dt = ty_mpi(t);
  c->root %= cn;
  c->my_dev = c->kind == 1 || (c->kind == 2 && (cr + (int)c->salt) % 2 == 1);
  long count = (long)(c->bytes / es); /* allreduce, bcast: elements; allgather: per rank */
  if (c->coll == 2) count = (long)(c->bytes / es / (size_t)cn);
  c->count = count;
  const long rcount = c->coll == 2 ? count * cn : count; /* elements of the result */
  const size_t rbytes = (size_t)rcount * es, sbytes = (size_t)count * es;
  if (c->index >= 0) { /* the sweep's calls are counted apart */
    n_calls[c->coll]++;
    n_kind[c->kind]++;
    n_in_place += c->in_place;
  }

  /* This rank's input, on the host: h_in. */
  fill(t, h_in, count, cr, c->salt);
  unsigned char *send_h = h_send + c->off_s, *recv_h = h_recv + c->off_r;
  unsigned char *send = send_h, *recv = recv_h; /* what the collective gets */
#ifdef GCOLL_SOAK_DEVICE
  unsigned char *send_d = (unsigned char *)d_send + c->off_s, *recv_d = (unsigned char *)d_recv + c->off_r;
  if (c->my_dev) send = send_d, recv = recv_d;
#endif

  /* The receive buffer: sentinel (0xA5) over the result and the guard; the inputs. */
  if (!c->my_dev) {
    memset(recv_h, 0xA5, rbytes + GUARD);
    if (c->coll == 0) memcpy(c->in_place ? recv_h : send_h, h_in, sbytes);
    else if (c->coll == 1 && cr == c->root) memcpy(recv_h, h_in, sbytes);
    else if (c->coll == 2) memcpy(c->in_place ? recv_h + (size_t)cr * sbytes : send_h, h_in, sbytes);
  }
#ifdef GCOLL_SOAK_DEVICE
  else {
    /* The sentinel queued on the legacy stream (it may land after memset returns: the
     * library must order its work after it), the inputs copied from host memory. */
    CK(gpu_memset(recv_d, 0xA5, rbytes + GUARD));
    if (sbytes) {
      if (c->coll == 0) CK(gpu_memcpy(c->in_place ? recv_d : send_d, h_in, sbytes));
      else if (c->coll == 1 && cr == c->root) CK(gpu_memcpy(recv_d, h_in, sbytes));
      else if (c->coll == 2) CK(gpu_memcpy(c->in_place ? recv_d + (size_t)cr * sbytes : send_d, h_in, sbytes));
    }
  }
#endif

  int rc;
  if (c->coll == 0)
    rc = MPI_Allreduce(c->in_place ? MPI_IN_PLACE : send, recv, (int)count, dt, c->op_max ? MPI_MAX : MPI_SUM, comm);
  else if (c->coll == 1)
    rc = MPI_Bcast(recv, (int)count, dt, c->root, comm);
  else
    rc = MPI_Allgather(c->in_place ? MPI_IN_PLACE : send, (int)count, dt, recv, (int)count, dt, comm);

  /* The result (and guard) on the host. */
  const unsigned char *res = recv_h;
#ifdef GCOLL_SOAK_DEVICE
  if (c->my_dev) {
    CK(gpu_memcpy(h_stage, recv_d, rbytes + GUARD));
    res = h_stage;
  }
#endif
  long bad = 0;
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    if (reports_left-- > 0)
      fprintf(stderr, "soak rank %d: call %ld (%s, %zu bytes, %s) returned %d: %s\n", wrank, c->index,
              coll_name[c->coll], c->bytes, kind_name[c->kind], rc, msg);
    ++n_errors;
    bad = 1;
  } else {
    /* Analytic expectation: one period of the result in h_tab. */
    if (c->coll == 0) {
      for (long i = 0; i < PERIOD; ++i) {
        long acc = val(0, i, c->salt);
        for (int r = 1; r < cn; ++r) {
          long v = val(r, i, c->salt);
          acc = c->op_max ? (v > acc ? v : acc) : acc + v;
        }
        store(t, h_tab, i, acc);
      }
      bad += compare_periodic(c, t, res, h_tab, rcount, 0, "result");
    } else if (c->coll == 1) {
      fill(t, h_tab, PERIOD, c->root, c->salt);
      bad += compare_periodic(c, t, res, h_tab, rcount, 0, "result");
    } else {
      for (int r = 0; r < cn; ++r) {
        fill(t, h_tab, PERIOD, r, c->salt);
        bad += compare_periodic(c, t, res + (size_t)r * sbytes, h_tab, count, (long)r * count, "result");
      }
    }
    bad += check_guard(c, res + rbytes, GUARD);
    /* Host send buffers are left as they were. */
    if (!c->my_dev && !c->in_place && c->coll != 1 && memcmp(send_h, h_in, sbytes) != 0) {
      if (reports_left-- > 0)
        fprintf(stderr, "soak rank %d: call %ld (%s): the send buffer changed\n", wrank, c->index, coll_name[c->coll]);
      ++bad;
    }
  }
  /* The MPI itself on host copies of the same inputs, for small calls now and then (the
   * same decision on every rank: it depends on the drawn call only). */
  if (c->bytes <= 65536 && (c->index < 0 || c->index % 4 == 0)) {
    ++n_pmpi_checked;
    memset(h_ref, 0xA5, rbytes);
    int prc;
    if (c->coll == 0) {
      prc = PMPI_Allreduce(h_in, h_ref, (int)count, dt, c->op_max ? MPI_MAX : MPI_SUM, comm);
    } else if (c->coll == 1) {
      if (cr == c->root) memcpy(h_ref, h_in, sbytes);
      prc = PMPI_Bcast(h_ref, (int)count, dt, c->root, comm);
    } else {
      prc = PMPI_Allgather(h_in, (int)count, dt, h_ref, (int)count, dt, comm);
    }
    if (prc == MPI_SUCCESS && rc == MPI_SUCCESS && memcmp(h_ref, res, rbytes) != 0) {
      long diff = 0;
      for (long i = 0; i < rcount; ++i)
        if (memcmp(h_ref + (size_t)i * es, res + (size_t)i * es, es) != 0) {
          if (diff == 0) report(c, "PMPI reference", i, load(t, res, i), load(t, h_ref, i));
          ++diff;
        }
      if (bad == 0) bad = diff; /* not counted twice */
    }
  }
  wrong_total += bad;
}

/* ---- the warm-up sweep ---------------------------------------------------------------- */

/* Before the mix (--sweep 1, the default): every collective on every communicator, in
 * every memory kind, in place and not, at 1 B, 64 B, 4 KiB, 256 KiB, the largest size
 * and a few sizes just under it, so that whatever the library (or the MPI, or the
 * allocator) sizes by the largest call seen has reached its size before the first
 * sample after the warm-up. Checked like the mix; its calls are counted apart. */
static long run_sweep(int have_dev) {
  const size_t sizes[] = {1, 64, 4096, 262144, opt_max_bytes - 4096, opt_max_bytes - 64, opt_max_bytes};
  long n = 0;
  make_comms();
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si) {
    if (sizes[si] < 1 || sizes[si] > opt_max_bytes) continue;
    for (int comm_id = 0; comm_id < 4; ++comm_id)
      for (int coll = 0; coll < 3; ++coll)
        for (int kind = 0; kind < (have_dev ? 3 : 1); ++kind)
          for (int ip = 0; ip < (coll == 1 ? 1 : 2); ++ip) {
            struct call c;
            memset(&c, 0, sizeof c);
            c.index = -1 - n;
            c.coll = coll;
            c.type = coll == 0 ? T_FLOAT : T_BYTE;
            c.bytes = sizes[si];
            c.in_place = ip;
            c.comm_id = comm_id;
            c.root = (int)(n % 7);
            c.salt = (unsigned)(n % 1000);
            c.off_s = c.off_r = (size_t)(n % 2) * (OFFSET_ROOM - 64);
            c.kind = kind;
            run_call(&c);
            ++n;
          }
  }
  free_comms();
  return n;
}

/* ---- main --------------------------------------------------------------------------- */

struct point {
  long calls;
  double t;
  long long mx[NF]; /* maxima over ranks */
  long long shm_job, shm_all, wrong;
};

/* The worst rank's growth of field f from sample a to sample b (all[pt][rank][f]). */
static void growth(const long long *all, int a, int b, int f, double *pct, double *mib, int *rank) {
  *pct = 0, *mib = 0, *rank = 0;
  for (int r = 0; r < wsize; ++r) {
    long long x = all[((size_t)a * wsize + r) * NF + f], y = all[((size_t)b * wsize + r) * NF + f];
    double m = (y - x) / 1024.0, pc = x > 0 ? 100.0 * (y - x) / x : (y > x ? 100.0 : 0);
    if (r == 0 || pc > *pct) *pct = pc, *mib = m, *rank = r;
  }
}
/* Ranks whose field f grew from sample a to b. */
static int grew(const long long *all, int a, int b, int f) {
  int n = 0;
  for (int r = 0; r < wsize; ++r) n += all[((size_t)b * wsize + r) * NF + f] > all[((size_t)a * wsize + r) * NF + f];
  return n;
}

int main(int argc, char **argv) {
  signal(SIGALRM, on_alarm);
  for (int i = 1; i < argc; ++i)
    if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) opt_timeout = atoi(argv[i + 1]);
  if (opt_timeout > 0) alarm((unsigned)opt_timeout);
#ifdef GCOLL_SOAK_DEVICE
  int want_device = 1;
  for (int i = 1; i < argc; ++i)
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc && strcmp(argv[i + 1], "off") == 0) want_device = 0;
  int ndev = 0;
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!lr) lr = getenv("MPI_LOCALRANKID");
  if (want_device && gpu_device_count(&ndev) == 0 && ndev > 0) {
    have_device = 1;
    if (lr && gpu_set_device(atoi(lr) % ndev) != 0) have_device = 0;
  }
#endif
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  *(void **)&live_comm_states = dlsym(RTLD_DEFAULT, "gcoll_live_comm_states");
  *(void **)&gcoll_is_enabled = dlsym(RTLD_DEFAULT, "gcoll_enabled");

  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) usage_exit("every option takes a value");
    if (strcmp(a, "--calls") == 0) opt_calls = atol(v);
    else if (strcmp(a, "--seed") == 0) opt_seed = strtoull(v, NULL, 0);
    else if (strcmp(a, "--comm-every") == 0) opt_comm_every = atol(v);
    else if (strcmp(a, "--samples") == 0) opt_samples = atoi(v);
    else if (strcmp(a, "--warmup") == 0) opt_warmup_pct = atoi(v);
    else if (strcmp(a, "--max-bytes") == 0) opt_max_bytes = (size_t)strtoull(v, NULL, 0);
    else if (strcmp(a, "--device") == 0) opt_device = strcmp(v, "off") != 0;
    else if (strcmp(a, "--realloc-every") == 0) opt_realloc_every = atoi(v);
    else if (strcmp(a, "--rss-slack-mib") == 0) opt_rss_slack_mib = atof(v);
    else if (strcmp(a, "--timeout") == 0) opt_timeout = atoi(v);
    else if (strcmp(a, "--sweep") == 0) opt_sweep = atoi(v);
    else if (strcmp(a, "--require-gcoll") == 0) opt_require_gcoll = atoi(v);
    else usage_exit("unknown option (see the comment at the top of soak.c)");
    ++i;
  }
  if (opt_calls < 1 || opt_comm_every < 1 || opt_samples < 1 || opt_warmup_pct < 0 || opt_warmup_pct >= 100 ||
      opt_max_bytes < 1)
    usage_exit("bad option value");

  int dev = 0;
#ifdef GCOLL_SOAK_DEVICE
  if (!opt_device) have_device = 0;
  if (have_device && !lr && gpu_set_device(wrank % ndev) != 0) have_device = 0;
  /* Device buffers only if every rank has them (the mix is the same everywhere). */
  PMPI_Allreduce(&have_device, &dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  have_device = dev;
#endif

  /* Samples at the ends of comm cycles: every `step` calls, a multiple of comm_every. */
  long step = opt_calls / opt_samples;
  step = step / opt_comm_every * opt_comm_every;
  if (step < opt_comm_every) step = opt_comm_every;
  const long warm_calls = (long)((double)opt_calls * opt_warmup_pct / 100.0);

  buf_bytes = opt_max_bytes + OFFSET_ROOM + GUARD;
  h_ref = malloc(buf_bytes);
  h_stage = malloc(buf_bytes);
  h_in = malloc(buf_bytes);
  h_tab = malloc((size_t)PERIOD * 8);
  if (!h_ref || !h_stage || !h_in || !h_tab) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(h_ref, 0, buf_bytes);
  memset(h_stage, 0, buf_bytes);
  memset(h_in, 0, buf_bytes);
  alloc_buffers(1);

  int *pids = malloc(sizeof(int) * (size_t)wsize);
  int mypid = (int)getpid();
  PMPI_Gather(&mypid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);

  if (wrank == 0) {
#ifdef GCOLL_SOAK_DEVICE
    const char *dev_line = have_device ? gpu_mode_name() : "none usable: host buffers only";
#else
    const char *dev_line = "not built (no CUDA): host buffers only";
#endif
    printf("soak: %d ranks, %ld calls, seed %llu, sizes 0 to %zu bytes, communicators renewed every %ld calls, "
           "buffers renewed every %d cycles, samples every %ld calls, warm-up %ld calls; device: %s\n",
           wsize, opt_calls, opt_seed, opt_max_bytes, opt_comm_every, opt_realloc_every, step, warm_calls, dev_line);
    fflush(stdout);
  }

  rng_state = opt_seed * 0x2545F4914F6CDD1Dull + 12345;
  const int maxpts = (int)(opt_calls / step + 3);
  struct point *pts = calloc((size_t)maxpts, sizeof *pts);
  long long *all = wrank == 0 ? malloc(sizeof(long long) * NF * (size_t)wsize * (size_t)maxpts) : NULL;
  if (!pts || (wrank == 0 && !all)) MPI_Abort(MPI_COMM_WORLD, 1);
  int npts = 0, warm_pt = -1;
  const double t0 = MPI_Wtime();
  long cycle = 0, sweep_calls = 0;

  for (long done = 0;;) {
    /* A sample: after the cycle's communicators were freed. */
    if (done % step == 0 || done == opt_calls) {
      long long f[NF], sum_wrong = 0;
      read_self(f);
      PMPI_Reduce(&wrong_total, &sum_wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
      PMPI_Gather(f, NF, MPI_LONG_LONG, all ? all + (size_t)npts * wsize * NF : NULL, NF, MPI_LONG_LONG, 0,
                  MPI_COMM_WORLD);
      if (wrank == 0) {
        struct point *p = &pts[npts];
        p->calls = done;
        p->t = MPI_Wtime() - t0;
        for (int k = 0; k < NF; ++k) {
          p->mx[k] = all[(size_t)npts * wsize * NF + k];
          for (int r = 1; r < wsize; ++r)
            if (all[((size_t)npts * wsize + r) * NF + k] > p->mx[k]) p->mx[k] = all[((size_t)npts * wsize + r) * NF + k];
        }
        p->wrong = sum_wrong;
        count_shm(pids, wsize, &p->shm_job, &p->shm_all);
        printf("soak: sample calls=%ld t=%.1f rss_mib=%.1f host_rss_mib=%.1f vm_mib=%.1f fds=%lld segs=%lld "
               "states=%lld shm=%lld shm_all=%lld dev_mib=%.1f peer_maps=%lld peer_mib=%.1f wrong=%lld\n",
               p->calls, p->t, p->mx[F_RSS] / 1024.0, p->mx[F_HOST] / 1024.0, p->mx[F_VM] / 1024.0, p->mx[F_FDS],
               p->mx[F_SEGS], p->mx[F_STATES], p->shm_job, p->shm_all, p->mx[F_DEV] / 1024.0, p->mx[F_PEER_N],
               p->mx[F_PEER] / 1024.0, p->wrong);
        fflush(stdout);
      }
      if (warm_pt < 0 && done >= warm_calls && (done > 0 || warm_calls == 0)) warm_pt = npts;
      ++npts;
    }
    if (done == opt_calls) break;
    if (done == 0 && opt_sweep) sweep_calls = run_sweep(have_device);
    /* A comm cycle: new communicators (and now and then new buffers). */
    if (opt_realloc_every > 0 && cycle > 0 && cycle % opt_realloc_every == 0) alloc_buffers(0);
    make_comms();
    long end = done + opt_comm_every;
    if (end > opt_calls) end = opt_calls;
    for (; done < end; ++done) {
      struct call c;
      draw(&c, done, have_device);
      run_call(&c);
    }
    free_comms();
    ++cycle;
  }
  const double elapsed = MPI_Wtime() - t0;

  /* Summary, on rank 0. */
  long long tot_calls[3], tot_kind[3], tot_misc[3], mine_misc[3] = {n_in_place, n_pmpi_checked, n_errors};
  PMPI_Reduce(n_calls, tot_calls, 3, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  PMPI_Reduce(n_kind, tot_kind, 3, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  PMPI_Reduce(mine_misc, tot_misc, 3, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  int rc = 0;
  if (wrank == 0) {
    if (warm_pt < 0 || warm_pt >= npts) warm_pt = npts - 1;
    const int last = npts - 1;
    const struct point *w = &pts[warm_pt], *e = &pts[last];
    double rss_pct, rss_mib, dev_pct, dev_mib;
    int rss_rank, dev_rank;
    growth(all, warm_pt, last, F_HOST, &rss_pct, &rss_mib, &rss_rank);
    growth(all, warm_pt, last, F_DEV, &dev_pct, &dev_mib, &dev_rank);
    char why[512] = "";
#define WHY(...) snprintf(why + strlen(why), sizeof why - strlen(why), __VA_ARGS__)
    if (e->wrong > 0) WHY(" wrong=%lld", e->wrong);
    if (rss_pct > 5.0 && rss_mib > opt_rss_slack_mib)
      WHY(" host_rss+%.1f%%(rank %d, +%.1f MiB)", rss_pct, rss_rank, rss_mib);
    if (dev_pct > 5.0 && dev_mib > opt_rss_slack_mib)
      WHY(" device_memory+%.1f%%(rank %d, +%.1f MiB)", dev_pct, dev_rank, dev_mib);
    for (int k = F_FDS; k <= F_STATES; ++k)
      if (grew(all, warm_pt, last, k))
        WHY(" %s %lld->%lld(%d ranks)", f_name[k], w->mx[k], e->mx[k], grew(all, warm_pt, last, k));
    if (e->shm_job > w->shm_job) WHY(" shm %lld->%lld", w->shm_job, e->shm_job);
    if (opt_require_gcoll && (!live_comm_states || e->mx[F_STATES] == 0))
      WHY(" gcoll_inactive(%s)", !live_comm_states ? "libgcoll.so not loaded"
                                 : gcoll_is_enabled && !gcoll_is_enabled() ? "GCOLL_ENABLE=0"
                                                                            : "it holds no communicator: it took no call");
#undef WHY
    printf("soak: summary ranks=%d calls=%ld allreduce=%lld bcast=%lld allgather=%lld host=%lld device=%lld "
           "mixed=%lld in_place=%lld sweep_calls=%ld pmpi_checked=%lld errors=%lld comms_created=%ld buffer_renewals=%d "
           "wrong=%lld warm_calls=%ld rss_start_mib=%.1f rss_warm_mib=%.1f rss_end_mib=%.1f "
           "host_rss_start_mib=%.1f host_rss_warm_mib=%.1f host_rss_end_mib=%.1f host_rss_growth_pct=%.2f "
           "host_rss_growth_mib=%.2f host_rss_growth_rank=%d vm_warm_mib=%.1f vm_end_mib=%.1f "
           "fds_start=%lld fds_warm=%lld fds_end=%lld segs_start=%lld segs_warm=%lld segs_end=%lld "
           "states_warm=%lld states_end=%lld "
           "shm_warm=%lld shm_end=%lld dev_warm_mib=%.1f dev_end_mib=%.1f dev_growth_mib=%.2f "
           "peer_maps_warm=%lld peer_maps_end=%lld peer_warm_mib=%.1f peer_end_mib=%.1f time_s=%.1f "
           "device_buffers=%s\n",
           wsize, opt_calls, tot_calls[0], tot_calls[1], tot_calls[2], tot_kind[0], tot_kind[1], tot_kind[2],
           tot_misc[0], sweep_calls, tot_misc[1], tot_misc[2], comms_created, realloc_count - 1, e->wrong, w->calls,
           pts[0].mx[F_RSS] / 1024.0, w->mx[F_RSS] / 1024.0, e->mx[F_RSS] / 1024.0, pts[0].mx[F_HOST] / 1024.0,
           w->mx[F_HOST] / 1024.0, e->mx[F_HOST] / 1024.0, rss_pct, rss_mib, rss_rank, w->mx[F_VM] / 1024.0,
           e->mx[F_VM] / 1024.0, pts[0].mx[F_FDS], w->mx[F_FDS], e->mx[F_FDS], pts[0].mx[F_SEGS], w->mx[F_SEGS],
           e->mx[F_SEGS], w->mx[F_STATES], e->mx[F_STATES], w->shm_job, e->shm_job, w->mx[F_DEV] / 1024.0, e->mx[F_DEV] / 1024.0, dev_mib,
           w->mx[F_PEER_N], e->mx[F_PEER_N], w->mx[F_PEER] / 1024.0, e->mx[F_PEER] / 1024.0, elapsed,
           dev ? "yes" : "no");
    if (why[0]) printf("soak: FAIL%s\n", why);
    else printf("soak: PASS\n");
    fflush(stdout);
    rc = why[0] ? 1 : 0;
  }
  PMPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
#ifdef GCOLL_SOAK_DEVICE
  if (have_device) {
    CK(gpu_free(d_send, d_kind));
    CK(gpu_free(d_recv, d_kind));
  }
#endif
  MPI_Finalize();
  return rc;
}
