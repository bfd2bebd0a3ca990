/* What an application sees of its own process, with and without gcoll (issue 28).
 *
 * A plain MPI program, as a user writes one: it neither links gcoll nor includes a gcoll
 * header (run it with and without LD_PRELOAD=libgcoll.so). After MPI_Init it installs its
 * own crash handlers and an alternate signal stack, sets its FP modes, umask, locale and
 * stdout buffering; then it walks a string with strtok, making one collective per token
 * (on the emulated GPU's device buffers when gcoll runs one, else on host buffers); then
 * it forks, and runs system(); then MPI_Finalize. At each of these points every rank
 * writes its process state, one fact per line, to <dir>/fp.<rank>: invisible_check.py
 * compares the files of a run with the library against those of a run without it, line
 * by line. The collectives' results are checked too ("results" lines).
 *
 * usage: invisible <dir>
 *        invisible --only <collective>   one collective of 2 ints (checked), then MPI_Finalize:
 *                                        nothing else (finalize_race.py, issue 28)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fenv.h>
#include <limits.h>
#include <locale.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

extern char **environ;

static FILE *g_out;
static int g_rank = -1, g_size = 0;
static char **g_env0;  /* the environment at the start of main, sorted */
static int g_env0_n;
static char g_stdout_buf[8192];
static int g_errno_changed;  /* collectives after which errno was not what it was before */
static int g_bad_results;
static char g_out_path[PATH_MAX];  /* the fingerprint file's real path */

/* ---- the application's own handlers -------------------------------------------------- */

static void app_early(int sig) { (void)sig; }
static void app_crash(int sig, siginfo_t *si, void *ctx) { (void)sig; (void)si; (void)ctx; _exit(99); }
static void app_usr1(int sig) { (void)sig; }

/* ---- facts ------------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char **env_sorted(int *n) {
  int k = 0;
  while (environ[k]) ++k;
  char **v = malloc(sizeof(char *) * (size_t)(k + 1));
  for (int i = 0; i < k; ++i) v[i] = strdup(environ[i]);
  qsort(v, (size_t)k, sizeof(char *), cmp_str);
  v[k] = NULL;
  *n = k;
  return v;
}

static size_t name_len(const char *kv) {
  const char *eq = strchr(kv, '=');
  return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* Variables added, removed or changed since main started. */
static void env_diff(const char *phase) {
  int n = 0;
  char **now = env_sorted(&n);
  int i = 0, j = 0;
  while (i < g_env0_n || j < n) {
    int c;
    if (i == g_env0_n) c = 1;
    else if (j == n) c = -1;
    else {
      const size_t li = name_len(g_env0[i]), lj = name_len(now[j]);
      c = strncmp(g_env0[i], now[j], li < lj ? li : lj);
      if (c == 0) c = (li > lj) - (li < lj);
    }
    if (c < 0) fprintf(g_out, "%s env removed %.*s\n", phase, (int)name_len(g_env0[i]), g_env0[i]), ++i;
    else if (c > 0) fprintf(g_out, "%s env added %.*s\n", phase, (int)name_len(now[j]), now[j]), ++j;
    else {
      if (strcmp(g_env0[i], now[j]) != 0) fprintf(g_out, "%s env changed %.*s\n", phase, (int)name_len(now[j]), now[j]);
      ++i, ++j;
    }
  }
  for (int k = 0; k < n; ++k) free(now[k]);
  free(now);
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Every signal's disposition that is not the default: whose handler (the application's,
 * or which library's), and the flags that change how it runs. */
static void signals(const char *phase) {
  for (int sig = 1; sig < SIGRTMAX; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0) continue;
    const void *h = (sa.sa_flags & SA_SIGINFO) ? (const void *)sa.sa_sigaction : (const void *)sa.sa_handler;
    if (h == (const void *)SIG_DFL) continue;
    char who[256];
    if (h == (const void *)SIG_IGN) snprintf(who, sizeof who, "ignored");
    else if (h == (const void *)app_early) snprintf(who, sizeof who, "app_early");
    else if (h == (const void *)app_crash) snprintf(who, sizeof who, "app_crash");
    else if (h == (const void *)app_usr1) snprintf(who, sizeof who, "app_usr1");
    else {
      Dl_info di;
      if (dladdr(h, &di) && di.dli_fname) snprintf(who, sizeof who, "handler in %s", base_name(di.dli_fname));
      else snprintf(who, sizeof who, "handler at an unknown address");
    }
    fprintf(g_out, "%s signal %d: %s flags%s%s%s%s%s\n", phase, sig, who, (sa.sa_flags & SA_SIGINFO) ? " siginfo" : "",
            (sa.sa_flags & SA_ONSTACK) ? " onstack" : "", (sa.sa_flags & SA_RESTART) ? " restart" : "",
            (sa.sa_flags & SA_NODEFER) ? " nodefer" : "", (sa.sa_flags & SA_RESETHAND) ? " resethand" : "");
  }
  sigset_t set;
  pthread_sigmask(SIG_BLOCK, NULL, &set);
  fprintf(g_out, "%s signal mask:", phase);
  for (int sig = 1; sig < SIGRTMAX; ++sig)
    if (sigismember(&set, sig)) fprintf(g_out, " %d", sig);
  fprintf(g_out, "\n");
  stack_t ss;
  if (sigaltstack(NULL, &ss) == 0)
    fprintf(g_out, "%s sigaltstack: %s, %zu bytes\n", phase, (ss.ss_flags & SS_DISABLE) ? "disabled" : "enabled",
            (ss.ss_flags & SS_DISABLE) ? (size_t)0 : ss.ss_size);
}

static void fp_modes(const char *phase) {
  const int round = fegetround();
  fprintf(g_out, "%s fp rounding %s, traps 0x%x\n", phase,
          round == FE_TONEAREST ? "nearest" : round == FE_UPWARD ? "upward" : round == FE_DOWNWARD ? "downward"
                                                                                              : "towardzero",
          (unsigned)fegetexcept());
#if defined(__x86_64__) || defined(__i386__)
  const unsigned csr = _mm_getcsr();
  fprintf(g_out, "%s fp mxcsr 0x%x (ftz %u, daz %u)\n", phase, csr & ~0x3fu /* not the sticky flags */,
          (csr >> 15) & 1u, (csr >> 6) & 1u);
  unsigned short cw = 0;
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  fprintf(g_out, "%s fp x87 control 0x%x\n", phase, cw);
#endif
}

static void process(const char *phase) {
  const mode_t m = umask(0);
  umask(m);
  fprintf(g_out, "%s umask %03o\n", phase, (unsigned)m);
  char cwd[PATH_MAX];
  fprintf(g_out, "%s cwd %s\n", phase, getcwd(cwd, sizeof cwd) ? cwd : "?");
  const char *loc = setlocale(LC_ALL, NULL);
  fprintf(g_out, "%s locale %s, decimal point '%s'\n", phase, loc ? loc : "?", localeconv()->decimal_point);
  fprintf(g_out, "%s stdout %s, own buffer %s; stderr %s\n", phase,
          (stdout->_flags & 0x2 /* _IO_UNBUFFERED */) ? "unbuffered"
          : (stdout->_flags & 0x200 /* _IO_LINE_BUF */) ? "line-buffered" : "fully buffered",
          stdout->_IO_buf_base == g_stdout_buf ? "yes" : "no",
          (stderr->_flags & 0x2) ? "unbuffered" : (stderr->_flags & 0x200) ? "line-buffered" : "fully buffered");
  const int resources[] = {RLIMIT_NOFILE, RLIMIT_MEMLOCK, RLIMIT_CORE, RLIMIT_STACK, RLIMIT_AS, RLIMIT_DATA};
  const char *names[] = {"nofile", "memlock", "core", "stack", "as", "data"};
  for (int i = 0; i < 6; ++i) {
    struct rlimit r;
    getrlimit(resources[i], &r);
    fprintf(g_out, "%s rlimit %s %llu %llu\n", phase, names[i], (unsigned long long)r.rlim_cur,
            (unsigned long long)r.rlim_max);
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  sched_getaffinity(0, sizeof cpus, &cpus);
  fprintf(g_out, "%s cpus allowed %d, scheduler %d, nice %d\n", phase, CPU_COUNT(&cpus), sched_getscheduler(0),
          getpriority(PRIO_PROCESS, 0));
  /* The thread's time slice (EEVDF, Linux 6.12+: sched_getattr's sched_runtime; gcoll
   * shortens it inside calls on shared cores, GCOLL_WAIT_SLICE, and must give it back). */
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
  } attr;
  memset(&attr, 0, sizeof attr);
  if (syscall(SYS_sched_getattr, 0, &attr, (unsigned)sizeof attr, 0u) != 0) attr.runtime = 0;
  fprintf(g_out, "%s slice %llu ns, sched flags %llu\n", phase, (unsigned long long)attr.runtime,
          (unsigned long long)attr.flags);
  int mode = -1;
  unsigned long nodemask[16] = {0};
  if (syscall(SYS_get_mempolicy, &mode, nodemask, 16 * 8 * sizeof(unsigned long), NULL, 0UL) != 0) mode = -1;
  fprintf(g_out, "%s mempolicy %d\n", phase, mode);
  char tname[32] = "";
  prctl(PR_GET_NAME, tname, 0, 0, 0);
  fprintf(g_out, "%s thread name %s, dumpable %d, timerslack %d\n", phase, tname, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0),
          prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
  env_diff(phase);
  signals(phase);
  fp_modes(phase);
}

/* What differs from run to run blanked: a number (pid, inode, job id, /dev/pts/9 or
 * /dev/pts/10: other processes open terminals between the two runs) becomes one '#', and
 * a run of 6 or more hex digits (a random id, MPICH's /dev/shm/mpich_shm_3f0a9c1e_0) one
 * '#'; " (deleted)" goes (whether the MPI has unlinked its file yet is timing). */
static void blank_digits(char *s) {
  char *deleted = strstr(s, " (deleted)");
  if (deleted) *deleted = '\0';
  char *w = s;
  for (const char *r = s; *r;) {
    size_t k = 0;
    while (r[k] && strchr("0123456789abcdef", r[k])) ++k;
    if (k >= 6) {
      *w++ = '#';
      r += k;
    } else if (*r >= '0' && *r <= '9') {
      while (*r >= '0' && *r <= '9') ++r;  /* (first: w may be r) */
      *w++ = '#';
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
}

/* One line per name, sorted ("<phase> <what> <name>", with xN where a name repeats and
 * `counted`); frees the names. */
static void print_names(const char *phase, const char *what, char **names, int n, int counted) {
  qsort(names, (size_t)n, sizeof(char *), cmp_str);
  for (int i = 0; i < n;) {
    int j = i + 1;
    while (counted && j < n && !strcmp(names[j], names[i])) ++j;
    if (counted) fprintf(g_out, "%s %s %s x%d\n", phase, what, names[i], j - i);
    else fprintf(g_out, "%s %s %s\n", phase, what, names[i]);
    i = j;
  }
  for (int i = 0; i < n; ++i) free(names[i]);
}

/* The process's threads, by name. */
static void threads(const char *phase) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return;
  char *names[1024];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 1024;) {
    if (e->d_name[0] == '.') continue;
    char p[300], name[64] = "?";
    snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(p, "r");
    if (f) {
      if (!fgets(name, sizeof name, f)) strcpy(name, "?");
      fclose(f);
    }
    name[strcspn(name, "\n")] = '\0';
    names[n++] = strdup(name);
  }
  closedir(d);
  print_names(phase, "thread", names, n, 0);
}

/* Open descriptors, by what they are (numbers in names blanked: pids, inodes). */
static void descriptors(const char *phase) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  char *lines[4096];
  int n = 0;
  const int self = dirfd(d);
  for (struct dirent *e; (e = readdir(d)) && n < 4096;) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == self) continue;
    char p[300], t[PATH_MAX] = "";
    snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
    const ssize_t k = readlink(p, t, sizeof t - 1);
    if (k < 0) continue;
    t[k] = '\0';
    if (strcmp(t, g_out_path) == 0) continue;  /* this file */
    blank_digits(t);
    lines[n++] = strdup(t);
  }
  closedir(d);
  print_names(phase, "fd", lines, n, 0);
}

/* Shared memory still mapped: /dev/shm files, memfd regions (the emulated GPU's device
 * memory and its IPC mappings), System V segments; one line per distinct name (numbers
 * blanked), with how many mappings carry it. */
static void shared_mappings(const char *phase) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return;
  char line[4096], *names[4096];
  int n = 0;
  while (fgets(line, sizeof line, f) && n < 4096) {
    char *path = strchr(line, '/');
    if (!path) continue;
    path[strcspn(path, "\n")] = '\0';
    if (strncmp(path, "/dev/shm/", 9) != 0 && strncmp(path, "/memfd:", 7) != 0 && strncmp(path, "/SYSV", 5) != 0)
      continue;
    blank_digits(path);
    names[n++] = strdup(path);
  }
  fclose(f);
  print_names(phase, "mapped", names, n, 1);
}

/* GPU driver libraries mapped (the CUDA driver libcuda, NVML and the driver's other
 * libnvidia-* helpers): a program that never uses CUDA must not have them (found on an
 * H200: gcoll loaded the driver to classify buffers). One line per name, digits blanked. */
static void gpu_libraries(const char *phase) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return;
  char line[4096], *names[256];
  int n = 0;
  while (fgets(line, sizeof line, f) && n < 256) {
    char *slash = strrchr(line, '/');
    if (!slash) continue;
    char *base = slash + 1;
    base[strcspn(base, "\n")] = '\0';
    if (strncmp(base, "libcuda.so", 10) != 0 && strncmp(base, "libnvidia-", 10) != 0) continue;
    blank_digits(base);
    int seen = 0;
    for (int i = 0; i < n && !seen; ++i) seen = !strcmp(names[i], base);
    if (!seen) names[n++] = strdup(base);
  }
  fclose(f);
  print_names(phase, "gpu library", names, n, 0);
}

/* ---- the application's collectives -------------------------------------------------- */

typedef int (*emu_malloc_t)(void **, size_t, int);
typedef int (*emu_memcpy_t)(void *, const void *, size_t);
typedef int (*emu_free_t)(void *);
static emu_malloc_t emu_malloc;
static emu_memcpy_t emu_memcpy;
static emu_free_t emu_free;

/* A buffer of n ints: on the emulated GPU where gcoll runs one, else host memory. */
static int *buf_new(int n) {
  void *p = NULL;
  if (emu_malloc) {
    if (emu_malloc(&p, sizeof(int) * (size_t)n, 0) != 0) p = NULL;
    return p;
  }
  return calloc((size_t)n, sizeof(int));
}
static void buf_put(int *dst, const int *src, int n) {
  if (emu_memcpy) emu_memcpy(dst, src, sizeof(int) * (size_t)n);
  else memcpy(dst, src, sizeof(int) * (size_t)n);
}
static void buf_get(int *dst, const int *src, int n) {
  if (emu_memcpy) emu_memcpy(dst, src, sizeof(int) * (size_t)n);
  else memcpy(dst, src, sizeof(int) * (size_t)n);
}
static void buf_free(int *p) {
  if (emu_free) emu_free(p);
  else free(p);
}

/* One collective by name, `n` ints per block, its result checked. */
static void collective(const char *name, int n) {
  const int P = g_size, me = g_rank, total = n * P;
  int *in = malloc(sizeof(int) * (size_t)total), *out = malloc(sizeof(int) * (size_t)total),
      *want = malloc(sizeof(int) * (size_t)total);
  int *sb = buf_new(total), *rb = buf_new(total);
  int *counts = malloc(sizeof(int) * (size_t)P), *displs = malloc(sizeof(int) * (size_t)P);
  for (int r = 0; r < P; ++r) counts[r] = n, displs[r] = r * n;
  for (int i = 0; i < total; ++i) in[i] = me * 1000 + i, out[i] = -1, want[i] = -1;
  buf_put(sb, in, total);
  buf_put(rb, out, total);
  int checked = total;  /* how many of out[] are compared with want[] */
  errno = 4242;
  int rc = MPI_SUCCESS;
  if (!strcmp(name, "allreduce")) {
    rc = MPI_Allreduce(sb, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) want[i] = 1000 * (P - 1) * P / 2 + P * i;
    checked = n;
  } else if (!strcmp(name, "bcast")) {
    rc = MPI_Bcast(sb, n, MPI_INT, P - 1, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) want[i] = (P - 1) * 1000 + i;
    buf_free(rb);
    rb = sb, sb = NULL;
    checked = n;
  } else if (!strcmp(name, "reduce")) {
    rc = MPI_Reduce(sb, rb, n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) want[i] = me == 0 ? 1000 * (P - 1) * P / 2 + P * i : -1;
    checked = n;
  } else if (!strcmp(name, "allgather")) {
    rc = MPI_Allgather(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < P; ++r)
      for (int i = 0; i < n; ++i) want[r * n + i] = r * 1000 + i;
  } else if (!strcmp(name, "allgatherv")) {
    rc = MPI_Allgatherv(sb, n, MPI_INT, rb, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < P; ++r)
      for (int i = 0; i < n; ++i) want[r * n + i] = r * 1000 + i;
  } else if (!strcmp(name, "alltoall")) {
    rc = MPI_Alltoall(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < P; ++r)
      for (int i = 0; i < n; ++i) want[r * n + i] = r * 1000 + me * n + i;
  } else if (!strcmp(name, "reduce_scatter_block")) {
    rc = MPI_Reduce_scatter_block(sb, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) want[i] = 1000 * (P - 1) * P / 2 + P * (me * n + i);
    checked = n;
  } else if (!strcmp(name, "reduce_scatter")) {
    rc = MPI_Reduce_scatter(sb, rb, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) want[i] = 1000 * (P - 1) * P / 2 + P * (me * n + i);
    checked = n;
  } else if (!strcmp(name, "gather")) {
    rc = MPI_Gather(sb, n, MPI_INT, rb, n, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0; r < P; ++r)
      for (int i = 0; i < n; ++i) want[r * n + i] = me == 0 ? r * 1000 + i : -1;
  } else if (!strcmp(name, "scatter")) {
    rc = MPI_Scatter(sb, n, MPI_INT, rb, n, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) want[i] = me * n + i;
    checked = n;
  } else {
    fprintf(g_out, "results unknown collective %s\n", name);
    ++g_bad_results;
  }
  if (errno != 4242) ++g_errno_changed;
  buf_get(out, rb, total);
  int bad = rc != MPI_SUCCESS;
  for (int i = 0; i < checked; ++i) bad += out[i] != want[i];
  if (bad) {
    ++g_bad_results;
    fprintf(g_out, "results %s n=%d: rc %d, %d wrong\n", name, n, rc, bad);
  }
  if (sb) buf_free(sb);
  buf_free(rb);
  free(in), free(out), free(want), free(counts), free(displs);
}

/* Waits up to 30 s for a child; its exit status, or -1 when it hung (then killed). */
static int reap(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    int st = 0;
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0) return -2;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

/* gcoll's emulated GPU, when this process runs on it (the library preloaded with
 * GCOLL_CUDA=emulate): the collectives then take its device buffers. */
static void find_emulated_gpu(void) {
  int (*emu_active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcoll_emu_active");
  if (emu_active && emu_active()) {
    emu_malloc = (emu_malloc_t)dlsym(RTLD_DEFAULT, "gcoll_emu_malloc");
    emu_memcpy = (emu_memcpy_t)dlsym(RTLD_DEFAULT, "gcoll_emu_memcpy");
    emu_free = (emu_free_t)dlsym(RTLD_DEFAULT, "gcoll_emu_free");
  }
}

/* A collective as the only call before MPI_Finalize: a rank that has done its part leaves
 * at once, while its peers may still be receiving what it sent. */
static int only(const char *name) {
  g_out = stderr;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  find_emulated_gpu();
  collective(name, 2);
  const int rc = MPI_Finalize();
  if (rc != MPI_SUCCESS) fprintf(stderr, "rank %d: MPI_Finalize returned %d\n", g_rank, rc);
  return g_bad_results || rc != MPI_SUCCESS ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <dir> | --only <collective>\n", argv[0]);
    return 2;
  }
  if (!strcmp(argv[1], "--only") && argc > 2) {
    MPI_Init(&argc, &argv);
    return only(argv[2]);
  }
  g_env0 = env_sorted(&g_env0_n);
  signal(SIGUSR2, app_early);  /* a handler from before MPI_Init */

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/fp.%d", argv[1], g_rank);
  g_out = fopen(path, "w");
  if (!g_out || !realpath(path, g_out_path)) {
    fprintf(stderr, "cannot write %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  find_emulated_gpu();

  /* The application's own process state, set after MPI_Init. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = app_crash;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  const int crash[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
  for (int i = 0; i < 4; ++i) sigaction(crash[i], &sa, NULL);
  signal(SIGUSR1, app_usr1);
  signal(SIGPIPE, SIG_IGN);
  static char altstack[1 << 16];
  stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
  sigaltstack(&ss, NULL);
  fesetround(FE_UPWARD);
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() | 0x8040); /* flush-to-zero and denormals-are-zero */
#endif
  umask(027);
  setlocale(LC_ALL, "C.UTF-8");
  setvbuf(stdout, g_stdout_buf, _IOFBF, sizeof g_stdout_buf);
  process("init");
  gpu_libraries("init");

  /* strtok's position across collective calls. */
  char line[] = "allreduce bcast reduce allgather alltoall reduce_scatter_block reduce_scatter allgatherv gather scatter";
  int tokens = 0;
  for (char *t = strtok(line, " "); t; t = strtok(NULL, " ")) {
    collective(t, 2);
    collective(t, 300);
    ++tokens;
  }
  fprintf(g_out, "run strtok tokens %d\n", tokens);
  fprintf(g_out, "run errno changed by %d collectives\n", g_errno_changed);
  fprintf(g_out, "run results %s\n", g_bad_results ? "WRONG" : "ok");
  process("run");
  gpu_libraries("run");

  /* fork and system() with the library set up: the child runs its exit path (atexit
   * handlers, library destructors); system() forks and execs a shell. */
  fflush(g_out);
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) exit(3);
  fprintf(g_out, "run fork child exit %d\n", child < 0 ? -3 : reap(child));
  const int sys = system("exit 5");
  fprintf(g_out, "run system exit %d\n", sys == -1 ? -1 : WIFEXITED(sys) ? WEXITSTATUS(sys) : 128 + WTERMSIG(sys));

  int all_ok = !g_bad_results && tokens == 10, every = 0;
  MPI_Allreduce(&all_ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Finalize();

  process("final");
  threads("final");
  descriptors("final");
  shared_mappings("final");
  gpu_libraries("final");
  fclose(g_out);
  if (g_rank == 0) printf("invisible: %d ranks, %s\n", g_size, every ? "ok" : "WRONG");
  return every ? 0 : 1;
}
