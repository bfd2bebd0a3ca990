/* Many outstanding nonblocking and persistent collectives on several communicators from
 * several threads (MPI_THREAD_MULTIPLE), on host buffers, or on the emulated GPU's device
 * buffers when GCOLL_CUDA=emulate is set.
 *
 * T threads per rank, each on its own MPI_Comm_dup of MPI_COMM_WORLD (made by the main
 * thread, in the same order on every rank). Each thread runs R rounds; a round starts at
 * once an MPI_Iallreduce (MPI_INT sum), an MPI_Ibcast (root varies), an MPI_Iallgather, a
 * persistent Allreduce (MPI_Allreduce_init under MPI-4, MPIX_Allreduce_init under Open MPI
 * 4.1; created once per thread, started every round on new input) and an
 * MPI_Isend/MPI_Irecv pair with the neighbour ranks (host buffers: gcoll does not stage
 * point-to-point), with sizes and roots chosen by round identically on every rank. It
 * completes them with one of Waitall, a Testall loop, a Waitany loop, a Waitsome loop, a
 * Testany loop, or MPI_Wait on each in reverse order (by round), then copies every result
 * back to the host and checks it against the values computed locally: every rank's input
 * is a known function of (rank, thread, round, op, index).
 *
 * Prints "threads_test: PASS" or "threads_test: FAIL (<n> mismatches)" on rank 0 and exits
 * 0 or 1; exits 77 ("SKIPPED: ...") where the MPI does not provide MPI_THREAD_MULTIPLE.
 * alarm(120) turns a hang into a failure (SIGALRM kills the rank).
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcoll/gcoll.h"
#include <unistd.h>

#include "gcoll/gcoll_emulate.h"

#if MPI_VERSION >= 4
#define TT_HAVE_PERSISTENT 1
#define TT_ALLREDUCE_INIT MPI_Allreduce_init
#elif defined(OPEN_MPI) && defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define TT_HAVE_PERSISTENT 1
#define TT_ALLREDUCE_INIT MPIX_Allreduce_init
#else
#define TT_HAVE_PERSISTENT 0
#endif

/* MPICH before 4.1 mishandles an inactive persistent collective request in the completion
 * calls (fixed by pmodels/mpich PR 6334, MPICH 4.1): MPI_Testall returns MPI_ERR_IN_STATUS
 * (with flag 1 and every status MPI_SUCCESS), and MPI_Waitany, MPI_Testany and
 * MPI_Waitsome return its index (outcount 1) instead of MPI_UNDEFINED, so a loop that waits
 * for MPI_UNDEFINED never ends. Seen with Debian's MPICH 4.0.2 without gcoll; Open MPI
 * 4.1.4 answers as the standard says. Under such an MPICH the test keeps inactive
 * persistent requests out of completion calls (see the completion switch). */
/* The standard-ABI build runs on MPICH 5.0.2's wheel (libmpi_abi): its MPI_Testall on an
 * array holding an active persistent collective request returns MPI_ERR_REQUEST
 * ("Invalid MPI_Request") while another request is pending, without gcoll too
 * (GCOLL_ENABLE=0: the call is PMPI_Testall itself); the same workaround applies there. */
#if (defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000) || defined(MPI_ABI_VERSION)
#define TT_MPICH_INACTIVE_BUG 1
#else
#define TT_MPICH_INACTIVE_BUG 0
#endif

enum { T = 4, R = 30, NSIZES = 8, MAX_PRINT = 8 };
enum { OP_AR = 0, OP_BC = 1, OP_AG = 2, OP_PAR = 3, OP_P2P = 4 };
static const char *const op_name[] = {"Iallreduce", "Ibcast", "Iallgather", "persistent Allreduce", "Isend/Irecv"};
static const char *const mode_name[] = {"Waitall", "Testall loop", "Waitany loop",
                                        "Waitsome loop", "Testany loop", "Wait reverse"};
static const int sizes[NSIZES] = {1, 4096, 7, 1000, 64, 2048, 333, 17};
enum { MAX_N = 4096, AG_MAX = 4096 / 4 + 1, P2P_N = 257 };

static int g_rank, g_size, g_device, g_warm;
static MPI_Comm g_comms[T];

/* Every input element: small enough that a sum over any number of ranks this test runs
 * on stays far from overflow. */
static int val(int rank, int thread, int round, int op, int idx) {
  unsigned h = (unsigned)(rank + 1) * 2654435761u ^ (unsigned)(thread + 1) * 40503u ^
               (unsigned)(round + 1) * 2246822519u ^ (unsigned)(op + 1) * 3266489917u;
  h ^= (unsigned)idx * 668265263u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return (int)(h % 200001u) - 100000;
}

static int ar_count(int t, int r) { return sizes[(r + t) % NSIZES]; }
static int bc_count(int t, int r) { return sizes[(3 * r + t + 1) % NSIZES]; }
static int bc_root(int t, int r) { return (r + 2 * t) % g_size; }
static int ag_count(int t, int r) { return sizes[(5 * r + t + 2) % NSIZES] / 4 + 1; }
static int par_count(int t) { return 512 + 37 * t; }

static void die(const char *what, int rc) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  s[0] = 0;
  MPI_Error_string(rc, s, &len);
  fprintf(stderr, "threads_test: rank %d: %s failed: %d (%s)\n", g_rank, what, rc, s);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
}
#define CK(call)                          \
  do {                                    \
    const int rc_ = (call);               \
    if (rc_ != MPI_SUCCESS) die(#call, rc_); \
  } while (0)

/* Buffers: on the emulated GPU's device memory (the CPU cannot touch it), else host. */
static void *buf_alloc(size_t bytes) {
  void *p = NULL;
  if (g_device) {
    const int e = gcoll_emu_malloc(&p, bytes, GCOLL_EMU_MEM_DEVICE);
    if (e != GCOLL_EMU_OK) {
      fprintf(stderr, "threads_test: rank %d: gcoll_emu_malloc(%zu): %s\n", g_rank, bytes,
              gcoll_emu_error_string(e));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  } else {
    p = malloc(bytes ? bytes : 1);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}
static void buf_free(void *p) {
  if (g_device)
    gcoll_emu_free(p);
  else
    free(p);
}
static void copy(void *dst, const void *src, size_t bytes) {
  if (g_device) {
    const int e = gcoll_emu_memcpy(dst, src, bytes);
    if (e != GCOLL_EMU_OK) {
      fprintf(stderr, "threads_test: rank %d: gcoll_emu_memcpy: %s\n", g_rank, gcoll_emu_error_string(e));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  } else {
    memcpy(dst, src, bytes);
  }
}

/* A completion call failed: which thread, round, call, and each request's own error. */
static void completion_failed(int t, int r, const char *call, int rc, int n, const MPI_Request *reqs, const int *ops,
                              const MPI_Status *st) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  s[0] = 0;
  MPI_Error_string(rc, s, &len);
  fprintf(stderr, "threads_test: rank %d thread %d round %d: %s failed: %d (%s)\n", g_rank, t, r, call, rc, s);
  for (int i = 0; st && i < n; ++i) {
    s[0] = 0;
    len = 0;
    MPI_Error_string(st[i].MPI_ERROR, s, &len);
    fprintf(stderr, "threads_test:   request %d (%s)%s: status.MPI_ERROR %d (%s)\n", i, op_name[ops[i]],
            reqs[i] == MPI_REQUEST_NULL ? " [now MPI_REQUEST_NULL]" : "", st[i].MPI_ERROR, s);
  }
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
}
#define CKC(call, n, st)                                                       \
  do {                                                                         \
    const int rc_ = (call);                                                    \
    if (rc_ != MPI_SUCCESS) completion_failed(t, r, #call, rc_, n, reqs, ops, st); \
  } while (0)

struct thread_arg {
  int t;
  long failures;
};

static void report(int t, int r, int mode, int op, int idx, int want, int got, long *fails) {
  if (*fails < MAX_PRINT)
    fprintf(stderr,
            "threads_test: rank %d thread %d round %d (%s) %s: element %d expected %d got %d\n",
            g_rank, t, r, mode_name[mode], op_name[op], idx, want, got);
  ++*fails;
}

static void *thread_main(void *argp) {
  struct thread_arg *a = (struct thread_arg *)argp;
  const int t = a->t;
  MPI_Comm comm = g_comms[t];
  const int size = g_size, rank = g_rank;
  long fails = 0;

  /* Host images (inputs built here, results copied back here) and the buffers the MPI
   * calls get (device memory under the emulation, else the host images themselves are
   * separate host allocations). */
  int *h_in = malloc(sizeof(int) * MAX_N), *h_out = malloc(sizeof(int) * (size_t)AG_MAX * size + sizeof(int) * MAX_N);
  int *ar_s = buf_alloc(sizeof(int) * MAX_N), *ar_r = buf_alloc(sizeof(int) * MAX_N);
  int *bc_b = buf_alloc(sizeof(int) * MAX_N);
  int *ag_s = buf_alloc(sizeof(int) * AG_MAX), *ag_r = buf_alloc(sizeof(int) * (size_t)AG_MAX * size);
  const int pn = par_count(t);
  int *par_s = buf_alloc(sizeof(int) * pn), *par_r = buf_alloc(sizeof(int) * pn);
  int *p2p_s = malloc(sizeof(int) * P2P_N), *p2p_r = malloc(sizeof(int) * P2P_N);
  if (!h_in || !h_out || !p2p_s || !p2p_r) MPI_Abort(MPI_COMM_WORLD, 2);

  MPI_Request preq = MPI_REQUEST_NULL;
#if TT_HAVE_PERSISTENT
  CK(TT_ALLREDUCE_INIT(par_s, par_r, pn, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &preq));
#endif

  for (int r = 0; r < R; ++r) {
    const int mode = r % 6;
    /* GCOLLTEST_NB_WARM=1: a barrier between rounds, at which gcoll sets up what its engine
     * needs to take the next rounds' nonblocking calls (docs/architecture.md). */
    if (g_warm && r > 0) CK(MPI_Barrier(comm));
    const int na = ar_count(t, r), nb = bc_count(t, r), root = bc_root(t, r), ng = ag_count(t, r);
    MPI_Request reqs[6];
    int ops[6];
    int nreq = 0, pidx = -1;

    /* Inputs, and a sentinel in every result buffer (a result never written shows). */
    for (int i = 0; i < na; ++i) h_in[i] = val(rank, t, r, OP_AR, i);
    copy(ar_s, h_in, sizeof(int) * na);
    for (int i = 0; i < na; ++i) h_out[i] = -999999;
    copy(ar_r, h_out, sizeof(int) * na);
    for (int i = 0; i < nb; ++i) h_in[i] = rank == root ? val(rank, t, r, OP_BC, i) : -999999;
    copy(bc_b, h_in, sizeof(int) * nb);
    for (int i = 0; i < ng; ++i) h_in[i] = val(rank, t, r, OP_AG, i);
    copy(ag_s, h_in, sizeof(int) * ng);
    for (int i = 0; i < ng * size; ++i) h_out[i] = -999999;
    copy(ag_r, h_out, sizeof(int) * (size_t)ng * size);
    if (TT_HAVE_PERSISTENT) {
      for (int i = 0; i < pn; ++i) h_in[i] = val(rank, t, r, OP_PAR, i);
      copy(par_s, h_in, sizeof(int) * pn);
      for (int i = 0; i < pn; ++i) h_out[i] = -999999;
      copy(par_r, h_out, sizeof(int) * pn);
    }
    for (int i = 0; i < P2P_N; ++i) {
      p2p_s[i] = val(rank, t, r, OP_P2P, i);
      p2p_r[i] = -999999;
    }

    /* Start them all, in the same order on every rank. */
    CK(MPI_Iallreduce(ar_s, ar_r, na, MPI_INT, MPI_SUM, comm, &reqs[nreq]));
    ops[nreq++] = OP_AR;
    CK(MPI_Ibcast(bc_b, nb, MPI_INT, root, comm, &reqs[nreq]));
    ops[nreq++] = OP_BC;
    CK(MPI_Iallgather(ag_s, ng, MPI_INT, ag_r, ng, MPI_INT, comm, &reqs[nreq]));
    ops[nreq++] = OP_AG;
#if TT_HAVE_PERSISTENT
    CK(MPI_Start(&preq));
    pidx = nreq;
    reqs[nreq] = preq;
    ops[nreq++] = OP_PAR;
#endif
    const int peer_to = (rank + 1) % size, peer_from = (rank + size - 1) % size;
    CK(MPI_Irecv(p2p_r, P2P_N, MPI_INT, peer_from, r, comm, &reqs[nreq]));
    ops[nreq++] = OP_P2P;
    CK(MPI_Isend(p2p_s, P2P_N, MPI_INT, peer_to, r, comm, &reqs[nreq]));
    ops[nreq++] = OP_P2P;

    /* Complete them. With MPICH before 4.1 (TT_MPICH_INACTIVE_BUG), an inactive persistent
     * request never goes into a completion call: the any/some loops drop its handle from
     * the array once it completed, and the Testall loop tests it on its own beside the
     * others (MPICH 4.0's Testall makes it inactive while it returns flag 0). */
    int completed = 0;
    MPI_Status st[6];
    for (int i = 0; i < 6; ++i) st[i].MPI_ERROR = -1; /* "not set" */
    switch (mode) {
      case 0:
        CKC(MPI_Waitall(nreq, reqs, st), nreq, st);
        completed = nreq;
        break;
      case 1: {
        int flag = 0, pdone = 1;
        MPI_Request held = MPI_REQUEST_NULL;
        if (TT_MPICH_INACTIVE_BUG && pidx >= 0) {
          held = reqs[pidx];
          reqs[pidx] = MPI_REQUEST_NULL;
          pdone = 0;
        }
        while (!flag || !pdone) {
          if (!pdone) CKC(MPI_Test(&held, &pdone, &st[0]), 0, NULL);
          if (!flag) CKC(MPI_Testall(nreq, reqs, &flag, st), nreq, st);
          if (!flag || !pdone) sched_yield();
        }
        if (TT_MPICH_INACTIVE_BUG && pidx >= 0) reqs[pidx] = held;
        completed = nreq;
        break;
      }
      case 2:
        for (;;) {
          int idx = MPI_UNDEFINED;
          CKC(MPI_Waitany(nreq, reqs, &idx, &st[0]), 0, NULL);
          if (idx == MPI_UNDEFINED || ++completed > nreq) break;
          if (TT_MPICH_INACTIVE_BUG && idx == pidx) reqs[idx] = MPI_REQUEST_NULL;
        }
        break;
      case 3:
        for (;;) {
          int out = 0, idx[6];
          CKC(MPI_Waitsome(nreq, reqs, &out, idx, st), 0, NULL);
          if (out == MPI_UNDEFINED || (completed += out) > nreq) break;
          for (int k = 0; k < out; ++k)
            if (TT_MPICH_INACTIVE_BUG && idx[k] == pidx) reqs[idx[k]] = MPI_REQUEST_NULL;
        }
        break;
      case 4:
        for (;;) {
          int idx = MPI_UNDEFINED, flag = 0;
          CKC(MPI_Testany(nreq, reqs, &idx, &flag, &st[0]), 0, NULL);
          if (flag && idx == MPI_UNDEFINED) break;
          if (!flag) {
            sched_yield();
            continue;
          }
          if (++completed > nreq) break;
          if (TT_MPICH_INACTIVE_BUG && idx == pidx) reqs[idx] = MPI_REQUEST_NULL;
        }
        break;
      default:
        for (int i = nreq - 1; i >= 0; --i) CKC(MPI_Wait(&reqs[i], &st[0]), 0, NULL);
        completed = nreq;
        break;
    }
    if (completed != nreq) {
      fprintf(stderr,
              "threads_test: rank %d thread %d round %d (%s): %d of %d requests completed (more: a completion call "
              "returned an inactive or null request)\n",
              rank, t, r, mode_name[mode], completed, nreq);
      ++fails;
    }
    if (pidx >= 0 && reqs[pidx] != preq && !(TT_MPICH_INACTIVE_BUG && reqs[pidx] == MPI_REQUEST_NULL)) {
      fprintf(stderr, "threads_test: rank %d thread %d round %d (%s): the persistent request's handle changed\n", rank,
              t, r, mode_name[mode]);
      ++fails;
    }
    for (int i = 0; i < nreq; ++i)
      if (ops[i] != OP_PAR && reqs[i] != MPI_REQUEST_NULL) {
        fprintf(stderr, "threads_test: rank %d thread %d round %d (%s): request %d (%s) not MPI_REQUEST_NULL\n",
                rank, t, r, mode_name[mode], i, op_name[ops[i]]);
        ++fails;
      }

    /* Check every result against the formula. */
    copy(h_out, ar_r, sizeof(int) * na);
    for (int i = 0; i < na; ++i) {
      int want = 0;
      for (int q = 0; q < size; ++q) want += val(q, t, r, OP_AR, i);
      if (h_out[i] != want) report(t, r, mode, OP_AR, i, want, h_out[i], &fails);
    }
    copy(h_out, bc_b, sizeof(int) * nb);
    for (int i = 0; i < nb; ++i) {
      const int want = val(root, t, r, OP_BC, i);
      if (h_out[i] != want) report(t, r, mode, OP_BC, i, want, h_out[i], &fails);
    }
    copy(h_out, ag_r, sizeof(int) * (size_t)ng * size);
    for (int q = 0; q < size; ++q)
      for (int i = 0; i < ng; ++i) {
        const int want = val(q, t, r, OP_AG, i);
        if (h_out[q * ng + i] != want) report(t, r, mode, OP_AG, q * ng + i, want, h_out[q * ng + i], &fails);
      }
    if (TT_HAVE_PERSISTENT) {
      copy(h_out, par_r, sizeof(int) * pn);
      for (int i = 0; i < pn; ++i) {
        int want = 0;
        for (int q = 0; q < size; ++q) want += val(q, t, r, OP_PAR, i);
        if (h_out[i] != want) report(t, r, mode, OP_PAR, i, want, h_out[i], &fails);
      }
    }
    for (int i = 0; i < P2P_N; ++i) {
      const int want = val(peer_from, t, r, OP_P2P, i);
      if (p2p_r[i] != want) report(t, r, mode, OP_P2P, i, want, p2p_r[i], &fails);
    }
  }

#if TT_HAVE_PERSISTENT
  CK(MPI_Request_free(&preq));
  if (preq != MPI_REQUEST_NULL) {
    fprintf(stderr, "threads_test: rank %d thread %d: MPI_Request_free left the request set\n", rank, t);
    ++fails;
  }
#endif
  buf_free(ar_s);
  buf_free(ar_r);
  buf_free(bc_b);
  buf_free(ag_s);
  buf_free(ag_r);
  buf_free(par_s);
  buf_free(par_r);
  free(h_in);
  free(h_out);
  free(p2p_s);
  free(p2p_r);
  a->failures = fails;
  return NULL;
}

int main(int argc, char **argv) {
  alarm(120);  /* watchdog: SIGALRM's default action ends a rank that hangs */
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (g_rank == 0) printf("SKIPPED: no MPI_THREAD_MULTIPLE\n");
    fflush(stdout);
    MPI_Finalize();
    return 77;
  }
  const char *warm = getenv("GCOLLTEST_NB_WARM");
  g_warm = warm && strcmp(warm, "1") == 0;
  const char *cuda = getenv("GCOLL_CUDA");
  g_device = cuda && strcmp(cuda, "emulate") == 0;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  for (int t = 0; t < T; ++t) {
    CK(MPI_Comm_dup(MPI_COMM_WORLD, &g_comms[t]));
    MPI_Comm_set_errhandler(g_comms[t], MPI_ERRORS_RETURN);
  }
  if (g_rank == 0)
    printf("threads_test: %d ranks, %d threads, %d rounds, %s buffers, persistent %s\n", g_size, T, R,
           g_device ? "device (emulated)" : "host", TT_HAVE_PERSISTENT ? "yes" : "no (skipped)");

  pthread_t th[T];
  struct thread_arg args[T];
  for (int t = 0; t < T; ++t) {
    args[t].t = t;
    args[t].failures = 0;
    if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0) {
      fprintf(stderr, "threads_test: pthread_create failed\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  long local = 0;
  for (int t = 0; t < T; ++t) {
    pthread_join(th[t], NULL);
    local += args[t].failures;
  }
  for (int t = 0; t < T; ++t) MPI_Comm_free(&g_comms[t]);
  /* GCOLLTEST_NB_EXPECT_ENGINE=1: gcoll's engine must have taken nonblocking calls here
   * (a progress thread started); counted as a mismatch where it did not. */
  const char *expect = getenv("GCOLLTEST_NB_EXPECT_ENGINE");
  if (expect && strcmp(expect, "1") == 0 && gcoll_library_counter("progress_threads") <= 0) {
    fprintf(stderr, "threads_test: rank %d: no progress thread started: the engine took no nonblocking call\n",
            g_rank);
    ++local;
  }

  long total = 0;
  CK(MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
  if (g_rank == 0) {
    if (total == 0)
      printf("threads_test: PASS\n");
    else
      printf("threads_test: FAIL (%ld mismatches)\n", total);
  }
  fflush(stdout);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
