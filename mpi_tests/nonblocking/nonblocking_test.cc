// Nonblocking (MPI_I<name>) and persistent (MPI_<name>_init, MPIX_<name>_init under Open MPI
// 4.1) collectives through libgcoll.so, on host buffers and on device buffers (gpu_api.h:
// a real GPU, or gcoll's emulated one under GCOLL_CUDA=emulate), and their completion
// through every MPI completion call. Every result is compared with the PMPI_* BLOCKING
// reference (PMPI_Allreduce, ...) run on host copies of the same inputs:
//   - the whole receive buffer byte for byte: what the MPI writes against the reference
//     (reductions of MPI_DOUBLE within the tolerance of types.h, integers exactly), every
//     other byte (gaps between v-form blocks, a non-root's unused buffer, exscan's rank 0,
//     64 guard bytes before and after) as it was before the call;
//   - the send buffer and its guard bytes unchanged.
//
// Tests (each one collective over MPI_COMM_WORLD: every rank makes the same calls; verdicts
// agreed with EXPECT_ALL_RANKS):
//   Nonblocking.Host|Device/<Coll>  A: MPI_I<coll> + MPI_Wait, 15 cases each: counts 0, 1,
//                                   7, 1000; MPI_INT (MPI_SUM; MPI_MAX in place) and
//                                   MPI_DOUBLE (MPI_SUM); in place where MPI allows it; roots
//                                   0 and last; MPI_COMM_WORLD and an odd/even split
//                                   Alltoallw: blocks of MPI_INT and MPI_DOUBLE mixed, at
//                                   byte displacements with gaps, uneven (some empty), in
//                                   place too. Neighbor_allgather(v), _alltoall(v,w): 9
//                                   cases, counts 0, 1, 7, 1000, on a periodic 2-D Cartesian
//                                   communicator (MPI_Dims_create) and on a distributed graph
//                                   with different in- and out-degrees and a rank of
//                                   in-degree 0 (make_topo); v-forms uneven with gaps, the
//                                   w-form with MPI_Aint byte displacements and per-edge types
//   Blocking.Host|Device/<Coll>     the blocking forms gcoll takes over with them
//                                   (MPI_Barrier, MPI_Alltoallv, MPI_Scan, MPI_Exscan,
//                                   MPI_Alltoallw, the five MPI_Neighbor_*)
//   Persistent.Host|Device/<Coll>   B: init once, 3 x (inputs rewritten, MPI_Start,
//                                   MPI_Wait: the result follows the new input), then
//                                   MPI_Request_free; the inputs are rewritten between the
//                                   init and the first start too
//   ReduceLocal.Blocking/<Where>    MPI_Reduce_local (no communicator): inbuf and inoutbuf
//                                   on the host, the device, or one of each; MPI_INT and
//                                   MPI_DOUBLE, MPI_SUM and MPI_MAX, counts 0, 1, 1000
//   PersistentStartall.*            B: MPI_Startall + MPI_Waitall on two persistent
//                                   requests on two communicators, twice
//   CompletionTest.*/<Call>         C: MPI_Wait, MPI_Test, MPI_Waitall, MPI_Testall,
//                                   MPI_Waitany, MPI_Testany, MPI_Waitsome, MPI_Testsome,
//                                   MPI_Request_get_status, each with MPI_STATUS(ES)_IGNORE
//                                   and with real statuses, on one array mixing nonblocking
//                                   collectives (host and device buffers), a started
//                                   persistent one, MPI_Isend / MPI_Irecv and
//                                   MPI_REQUEST_NULL; device results checked as soon as
//                                   the call reports the request complete
//   SharedHandle.*                  C: equal handles in one array (Open MPI's shared
//                                   handle for collectives on a 1-rank communicator and
//                                   for small MPI_Isend): MPI_COMM_SELF collectives and a
//                                   self message, one MPI_Waitall / MPI_Waitsome
//   NoDeadlock.*                    D: rank 1 receives a message that rank 0 sends only
//                                   after starting its MPI_Iallreduce (device buffers);
//                                   8 MPI_Iallreduce + 8 MPI_Ibcast on two communicators
//                                   completed by one MPI_Waitall in reverse order; rank 0
//                                   in an MPI_Recv that its peers satisfy only after their
//                                   MPI_Wait on the collective, after 50 ms idle
//   Engine.*                        (GCOLLTEST_NB_EXPECT_ENGINE=1) the engine took the
//                                   calls: nonblocking and persistent, a persistent call on
//                                   a new communicator from its first start, arrays reused
//                                   before completion
//   Errors.*                        E: MPI_Request_free / MPI_Cancel of an active
//                                   MPI_Iallreduce on device buffers: MPI_ERR_REQUEST (then
//                                   MPI_Wait completes it); a negative count: MPI_ERR_COUNT,
//                                   buffers untouched
//
// The MPIs' own bugs these tests found, worked around here (each one also seen with
// GCOLL_ENABLE=0 and in a plain MPI program, without gcoll): Open MPI 4.1.4's MPI_Ialltoallv
// with MPI_IN_PLACE (ialltoallv_in_place_broken); MPICH 4.0.2's persistent allgather,
// gather and scatter (persistent_starts, mpich_persistent_broken) and its MPI_Testall /
// Waitany / Testany / Waitsome / Testsome on persistent collective requests
// (persistent_entry); Open MPI 4.1.4's MPI_Ineighbor_alltoall(v,w) on a Cartesian dimension
// of size 1 or 2 (ineighbor_cart_repeated_broken); MPICH 4.0.2's MPI_Ialltoallw with
// MPI_IN_PLACE (ialltoallw_in_place_broken) and its MPI_(I)Neighbor_alltoallw to a rank of
// out-degree 0 (mpich_nbr_alltoallw_broken). MPICH 4.0.2 also takes MPI_Iallreduce with
// count -1 (Errors.* then pass only with gcoll on, as the portable tests run).
//
// Device tests are skipped (GTEST_SKIP, on every rank alike) when some rank has no GPU and
// no emulated one. Unlike gpu/gpu_util.cc (which exits 77 before main without a GPU), this
// program runs its host tests everywhere, so it does its device work through gpu_api.h
// directly.
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "gcoll/gcoll.h"
#include "gpu_api.h"
#include "harness.h"
#include "types.h"

// The persistent collectives: MPI-4's MPI_<Name>_init, or Open MPI 4.1's MPIX_<Name>_init
// (mpi-ext.h, same arguments).
#if MPI_VERSION >= 4
#define NB_HAVE_PERSISTENT 1
#define NB_PINIT(Name) MPI_##Name##_init
#elif defined(OPEN_MPI) && defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define NB_HAVE_PERSISTENT 1
#define NB_PINIT(Name) MPIX_##Name##_init
#else
#define NB_HAVE_PERSISTENT 0
#endif

namespace gct {
namespace {

constexpr size_t G = 64;  // guard bytes before and after every buffer

// ---- the device -----------------------------------------------------------------------
// As gpu/gpu_util.cc, but without exiting: before MPI_Init, the rank takes device
// local_rank % count where there is one (a real GPU, or the emulated one).
bool g_have_device = false;
std::string g_device_why;

int env_int(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return -1;
  char *end = nullptr;
  long x = strtol(v, &end, 10);
  return (end && *end == '\0' && x >= 0 && x < (1L << 30)) ? static_cast<int>(x) : -1;
}

struct EarlyDevice {
  EarlyDevice() {
    int n = 0;
    int e = gpu_device_count(&n);
    if (e != 0 || n < 1) {
      g_device_why = std::string(gpu_mode_name()) + ": " + (e ? gpu_error_string(e) : "no device");
      return;
    }
    int local = 0;
    for (const char *v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                          "SLURM_LOCALID", "PMI_LOCAL_RANK"}) {
      int lr = env_int(v);
      if (lr >= 0) {
        local = lr;
        break;
      }
    }
    e = gpu_set_device(local % n);
    if (e != 0) {
      g_device_why = std::string("device ") + std::to_string(local % n) + ": " + gpu_error_string(e);
      return;
    }
    g_have_device = true;
    g_device_why = gpu_mode_name();
  }
} g_early_device;

// Whether every rank has a device. Collective (the first call, in the same test on every
// rank); then cached.
bool device_everywhere() {
  static int agreed = -1;
  if (agreed < 0) {
    agreed = all_ranks(g_have_device) ? 1 : 0;
    if (world_rank() == 0) {
      printf("nonblocking tests: device buffers %s (rank 0: %s)\n", agreed ? "on" : "skipped",
             g_device_why.c_str());
      fflush(stdout);
    }
  }
  return agreed == 1;
}

#define SKIP_WITHOUT_DEVICE()                                                           \
  do {                                                                                  \
    if (!device_everywhere()) GTEST_SKIP() << "no GPU and no emulated GPU on some rank"; \
  } while (0)

void gpu_check(int err, const char *what, int line) {
  if (err == 0) return;
  fprintf(stderr, "[rank %d] nonblocking_test.cc:%d: %s failed: %s (%d); aborting\n", world_rank(), line, what,
          gpu_error_string(err), err);
  fflush(stderr);
  PMPI_Abort(MPI_COMM_WORLD, 1);
}
#define NB_GPU(call) gpu_check((call), #call, __LINE__)

// One allocation, host (malloc) or device (gpu_malloc): never touched by the CPU when on
// the device (the emulated GPU faults on that), only copied in and out.
class Mem {
 public:
  Mem(bool device, size_t bytes) : dev_(device), n_(bytes) {
    if (dev_) {
      void *p = nullptr;
      NB_GPU(gpu_malloc(&p, n_, GPU_MEM_DEVICE));
      p_ = static_cast<unsigned char *>(p);
    } else {
      p_ = static_cast<unsigned char *>(malloc(n_ ? n_ : 1));
    }
  }
  ~Mem() {
    if (!p_ || leaked_) return;
    if (dev_)
      NB_GPU(gpu_free(p_, GPU_MEM_DEVICE));
    else
      free(p_);
  }
  Mem(const Mem &) = delete;
  Mem &operator=(const Mem &) = delete;
  unsigned char *at(size_t off) const { return p_ + off; }
  void put(const std::vector<unsigned char> &img) {
    if (dev_)
      NB_GPU(gpu_memcpy(p_, img.data(), img.size()));
    else
      memcpy(p_, img.data(), img.size());
  }
  std::vector<unsigned char> get() const {
    std::vector<unsigned char> v(n_);
    if (dev_)
      NB_GPU(gpu_memcpy(v.data(), p_, n_));
    else
      memcpy(v.data(), p_, n_);
    return v;
  }
  // A collective that may still write here was abandoned: never free the memory.
  void leak() { leaked_ = true; }
  bool device() const { return dev_; }

 private:
  bool dev_;
  size_t n_;
  unsigned char *p_ = nullptr;
  bool leaked_ = false;
};

// ---- the collectives ------------------------------------------------------------------
enum class K {
  Allreduce, Bcast, Allgather, ReduceScatterBlock, Reduce, Gather, Scatter, Alltoall, ReduceScatter,
  Allgatherv, Gatherv, Scatterv, Barrier, Alltoallv, Scan, Exscan,
  // the seven added later: Alltoallw, the neighbourhood ones (on a topology communicator)
  // and MPI_Reduce_local (blocking only, no communicator: not in all_kinds())
  Alltoallw, NeighborAllgather, NeighborAllgatherv, NeighborAlltoall, NeighborAlltoallv, NeighborAlltoallw,
  ReduceLocal
};
const std::vector<K> &all_kinds() {
  static const std::vector<K> v = {K::Allreduce, K::Bcast,     K::Allgather,  K::ReduceScatterBlock,
                                   K::Reduce,    K::Gather,    K::Scatter,    K::Alltoall,
                                   K::ReduceScatter, K::Allgatherv, K::Gatherv, K::Scatterv,
                                   K::Barrier,   K::Alltoallv, K::Scan,       K::Exscan,
                                   K::Alltoallw, K::NeighborAllgather, K::NeighborAllgatherv,
                                   K::NeighborAlltoall, K::NeighborAlltoallv, K::NeighborAlltoallw};
  return v;
}
const char *kname(K k) {
  switch (k) {
    case K::Allreduce: return "Allreduce";
    case K::Bcast: return "Bcast";
    case K::Allgather: return "Allgather";
    case K::ReduceScatterBlock: return "Reduce_scatter_block";
    case K::Reduce: return "Reduce";
    case K::Gather: return "Gather";
    case K::Scatter: return "Scatter";
    case K::Alltoall: return "Alltoall";
    case K::ReduceScatter: return "Reduce_scatter";
    case K::Allgatherv: return "Allgatherv";
    case K::Gatherv: return "Gatherv";
    case K::Scatterv: return "Scatterv";
    case K::Barrier: return "Barrier";
    case K::Alltoallv: return "Alltoallv";
    case K::Scan: return "Scan";
    case K::Exscan: return "Exscan";
    case K::Alltoallw: return "Alltoallw";
    case K::NeighborAllgather: return "Neighbor_allgather";
    case K::NeighborAllgatherv: return "Neighbor_allgatherv";
    case K::NeighborAlltoall: return "Neighbor_alltoall";
    case K::NeighborAlltoallv: return "Neighbor_alltoallv";
    case K::NeighborAlltoallw: return "Neighbor_alltoallw";
    case K::ReduceLocal: return "Reduce_local";
  }
  return "?";
}
std::string camel(const char *name) {  // "Reduce_scatter_block" -> "ReduceScatterBlock"
  std::string s;
  for (bool up = true; *name; ++name) {
    if (*name == '_') {
      up = true;
      continue;
    }
    s += up ? static_cast<char>(toupper(*name)) : *name;
    up = false;
  }
  return s;
}
std::string test_name(K k) { return camel(kname(k)); }
void PrintTo(K k, std::ostream *os) { *os << "MPI_" << kname(k); }
bool rooted(K k) {
  return k == K::Bcast || k == K::Reduce || k == K::Gather || k == K::Scatter || k == K::Gatherv ||
         k == K::Scatterv;
}
bool reduction(K k) {
  return k == K::Allreduce || k == K::ReduceScatterBlock || k == K::Reduce || k == K::ReduceScatter ||
         k == K::Scan || k == K::Exscan || k == K::ReduceLocal;
}
// The neighbourhood collectives: on a Cartesian or distributed-graph communicator.
bool neighbor(K k) {
  return k == K::NeighborAllgather || k == K::NeighborAllgatherv || k == K::NeighborAlltoall ||
         k == K::NeighborAlltoallv || k == K::NeighborAlltoallw;
}
// Per-block datatypes (MPI_INT and MPI_DOUBLE blocks mixed), byte displacements.
bool w_form(K k) { return k == K::Alltoallw || k == K::NeighborAlltoallw; }

enum class Form { Ref, Blocking, Nonblocking, Persistent };
const char *form_prefix(Form f) {
  switch (f) {
    case Form::Ref: return "PMPI_";
    case Form::Blocking: return "MPI_";
    case Form::Nonblocking: return "MPI_I";
    case Form::Persistent: return NB_HAVE_PERSISTENT && MPI_VERSION < 4 ? "MPIX_" : "MPI_";
  }
  return "?";
}
std::string call_name(K k, Form f) {
  std::string n = kname(k);
  if (f == Form::Nonblocking) n[0] = static_cast<char>(tolower(n[0]));
  std::string s = form_prefix(f) + n;
  if (f == Form::Persistent) s += "_init";
  return s;
}

bool mpich() {
  static const bool m = [] {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    return PMPI_Get_library_version(version, &len) == MPI_SUCCESS && strncmp(version, "MPICH", 5) == 0;
  }();
  return m;
}

// A case: which call, on which communicator, with what. in_place: MPI_IN_PLACE where MPI
// allows it (the root's side only, for the rooted collectives; not for Bcast, Barrier).
struct Spec {
  MPI_Datatype type = MPI_INT;
  int count = 0;
  bool in_place = false;
  bool root_last = false;
  bool split = false;
  bool graph = false;         // neighbourhood collectives: the dist graph, else the Cartesian one
  MPI_Op op = MPI_OP_NULL;    // MPI_Reduce_local: its operation
};

// What each byte of the receive buffer must be after the call.
enum : unsigned char {
  kSame = 0,    // as before the call
  kExact = 1,   // as the reference's
  kReduced = 2, // a reduction's result: element-wise within the type's tolerance
  kAny = 3,     // the MPI may leave anything (the rest of an in-place reduce_scatter input)
};

unsigned char sentinel(size_t i, uint32_t seed) {
  return static_cast<unsigned char>(0xA5 ^ (i * 37 + seed * 11 + (i >> 7)));
}

// One rank's side of a call: arguments, buffers' initial images (G guard bytes before and
// after the payload), and what the receive buffer must hold afterwards.
struct Case {
  K k = K::Allreduce;
  const TypeDesc *t = nullptr;
  size_t e = 1;
  MPI_Op op = MPI_OP_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1, root = 0, count = 0;
  bool in_place = false;  // this rank passes MPI_IN_PLACE somewhere
  bool send_ip = false, recv_ip = false;
  size_t sbytes = 0, rbytes = 0;
  int scount = 0, rcount = 0;
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  std::vector<unsigned char> cls;  // rbytes entries
  size_t red_off = 0, red_elems = 0;
  std::vector<std::pair<size_t, size_t>> recv_inputs;  // byte ranges of recv holding input
  // The w-forms: per-block datatypes; byte displacements (int for Alltoallw, MPI_Aint for
  // Neighbor_alltoallw: sdispls/rdispls, sdispls_a/rdispls_a); each block's input values
  // are of its own type (segments of the send image, and of the receive image in place).
  std::vector<MPI_Datatype> stypes, rtypes;
  std::vector<MPI_Aint> sdispls_a, rdispls_a;
  struct Seg {
    size_t off, n;
    const TypeDesc *t;
  };
  std::vector<Seg> ssegs, rsegs;
  int indeg = 0, outdeg = 0;  // neighbourhood collectives: this rank's degrees
  // Send bytes copied over others after the fill (from, to, bytes): see
  // ineighbor_cart_repeated_broken.
  std::vector<std::array<size_t, 3>> mirrors;
  std::string ctx;
  // images with guards, for the current seed
  std::vector<unsigned char> send_init, recv_init;

  void inputs(uint32_t seed) {
    const MPI_Op fill_op = reduction(k) ? op : MPI_SUM;
    const size_t elems = std::max(sbytes, rbytes) / e;
    std::vector<unsigned char> vals(elems * e);
    if (elems) t->fill(vals.data(), elems, world_rank(), seed, fill_op);
    send_init.resize(G + sbytes + G);
    for (size_t i = 0; i < send_init.size(); ++i) send_init[i] = sentinel(i, seed + 1);
    if (sbytes) memcpy(send_init.data() + G, vals.data(), sbytes);
    recv_init.resize(G + rbytes + G);
    for (size_t i = 0; i < recv_init.size(); ++i) recv_init[i] = sentinel(i, seed);
    for (const auto &r : recv_inputs) memcpy(recv_init.data() + G + r.first, vals.data() + r.first, r.second);
    if (k == K::ReduceLocal && rbytes) {  // inoutbuf: other values than inbuf's
      t->fill(vals.data(), elems, world_rank(), seed * 3 + 17, fill_op);
      memcpy(recv_init.data() + G, vals.data(), rbytes);
    }
    std::vector<unsigned char> tmp;
    auto typed = [&](std::vector<unsigned char> *img, const std::vector<Seg> &segs, uint32_t sd) {
      for (const Seg &g : segs) {
        if (!g.n) continue;
        tmp.resize(g.n * g.t->extent);
        g.t->fill(tmp.data(), g.n, world_rank(), sd + static_cast<uint32_t>(g.off), MPI_SUM);
        memcpy(img->data() + G + g.off, tmp.data(), tmp.size());
      }
    };
    typed(&send_init, ssegs, seed);
    typed(&recv_init, rsegs, seed);
    for (const auto &m : mirrors) memmove(send_init.data() + G + m[1], send_init.data() + G + m[0], m[2]);
  }

  // The call on payload pointers s and r (this case's MPI_IN_PLACE substituted here).
  int call(Form f, unsigned char *s, unsigned char *r, MPI_Request *req) const {
    const void *sb = send_ip ? MPI_IN_PLACE : static_cast<const void *>(s);
    void *rb = recv_ip ? MPI_IN_PLACE : static_cast<void *>(r);
    const MPI_Datatype T = t->type;
    const MPI_Datatype ST = send_ip ? MPI_DATATYPE_NULL : T;
    const int sc = send_ip ? 0 : scount;
    // Never a null array (Open MPI checks for one even where the degree is 0).
    static const int zero = 0;
    static const MPI_Aint zero_a = 0;
    const MPI_Datatype int_type = MPI_INT;
    auto ia = [](const std::vector<int> &v) { return v.empty() ? &zero : v.data(); };
    auto aa = [](const std::vector<MPI_Aint> &v) { return v.empty() ? &zero_a : v.data(); };
    auto ta = [&](const std::vector<MPI_Datatype> &v) { return v.empty() ? &int_type : v.data(); };
    (void)req;
#if NB_HAVE_PERSISTENT
#define NB_PERSISTENT_CASE(Name, ...) \
  case Form::Persistent: return NB_PINIT(Name)(__VA_ARGS__, MPI_INFO_NULL, req);
#else
#define NB_PERSISTENT_CASE(Name, ...) \
  case Form::Persistent: return MPI_ERR_OTHER;
#endif
#define NB_FORMS(Name, lower, ...)                                \
  switch (f) {                                                    \
    case Form::Ref: return PMPI_##Name(__VA_ARGS__);              \
    case Form::Blocking: return MPI_##Name(__VA_ARGS__);          \
    case Form::Nonblocking: return MPI_I##lower(__VA_ARGS__, req); \
    NB_PERSISTENT_CASE(Name, __VA_ARGS__)                         \
  }                                                               \
  return MPI_ERR_OTHER
    switch (k) {
      case K::Allreduce: NB_FORMS(Allreduce, allreduce, sb, rb, count, T, op, comm);
      case K::Bcast: NB_FORMS(Bcast, bcast, r, count, T, root, comm);
      case K::Allgather: NB_FORMS(Allgather, allgather, sb, sc, ST, rb, rcount, T, comm);
      case K::ReduceScatterBlock:
        NB_FORMS(Reduce_scatter_block, reduce_scatter_block, sb, rb, count, T, op, comm);
      case K::Reduce: NB_FORMS(Reduce, reduce, sb, rb, count, T, op, root, comm);
      case K::Gather: NB_FORMS(Gather, gather, sb, sc, ST, rb, rcount, T, root, comm);
      case K::Scatter: NB_FORMS(Scatter, scatter, sb, scount, T, rb, rcount, T, root, comm);
      case K::Alltoall: NB_FORMS(Alltoall, alltoall, sb, sc, ST, rb, rcount, T, comm);
      case K::ReduceScatter: NB_FORMS(Reduce_scatter, reduce_scatter, sb, rb, rcounts.data(), T, op, comm);
      case K::Allgatherv:
        NB_FORMS(Allgatherv, allgatherv, sb, sc, ST, rb, rcounts.data(), rdispls.data(), T, comm);
      case K::Gatherv:
        NB_FORMS(Gatherv, gatherv, sb, sc, ST, rb, rcounts.data(), rdispls.data(), T, root, comm);
      case K::Scatterv:
        NB_FORMS(Scatterv, scatterv, sb, scounts.data(), sdispls.data(), T, rb, rcount, T, root, comm);
      case K::Barrier: NB_FORMS(Barrier, barrier, comm);
      case K::Alltoallv:
        NB_FORMS(Alltoallv, alltoallv, sb, send_ip ? rcounts.data() : scounts.data(),
                 send_ip ? rdispls.data() : sdispls.data(), T, rb, rcounts.data(), rdispls.data(), T, comm);
      case K::Scan: NB_FORMS(Scan, scan, sb, rb, count, T, op, comm);
      case K::Exscan: NB_FORMS(Exscan, exscan, sb, rb, count, T, op, comm);
      case K::Alltoallw:
        NB_FORMS(Alltoallw, alltoallw, sb, send_ip ? ia(rcounts) : ia(scounts), send_ip ? ia(rdispls) : ia(sdispls),
                 send_ip ? ta(rtypes) : ta(stypes), rb, ia(rcounts), ia(rdispls), ta(rtypes), comm);
      case K::NeighborAllgather:
        NB_FORMS(Neighbor_allgather, neighbor_allgather, s, scount, T, r, rcount, T, comm);
      case K::NeighborAllgatherv:
        NB_FORMS(Neighbor_allgatherv, neighbor_allgatherv, s, scount, T, r, ia(rcounts), ia(rdispls), T, comm);
      case K::NeighborAlltoall:
        NB_FORMS(Neighbor_alltoall, neighbor_alltoall, s, scount, T, r, rcount, T, comm);
      case K::NeighborAlltoallv:
        NB_FORMS(Neighbor_alltoallv, neighbor_alltoallv, s, ia(scounts), ia(sdispls), T, r, ia(rcounts),
                 ia(rdispls), T, comm);
      case K::NeighborAlltoallw:
        NB_FORMS(Neighbor_alltoallw, neighbor_alltoallw, s, ia(scounts), aa(sdispls_a), ta(stypes), r,
                 ia(rcounts), aa(rdispls_a), ta(rtypes), comm);
      case K::ReduceLocal:  // blocking only
        switch (f) {
          case Form::Ref: return PMPI_Reduce_local(s, r, count, T, op);
          case Form::Blocking: return MPI_Reduce_local(s, r, count, T, op);
          default: return MPI_ERR_OTHER;
        }
    }
#undef NB_FORMS
#undef NB_PERSISTENT_CASE
    return MPI_ERR_OTHER;
  }
};

// The v-forms' blocks (as coll_cases.h): rank i's count is 0 for i % 3 == 1, else count + i x
// ceil(count / 2); the blocks lie in reverse rank order with a gap of 2 elements after each.
void v_blocks(int n, int count, std::vector<int> *counts, std::vector<int> *displs, int *extent) {
  counts->assign(static_cast<size_t>(n), 0);
  displs->assign(static_cast<size_t>(n), 0);
  int pos = 0;
  for (int i = n - 1; i >= 0; --i) {
    const int ci = i % 3 == 1 ? 0 : count + i * ((count + 1) / 2);
    (*counts)[static_cast<size_t>(i)] = ci;
    (*displs)[static_cast<size_t>(i)] = pos;
    pos += ci + 2;
  }
  *extent = pos;
}

// Alltoallv: what a sends to b (symmetric, so that the in-place form has one layout).
int a2av_count(int a, int b, int count) {
  return (a + b) % 3 == 1 ? 0 : count + ((a * b) % 3) * ((count + 1) / 2);
}

// Open MPI 4.1.4's own MPI_Ialltoallv with MPI_IN_PLACE (libnbc) sends the wrong blocks
// for uneven layouts (np 4, these blocks of 1000 elements: rank 3 gets rank 0's block for
// rank 2; the blocking MPI_Alltoallv is right; no gcoll involved): the nonblocking and
// persistent forms run without MPI_IN_PLACE there.
bool ialltoallv_in_place_broken() {
#if defined(OPEN_MPI) && OPEN_MPI && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
  return true;
#else
  return false;
#endif
}
// Its MPI_Ialltoallw and MPIX_Alltoallw_init with MPI_IN_PLACE (these uneven blocks of mixed
// types, np 1 to 5, gcoll off too) agree with PMPI_Alltoallw: they run in place there.
// MPICH 4.0.2's own MPI_Ialltoallw with MPI_IN_PLACE and blocks of different types is wrong
// (gcoll off, or a plain MPICH program: np 2 and 3, 2 elements per block, MPI_DOUBLE where
// a + b is odd, else MPI_INT: rank 0's result differs from its blocking MPI_Alltoallw; this
// test's np 3 count 7 case aborts in yaksa: "typerep_yaksa_pack.c at line 285: element_size
// < 0 || *actual_unpack_bytes % element_size == 0"): the nonblocking and persistent forms run
// without MPI_IN_PLACE under MPICH.
bool ialltoallw_in_place_broken() { return mpich(); }

// ---- the w-forms and the neighbourhood collectives -------------------------------------------
// Alltoallw: the type of what a sends to b (symmetric, as a2av_count: in place needs it):
// the case's type, or the other of MPI_INT / MPI_DOUBLE.
MPI_Datatype other_type(MPI_Datatype t) { return t == MPI_INT ? MPI_DOUBLE : MPI_INT; }
MPI_Datatype a2aw_type(int a, int b, MPI_Datatype base) { return (a + b) % 2 ? other_type(base) : base; }

// Byte layout of the w-forms' blocks (counts[i] elements of types[i]) in forward or reverse
// order: each block at a multiple of 8 bytes, then a gap of 4 or 12 bytes (more up to the
// next multiple of 8). Returns the extent in bytes (a multiple of 8).
size_t w_layout(const std::vector<int> &counts, const std::vector<MPI_Datatype> &types, bool reverse,
                std::vector<size_t> *displs) {
  const size_t n = counts.size();
  displs->assign(n, 0);
  size_t pos = 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = reverse ? n - 1 - k : k;
    pos = (pos + 7) & ~static_cast<size_t>(7);
    (*displs)[i] = pos;
    pos += static_cast<size_t>(counts[i]) * find_type(types[i]).extent + 4 + 8 * (i % 2);
  }
  return (pos + 7) & ~static_cast<size_t>(7);
}

// A topology communicator's neighbours (in the MPI's order, from MPI_Cart_shift or
// MPI_Dist_graph_neighbors) and, for each edge, a key both ends know: (sender, tag), tag the
// dimension for the Cartesian communicator (where a dimension of size 1 or 2 makes both
// neighbours of a dimension the same rank: the two messages then have the same size and
// type whichever way the MPI matches them), the receiver for the graph (no repeated edge).
struct Neighbors {
  std::vector<int> in, in_tag, out, out_tag;
  std::vector<int> repeated_dims;  // Cartesian dimensions whose two neighbours are one rank
};
Neighbors neighbors_of(MPI_Comm comm, int me) {
  Neighbors nb;
  int status = MPI_UNDEFINED;
  MPI_Topo_test(comm, &status);
  if (status == MPI_CART) {
    int nd = 0;
    MPI_Cartdim_get(comm, &nd);
    for (int d = 0; d < nd; ++d) {
      int src = MPI_PROC_NULL, dst = MPI_PROC_NULL;
      MPI_Cart_shift(comm, d, 1, &src, &dst);
      nb.in.insert(nb.in.end(), {src, dst});
      nb.in_tag.insert(nb.in_tag.end(), {d, d});
      nb.out.insert(nb.out.end(), {src, dst});
      nb.out_tag.insert(nb.out_tag.end(), {d, d});
      if (src == dst) nb.repeated_dims.push_back(d);
    }
  } else if (status == MPI_DIST_GRAPH) {
    int indeg = 0, outdeg = 0, weighted = 0;
    MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
    std::vector<int> src(static_cast<size_t>(indeg) + 1), sw(src.size()), dst(static_cast<size_t>(outdeg) + 1),
        dw(dst.size());
    MPI_Dist_graph_neighbors(comm, indeg, src.data(), sw.data(), outdeg, dst.data(), dw.data());
    nb.in.assign(src.begin(), src.begin() + indeg);
    nb.in_tag.assign(static_cast<size_t>(indeg), me);
    nb.out.assign(dst.begin(), dst.begin() + outdeg);
    nb.out_tag = nb.out;
  }
  return nb;
}
// Open MPI 4.1.4's own MPI_Ineighbor_alltoall(v,w) and MPIX_Neighbor_alltoall(v,w)_init
// (libnbc) on a periodic Cartesian dimension of size 1 or 2 (both neighbours of the
// dimension one rank) deliver the block sent in the positive direction into the block of
// the positive neighbour, and the other into that of the negative one: swapped, against
// MPI-4.0 (section 8.6) and against its own blocking MPI_Neighbor_alltoall (np 1, 1-D
// periodic, one int per block: blocking recv = {11, 10}, nonblocking {10, 11} for send
// {10, 11}; MPICH 4.0.2 gives {11, 10} for both; gcoll off or a plain Open MPI program).
// There, in the nonblocking and persistent forms, a rank sends the same values in both
// directions of such a dimension (blocks of equal counts and types already), so that
// either matching gives one result; the other dimensions, the graph, and the blocking form
// keep distinct blocks.
bool ineighbor_cart_repeated_broken() {
#if defined(OPEN_MPI) && OPEN_MPI && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
  return true;
#else
  return false;
#endif
}

// What `sender` sends on the edge tagged `tag`: uneven counts (0 for some edges), types.
int nbr_count(int sender, int tag, int count) {
  return (sender + tag) % 3 == 1 ? 0 : count + ((sender * 7 + tag) % 3) * ((count + 1) / 2);
}
MPI_Datatype nbr_type(int sender, int tag, MPI_Datatype base) {
  return (sender + tag) % 2 ? other_type(base) : base;
}
// Neighbor_allgatherv: what `sender` sends to every out-neighbour (as v_blocks).
int nbr_v_count(int sender, int count) { return sender % 3 == 1 ? 0 : count + sender * ((count + 1) / 2); }

Case make_case(K k, const TestComm &c, const Spec &s, Form form = Form::Nonblocking) {
  Case x;
  x.k = k;
  x.t = &find_type(s.type);
  x.e = x.t->extent;
  x.comm = c.comm;
  x.rank = c.rank;
  x.size = c.size;
  x.count = s.count;
  x.root = rooted(k) && s.root_last ? c.size - 1 : 0;
  if (reduction(k)) x.op = s.op != MPI_OP_NULL ? s.op : s.type == MPI_INT && s.in_place ? MPI_MAX : MPI_SUM;
  bool ip = s.in_place;
  if (k == K::Bcast || k == K::Barrier || neighbor(k) || k == K::ReduceLocal) ip = false;  // no MPI_IN_PLACE
  // MPICH 4.0.2's own PMPI_Reduce crashes on MPI_IN_PLACE at a root other than 0 (see
  // coll_cases.cc): such cases run without it there, on every rank alike.
  if (k == K::Reduce && x.root != 0 && mpich()) ip = false;
  if (k == K::Alltoallv && form != Form::Blocking && ialltoallv_in_place_broken()) ip = false;
  if (k == K::Alltoallw && form != Form::Blocking && ialltoallw_in_place_broken()) ip = false;
  const bool is_root = x.rank == x.root;
  if (rooted(k) && k != K::Bcast) ip = ip && is_root;
  x.in_place = ip;
  const size_t e = x.e, n = static_cast<size_t>(x.size), cnt = static_cast<size_t>(s.count);
  const size_t me = static_cast<size_t>(x.rank);
  auto set_cls = [&](size_t bytes, unsigned char v) { x.cls.assign(bytes, v); };
  auto reduced = [&](size_t off_elems, size_t elems) {
    x.red_off = off_elems * e;
    x.red_elems = elems;
    for (size_t i = 0; i < elems * e; ++i) x.cls[x.red_off + i] = kReduced;
  };
  switch (k) {
    case K::Allreduce:
    case K::Scan:
    case K::Exscan:
      x.rbytes = cnt * e;
      x.sbytes = ip ? 0 : cnt * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({0, x.rbytes});
      set_cls(x.rbytes, kSame);
      // Exscan: rank 0's receive buffer is not the MPI's to write (keeps its contents).
      if (!(k == K::Exscan && x.rank == 0)) reduced(0, cnt);
      break;
    case K::Bcast:
      x.rbytes = cnt * e;
      if (is_root) x.recv_inputs.push_back({0, x.rbytes});
      set_cls(x.rbytes, is_root ? kSame : kExact);
      break;
    case K::Allgather:
      x.rcount = s.count;
      x.scount = s.count;
      x.rbytes = n * cnt * e;
      x.sbytes = ip ? 0 : cnt * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({me * cnt * e, cnt * e});
      set_cls(x.rbytes, kExact);
      break;
    case K::ReduceScatterBlock:
      x.rbytes = (ip ? n : 1) * cnt * e;
      x.sbytes = ip ? 0 : n * cnt * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({0, x.rbytes});
      set_cls(x.rbytes, kAny);
      reduced(0, cnt);
      break;
    case K::Reduce:
      x.rbytes = is_root ? cnt * e : 0;
      x.sbytes = ip ? 0 : cnt * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({0, x.rbytes});
      set_cls(x.rbytes, kSame);
      if (is_root) reduced(0, cnt);
      break;
    case K::Gather:
      x.scount = s.count;
      x.rcount = s.count;
      x.rbytes = is_root ? n * cnt * e : 0;
      x.sbytes = ip ? 0 : cnt * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({me * cnt * e, cnt * e});
      set_cls(x.rbytes, kExact);
      break;
    case K::Scatter:
      x.scount = s.count;
      x.rcount = s.count;
      x.sbytes = is_root ? n * cnt * e : 0;
      x.rbytes = ip ? 0 : cnt * e;
      x.recv_ip = ip;
      set_cls(x.rbytes, kExact);
      break;
    case K::Alltoall:
      x.scount = s.count;
      x.rcount = s.count;
      x.rbytes = n * cnt * e;
      x.sbytes = ip ? 0 : n * cnt * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({0, x.rbytes});
      set_cls(x.rbytes, kExact);
      break;
    case K::ReduceScatter: {
      int extent = 0;
      std::vector<int> displs;
      v_blocks(x.size, s.count, &x.rcounts, &displs, &extent);
      size_t total = 0;
      for (int v : x.rcounts) total += static_cast<size_t>(v);
      const size_t mine = static_cast<size_t>(x.rcounts[me]);
      x.rbytes = (ip ? total : mine) * e;
      x.sbytes = ip ? 0 : total * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({0, x.rbytes});
      set_cls(x.rbytes, kAny);
      reduced(0, mine);
      break;
    }
    case K::Allgatherv:
    case K::Gatherv: {
      int extent = 0;
      v_blocks(x.size, s.count, &x.rcounts, &x.rdispls, &extent);
      x.scount = x.rcounts[me];
      const bool has_recv = k == K::Allgatherv || is_root;
      x.rbytes = has_recv ? static_cast<size_t>(extent) * e : 0;
      x.sbytes = ip ? 0 : static_cast<size_t>(x.scount) * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({static_cast<size_t>(x.rdispls[me]) * e, static_cast<size_t>(x.scount) * e});
      set_cls(x.rbytes, kSame);  // the gaps
      if (has_recv)
        for (size_t i = 0; i < n; ++i)
          for (size_t b = 0; b < static_cast<size_t>(x.rcounts[i]) * e; ++b)
            x.cls[static_cast<size_t>(x.rdispls[i]) * e + b] = kExact;
      break;
    }
    case K::Scatterv: {
      int extent = 0;
      v_blocks(x.size, s.count, &x.scounts, &x.sdispls, &extent);
      x.rcount = x.scounts[me];
      x.sbytes = is_root ? static_cast<size_t>(extent) * e : 0;
      x.rbytes = ip ? 0 : static_cast<size_t>(x.rcount) * e;
      x.recv_ip = ip;
      set_cls(x.rbytes, kExact);
      break;
    }
    case K::Barrier:
      set_cls(0, kSame);
      break;
    case K::Alltoallv: {
      x.scounts.resize(n);
      x.sdispls.resize(n);
      x.rcounts.resize(n);
      x.rdispls.resize(n);
      int sp = 0, rp = 0;
      for (int j = x.size - 1; j >= 0; --j) {
        const size_t u = static_cast<size_t>(j);
        x.scounts[u] = a2av_count(x.rank, j, s.count);
        x.sdispls[u] = sp;
        sp += x.scounts[u] + 1;
        x.rcounts[u] = a2av_count(j, x.rank, s.count);
        x.rdispls[u] = rp;
        rp += x.rcounts[u] + 2;
      }
      x.rbytes = static_cast<size_t>(rp) * e;
      x.sbytes = ip ? 0 : static_cast<size_t>(sp) * e;
      x.send_ip = ip;
      if (ip) x.recv_inputs.push_back({0, x.rbytes});
      set_cls(x.rbytes, kSame);
      for (size_t i = 0; i < n; ++i)
        for (size_t b = 0; b < static_cast<size_t>(x.rcounts[i]) * e; ++b)
          x.cls[static_cast<size_t>(x.rdispls[i]) * e + b] = kExact;
      break;
    }
    case K::Alltoallw: {
      // Blocks of a2av_count elements of a2aw_type (MPI_INT and MPI_DOUBLE blocks mixed), at
      // byte displacements with gaps: sent in rank order, received in reverse rank order.
      x.scounts.resize(n);
      x.rcounts.resize(n);
      x.stypes.resize(n);
      x.rtypes.resize(n);
      for (int j = 0; j < x.size; ++j) {
        const size_t u = static_cast<size_t>(j);
        x.scounts[u] = a2av_count(x.rank, j, s.count);
        x.stypes[u] = a2aw_type(x.rank, j, s.type);
        x.rcounts[u] = a2av_count(j, x.rank, s.count);
        x.rtypes[u] = a2aw_type(j, x.rank, s.type);
      }
      std::vector<size_t> sd, rd;
      const size_t sb = w_layout(x.scounts, x.stypes, false, &sd);
      x.rbytes = w_layout(x.rcounts, x.rtypes, true, &rd);
      x.sbytes = ip ? 0 : sb;
      x.send_ip = ip;
      x.sdispls.assign(sd.begin(), sd.end());
      x.rdispls.assign(rd.begin(), rd.end());
      set_cls(x.rbytes, kSame);
      for (size_t i = 0; i < n; ++i) {
        const TypeDesc &ti = find_type(x.rtypes[i]);
        for (size_t b = 0; b < static_cast<size_t>(x.rcounts[i]) * ti.extent; ++b) x.cls[rd[i] + b] = kExact;
        if (ip) x.rsegs.push_back({rd[i], static_cast<size_t>(x.rcounts[i]), &ti});
        else x.ssegs.push_back({sd[i], static_cast<size_t>(x.scounts[i]), &find_type(x.stypes[i])});
      }
      if (ip) x.recv_inputs.push_back({0, x.rbytes});
      break;
    }
    case K::NeighborAllgather:
    case K::NeighborAllgatherv:
    case K::NeighborAlltoall:
    case K::NeighborAlltoallv:
    case K::NeighborAlltoallw: {
      const Neighbors nb = neighbors_of(x.comm, x.rank);
      const size_t ni = nb.in.size(), no = nb.out.size();
      x.indeg = static_cast<int>(ni);
      x.outdeg = static_cast<int>(no);
      auto exact = [&](size_t off, size_t bytes) {
        for (size_t b = 0; b < bytes; ++b) x.cls[off + b] = kExact;
      };
      if (k == K::NeighborAllgather || k == K::NeighborAlltoall) {
        x.scount = x.rcount = s.count;
        x.sbytes = (k == K::NeighborAlltoall ? no : 1) * cnt * e;
        x.rbytes = ni * cnt * e;
        set_cls(x.rbytes, kExact);
      } else if (k == K::NeighborAllgatherv) {
        // Uneven counts (by sender; some 0) in reverse neighbour order, 2 elements apart.
        x.scount = nbr_v_count(x.rank, s.count);
        x.rcounts.resize(ni);
        x.rdispls.resize(ni);
        int pos = 0;
        for (size_t i = ni; i-- > 0;) {
          x.rcounts[i] = nbr_v_count(nb.in[i], s.count);
          x.rdispls[i] = pos;
          pos += x.rcounts[i] + 2;
        }
        x.sbytes = static_cast<size_t>(x.scount) * e;
        x.rbytes = static_cast<size_t>(pos) * e;
        set_cls(x.rbytes, kSame);
        for (size_t i = 0; i < ni; ++i)
          exact(static_cast<size_t>(x.rdispls[i]) * e, static_cast<size_t>(x.rcounts[i]) * e);
      } else if (k == K::NeighborAlltoallv) {
        // Uneven counts by edge; sent in reverse order 1 element apart, received in reverse
        // order 2 elements apart.
        x.scounts.resize(no);
        x.sdispls.resize(no);
        x.rcounts.resize(ni);
        x.rdispls.resize(ni);
        int sp = 0, rp = 0;
        for (size_t j = no; j-- > 0;) {
          x.scounts[j] = nbr_count(x.rank, nb.out_tag[j], s.count);
          x.sdispls[j] = sp;
          sp += x.scounts[j] + 1;
        }
        for (size_t i = ni; i-- > 0;) {
          x.rcounts[i] = nbr_count(nb.in[i], nb.in_tag[i], s.count);
          x.rdispls[i] = rp;
          rp += x.rcounts[i] + 2;
        }
        x.sbytes = static_cast<size_t>(sp) * e;
        x.rbytes = static_cast<size_t>(rp) * e;
        set_cls(x.rbytes, kSame);
        for (size_t i = 0; i < ni; ++i)
          exact(static_cast<size_t>(x.rdispls[i]) * e, static_cast<size_t>(x.rcounts[i]) * e);
      } else {
        // Per-edge counts and types (MPI_INT and MPI_DOUBLE), MPI_Aint byte displacements
        // with gaps: sent in neighbour order, received in reverse neighbour order.
        x.scounts.resize(no);
        x.stypes.resize(no);
        x.rcounts.resize(ni);
        x.rtypes.resize(ni);
        for (size_t j = 0; j < no; ++j) {
          x.scounts[j] = nbr_count(x.rank, nb.out_tag[j], s.count);
          x.stypes[j] = nbr_type(x.rank, nb.out_tag[j], s.type);
        }
        for (size_t i = 0; i < ni; ++i) {
          x.rcounts[i] = nbr_count(nb.in[i], nb.in_tag[i], s.count);
          x.rtypes[i] = nbr_type(nb.in[i], nb.in_tag[i], s.type);
        }
        std::vector<size_t> sd, rd;
        x.sbytes = w_layout(x.scounts, x.stypes, false, &sd);
        x.rbytes = w_layout(x.rcounts, x.rtypes, true, &rd);
        for (size_t j = 0; j < no; ++j) x.sdispls.push_back(static_cast<int>(sd[j]));  // for the mirrors
        x.sdispls_a.assign(sd.begin(), sd.end());
        x.rdispls_a.assign(rd.begin(), rd.end());
        set_cls(x.rbytes, kSame);
        for (size_t j = 0; j < no; ++j)
          x.ssegs.push_back({sd[j], static_cast<size_t>(x.scounts[j]), &find_type(x.stypes[j])});
        for (size_t i = 0; i < ni; ++i) exact(rd[i], static_cast<size_t>(x.rcounts[i]) * find_type(x.rtypes[i]).extent);
      }
      if (k != K::NeighborAllgather && k != K::NeighborAllgatherv && form != Form::Blocking &&
          ineighbor_cart_repeated_broken()) {
        for (int d : nb.repeated_dims) {  // send block 2d+1 := send block 2d
          const size_t j = 2 * static_cast<size_t>(d);
          size_t from = j * cnt * e, to = (j + 1) * cnt * e, bytes = cnt * e;
          if (k == K::NeighborAlltoallv) {
            from = static_cast<size_t>(x.sdispls[j]) * e;
            to = static_cast<size_t>(x.sdispls[j + 1]) * e;
            bytes = static_cast<size_t>(x.scounts[j]) * e;
          } else if (k == K::NeighborAlltoallw) {
            from = static_cast<size_t>(x.sdispls[j]);
            to = static_cast<size_t>(x.sdispls[j + 1]);
            bytes = static_cast<size_t>(x.scounts[j]) * find_type(x.stypes[j]).extent;
          }
          if (bytes) x.mirrors.push_back({from, to, bytes});
        }
      }
      break;
    }
    case K::ReduceLocal:  // inbuf (send) op inoutbuf (receive, its input) -> inoutbuf
      x.sbytes = x.rbytes = cnt * e;
      x.recv_inputs.push_back({0, x.rbytes});
      set_cls(x.rbytes, kSame);
      reduced(0, cnt);
      break;
  }
  x.ctx = std::string(kname(k)) + " type=" + x.t->name + " count=" + std::to_string(s.count) + " comm=" +
          c.name + " comm_rank=" + std::to_string(x.rank);
  if (reduction(k)) x.ctx += std::string(" op=") + op_name(x.op);
  if (w_form(k)) x.ctx += std::string(" (and ") + find_type(other_type(s.type)).name + " blocks)";
  if (neighbor(k)) x.ctx += " indegree=" + std::to_string(x.indeg) + " outdegree=" + std::to_string(x.outdeg);
  if (!x.mirrors.empty()) x.ctx += " (same values both ways to a repeated Cartesian neighbour)";
  if (rooted(k)) x.ctx += " root=" + std::to_string(x.root);
  if (s.in_place && k != K::Bcast && k != K::Barrier && !neighbor(k) && k != K::ReduceLocal)
    x.ctx += x.in_place ? " MPI_IN_PLACE" : rooted(k) ? " (MPI_IN_PLACE on the root)" : " (MPI_IN_PLACE left out here)";
  return x;
}

// The reference: the PMPI_* blocking call on host copies. Returns the receive image.
std::vector<unsigned char> reference(const Case &x, bool *ok) {
  std::vector<unsigned char> s = x.send_init, r = x.recv_init;
  const int rc = x.call(Form::Ref, s.data() + G, r.data() + G, nullptr);
  if (rc != MPI_SUCCESS) {
    report("reference %s returned %s for %s", call_name(x.k, Form::Ref).c_str(),
           error_class_name(error_class(rc)).c_str(), x.ctx.c_str());
    *ok = false;
  }
  // The reference must leave alone what this test says the MPI leaves alone (else the
  // test's model of the call is wrong, not the library).
  for (size_t i = 0; i < x.rbytes; ++i) {
    if (x.cls[i] == kSame && r[G + i] != x.recv_init[G + i]) {
      report("TEST MODEL: reference %s changed receive byte %zu (0x%02x -> 0x%02x), which this test expects "
             "unchanged, for %s",
             call_name(x.k, Form::Ref).c_str(), i, x.recv_init[G + i], r[G + i], x.ctx.c_str());
      *ok = false;
      break;
    }
  }
  return r;
}

// The buffers of the call under test, host or device.
struct Bufs {
  std::unique_ptr<Mem> s, r;
  Bufs(const Case &x, bool device)
      : s(new Mem(device, x.send_init.size())), r(new Mem(device, x.recv_init.size())) {}
  void upload(const Case &x) {
    s->put(x.send_init);
    r->put(x.recv_init);
  }
  unsigned char *sp() const { return s->at(G); }
  unsigned char *rp() const { return r->at(G); }
  void leak() {
    s->leak();
    r->leak();
  }
};

std::string hexbyte(unsigned char b) {
  char buf[8];
  snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

// Compares the buffers of the call under test with the reference and the initial images.
bool compare(const Case &x, const Bufs &b, const std::vector<unsigned char> &ref, const std::string &what) {
  const std::string mem = b.r->device() ? "device" : "host";
  const std::vector<unsigned char> got = b.r->get();
  const std::vector<unsigned char> sgot = b.s->get();
  for (size_t i = 0; i < sgot.size(); ++i) {
    if (sgot[i] != x.send_init[i]) {
      report("%s (%s buffers): send %s byte %zu changed: %s, was %s; %s", what.c_str(), mem.c_str(),
             i < G || i >= G + x.sbytes ? "guard" : "buffer", i < G ? i : i - G, hexbyte(sgot[i]).c_str(),
             hexbyte(x.send_init[i]).c_str(), x.ctx.c_str());
      return false;
    }
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (i >= G && i < G + x.rbytes) continue;
    if (got[i] != x.recv_init[i]) {
      report("%s (%s buffers): the guard byte %s the receive buffer at %zu changed: %s, was %s; %s", what.c_str(),
             mem.c_str(), i < G ? "before" : "after", i < G ? G - i : i - G - x.rbytes,
             hexbyte(got[i]).c_str(), hexbyte(x.recv_init[i]).c_str(), x.ctx.c_str());
      return false;
    }
  }
  for (size_t i = 0; i < x.rbytes; ++i) {
    const unsigned char g = got[G + i];
    if (x.cls[i] == kSame && g != x.recv_init[G + i]) {
      report("%s (%s buffers): receive byte %zu (element %zu) is not the MPI's to write, but changed: %s, was %s; "
             "%s",
             what.c_str(), mem.c_str(), i, i / x.e, hexbyte(g).c_str(), hexbyte(x.recv_init[G + i]).c_str(),
             x.ctx.c_str());
      return false;
    }
    if (x.cls[i] == kExact && g != ref[G + i]) {
      report("%s (%s buffers): receive byte %zu (element %zu): got %s (element %s), expected %s (element %s, "
             "the PMPI reference); was %s before the call; %s",
             what.c_str(), mem.c_str(), i, i / x.e, hexbyte(g).c_str(),
             x.t->format(got.data() + G, i / x.e).c_str(), hexbyte(ref[G + i]).c_str(),
             x.t->format(ref.data() + G, i / x.e).c_str(), hexbyte(x.recv_init[G + i]).c_str(), x.ctx.c_str());
      return false;
    }
  }
  if (x.red_elems) {
    size_t first = 0;
    std::string detail;
    const size_t bad = x.t->compare(got.data() + G + x.red_off, ref.data() + G + x.red_off, x.red_elems, x.op,
                                    x.size, &first, &detail);
    if (bad) {
      report("%s (%s buffers): %zu of %zu result elements differ from the PMPI reference; first: element %zu: %s "
             "(was %s before the call); %s",
             what.c_str(), mem.c_str(), bad, x.red_elems, first, detail.c_str(),
             x.t->format(x.recv_init.data() + G + x.red_off, first).c_str(), x.ctx.c_str());
      return false;
    }
  }
  return true;
}

bool rc_ok(int rc, const std::string &fn, const std::string &ctx) {
  if (rc == MPI_SUCCESS) return true;
  report("%s returned %s (%d) for %s", fn.c_str(), error_class_name(error_class(rc)).c_str(), rc, ctx.c_str());
  return false;
}

uint32_t g_seed = 1000;
uint32_t seed() { return g_seed += 7919; }

// A's and B's cases: counts 0, 1, 7, 1000; MPI_INT and MPI_DOUBLE; in place; roots 0 and
// last; world and split.
const std::vector<Spec> &a_specs() {
  static const std::vector<Spec> v = {
      {MPI_INT, 0, false, false, false},     {MPI_INT, 1, false, true, false},
      {MPI_INT, 7, false, false, false},     {MPI_INT, 1000, false, true, false},
      {MPI_DOUBLE, 7, false, true, false},   {MPI_DOUBLE, 1000, false, false, false},
      {MPI_INT, 7, true, false, false},      {MPI_INT, 7, true, true, false},
      {MPI_DOUBLE, 1000, true, true, false}, {MPI_DOUBLE, 1000, true, false, false},
      {MPI_INT, 1, false, true, true},       {MPI_DOUBLE, 1000, false, false, true},
      {MPI_INT, 7, true, true, true},        {MPI_DOUBLE, 7, true, false, true},
      {MPI_INT, 0, true, true, true},
  };
  return v;
}
const std::vector<Spec> &b_specs() {
  static const std::vector<Spec> v = {
      {MPI_INT, 7, false, true, false},
      {MPI_DOUBLE, 1000, true, false, true},
      {MPI_INT, 1, true, true, false},
  };
  return v;
}

// The neighbourhood collectives' cases: counts 0, 1, 7, 1000; MPI_INT and MPI_DOUBLE; on the
// Cartesian communicator and on the distributed graph (no in place: MPI has none).
const std::vector<Spec> &nbr_a_specs() {
  static const std::vector<Spec> v = {
      {MPI_INT, 0, false, false, false, false},     {MPI_INT, 1, false, false, false, false},
      {MPI_DOUBLE, 7, false, false, false, false},  {MPI_INT, 1000, false, false, false, false},
      {MPI_INT, 0, false, false, false, true},      {MPI_INT, 1, false, false, false, true},
      {MPI_INT, 7, false, false, false, true},      {MPI_DOUBLE, 1000, false, false, false, true},
      {MPI_DOUBLE, 7, false, false, false, true},
  };
  return v;
}
const std::vector<Spec> &nbr_b_specs() {
  static const std::vector<Spec> v = {
      {MPI_INT, 7, false, false, false, false},
      {MPI_DOUBLE, 1000, false, false, false, true},
      {MPI_INT, 1, false, false, false, true},
  };
  return v;
}

// The topology communicators over MPI_COMM_WORLD (not reordered, MPI_ERRORS_RETURN):
//   Cart   periodic 2-D, MPI_Dims_create(size, 2) (np 4: 2 x 2; np 2, 3, 5: n x 1, whose
//          dimension of size 1 makes a rank its own neighbour twice; np 2: the other rank is
//          both neighbours of dimension 0);
//   Graph  MPI_Dist_graph_create_adjacent: rank r sends to r+1 and r-2 and receives from
//          r-1 and r+2 (mod size, repeated edges once), except that from np 3 on no rank
//          sends to rank 0: rank 0 has in-degree 0, and in- and out-degrees differ (np 4:
//          rank 0 in 0 / out 2, rank 2 in 2 / out 1, rank 3 in 2 / out 1). Each rank lists
//          the same edges (one global list), so the adjacency is consistent.
//   GraphEven  the same without the exception (every rank: in-degree = out-degree, 1 or 2):
//          MPI_Neighbor_alltoallw's graph under MPICH (mpich_nbr_alltoallw_broken).
enum class Topo { Cart, Graph, GraphEven };

// MPICH 4.0.2's own MPI_Neighbor_alltoallw and MPI_Ineighbor_alltoallw deliver nothing to a
// rank of a distributed graph whose out-degree is 0 (gcoll off, or a plain MPICH program:
// np 3, edges 0->1 and 1->2, rank 1 sends one MPI_DOUBLE to rank 2, whose receive buffer
// keeps its -1; with the edge 2->0 added it gets 1.5; its MPI_Neighbor_alltoallv on the
// first graph is right; Open MPI 4.1.4 right for both). The PMPI reference is then wrong
// too (and gcoll's staged copy, given no data by the MPI, differs from it). Under MPICH the
// Neighbor_alltoallw cases run on GraphEven instead of Graph.
bool mpich_nbr_alltoallw_broken(K k) { return mpich() && k == K::NeighborAlltoallw; }
TestComm make_topo(Topo t) {
  TestComm c;
  const int n = world_size(), me = world_rank();
  if (t == Topo::Cart) {
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(n, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c.comm);
    c.name = "cart(" + std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + ",periodic)";
  } else {
    std::vector<std::pair<int, int>> edges;  // (from, to), in one order on every rank
    for (int shift : {1, ((n - 2) % n + n) % n})  // r+1, r-2
      for (int r = 0; r < n; ++r) {
        const std::pair<int, int> ed(r, (r + shift) % n);
        if (t == Topo::Graph && n >= 3 && ed.second == 0) continue;
        if (std::find(edges.begin(), edges.end(), ed) == edges.end()) edges.push_back(ed);
      }
    std::vector<int> src, dst;
    for (const auto &ed : edges) {
      if (ed.second == me) src.push_back(ed.first);
      if (ed.first == me) dst.push_back(ed.second);
    }
    const int nin = static_cast<int>(src.size()), nout = static_cast<int>(dst.size());
    src.push_back(0);  // never a null array
    dst.push_back(0);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, nin, src.data(), MPI_UNWEIGHTED, nout, dst.data(),
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c.comm);
    c.name = "dist_graph(r->r+1,r-2" + std::string(t == Topo::Graph && n >= 3 ? ",none to 0)" : ")");
  }
  c.owned = true;
  MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c.comm, &c.rank);
  MPI_Comm_size(c.comm, &c.size);
  c.name += "[size=" + std::to_string(c.size) + "]";
  return c;
}
class ScopedTopo {
 public:
  explicit ScopedTopo(Topo t) : c_(make_topo(t)) {}
  ~ScopedTopo() { free_comm(c_); }
  ScopedTopo(const ScopedTopo &) = delete;
  ScopedTopo &operator=(const ScopedTopo &) = delete;
  const TestComm &operator*() const { return c_; }

 private:
  TestComm c_;
};

// The communicators of a kind's cases: world and split, or (neighbourhood collectives)
// the Cartesian one and the graph.
struct CaseComms {
  K k;
  std::unique_ptr<ScopedComm> world, split;
  std::unique_ptr<ScopedTopo> cart, graph;
  explicit CaseComms(K kind) : k(kind) {
    if (neighbor(k)) {
      cart.reset(new ScopedTopo(Topo::Cart));
      graph.reset(new ScopedTopo(mpich_nbr_alltoallw_broken(k) ? Topo::GraphEven : Topo::Graph));
    } else {
      world.reset(new ScopedComm(CommKind::World));
      split.reset(new ScopedComm(CommKind::SplitOddEven));
    }
  }
  const TestComm &of(const Spec &s) const {
    if (neighbor(k)) return s.graph ? **graph : **cart;
    return s.split ? **split : **world;
  }
  const std::vector<Spec> &a() const { return neighbor(k) ? nbr_a_specs() : a_specs(); }
  const std::vector<Spec> &b() const { return neighbor(k) ? nbr_b_specs() : b_specs(); }
};

// One checked call in form f (Blocking, or Nonblocking then MPI_Wait).
bool run_one(K k, const TestComm &c, const Spec &s, Form f, bool device) {
  Case x = make_case(k, c, s, f);
  x.inputs(seed());
  set_phase("%s %s (%s)", call_name(k, f).c_str(), x.ctx.c_str(), device ? "device" : "host");
  bool ok = true;
  const std::vector<unsigned char> ref = reference(x, &ok);
  Bufs b(x, device);
  b.upload(x);
  MPI_Request req = MPI_REQUEST_NULL;
  if (f == Form::Nonblocking && env_int("GCOLLTEST_NB_WARM") == 1) {
    // The same call once before, then a barrier: what the engine needs to take the next
    // nonblocking call of this kind (its setup, the memory kinds agreed) is made at the
    // barrier (the engine's nonblocking path, coll/async_queue.h).
    Bufs w(x, device);
    w.upload(x);
    if (!rc_ok(x.call(f, w.sp(), w.rp(), &req), call_name(k, f), x.ctx + " (warm-up)") ||
        !rc_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx + " (warm-up)") ||
        !rc_ok(MPI_Barrier(c.comm), "MPI_Barrier", x.ctx + " (warm-up)"))
      return false;
  }
  int rc = x.call(f, b.sp(), b.rp(), &req);
  std::string what = call_name(k, f);
  if (!rc_ok(rc, what, x.ctx)) return false;
  if (f == Form::Nonblocking) {
    MPI_Status st;
    what += " + MPI_Wait";
    rc = MPI_Wait(&req, &st);
    if (!rc_ok(rc, "MPI_Wait", x.ctx)) return false;
    if (req != MPI_REQUEST_NULL) {
      report("MPI_Wait left the request of %s not MPI_REQUEST_NULL; %s", call_name(k, f).c_str(), x.ctx.c_str());
      ok = false;
    }
  }
  return compare(x, b, ref, what) && ok;
}

// ---- A: nonblocking, and the new blocking forms -------------------------------------------
class Nonblocking : public ::testing::TestWithParam<K> {};

void nonblocking_matrix(K k, bool device) {
  CaseComms cc(k);
  bool ok = true;
  for (const Spec &s : cc.a()) ok = run_one(k, cc.of(s), s, Form::Nonblocking, device) && ok;
  EXPECT_ALL_RANKS(ok);
}

TEST_P(Nonblocking, Host) { nonblocking_matrix(GetParam(), false); }
TEST_P(Nonblocking, Device) {
  SKIP_WITHOUT_DEVICE();
  nonblocking_matrix(GetParam(), true);
}
INSTANTIATE_TEST_SUITE_P(All, Nonblocking, ::testing::ValuesIn(all_kinds()),
                         [](const ::testing::TestParamInfo<K> &i) { return test_name(i.param); });

class Blocking : public ::testing::TestWithParam<K> {};
void blocking_matrix(K k, bool device) {
  CaseComms cc(k);
  bool ok = true;
  for (const Spec &s : cc.a()) ok = run_one(k, cc.of(s), s, Form::Blocking, device) && ok;
  EXPECT_ALL_RANKS(ok);
}
TEST_P(Blocking, Host) { blocking_matrix(GetParam(), false); }
TEST_P(Blocking, Device) {
  SKIP_WITHOUT_DEVICE();
  blocking_matrix(GetParam(), true);
}
INSTANTIATE_TEST_SUITE_P(New, Blocking,
                         ::testing::Values(K::Barrier, K::Alltoallv, K::Scan, K::Exscan, K::Alltoallw,
                                           K::NeighborAllgather, K::NeighborAllgatherv, K::NeighborAlltoall,
                                           K::NeighborAlltoallv, K::NeighborAlltoallw),
                         [](const ::testing::TestParamInfo<K> &i) { return test_name(i.param); });

// ---- B: persistent ---------------------------------------------------------------------
#define SKIP_WITHOUT_PERSISTENT()                                                              \
  do {                                                                                         \
    if (!NB_HAVE_PERSISTENT) GTEST_SKIP() << "this MPI has no persistent collectives (MPI-4)"; \
  } while (0)

// MPICH 4.0.2's own persistent MPI_Allgather_init, MPI_Gather_init and MPI_Scatter_init
// (with gcoll off, or without it: a plain MPICH program) deliver only this rank's own block
// from the second MPI_Start on (np 2: the other rank's block keeps what the buffer held
// before). Under MPICH those are started once. Its MPI_Gather_init is wrong from the first
// start: it reads non-roots' send buffers at the init, not at the start, and never writes
// the root's own block (np 2 and 4, root 0 and last; a plain MPICH program shows it):
// skipped under MPICH.
bool mpich_persistent_broken(K k) { return mpich() && k == K::Gather; }
int persistent_starts(K k) {
  if (mpich() && (k == K::Allgather || k == K::Gather || k == K::Scatter)) return 1;
  return 3;
}

bool persistent_case(K k, const TestComm &c, const Spec &s, bool device) {
  Case x = make_case(k, c, s, Form::Persistent);
  const std::string init = call_name(k, Form::Persistent);
  x.inputs(seed());
  Bufs b(x, device);
  b.upload(x);
  set_phase("%s %s (%s)", init.c_str(), x.ctx.c_str(), device ? "device" : "host");
  MPI_Request req = MPI_REQUEST_NULL;
  if (!rc_ok(x.call(Form::Persistent, b.sp(), b.rp(), &req), init, x.ctx)) return false;
  bool ok = true;
  for (int it = 0; it < persistent_starts(k); ++it) {
    // New inputs (and a new receive buffer image) in the same buffers: the started call
    // must read them, not those of the init or of the previous start.
    x.inputs(seed());
    b.upload(x);
    const std::vector<unsigned char> ref = reference(x, &ok);
    set_phase("%s start %d %s (%s)", init.c_str(), it + 1, x.ctx.c_str(), device ? "device" : "host");
    int rc = MPI_Start(&req);
    if (!rc_ok(rc, "MPI_Start", x.ctx)) return false;
    MPI_Status st;
    rc = MPI_Wait(&req, &st);
    if (!rc_ok(rc, "MPI_Wait", x.ctx)) return false;
    if (req == MPI_REQUEST_NULL) {
      report("MPI_Wait set the persistent request of %s to MPI_REQUEST_NULL (start %d); %s", init.c_str(), it + 1,
             x.ctx.c_str());
      return false;
    }
    ok = compare(x, b, ref, init + " start " + std::to_string(it + 1) + " + MPI_Wait") && ok;
  }
  const int rc = MPI_Request_free(&req);
  if (!rc_ok(rc, "MPI_Request_free (inactive persistent request)", x.ctx)) return false;
  if (req != MPI_REQUEST_NULL) {
    report("MPI_Request_free left the persistent request of %s not MPI_REQUEST_NULL; %s", init.c_str(),
           x.ctx.c_str());
    ok = false;
  }
  return ok;
}

class Persistent : public ::testing::TestWithParam<K> {};
void persistent_matrix(K k, bool device) {
  CaseComms cc(k);
  bool ok = true;
  for (const Spec &s : cc.b()) ok = persistent_case(k, cc.of(s), s, device) && ok;
  EXPECT_ALL_RANKS(ok);
}
#define SKIP_IF_MPI_BROKEN(k)                                                                               \
  do {                                                                                                      \
    if (mpich_persistent_broken(k)) GTEST_SKIP() << "MPICH 4.0.2's own " << call_name(k, Form::Persistent) \
                                                 << " is wrong (see mpich_persistent_broken)";             \
  } while (0)
TEST_P(Persistent, Host) {
  SKIP_WITHOUT_PERSISTENT();
  SKIP_IF_MPI_BROKEN(GetParam());
  persistent_matrix(GetParam(), false);
}
TEST_P(Persistent, Device) {
  SKIP_WITHOUT_PERSISTENT();
  SKIP_IF_MPI_BROKEN(GetParam());
  SKIP_WITHOUT_DEVICE();
  persistent_matrix(GetParam(), true);
}
INSTANTIATE_TEST_SUITE_P(All, Persistent, ::testing::ValuesIn(all_kinds()),
                         [](const ::testing::TestParamInfo<K> &i) { return test_name(i.param); });

// ---- MPI_Reduce_local: blocking only, no communicator --------------------------------------
// inbuf and inoutbuf on the host or the device (both, or one of each): MPI_INT and MPI_DOUBLE,
// MPI_SUM and MPI_MAX, counts 0, 1, 1000, against PMPI_Reduce_local on host copies (exact:
// one operation on the same two values). inbuf and the guard bytes unchanged.
enum class Where { Host, Device, DeviceInHostInout, HostInDeviceInout };
const char *where_name(Where w) {
  switch (w) {
    case Where::Host: return "Host";
    case Where::Device: return "Device";
    case Where::DeviceInHostInout: return "DeviceInHostInout";
    case Where::HostInDeviceInout: return "HostInDeviceInout";
  }
  return "?";
}
void PrintTo(Where w, std::ostream *os) { *os << where_name(w); }

class ReduceLocal : public ::testing::TestWithParam<Where> {};
TEST_P(ReduceLocal, Blocking) {
  const Where w = GetParam();
  const bool in_dev = w == Where::Device || w == Where::DeviceInHostInout;
  const bool inout_dev = w == Where::Device || w == Where::HostInDeviceInout;
  if (in_dev || inout_dev) SKIP_WITHOUT_DEVICE();
  TestComm none;  // MPI_COMM_NULL: no communicator
  none.name = "none";
  none.size = 1;
  bool ok = true;
  for (MPI_Datatype t : {MPI_INT, MPI_DOUBLE})
    for (MPI_Op op : {MPI_SUM, MPI_MAX})
      for (int count : {0, 1, 1000}) {
        Case x = make_case(K::ReduceLocal, none, Spec{t, count, false, false, false, false, op}, Form::Blocking);
        x.inputs(seed());
        x.ctx += std::string(" inbuf ") + (in_dev ? "device" : "host") + ", inoutbuf " +
                 (inout_dev ? "device" : "host");
        set_phase("MPI_Reduce_local %s", x.ctx.c_str());
        const std::vector<unsigned char> ref = reference(x, &ok);
        Bufs b(x, false);
        b.s.reset(new Mem(in_dev, x.send_init.size()));
        b.r.reset(new Mem(inout_dev, x.recv_init.size()));
        b.upload(x);
        if (!rc_ok(x.call(Form::Blocking, b.sp(), b.rp(), nullptr), "MPI_Reduce_local", x.ctx)) {
          ok = false;
          continue;
        }
        ok = compare(x, b, ref, "MPI_Reduce_local") && ok;
      }
  EXPECT_ALL_RANKS(ok);
}
INSTANTIATE_TEST_SUITE_P(Buffers, ReduceLocal,
                         ::testing::Values(Where::Host, Where::Device, Where::DeviceInHostInout,
                                           Where::HostInDeviceInout),
                         [](const ::testing::TestParamInfo<Where> &i) { return std::string(where_name(i.param)); });

// MPI_Startall on two persistent requests on two communicators (dup of world, split),
// two rounds with new inputs.
void startall_two_comms(bool dev_a, bool dev_b) {
  ScopedComm dup(CommKind::Dup), split(CommKind::SplitOddEven);
  Case a = make_case(K::Allreduce, *dup, Spec{MPI_DOUBLE, 1000, false, false, false});
  Case b = make_case(K::Allgatherv, *split, Spec{MPI_INT, 7, false, false, true});
  a.inputs(seed());
  b.inputs(seed());
  Bufs ba(a, dev_a), bb(b, dev_b);
  ba.upload(a);
  bb.upload(b);
  bool ok = true;
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  set_phase("persistent init of two requests");
  ok = rc_ok(a.call(Form::Persistent, ba.sp(), ba.rp(), &reqs[0]), call_name(a.k, Form::Persistent), a.ctx) && ok;
  ok = rc_ok(b.call(Form::Persistent, bb.sp(), bb.rp(), &reqs[1]), call_name(b.k, Form::Persistent), b.ctx) && ok;
  for (int round = 0; ok && round < 2; ++round) {
    a.inputs(seed());
    b.inputs(seed());
    ba.upload(a);
    bb.upload(b);
    const std::vector<unsigned char> ra = reference(a, &ok), rb = reference(b, &ok);
    set_phase("MPI_Startall round %d", round + 1);
    ok = rc_ok(MPI_Startall(2, reqs), "MPI_Startall", a.ctx + " and " + b.ctx) && ok;
    MPI_Status sts[2];
    ok = rc_ok(MPI_Waitall(2, reqs, sts), "MPI_Waitall", a.ctx + " and " + b.ctx) && ok;
    if (reqs[0] == MPI_REQUEST_NULL || reqs[1] == MPI_REQUEST_NULL) {
      report("MPI_Waitall set a persistent request to MPI_REQUEST_NULL (round %d)", round + 1);
      ok = false;
      break;
    }
    const std::string w = "MPI_Startall round " + std::to_string(round + 1) + " + MPI_Waitall";
    ok = compare(a, ba, ra, w) && ok;
    ok = compare(b, bb, rb, w) && ok;
  }
  for (MPI_Request &r : reqs)
    if (r != MPI_REQUEST_NULL) ok = rc_ok(MPI_Request_free(&r), "MPI_Request_free", "startall") && ok;
  EXPECT_ALL_RANKS(ok);
}
TEST(PersistentStartall, TwoCommsHost) {
  SKIP_WITHOUT_PERSISTENT();
  startall_two_comms(false, false);
}
TEST(PersistentStartall, TwoCommsDeviceAndHost) {
  SKIP_WITHOUT_PERSISTENT();
  SKIP_WITHOUT_DEVICE();
  startall_two_comms(true, false);
}
TEST(PersistentStartall, TwoCommsDevice) {
  SKIP_WITHOUT_PERSISTENT();
  SKIP_WITHOUT_DEVICE();
  startall_two_comms(true, true);
}

// ---- C: completion through every call ---------------------------------------------------------
enum class Completion { Wait, Test, Waitall, Testall, Waitany, Testany, Waitsome, Testsome, GetStatus };
const char *completion_name(Completion c) {
  switch (c) {
    case Completion::Wait: return "MPI_Wait";
    case Completion::Test: return "MPI_Test";
    case Completion::Waitall: return "MPI_Waitall";
    case Completion::Testall: return "MPI_Testall";
    case Completion::Waitany: return "MPI_Waitany";
    case Completion::Testany: return "MPI_Testany";
    case Completion::Waitsome: return "MPI_Waitsome";
    case Completion::Testsome: return "MPI_Testsome";
    case Completion::GetStatus: return "MPI_Request_get_status";
  }
  return "?";
}

void PrintTo(Completion c, std::ostream *os) { *os << completion_name(c); }

constexpr int kTag = 4242;
constexpr int kP2P = 16;

// The mixed array: [Iallreduce host, NULL, Irecv, Iallgatherv (device), Isend, persistent
// Reduce (device, started), NULL, Iexscan (device)].
struct Mixed {
  enum Kind { Null, Coll, Pers, Send, Recv };
  struct Entry {
    Kind kind = Null;
    Case *x = nullptr;
    Bufs *b = nullptr;
    std::vector<unsigned char> ref;
    bool done = false;
  };
  TestComm world, dup, split;
  Case ca, cb, cc, cd;
  std::unique_ptr<Bufs> ba, bb, bc, bd;
  std::vector<Entry> e;
  std::vector<MPI_Request> r;
  std::vector<int> sendbuf, recvbuf;
  int left = 0, right = 0;
  bool ok = true;
  bool dev = false;

  Mixed(bool device, bool persistent) : dev(device) {
    world = make_comm(CommKind::World);
    dup = make_comm(CommKind::Dup);
    split = make_comm(CommKind::SplitOddEven);
    ca = make_case(K::Allreduce, world, Spec{MPI_INT, 7, false, false, false});
    cb = make_case(K::Allgatherv, split, Spec{MPI_DOUBLE, 7, false, false, true});
    cc = make_case(K::Reduce, dup, Spec{MPI_INT, 1000, false, true, false});
    cd = make_case(K::Exscan, world, Spec{MPI_DOUBLE, 1000, false, false, false});
    for (Case *x : {&ca, &cb, &cc, &cd}) x->inputs(seed());
    ba.reset(new Bufs(ca, false));
    bb.reset(new Bufs(cb, dev));
    bc.reset(new Bufs(cc, dev));
    bd.reset(new Bufs(cd, dev));
    e.resize(8);
    e[0] = Entry{Coll, &ca, ba.get(), {}, false};
    e[2] = Entry{Recv, nullptr, nullptr, {}, false};
    e[3] = Entry{Coll, &cb, bb.get(), {}, false};
    e[4] = Entry{Send, nullptr, nullptr, {}, false};
    e[5] = Entry{persistent ? Pers : Coll, &cc, bc.get(), {}, false};
    e[7] = Entry{Coll, &cd, bd.get(), {}, false};
    r.assign(e.size(), MPI_REQUEST_NULL);
    left = (world.rank + world.size - 1) % world.size;
    right = (world.rank + 1) % world.size;
    sendbuf.resize(kP2P);
    for (int i = 0; i < kP2P; ++i) sendbuf[static_cast<size_t>(i)] = world.rank * 1000 + i;
    recvbuf.assign(kP2P, -1);
  }
  ~Mixed() {
    for (size_t i = 0; i < r.size(); ++i)
      if (r[i] != MPI_REQUEST_NULL && e[i].kind == Pers) MPI_Request_free(&r[i]);
    free_comm(split);
    free_comm(dup);
    free_comm(world);
  }

  // References first (blocking PMPI calls), then every request started.
  void start() {
    for (Entry &x : e)
      if (x.x) {
        x.b->upload(*x.x);
        x.ref = reference(*x.x, &ok);
      }
#if NB_HAVE_PERSISTENT
    if (e[5].kind == Pers)
      ok = rc_ok(cc.call(Form::Persistent, bc->sp(), bc->rp(), &r[5]), call_name(cc.k, Form::Persistent), cc.ctx) &&
           ok;
#endif
    ok = rc_ok(MPI_Irecv(recvbuf.data(), kP2P, MPI_INT, left, kTag, MPI_COMM_WORLD, &r[2]), "MPI_Irecv", "p2p") && ok;
    ok = rc_ok(ca.call(Form::Nonblocking, ba->sp(), ba->rp(), &r[0]), "MPI_Iallreduce", ca.ctx) && ok;
    ok = rc_ok(MPI_Isend(sendbuf.data(), kP2P, MPI_INT, right, kTag, MPI_COMM_WORLD, &r[4]), "MPI_Isend", "p2p") && ok;
    ok = rc_ok(cb.call(Form::Nonblocking, bb->sp(), bb->rp(), &r[3]), "MPI_Iallgatherv", cb.ctx) && ok;
    if (e[5].kind == Pers)
      ok = rc_ok(MPI_Start(&r[5]), "MPI_Start", cc.ctx) && ok;
    else
      ok = rc_ok(cc.call(Form::Nonblocking, bc->sp(), bc->rp(), &r[5]), "MPI_Ireduce", cc.ctx) && ok;
    ok = rc_ok(cd.call(Form::Nonblocking, bd->sp(), bd->rp(), &r[7]), "MPI_Iexscan", cd.ctx) && ok;
  }

  // Entry i reported complete by `how` (st: its status, or nullptr when ignored). False
  // when the report is wrong (an index out of range, a second report): the caller stops
  // (an MPI that reports an entry again would report it forever).
  bool completed(size_t i, const MPI_Status *st, const std::string &how) {
    if (i >= e.size()) {
      report("%s reported index %zu (array of %zu)", how.c_str(), i, e.size());
      ok = false;
      return false;
    }
    Entry &x = e[i];
    if (x.kind == Null) {
      if (st && (st->MPI_SOURCE != MPI_ANY_SOURCE || st->MPI_TAG != MPI_ANY_TAG)) {
        report("%s: entry %zu (MPI_REQUEST_NULL): status not empty (MPI_SOURCE %d, MPI_TAG %d)", how.c_str(), i,
               st->MPI_SOURCE, st->MPI_TAG);
        ok = false;
      }
      return true;
    }
    if (x.done) {
      report("%s reported entry %zu (%s) complete a second time", how.c_str(), i,
             x.kind == Pers ? "a persistent collective, inactive since its first report" : "already completed");
      ok = false;
      return false;
    }
    x.done = true;
    if (x.kind == Recv) {
      for (int j = 0; j < kP2P; ++j)
        if (recvbuf[static_cast<size_t>(j)] != left * 1000 + j) {
          report("%s: point-to-point message element %d: got %d, expected %d", how.c_str(), j,
                 recvbuf[static_cast<size_t>(j)], left * 1000 + j);
          ok = false;
          break;
        }
      if (st) {
        int n = -1;
        MPI_Get_count(st, MPI_INT, &n);
        if (st->MPI_SOURCE != left || st->MPI_TAG != kTag || n != kP2P) {
          report("%s: status of the MPI_Irecv (entry %zu): MPI_SOURCE %d, MPI_TAG %d, count %d; expected %d, %d, %d",
                 how.c_str(), i, st->MPI_SOURCE, st->MPI_TAG, n, left, kTag, kP2P);
          ok = false;
        }
      }
      return true;
    }
    if (x.kind == Send) return true;
    ok = compare(*x.x, *x.b, x.ref, how + " (entry " + std::to_string(i) + ")") && ok;
    return true;
  }

  // After completion: non-persistent entries MPI_REQUEST_NULL, the persistent one not.
  void check_handles(const std::string &how) {
    for (size_t i = 0; i < e.size(); ++i) {
      if (e[i].kind != Null && !e[i].done) {
        report("%s: entry %zu never reported complete", how.c_str(), i);
        ok = false;
      }
      const bool want_null = e[i].kind != Pers;
      if ((r[i] == MPI_REQUEST_NULL) != want_null) {
        report("%s: entry %zu (%s) is %sMPI_REQUEST_NULL after completion", how.c_str(), i,
               e[i].kind == Pers ? "persistent collective" : "non-persistent", want_null ? "not " : "");
        ok = false;
      }
    }
  }
};

// MPICH 4.0.2's own MPI_Testall returns MPI_ERR_IN_STATUS (every MPI_ERROR field 0) for an
// array holding a started persistent collective request, and its MPI_Waitany, MPI_Testany,
// MPI_Waitsome and MPI_Testsome report a completed (inactive) persistent collective request
// again at every call instead of ignoring it (gcoll off, or a plain MPICH program). Under
// MPICH those calls get the Reduce of entry 5 as MPI_Ireduce instead.
bool persistent_entry(Completion how) {
  if (!NB_HAVE_PERSISTENT) return false;
  if (mpich())
    return how == Completion::Wait || how == Completion::Test || how == Completion::Waitall ||
           how == Completion::GetStatus;
  return true;
}

void completion_test(Completion how, bool real_status) {
  const bool dev = device_everywhere();
  Mixed m(dev, persistent_entry(how));
  const std::string name = std::string(completion_name(how)) + (real_status ? " (statuses)" : " (MPI_STATUS(ES)_IGNORE)");
  set_phase("%s: starting", name.c_str());
  m.start();
  const int n = static_cast<int>(m.r.size());
  std::vector<MPI_Status> sts(m.r.size());
  MPI_Status *stv = real_status ? sts.data() : MPI_STATUSES_IGNORE;
  for (MPI_Status &s : sts) {
    s.MPI_SOURCE = -7;
    s.MPI_TAG = -7;
  }
  set_phase("%s: completing", name.c_str());
  switch (how) {
    case Completion::Wait:
      for (int i = n - 1; i >= 0; --i) {  // the last started first
        MPI_Status st;
        if (!rc_ok(MPI_Wait(&m.r[static_cast<size_t>(i)], real_status ? &st : MPI_STATUS_IGNORE), name, "entry")) {
          m.ok = false;
          continue;
        }
        m.completed(static_cast<size_t>(i), real_status ? &st : nullptr, name);
      }
      break;
    case Completion::Test: {
      std::vector<bool> fin(m.r.size(), false);
      for (int left = n; left > 0;) {
        for (int i = 0; i < n; ++i) {
          if (fin[static_cast<size_t>(i)]) continue;
          int flag = 0;
          MPI_Status st;
          if (!rc_ok(MPI_Test(&m.r[static_cast<size_t>(i)], &flag, real_status ? &st : MPI_STATUS_IGNORE), name,
                     "entry")) {
            m.ok = false;
            flag = 1;
          }
          if (flag) {
            fin[static_cast<size_t>(i)] = true;
            --left;
            m.completed(static_cast<size_t>(i), real_status ? &st : nullptr, name);
          }
        }
      }
      break;
    }
    case Completion::Waitall:
      m.ok = rc_ok(MPI_Waitall(n, m.r.data(), stv), name, "array") && m.ok;
      for (int i = 0; i < n; ++i) m.completed(static_cast<size_t>(i), real_status ? &sts[static_cast<size_t>(i)] : nullptr, name);
      break;
    case Completion::Testall: {
      int flag = 0;
      while (!flag) {
        if (!rc_ok(MPI_Testall(n, m.r.data(), &flag, stv), name, "array")) {
          m.ok = false;
          break;
        }
      }
      for (int i = 0; i < n; ++i) m.completed(static_cast<size_t>(i), real_status ? &sts[static_cast<size_t>(i)] : nullptr, name);
      break;
    }
    case Completion::Waitany:
    case Completion::Testany:
      for (int guard = 0; guard < 1000000000; ++guard) {
        int idx = -1, flag = 1;
        MPI_Status st;
        MPI_Status *sp = real_status ? &st : MPI_STATUS_IGNORE;
        const int rc = how == Completion::Waitany ? MPI_Waitany(n, m.r.data(), &idx, sp)
                                                  : MPI_Testany(n, m.r.data(), &idx, &flag, sp);
        if (!rc_ok(rc, name, "array")) {
          m.ok = false;
          break;
        }
        if (!flag) continue;
        if (idx == MPI_UNDEFINED) break;
        if (!m.completed(static_cast<size_t>(idx), real_status ? &st : nullptr, name)) break;
      }
      break;
    case Completion::Waitsome:
    case Completion::Testsome:
      for (;;) {
        int out = -1;
        std::vector<int> idx(m.r.size(), -1);
        const int rc = how == Completion::Waitsome ? MPI_Waitsome(n, m.r.data(), &out, idx.data(), stv)
                                                   : MPI_Testsome(n, m.r.data(), &out, idx.data(), stv);
        if (!rc_ok(rc, name, "array")) {
          m.ok = false;
          break;
        }
        if (out == MPI_UNDEFINED) break;
        bool good = true;
        for (int j = 0; j < out; ++j)
          good = m.completed(static_cast<size_t>(idx[static_cast<size_t>(j)]),
                             real_status ? &sts[static_cast<size_t>(j)] : nullptr, name) &&
                 good;
        if (!good) break;
      }
      break;
    case Completion::GetStatus: {
      std::vector<bool> fin(m.r.size(), false);
      for (int left = n; left > 0;) {
        for (int i = 0; i < n; ++i) {
          const size_t u = static_cast<size_t>(i);
          if (fin[u]) continue;
          int flag = 0;
          MPI_Status st;
          if (!rc_ok(MPI_Request_get_status(m.r[u], &flag, real_status ? &st : MPI_STATUS_IGNORE), name, "entry")) {
            m.ok = false;
            flag = 1;
          }
          if (!flag) continue;
          fin[u] = true;
          --left;
          // Complete as far as MPI_Request_get_status says: the results are there (device
          // buffers included) before the request is released.
          m.completed(u, real_status ? &st : nullptr, name);
          if (m.r[u] == MPI_REQUEST_NULL) {
            if (m.e[u].kind != Mixed::Null) {
              report("%s set entry %zu to MPI_REQUEST_NULL", name.c_str(), u);
              m.ok = false;
            }
            continue;
          }
          // Then released: the point-to-point ones by MPI_Request_free, the collectives
          // by MPI_Wait (MPI_Request_free of a collective request is erroneous).
          const bool p2p = m.e[u].kind == Mixed::Send || m.e[u].kind == Mixed::Recv;
          const int rc = p2p ? MPI_Request_free(&m.r[u]) : MPI_Wait(&m.r[u], MPI_STATUS_IGNORE);
          m.ok = rc_ok(rc, p2p ? "MPI_Request_free after MPI_Request_get_status" : "MPI_Wait after MPI_Request_get_status",
                       "entry " + std::to_string(u)) &&
                 m.ok;
          if (m.e[u].x) m.ok = compare(*m.e[u].x, *m.e[u].b, m.e[u].ref, name + " then MPI_Wait") && m.ok;
        }
      }
      break;
    }
  }
  m.check_handles(name);
  // After a wrong report the loop stopped: complete whatever is still active before the
  // buffers and communicators go.
  if (!m.ok) MPI_Waitall(n, m.r.data(), MPI_STATUSES_IGNORE);
  EXPECT_ALL_RANKS(m.ok);
}

class CompletionTest : public ::testing::TestWithParam<Completion> {};
TEST_P(CompletionTest, StatusesIgnored) { completion_test(GetParam(), false); }
TEST_P(CompletionTest, Statuses) { completion_test(GetParam(), true); }
INSTANTIATE_TEST_SUITE_P(Completion, CompletionTest,
                         ::testing::Values(Completion::Wait, Completion::Test, Completion::Waitall,
                                           Completion::Testall, Completion::Waitany, Completion::Testany,
                                           Completion::Waitsome, Completion::Testsome, Completion::GetStatus),
                         [](const ::testing::TestParamInfo<Completion> &i) {
                           return camel(completion_name(i.param) + 4);  // without "MPI_"
                         });

// ---- D: no deadlock ------------------------------------------------------------------------
// Rank 0 starts its MPI_Iallreduce (device buffers), then sends rank 1 a message, then waits;
// rank 1 receives that message (MPI_Irecv + MPI_Wait) before it starts its MPI_Iallreduce.
// Legal: gcoll must not block inside MPI_Iallreduce (an agreement, a blocking staging call).
// GCOLLTEST_NB_WARM=1: the cases' calls once each (+ MPI_Wait), then a barrier on each
// communicator: the engine then takes the next nonblocking calls of these kinds (the
// engine's nonblocking path needs its setup and the memory kinds agreed, which only a
// blocking call makes: coll/async_queue.h). Without the setting: nothing.
bool warm(const std::vector<Case> &cases, bool dev) {
  if (env_int("GCOLLTEST_NB_WARM") != 1) return true;
  bool ok = true;
  std::vector<MPI_Comm> comms;
  for (const Case &c : cases) {
    Case x = c;
    x.inputs(seed());
    Bufs w(x, dev);
    w.upload(x);
    MPI_Request r = MPI_REQUEST_NULL;
    ok = rc_ok(x.call(Form::Nonblocking, w.sp(), w.rp(), &r), call_name(x.k, Form::Nonblocking), x.ctx + " (warm-up)") &&
         rc_ok(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx + " (warm-up)") && ok;
    if (std::find(comms.begin(), comms.end(), x.comm) == comms.end()) comms.push_back(x.comm);
  }
  for (MPI_Comm c : comms) ok = rc_ok(MPI_Barrier(c), "MPI_Barrier", "warm-up") && ok;
  return ok;
}

// One case ready to be checked: its inputs, its warm-up (warm()), the PMPI reference and
// its buffers uploaded.
struct Checked {
  Case x;
  std::vector<unsigned char> ref;
  std::unique_ptr<Bufs> b;
  Checked(const Case &c, bool dev, bool *ok) : x(c) {
    x.inputs(seed());
    *ok = warm(std::vector<Case>{x}, dev) && *ok;
    ref = reference(x, ok);
    b.reset(new Bufs(x, dev));
    b->upload(x);
  }
};

TEST(NoDeadlock, P2PAfterIallreduceStart) {
  const bool dev = device_everywhere();
  ScopedComm dup(CommKind::Dup);
  bool ok = true;
  Checked c(make_case(K::Allreduce, *dup, Spec{MPI_DOUBLE, 1000, false, false, false}), dev, &ok);
  const Case &x = c.x;
  Bufs &b = *c.b;
  const std::vector<unsigned char> &ref = c.ref;
  MPI_Request req = MPI_REQUEST_NULL;
  const int me = world_rank();
  int token = 12345 + me;
  if (me == 1) {
    set_phase("rank 1 waits for rank 0's message");
    MPI_Request rr;
    int got = -1;
    ok = rc_ok(MPI_Irecv(&got, 1, MPI_INT, 0, kTag, MPI_COMM_WORLD, &rr), "MPI_Irecv", "token") && ok;
    ok = rc_ok(MPI_Wait(&rr, MPI_STATUS_IGNORE), "MPI_Wait (token)", "token") && ok;
    if (got != 12345) {
      report("token from rank 0: %d", got);
      ok = false;
    }
  }
  set_phase("MPI_Iallreduce");
  ok = rc_ok(x.call(Form::Nonblocking, b.sp(), b.rp(), &req), "MPI_Iallreduce", x.ctx) && ok;
  if (me == 0 && world_size() > 1) {
    set_phase("rank 0 sends to rank 1 after starting its MPI_Iallreduce");
    ok = rc_ok(MPI_Send(&token, 1, MPI_INT, 1, kTag, MPI_COMM_WORLD), "MPI_Send", "token") && ok;
  }
  set_phase("MPI_Wait on the MPI_Iallreduce");
  ok = rc_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx) && ok;
  ok = compare(x, b, ref, "MPI_Iallreduce (p2p in between) + MPI_Wait") && ok;
  EXPECT_ALL_RANKS(ok);
}

// Rank 0 starts its MPI_Iallreduce and blocks in an MPI_Recv from rank 1; rank 1 (and the
// others) wait for the collective, and only then does rank 1 send. The collective must
// complete while rank 0 sits in the receive: the MPI progresses its own nonblocking
// collectives there, and under the engine only rank 0's progress thread can run its part.
// Before the start (after one call that starts the communicator's progress thread) every
// rank idles for 50 ms, longer than the progress thread watches its queue after its last op
// (coll/async_queue.h: kWatchMs): the start must wake a sleeping thread (a start that left
// it asleep hangs here).
TEST(NoDeadlock, PeerReceivesWhileOthersWaitAfterIdle) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const bool dev = device_everywhere();
  ScopedComm dup(CommKind::Dup);
  bool ok = true;
  Checked c(make_case(K::Allreduce, *dup, Spec{MPI_DOUBLE, 1000, false, false, false}), dev, &ok);
  const Case &x = c.x;
  Bufs &b = *c.b;
  MPI_Request req = MPI_REQUEST_NULL;
  const int me = world_rank();
  // One call first (under the engine: the communicator's progress thread starts with it).
  set_phase("MPI_Iallreduce before the idle time");
  ok = rc_ok(x.call(Form::Nonblocking, b.sp(), b.rp(), &req), "MPI_Iallreduce", x.ctx) && ok;
  ok = rc_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx) && ok;
  usleep(50 * 1000);
  set_phase("MPI_Iallreduce after 50 ms idle");
  ok = rc_ok(x.call(Form::Nonblocking, b.sp(), b.rp(), &req), "MPI_Iallreduce", x.ctx) && ok;
  int token = -1;
  if (me == 0) {
    set_phase("rank 0 in MPI_Recv from rank 1, its MPI_Iallreduce outstanding");
    ok = rc_ok(MPI_Recv(&token, 1, MPI_INT, 1, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv", "token") && ok;
    if (token != 4321) {
      report("token from rank 1: %d", token);
      ok = false;
    }
  }
  set_phase("MPI_Wait on the MPI_Iallreduce");
  ok = rc_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx) && ok;
  if (me == 1) {
    token = 4321;
    set_phase("rank 1 sends to rank 0 after its MPI_Iallreduce completed");
    ok = rc_ok(MPI_Send(&token, 1, MPI_INT, 0, kTag, MPI_COMM_WORLD), "MPI_Send", "token") && ok;
  }
  ok = compare(x, b, c.ref, "MPI_Iallreduce + MPI_Wait while rank 0 receives") && ok;
  EXPECT_ALL_RANKS(ok);
}

// 8 MPI_Iallreduce on a dup and 8 MPI_Ibcast on a split, interleaved, all outstanding,
// completed by one MPI_Waitall on the array in reverse order.
TEST(NoDeadlock, ManyOutstandingReverseWaitall) {
  const bool dev = device_everywhere();
  ScopedComm dup(CommKind::Dup), split(CommKind::SplitOddEven);
  constexpr int kEach = 8;
  std::vector<Case> cs;
  for (int i = 0; i < kEach; ++i) {
    cs.push_back(make_case(K::Allreduce, *dup, Spec{i % 2 ? MPI_DOUBLE : MPI_INT, 7 + 131 * i, false, false, false}));
    cs.push_back(make_case(K::Bcast, *split, Spec{i % 2 ? MPI_INT : MPI_DOUBLE, 100 + 37 * i, false, i % 2 == 1, true}));
  }
  bool ok = warm(cs, dev);
  std::vector<std::vector<unsigned char>> refs;
  std::vector<std::unique_ptr<Bufs>> bufs;
  for (Case &x : cs) {
    x.inputs(seed());
    refs.push_back(reference(x, &ok));
    bufs.emplace_back(new Bufs(x, dev));
    bufs.back()->upload(x);
  }
  const size_t n = cs.size();
  std::vector<MPI_Request> reqs(n, MPI_REQUEST_NULL);
  set_phase("starting %zu nonblocking collectives", n);
  for (size_t i = 0; i < n; ++i)  // issue order i; array position n-1-i
    ok = rc_ok(cs[i].call(Form::Nonblocking, bufs[i]->sp(), bufs[i]->rp(), &reqs[n - 1 - i]),
               call_name(cs[i].k, Form::Nonblocking), cs[i].ctx) &&
         ok;
  set_phase("MPI_Waitall on %zu requests in reverse order", n);
  std::vector<MPI_Status> sts(n);
  ok = rc_ok(MPI_Waitall(static_cast<int>(n), reqs.data(), sts.data()), "MPI_Waitall", "16 requests") && ok;
  for (size_t i = 0; i < n; ++i) {
    if (reqs[n - 1 - i] != MPI_REQUEST_NULL) {
      report("MPI_Waitall left request %zu not MPI_REQUEST_NULL", n - 1 - i);
      ok = false;
    }
    ok = compare(cs[i], *bufs[i], refs[i], call_name(cs[i].k, Form::Nonblocking) + " #" + std::to_string(i) +
                                               " + one MPI_Waitall") &&
         ok;
  }
  EXPECT_ALL_RANKS(ok);
}

// Rank 0 waits for any of its MPI_Iallreduce and a receive from rank 1; rank 1 sends,
// then waits for rank 0's answer before it starts its MPI_Iallreduce. The receive must
// complete first: a completion call that waited for the collective first would never
// return (the collective cannot end before rank 1 starts it).
TEST(NoDeadlock, WaitanyReceiveBeforeCollective) {
  const bool dev = device_everywhere();
  ScopedComm dup(CommKind::Dup);
  bool ok = true;
  Checked c(make_case(K::Allreduce, *dup, Spec{MPI_DOUBLE, 1000, false, false, false}), dev, &ok);
  const Case &x = c.x;
  Bufs &b = *c.b;
  const std::vector<unsigned char> &ref = c.ref;
  const int me = world_rank();
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int got = -1, token = 777;
  if (me == 1) {
    set_phase("rank 1: send, then wait for rank 0's answer");
    ok = rc_ok(MPI_Send(&token, 1, MPI_INT, 0, kTag, MPI_COMM_WORLD), "MPI_Send", "token") && ok;
    ok = rc_ok(MPI_Recv(&got, 1, MPI_INT, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv", "answer") && ok;
  }
  set_phase("MPI_Iallreduce");
  ok = rc_ok(x.call(Form::Nonblocking, b.sp(), b.rp(), &r[0]), "MPI_Iallreduce", x.ctx) && ok;
  if (me == 0 && world_size() > 1) {
    set_phase("rank 0: MPI_Waitany on the collective and a receive from rank 1");
    ok = rc_ok(MPI_Irecv(&got, 1, MPI_INT, 1, kTag, MPI_COMM_WORLD, &r[1]), "MPI_Irecv", "token") && ok;
    int index = -1;
    ok = rc_ok(MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE), "MPI_Waitany", x.ctx) && ok;
    if (index != 1 || got != token) {
      report("MPI_Waitany returned index %d (expected 1: the receive), token %d", index, got);
      ok = false;
    }
    ok = rc_ok(MPI_Send(&token, 1, MPI_INT, 1, kTag, MPI_COMM_WORLD), "MPI_Send", "answer") && ok;
  }
  set_phase("MPI_Wait on the MPI_Iallreduce");
  ok = rc_ok(MPI_Wait(&r[0], MPI_STATUS_IGNORE), "MPI_Wait", x.ctx) && ok;
  ok = compare(x, b, ref, "MPI_Iallreduce + MPI_Waitany with a receive") && ok;
  EXPECT_ALL_RANKS(ok);
}

// Two communicators, their collectives started in opposite orders on even and odd ranks
// (MPI orders collectives per communicator only), and a blocking call on the first in
// between: completed by one MPI_Waitall.
TEST(NoDeadlock, TwoCommsOppositeOrdersAndBlocking) {
  const bool dev = device_everywhere();
  ScopedComm a(CommKind::Dup), c(CommKind::Dup);
  std::vector<Case> cs;
  cs.push_back(make_case(K::Allreduce, *a, Spec{MPI_INT, 1000, false, false, false}));
  cs.push_back(make_case(K::Allgather, *c, Spec{MPI_DOUBLE, 77, false, false, false}));
  cs.push_back(make_case(K::Allreduce, *a, Spec{MPI_DOUBLE, 5, false, false, false}));  // blocking
  bool ok = warm(cs, dev);
  std::vector<std::vector<unsigned char>> refs;
  std::vector<std::unique_ptr<Bufs>> bufs;
  for (Case &x : cs) {
    x.inputs(seed());
    refs.push_back(reference(x, &ok));
    bufs.emplace_back(new Bufs(x, dev));
    bufs.back()->upload(x);
  }
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  const bool odd = world_rank() % 2 == 1;
  set_phase("two nonblocking collectives, opposite orders on even and odd ranks");
  for (int k = 0; k < 2; ++k) {
    const int i = odd ? 1 - k : k;
    ok = rc_ok(cs[i].call(Form::Nonblocking, bufs[i]->sp(), bufs[i]->rp(), &r[i]), call_name(cs[i].k, Form::Nonblocking),
               cs[i].ctx) &&
         ok;
  }
  set_phase("a blocking MPI_Allreduce on the first communicator with its MPI_Iallreduce outstanding");
  ok = rc_ok(cs[2].call(Form::Blocking, bufs[2]->sp(), bufs[2]->rp(), nullptr), "MPI_Allreduce", cs[2].ctx) && ok;
  ok = rc_ok(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), "MPI_Waitall", "two communicators") && ok;
  for (size_t i = 0; i < cs.size(); ++i) ok = compare(cs[i], *bufs[i], refs[i], "two communicators, #" + std::to_string(i)) && ok;
  EXPECT_ALL_RANKS(ok);
}

// GCOLLTEST_NB_EXPECT_ENGINE=1: the engine takes nonblocking calls in this run (a progress
// thread is started): an MPI_Iallreduce of 8 MiB, after its warm-up (large enough that the
// engine takes it on a GPU time-sliced between ranks too, where small device calls are
// staged by design), checked against the reference, then the library's counter; then
// its persistent form, each MPI_Start counted as the engine's (async_engine_calls).
TEST(Engine, TookNonblockingCalls) {
  if (env_int("GCOLLTEST_NB_EXPECT_ENGINE") != 1) GTEST_SKIP() << "GCOLLTEST_NB_EXPECT_ENGINE not set";
  const bool dev = device_everywhere();
  ScopedComm dup(CommKind::Dup);
  bool ok = true;
  Checked c(make_case(K::Allreduce, *dup, Spec{MPI_DOUBLE, 1 << 20, false, false, false}), dev, &ok);
  const Case &x = c.x;
  Bufs &b = *c.b;
  const std::vector<unsigned char> &ref = c.ref;
  MPI_Request req = MPI_REQUEST_NULL;
  ok = rc_ok(x.call(Form::Nonblocking, b.sp(), b.rp(), &req), "MPI_Iallreduce", x.ctx) && ok;
  ok = rc_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx) && ok;
  ok = compare(x, b, ref, "MPI_Iallreduce of 8 MiB + MPI_Wait") && ok;
  if (gcoll_library_counter("progress_threads") <= 0) {
    report("no progress thread was started: the engine took no nonblocking call");
    ok = false;
  }
#if NB_HAVE_PERSISTENT
  // The persistent form of the same call (its kind agreed above): two starts, each
  // through the engine, each checked.
  MPI_Request p = MPI_REQUEST_NULL;
  ok = rc_ok(x.call(Form::Persistent, b.sp(), b.rp(), &p), call_name(x.k, Form::Persistent), x.ctx) && ok;
  for (int k = 0; k < 2 && p != MPI_REQUEST_NULL; ++k) {
    b.upload(x);
    const long long before = gcoll_library_counter("async_engine_calls");
    ok = rc_ok(MPI_Start(&p), "MPI_Start", x.ctx) && ok;
    const long long after = gcoll_library_counter("async_engine_calls");
    ok = rc_ok(MPI_Wait(&p, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx) && ok;
    ok = compare(x, b, ref, "persistent MPI_Allreduce of 8 MiB, start " + std::to_string(k)) && ok;
    if (after != before + 1) {
      report("MPI_Start of a persistent MPI_Allreduce: the engine did not take it (async_engine_calls %lld -> %lld)",
             before, after);
      ok = false;
    }
  }
  if (p != MPI_REQUEST_NULL) ok = rc_ok(MPI_Request_free(&p), "MPI_Request_free", x.ctx) && ok;
#endif
  EXPECT_ALL_RANKS(ok);
}

// A persistent call is decided and set up at its _init (coll/team_call.h:
// team_persistent_init), which MPI-4.0 makes collective: on a new communicator that has
// made no call at all (no blocking call has agreed anything or set the engine up), every
// MPI_Start of a persistent MPI_Allreduce must already run through the engine
// (async_engine_calls one more per start), each start checked against the PMPI
// reference. (Before, each start went to the MPI's persistent request until some
// blocking call on the communicator had agreed the call's kinds.) 8 bytes on host
// buffers; 8 MiB on device buffers (small device calls are staged by design where the
// GPU is time-sliced between ranks).
TEST(Engine, PersistentDecidedAtInit) {
  if (env_int("GCOLLTEST_NB_EXPECT_ENGINE") != 1) GTEST_SKIP() << "GCOLLTEST_NB_EXPECT_ENGINE not set";
  SKIP_WITHOUT_PERSISTENT();
  const bool dev = device_everywhere();
  ScopedComm dup(CommKind::Dup);
  bool ok = true;
  Case x = make_case(K::Allreduce, *dup, Spec{MPI_DOUBLE, dev ? 1 << 20 : 1, false, false, false}, Form::Persistent);
  const std::string init = call_name(x.k, Form::Persistent);
  x.inputs(seed());
  Bufs b(x, dev);
  b.upload(x);
  MPI_Request p = MPI_REQUEST_NULL;
  set_phase("%s on a communicator without any call before", init.c_str());
  ok = rc_ok(x.call(Form::Persistent, b.sp(), b.rp(), &p), init, x.ctx) && ok;
  for (int k = 0; k < 3 && p != MPI_REQUEST_NULL; ++k) {
    x.inputs(seed());
    b.upload(x);
    const std::vector<unsigned char> ref = reference(x, &ok);
    const long long before = gcoll_library_counter("async_engine_calls");
    ok = rc_ok(MPI_Start(&p), "MPI_Start", x.ctx) && ok;
    const long long after = gcoll_library_counter("async_engine_calls");
    ok = rc_ok(MPI_Wait(&p, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx) && ok;
    ok = compare(x, b, ref, init + " start " + std::to_string(k + 1) + " + MPI_Wait") && ok;
    if (after != before + 1) {
      report("MPI_Start %d of %s on a new communicator: the engine did not take it (async_engine_calls %lld -> %lld)",
             k + 1, init.c_str(), before, after);
      ok = false;
    }
  }
  if (p != MPI_REQUEST_NULL) ok = rc_ok(MPI_Request_free(&p), "MPI_Request_free", x.ctx) && ok;
  EXPECT_ALL_RANKS(ok);
}

// The application reuses a nonblocking call's counts and displacements before it completes.
// MPI forbids changing them (MPI-4.1 6.12), but the MPIs read them at the call, so programs
// that do it work without gcoll: mpi4py 4.1 over an MPI-3.1 library hands
// MPI_Ireduce_scatter a temporary array (its MPI_Ireduce_scatter_c fallback), and the engine
// that read it on the progress thread crashed in HostSpace::copy. gcoll copies the arrays at
// the call (EngineOp::keep_arrays): with the arrays overwritten before MPI_Wait, the results
// must still be the reference's, through the engine (asserted).
TEST(Engine, ArraysReusedBeforeCompletion) {
  if (env_int("GCOLLTEST_NB_EXPECT_ENGINE") != 1) GTEST_SKIP() << "GCOLLTEST_NB_EXPECT_ENGINE not set";
  const bool dev = device_everywhere();
  ScopedComm dup(CommKind::Dup);
  bool ok = true;
  for (K k : {K::ReduceScatter, K::Allgatherv}) {
    Checked c(make_case(k, *dup, Spec{MPI_DOUBLE, 1 << 17, false, false, false}), dev, &ok);
    Case &x = c.x;
    Bufs &b = *c.b;
    const std::string what = call_name(k, Form::Nonblocking);
    set_phase("%s %s, its arrays overwritten before MPI_Wait", what.c_str(), x.ctx.c_str());
    MPI_Request req = MPI_REQUEST_NULL;
    const long long before = gcoll_library_counter("async_engine_calls");
    ok = rc_ok(x.call(Form::Nonblocking, b.sp(), b.rp(), &req), what, x.ctx) && ok;
    const long long after = gcoll_library_counter("async_engine_calls");
    const std::vector<int> counts = x.rcounts, displs = x.rdispls;
    std::fill(x.rcounts.begin(), x.rcounts.end(), 0x3fffffff);
    std::fill(x.rdispls.begin(), x.rdispls.end(), -0x3fffffff);
    ok = rc_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", x.ctx) && ok;
    x.rcounts = counts;
    x.rdispls = displs;
    ok = compare(x, b, c.ref, what + " + MPI_Wait, its arrays overwritten after the call") && ok;
    if (after != before + 1) {
      report("%s: the engine did not take it (async_engine_calls %lld -> %lld)", what.c_str(), before, after);
      ok = false;
    }
  }
  EXPECT_ALL_RANKS(ok);
}

// ---- E: errors ------------------------------------------------------------------------------
// MPI_Request_free / MPI_Cancel of an active collective request is erroneous (MPI-4.0 6.12):
// gcoll reports MPI_ERR_REQUEST through the communicator's handler (MPI_ERRORS_RETURN on
// this dup). The request must still be there: MPI_Wait completes it, with the right result.
// Should an implementation free it instead, the test does not wait (it could not) and leaves
// the buffers allocated (the collective may still write them).
// On one rank the MPI completes the call before it returns (Open MPI then hands out its
// shared empty request, which gcoll cannot tell from any other): the request is not
// active, gcoll copies the results back at once and leaves the request to the MPI. Only
// truly active requests are checked, on two ranks and more.
TEST(Errors, FreeOrCancelActiveDeviceRequest) {
  SKIP_WITHOUT_DEVICE();
  if (world_size() < 2) GTEST_SKIP() << "one rank: the MPI completes the call at once";
  ScopedComm dup(CommKind::Dup);
  bool ok = true;
  for (int which = 0; which < 2; ++which) {
    const char *fn = which == 0 ? "MPI_Request_free" : "MPI_Cancel";
    Case x = make_case(K::Allreduce, *dup, Spec{MPI_INT, 1000, false, false, false});
    x.inputs(seed());
    const std::vector<unsigned char> ref = reference(x, &ok);
    Bufs b(x, true);
    b.upload(x);
    MPI_Request req = MPI_REQUEST_NULL;
    set_phase("MPI_Iallreduce then %s", fn);
    if (!rc_ok(x.call(Form::Nonblocking, b.sp(), b.rp(), &req), "MPI_Iallreduce", x.ctx)) {
      ok = false;
      continue;
    }
    const int rc = which == 0 ? MPI_Request_free(&req) : MPI_Cancel(&req);
    const int cls = error_class(rc);
    if (cls != MPI_ERR_REQUEST) {
      report("%s of an active MPI_Iallreduce request (device buffers) returned %s (%d), expected MPI_ERR_REQUEST",
             fn, error_class_name(cls).c_str(), rc);
      ok = false;
    }
    if (req == MPI_REQUEST_NULL) {
      report("%s of an active MPI_Iallreduce request set it to MPI_REQUEST_NULL: not waited for; its buffers are "
             "left allocated",
             fn);
      ok = false;
      b.leak();
      continue;
    }
    set_phase("MPI_Wait after %s", fn);
    MPI_Status st;
    ok = rc_ok(MPI_Wait(&req, &st), std::string("MPI_Wait after ") + fn, x.ctx) && ok;
    if (which == 1) {
      int cancelled = 1;
      MPI_Test_cancelled(&st, &cancelled);
      if (cancelled) {
        report("MPI_Test_cancelled says the MPI_Iallreduce was cancelled");
        ok = false;
      }
    }
    ok = compare(x, b, ref, std::string("MPI_Iallreduce, ") + fn + " (refused), MPI_Wait") && ok;
  }
  EXPECT_ALL_RANKS(ok);
}

// A negative count: MPI_ERR_COUNT, and no byte of the buffers changes.
void negative_count(bool device) {
  ScopedComm dup(CommKind::Dup);
  bool ok = true;
  Case x = make_case(K::Allreduce, *dup, Spec{MPI_INT, 7, false, false, false});
  x.inputs(seed());
  Bufs b(x, device);
  b.upload(x);
  const std::vector<unsigned char> s0 = b.s->get(), r0 = b.r->get();
  struct Bad {
    const char *fn;
    int (*call)(Bufs &, MPI_Comm, MPI_Request *);
  };
  std::vector<Bad> bad = {
      {"MPI_Iallreduce",
       [](Bufs &bb, MPI_Comm c, MPI_Request *r) {
         return MPI_Iallreduce(bb.sp(), bb.rp(), -1, MPI_INT, MPI_SUM, c, r);
       }},
      {"MPI_Ibcast", [](Bufs &bb, MPI_Comm c, MPI_Request *r) { return MPI_Ibcast(bb.rp(), -1, MPI_INT, 0, c, r); }},
#if NB_HAVE_PERSISTENT
      {"MPI(X)_Allreduce_init",
       [](Bufs &bb, MPI_Comm c, MPI_Request *r) {
         return NB_PINIT(Allreduce)(bb.sp(), bb.rp(), -1, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, r);
       }},
#endif
  };
  for (const Bad &c : bad) {
    set_phase("%s with count -1", c.fn);
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc = c.call(b, dup->comm, &req);
    if (error_class(rc) != MPI_ERR_COUNT) {
      report("%s with count -1 (%s buffers) returned %s (%d), expected MPI_ERR_COUNT", c.fn, device ? "device" : "host",
             error_class_name(error_class(rc)).c_str(), rc);
      ok = false;
      if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL) MPI_Request_free(&req);
    }
    if (b.s->get() != s0 || b.r->get() != r0) {
      report("%s with count -1 (%s buffers) changed the buffers", c.fn, device ? "device" : "host");
      ok = false;
    }
  }
  EXPECT_ALL_RANKS(ok);
}
TEST(Errors, NegativeCountHost) { negative_count(false); }
TEST(Errors, NegativeCountDevice) {
  SKIP_WITHOUT_DEVICE();
  negative_count(true);
}

// Requests whose handles are equal. Open MPI 4.1 returns one shared handle
// (&ompi_request_empty) for every nonblocking collective on a 1-rank communicator and for
// a small MPI_Isend it completes at once (ob1's inline send), so an array may hold the same
// handle several times, for different operations: two MPI_Iallreduce / MPI_Ibcast on
// MPI_COMM_SELF (device buffers where there are some) and a 4-byte MPI_Isend to this rank,
// completed by one MPI_Waitall, or by MPI_Waitsome. (Last in the program: a library that
// confuses the requests may crash here.)
class SharedHandle : public ::testing::TestWithParam<Completion> {};
TEST_P(SharedHandle, SelfCommCollectivesAndIsend) {
  const Completion completion = GetParam();
  const bool dev = device_everywhere();
  TestComm self;
  self.comm = MPI_COMM_SELF;
  self.name = "MPI_COMM_SELF[size=1]";
  self.rank = 0;
  self.size = 1;
  bool ok = true;
  for (int round = 0; round < 2; ++round) {  // twice: the table must be clean after the first
    const char *how = completion_name(completion);
    Case a = make_case(K::Allreduce, self, Spec{MPI_DOUBLE, 1000, false, false, false});
    Case b = make_case(K::Bcast, self, Spec{MPI_INT, 7, false, false, false});
    a.inputs(seed());
    b.inputs(seed());
    const std::vector<unsigned char> ra = reference(a, &ok), rb = reference(b, &ok);
    Bufs ba(a, dev), bb(b, dev);
    ba.upload(a);
    bb.upload(b);
    int token = 77 + round, got = -1;
    MPI_Request reqs[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    set_phase("%s on MPI_COMM_SELF collectives and a self message", how);
    ok = rc_ok(MPI_Irecv(&got, 1, MPI_INT, 0, kTag, MPI_COMM_SELF, &reqs[0]), "MPI_Irecv", "self") && ok;
    ok = rc_ok(a.call(Form::Nonblocking, ba.sp(), ba.rp(), &reqs[1]), "MPI_Iallreduce", a.ctx) && ok;
    ok = rc_ok(MPI_Isend(&token, 1, MPI_INT, 0, kTag, MPI_COMM_SELF, &reqs[2]), "MPI_Isend", "self") && ok;
    ok = rc_ok(b.call(Form::Nonblocking, bb.sp(), bb.rp(), &reqs[3]), "MPI_Ibcast", b.ctx) && ok;
    if (completion == Completion::Waitall) {
      ok = rc_ok(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE), how, "self") && ok;
    } else {
      int done = 0;
      for (int guard = 0; guard < 100 && done < 4; ++guard) {
        int out = 0, idx[4];
        if (!rc_ok(MPI_Waitsome(4, reqs, &out, idx, MPI_STATUSES_IGNORE), how, "self")) {
          ok = false;
          break;
        }
        if (out == MPI_UNDEFINED) break;
        done += out;
      }
      if (done != 4) {
        report("%s reported %d completions for 4 requests", how, done);
        ok = false;
      }
    }
    for (int i = 0; i < 4; ++i)
      if (reqs[i] != MPI_REQUEST_NULL) {
        report("%s left request %d not MPI_REQUEST_NULL", how, i);
        ok = false;
      }
    if (got != token) {
      report("%s: self message: got %d, expected %d", how, got, token);
      ok = false;
    }
    ok = compare(a, ba, ra, std::string("MPI_Iallreduce on MPI_COMM_SELF + ") + how) && ok;
    ok = compare(b, bb, rb, std::string("MPI_Ibcast on MPI_COMM_SELF + ") + how) && ok;
  }
  EXPECT_ALL_RANKS(ok);
}
INSTANTIATE_TEST_SUITE_P(Completion, SharedHandle, ::testing::Values(Completion::Waitall, Completion::Waitsome),
                         [](const ::testing::TestParamInfo<Completion> &i) {
                           return std::string(completion_name(i.param) + 4);
                         });

}  // namespace
}  // namespace gct
