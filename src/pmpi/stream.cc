// MPICH's stream API (include/gcoll/mpix_stream.h, issue 30): stream objects, stream
// communicators, and the enqueue form of six collectives (base/coll_list.h:
// GCOLL_ENQUEUE_COLLS), defined by gcoll where the MPI it is built for lacks it, and taken
// over where the MPI has it (MPICH >= 4.1, below).
//
// A stream communicator is a duplicate of the application's communicator (what
// MPIX_Stream_comm_create returns) and, beside it, a second duplicate nobody else uses
// (`inner`, errors returned) on which gcoll runs the enqueued calls: the blocking
// collective, gcoll's whole path (engine, staged or the MPI), as if the application had
// called it there, in the stream's order, counted on the <name>_enqueue line of the stats.
// Every rank runs the same calls on `inner` in the same order (MPI requires the enqueue
// calls in the same order on every rank, as any collective), whichever way each rank
// waits for its stream:
//   - a proxy thread (coll/stream_queue.h) where the MPI granted MPI_THREAD_MULTIPLE and
//     the driver has stream memory operations: the call returns at once, the stream hands
//     the call to the thread when it reaches it and waits for its end (on the GPU's front
//     end: no SM held, safe without MPS);
//   - otherwise host-synchronous: the call waits for the stream (cudaStreamSynchronize),
//     runs the collective and returns; the stream's later work, queued after the return,
//     follows it. Correct, with the host blocked in the call (the README says so).
// A failure inside a call the proxy ran goes through the application's communicator's
// error handler on the proxy thread (fatal by default, as MPICH's assertion in its
// callback); under MPI_ERRORS_RETURN the next enqueue call on the communicator returns it.
//
// Built against an MPI whose mpi.h declares the API (MPICH >= 4.1: MPIX_STREAM_NULL, an
// int handle; GCOLL_STREAM_TAKEOVER), gcoll defines the same functions over MPICH's, so
// that an application written for MPICH's API gets gcoll's path unchanged (MPICH's own
// MPIX_Allreduce_enqueue stages through host memory in a host callback). What is a GPU
// stream is gcoll's; everything else is MPICH's, reached by its profiling names (PMPIX_*):
//   - MPIX_Stream_create of a cudaStream_t: MPICH's stream where MPICH has CUDA (its
//     handle, so that MPICH's other stream calls take it), else a handle of gcoll's
//     (kOwnHandleBase: never a valid MPICH handle, which MPICH's calls refuse); gcoll
//     records the cudaStream_t under the handle either way. Any other info: MPICH's.
//   - MPIX_Stream_comm_create of a stream gcoll recorded: gcoll's stream communicator, the
//     application's handle made by MPICH (PMPIX_Stream_comm_create) where the stream is
//     MPICH's; of any other stream: MPICH's alone.
//   - MPIX_<Name>_enqueue on gcoll's stream communicators: gcoll's; on any other
//     communicator: MPICH's own call where its library has one (PMPIX_<Name>_enqueue:
//     Allreduce's in MPICH 5.0), else gcoll's MPI_ERR_COMM.
//   - MPIX_Comm_get_stream, MPIX_Stream_free: gcoll's handles gcoll's, the others MPICH's.
//     MPIX_Info_set_hex is MPICH's (not defined here).
#include <dlfcn.h>
#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "coll/mpi_forms.h"
#include "coll/pack.h"
#include "coll/stream_device.h"
#include "coll/staged.h"
#include "coll/stream_queue.h"
#include "coll/team_memory.h"
#include "pmpi/collectives.h"
#include "pmpi/comm_state.h"
#include "pmpi/errors.h"
#include "pmpi/mpi_flavor.h"
#include "pmpi/mpi_types.h"
#include "pmpi/runtime.h"
#include "pmpi/stream.h"

#include "gcoll/mpix_stream.h"  // (where mpi.h has the API: the enqueue forms MPICH lacks)

#ifdef GCOLL_MPIX_STREAM
#define GCOLL_STREAM_TAKEOVER 0  // the API is gcoll's: a handle is the stream's address
#else
#define GCOLL_STREAM_TAKEOVER 1  // the API is the MPI's (MPICH >= 4.1): a handle is an int
#endif

// A stream gcoll knows: every stream under gcoll's own API; under MPICH's, the GPU streams.
struct gcoll_mpix_stream {
  MPIX_Stream handle = MPIX_STREAM_NULL;  // the application's
  bool mpi_handle = false;  // `handle` is MPICH's own stream (GCOLL_STREAM_TAKEOVER): freed there
  bool gpu = false;         // info "type" = "cudaStream_t"
  void *cuda = nullptr;     // the cudaStream_t (nullptr: the legacy default stream)
  std::atomic<int> comms{0};  // stream communicators made with it and not freed
};

namespace gcoll {
namespace {

#define GCOLL_EXPORT __attribute__((visibility("default")))

// Under another MPI (pmpi/mpi_flavor.h): its own function of that name if it has one,
// else a failure (the error class is this build's MPI_ERR_OTHER: the other MPI's numbering
// is unknown here).
#define GCOLL_STREAM_FORWARD(name, ...)                                            \
  if (__builtin_expect(gcoll::flavor::g_foreign_mpi, 0)) {                             \
    static void *next = dlsym(RTLD_NEXT, #name);                                   \
    return next ? reinterpret_cast<decltype(&name)>(next)(__VA_ARGS__) : MPI_ERR_OTHER; \
  }

// An enqueue call: the foreign MPI's, as above; and under MPICH's API, on a communicator
// that is not gcoll's stream communicator (one MPICH made: a stream that is not a GPU
// stream, a duplicate of a stream communicator), MPICH's own call where its library has
// one (looked up by its profiling name, which only the MPI defines: MPICH 5.0 has
// Allreduce's only; a later MPICH's others are found the same way).
#if GCOLL_STREAM_TAKEOVER
#define GCOLL_ENQUEUE_FORWARD(name, comm, ...)                                          \
  GCOLL_STREAM_FORWARD(name, __VA_ARGS__)                                               \
  if (!gcoll::stream_comm_of(comm)) {                                                   \
    static void *own = dlsym(RTLD_DEFAULT, "P" #name);                                  \
    if (own) return reinterpret_cast<decltype(&name)>(own)(__VA_ARGS__);                \
  }
#else
#define GCOLL_ENQUEUE_FORWARD(name, comm, ...) GCOLL_STREAM_FORWARD(name, __VA_ARGS__)
#endif

// ---- stream objects ------------------------------------------------------------------

// The streams gcoll knows, by the application's handle.
std::mutex g_mu;  // the streams, the stream communicators, the keyval
std::unordered_map<MPIX_Stream, gcoll_mpix_stream *> &streams() {
  static auto *s = new std::unordered_map<MPIX_Stream, gcoll_mpix_stream *>;  // never destroyed
  return *s;
}

gcoll_mpix_stream *find_stream(MPIX_Stream h) {
  if (h == MPIX_STREAM_NULL) return nullptr;
  std::lock_guard<std::mutex> g(g_mu);
  const auto it = streams().find(h);
  return it == streams().end() ? nullptr : it->second;
}

#if GCOLL_STREAM_TAKEOVER
// gcoll's own handles under MPICH's API (a GPU stream MPICH cannot take): MPICH's handle
// layout is kind (2 bits: 0 invalid, 1 builtin, 2 direct, 3 indirect), object type (4
// bits: 0xf a stream), index. gcoll's are kind 0 with the stream's type and a nonzero
// index (MPIX_STREAM_NULL, 0x3c000000, is index 0): never a handle MPICH made, refused by
// its calls as an invalid stream.
constexpr unsigned kOwnHandleBase = 0x3c000000u, kOwnHandleIndex = 0x03ffffffu;

// Where MPICH can take a GPU stream itself: built with CUDA, and on here (an MPICH without
// CUDA support asserts in MPIX_Stream_create when given a cudaStream_t: MPICH 5.0.2).
bool mpi_takes_cuda_streams() {
  static const bool yes = [] {
    int supported = 0;
    return PMPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS && supported;
  }();
  return yes;
}
#endif

// Records `s` under its handle: MPICH's (s->mpi_handle), else one of gcoll's own.
void add_stream(gcoll_mpix_stream *s) {
  std::lock_guard<std::mutex> g(g_mu);
#if GCOLL_STREAM_TAKEOVER
  static unsigned next = 0;  // (g_mu)
  while (!s->mpi_handle) {
    next = next % kOwnHandleIndex + 1;
    const auto h = static_cast<MPIX_Stream>(kOwnHandleBase | next);
    if (!streams().count(h)) {
      s->handle = h;
      break;
    }
  }
#else
  s->handle = s;
#endif
  streams()[s->handle] = s;
}

// MPICH's hex encoding (MPL_hex_encode): two hex digits per byte in memory order; MPICH
// 4.2 and later also write a run of n zero bytes as "[n]". Decodes exactly `len` bytes.
bool hex_decode(const char *s, unsigned char *out, std::size_t len) {
  std::size_t n = 0;
  const auto digit = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  while (*s) {
    if (*s == '[') {
      ++s;
      std::size_t run = 0;
      bool any = false;
      while (*s >= '0' && *s <= '9') {
        run = run * 10 + static_cast<std::size_t>(*s++ - '0');
        any = true;
        if (run > len) return false;
      }
      if (!any || *s != ']' || n + run > len) return false;
      ++s;
      std::memset(out + n, 0, run);
      n += run;
    } else {
      const int hi = digit(s[0]), lo = hi < 0 ? -1 : digit(s[1]);
      if (lo < 0 || n >= len) return false;
      out[n++] = static_cast<unsigned char>(hi * 16 + lo);
      s += 2;
    }
  }
  return n == len;
}

// The info's value of `key`, or "" (false when absent).
bool info_value(MPI_Info info, const char *key, std::string *out) {
  if (info == MPI_INFO_NULL) return false;
  int flag = 0;
#if MPI_VERSION >= 4  // MPI_Info_get and _get_valuelen are deprecated in MPI-4.0
  int len = 0;
  char probe[1];
  if (PMPI_Info_get_string(info, key, &len, probe, &flag) != MPI_SUCCESS || !flag || len < 1) return false;
  std::vector<char> v(static_cast<std::size_t>(len), '\0');
  if (PMPI_Info_get_string(info, key, &len, v.data(), &flag) != MPI_SUCCESS || !flag) return false;
#else
  int len = 0;
  if (PMPI_Info_get_valuelen(info, key, &len, &flag) != MPI_SUCCESS || !flag) return false;
  std::vector<char> v(static_cast<std::size_t>(len) + 1, '\0');
  if (PMPI_Info_get(info, key, len, v.data(), &flag) != MPI_SUCCESS || !flag) return false;
#endif
  *out = v.data();
  return true;
}

// ---- stream communicators ------------------------------------------------------------

struct StreamComm {
  MPI_Comm app = MPI_COMM_NULL;    // the application's handle
  MPI_Comm inner = MPI_COMM_NULL;  // where the calls run
  gcoll_mpix_stream *stream = nullptr;
  std::unique_ptr<StreamQueue> queue;  // nullptr: host-synchronous (or no GPU stream)
  std::unique_ptr<StreamDevice> dev;   // the device path (GCOLL_STREAM_DEVICE=on), or nullptr
  std::atomic<int> failed{MPI_SUCCESS};  // a proxy call's error, for the next call (MPI_ERRORS_RETURN)
};

int g_keyval = MPI_KEYVAL_INVALID;
std::vector<StreamComm *> &registry() {
  static auto *r = new std::vector<StreamComm *>;  // never destroyed
  return *r;
}

void release(StreamComm *sc) {
  sc->queue.reset();  // waits for the calls the stream has not reached yet
  sc->dev.reset();    // waits for the device, then a barrier on `inner` (every rank frees)
  if (sc->inner != MPI_COMM_NULL) PMPI_Comm_free(&sc->inner);
  if (sc->stream) sc->stream->comms.fetch_sub(1, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> g(g_mu);
    auto &r = registry();
    for (auto it = r.begin(); it != r.end(); ++it)
      if (*it == sc) {
        r.erase(it);
        break;
      }
  }
  delete sc;
}

// MPI_Comm_free of a stream communicator (or MPI_Finalize: release_stream_comms).
int delete_stream_comm(MPI_Comm, int, void *attr, void *) {
  const bool done = no_throw("freeing a stream communicator", [attr] { release(static_cast<StreamComm *>(attr)); });
  return done ? MPI_SUCCESS : MPI_ERR_INTERN;
}

int keyval() {
  std::lock_guard<std::mutex> g(g_mu);
  if (g_keyval == MPI_KEYVAL_INVALID &&
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_stream_comm, &g_keyval, nullptr) != MPI_SUCCESS)
    return MPI_KEYVAL_INVALID;
  return g_keyval;
}

StreamComm *stream_comm_of(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return nullptr;
  int kv;
  {
    std::lock_guard<std::mutex> g(g_mu);
    kv = g_keyval;
  }
  if (kv == MPI_KEYVAL_INVALID) return nullptr;
  void *attr = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, kv, &attr, &found) != MPI_SUCCESS || !found) return nullptr;
  return static_cast<StreamComm *>(attr);
}

// ---- the enqueue calls -----------------------------------------------------------------

// A datatype the call holds until it has run (MPI lets the application free its handle
// once the call returns): predefined ones as they are, others duplicated.
struct HeldType {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  bool dup = false;
};
bool hold(MPI_Datatype t, HeldType *out) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
  if (combiner == MPI_COMBINER_NAMED) {
    out->t = t;
    return true;
  }
  if (PMPI_Type_dup(t, &out->t) != MPI_SUCCESS) return false;
  out->dup = true;
  return true;
}
void let_go(HeldType *h) {
  if (h->dup && h->t != MPI_DATATYPE_NULL) PMPI_Type_free(&h->t);
  h->dup = false;
}
// A call's held types, let go when the call goes (after its run; a call captured into a
// CUDA graph runs at every launch and goes with the queue).
struct HeldTypes {
  std::vector<HeldType> v;
  HeldTypes() = default;
  HeldTypes(const HeldTypes &) = delete;
  HeldTypes &operator=(const HeldTypes &) = delete;
  ~HeldTypes() {
    for (HeldType &x : v) let_go(&x);
  }
};

// What every enqueue call checks before anything is queued (the blocking call checks the
// rest when it runs, and reports through the handler): Status::Ok or the error.
Status check_type(MPI_Datatype t, std::string *why) {
  int size = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &size) != MPI_SUCCESS) {
    *why = "invalid datatype";
    return Status::ErrType;
  }
  return Status::Ok;
}

// Runs `call(inner)` (the blocking collective on the inner communicator, returning its MPI
// error code) in the stream's order on the stream communicator `comm`. `types`: the
// datatypes the call reads, held until it has run. `checks`: the argument checks, Status::Ok
// or an error with its text.
//
// `device(dev, &call, &why)`: where the communicator has the device path, fills `call` and
// returns Status::Ok when the path takes the call (decided alike on every rank: the kind,
// the reduction's predefined type and op), Status::NotSupported when it goes to the proxy.
//
// `sides`: the call's send and receive buffers, each with the count of its datatype it
// spans (every rank's blocks where it holds them; nullptr or MPI_IN_PLACE: none): what the
// proxy's staged call may copy through host memory, reserved here (mem/pinned.h).
struct NoDevicePath {
  Status operator()(const StreamDevice &, StreamDeviceCall *) const { return Status::NotSupported; }
};
struct StagedSide {
  const void *buf = nullptr;
  long long count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool per_rank = false;  // `count` for each rank of the communicator
};
// The bytes a device buffer's host copy takes on a communicator of `p` ranks (staged.h:
// span_of); 0 for host memory and for what cannot be told (the call reports it).
std::size_t staged_bytes(StagedSide s, int p) {
  if (s.per_rank) s.count *= p;
  if (!s.buf || s.buf == MPI_IN_PLACE || s.count <= 0) return 0;
  const void *b[1] = {s.buf};
  if (!classify_local(b, 1, -1).is_device[0]) return 0;
  Span span;
  return span_of(s.count, s.type, &span) ? span.bytes : 0;
}
template <class Checks, class Call, class Device = NoDevicePath>
int enqueue(Coll coll, const char *func, MPI_Comm comm, std::initializer_list<MPI_Datatype> types,
            std::initializer_list<StagedSide> sides, Checks &&checks, Call &&call, Device &&device = Device{}) {
  const Coll line = coll_form(coll, Form::Enqueue);
  Stats &stats = process_stats();
  return guarded(
      comm, func,
      [&]() -> int {
        StreamComm *sc = stream_comm_of(comm);
        if (!sc || !sc->stream || !sc->stream->gpu) {
          stats.record(line, Path::Error, 0);
          return raise_error(comm, Status::ErrComm, func,
                             comm == MPI_COMM_NULL ? "the communicator is MPI_COMM_NULL"
                                                   : "the communicator has no CUDA stream (MPIX_Stream_comm_create with "
                                                     "a stream whose info type is cudaStream_t)");
        }
        const int earlier = sc->failed.exchange(MPI_SUCCESS, std::memory_order_acq_rel);
        if (earlier != MPI_SUCCESS) {
          stats.record(line, Path::Error, 0);
          GCOLL_WARN("%s: an earlier enqueued call on this communicator failed", func);
          PMPI_Comm_call_errhandler(comm, earlier);
          return earlier;
        }
        std::string why;
        Status st = checks(&why);
        if (!ok(st)) {
          stats.record(line, Path::Error, 0);
          return raise_error(comm, st, func, why.c_str());
        }
        StreamDeviceCall dc;
        if (sc->dev && device(*sc->dev, &dc) == Status::Ok) {
          // The device path: kernels on the application's stream, nothing on the host.
          st = sc->dev->enqueue(dc, &why);
          if (!ok(st)) {
            stats.record(line, Path::Error, 0);
            return raise_error(comm, st, func, why.c_str());
          }
          stats.record(line, Path::Engine, dc.kind == FusedKind::Allgather
                                               ? dc.bytes * static_cast<std::size_t>(sc->dev->ranks())
                                               : dc.bytes);
          stats.count(Counter::StreamDeviceCalls);
          return MPI_SUCCESS;
        }
        if (!sc->queue) {
          // Host-synchronous: the stream's earlier work first, then the call here.
          st = StreamQueue::synchronize(sc->stream->cuda, &why);
          if (!ok(st)) {
            stats.record(line, Path::Error, 0);
            return raise_error(comm, st, func, why.c_str());
          }
          int rc;
          {
            StatsFormScope form(Form::Enqueue);
            rc = call(sc->inner);
          }
          if (rc != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, rc);
          return rc;
        }
        // The held types replace the application's in the call, in order.
        std::shared_ptr<HeldTypes> keep = std::make_shared<HeldTypes>();
        keep->v.reserve(types.size());
        for (MPI_Datatype t : types) {
          HeldType h;
          if (!hold(t, &h)) {
            stats.record(line, Path::Error, 0);
            return raise_error(comm, Status::ErrType, func, "invalid datatype");
          }
          keep->v.push_back(h);
        }
        std::size_t need[2] = {0, 0};
        int i = 0, p = 1;
        PMPI_Comm_size(sc->inner, &p);
        for (const StagedSide &side : sides) need[i++ & 1] += staged_bytes(side, p);
        MPI_Comm inner = sc->inner;
        MPI_Comm app = comm;
        std::atomic<int> *failed = &sc->failed;
        std::string fname = func;
        st = sc->queue->enqueue(
            [call, keep, inner, app, failed, fname]() mutable {
              int rc;
              {
                StatsFormScope form(Form::Enqueue);
                rc = call(inner, keep->v);
              }
              if (rc != MPI_SUCCESS) {
                int expected = MPI_SUCCESS;
                failed->compare_exchange_strong(expected, rc, std::memory_order_acq_rel);
                GCOLL_WARN("%s: the enqueued call failed on the proxy thread (MPI error %d)", fname.c_str(), rc);
                PMPI_Comm_call_errhandler(app, rc);
              }
            },
            need[0], need[1], &why);
        if (!ok(st)) {
          stats.record(line, Path::Error, 0);
          return raise_error(comm, st, func, why.c_str());
        }
        return MPI_SUCCESS;
      },
      [&] { stats.record(line, Path::Error, 0); });
}

// The held types' handles (the call's own where not held: host-synchronous).
inline MPI_Datatype type_at(const std::vector<HeldType> &h, std::size_t i, MPI_Datatype own) {
  return i < h.size() ? h[i].t : own;
}

Status count_ok(long long n, std::string *why) {
  if (n < 0) {
    *why = "negative count";
    return Status::ErrCount;
  }
  return Status::Ok;
}
Status root_ok(int root, MPI_Comm comm, std::string *why) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  if (root < 0 || root >= size) {
    *why = "root out of range";
    return Status::ErrRoot;
  }
  return Status::Ok;
}
Status op_ok(MPI_Op op, std::string *why) {
  if (op == MPI_OP_NULL) {
    *why = "the op is MPI_OP_NULL";
    return Status::ErrOp;
  }
  return Status::Ok;
}

// A reduction's count, datatype and op.
Status reduction_ok(long long count, MPI_Datatype t, MPI_Op op, std::string *why) {
  Status st = count_ok(count, why);
  if (ok(st)) st = check_type(t, why);
  if (ok(st)) st = op_ok(op, why);
  return st;
}

// The device path reads a buffer's bytes as one run: a derived datatype's layout (packed by
// the blocking calls) is refused there (stream_device.h says why not sent to the proxy).
void refuse_unless_direct(const ByteLayout &l, StreamDeviceCall *c) {
  if (l.direct || !l.bytes || !ok(c->refused)) return;
  c->refused = Status::ErrType;
  c->refused_why =
      "the stream-ordered device path (GCOLL_STREAM_DEVICE=on) reads bcast and allgather buffers as one run of "
      "bytes: use a predefined datatype here, or GCOLL_STREAM_DEVICE=off";
}

// The calls with a send block and a receive block per rank (allgather, alltoall): checks
// (the send side only when not in place), the types held, and `run(comm, sendtype,
// recvtype)` with the held ones.
// `send_blocks`: the send buffer holds a block per rank (alltoall), else one (allgather).
template <class Run, class Device = NoDevicePath>
int enqueue_blocks(Coll coll, const char *func, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, bool send_blocks, Run run,
                   Device device = Device{}) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  return enqueue(
      coll, func, comm, {in_place ? recvtype : sendtype, recvtype},
      {StagedSide{sendbuf, sendcount, sendtype, send_blocks}, StagedSide{recvbuf, recvcount, recvtype, true}},
      [&](std::string *why) {
        Status st = count_ok(recvcount, why);
        if (ok(st) && !in_place) st = count_ok(sendcount, why);
        if (ok(st) && !in_place) st = check_type(sendtype, why);
        if (ok(st)) st = check_type(recvtype, why);
        return st;
      },
      [=](MPI_Comm c, const std::vector<HeldType> &h = {}) {
        return run(c, in_place ? sendtype : type_at(h, 0, sendtype), type_at(h, 1, recvtype));
      },
      device);
}

// The large-count forms: counts that fit an int take the int form; the others are refused
// (the MPIs gcoll builds for have no large-count blocking calls on every version).
bool fits(MPI_Count n) { return n >= 0 && n <= INT_MAX; }
int too_large(Coll coll, MPI_Comm comm, const char *func) {
  process_stats().record(coll_form(coll, Form::Enqueue), Path::Error, 0);
  return raise_error(comm, Status::ErrCount, func, "a count beyond INT_MAX (not supported by the enqueue calls yet)");
}

}  // namespace

// ---- release in MPI_Finalize ---------------------------------------------------------------

void release_stream_comms() {
  for (;;) {
    StreamComm *sc = nullptr;
    {
      std::lock_guard<std::mutex> g(g_mu);
      if (registry().empty()) break;
      sc = registry().back();
    }
    int kv;
    {
      std::lock_guard<std::mutex> g(g_mu);
      kv = g_keyval;
    }
    // Deleting the attribute runs delete_stream_comm, which releases it.
    if (kv == MPI_KEYVAL_INVALID || PMPI_Comm_delete_attr(sc->app, kv) != MPI_SUCCESS) release(sc);
  }
  std::lock_guard<std::mutex> g(g_mu);
  if (g_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&g_keyval);
}

}  // namespace gcoll

using gcoll::Status;

extern "C" {

#if !GCOLL_STREAM_TAKEOVER  // (MPICH's own otherwise)
GCOLL_EXPORT int MPIX_Info_set_hex(MPI_Info info, const char *key, const void *value, int value_size) {
  GCOLL_STREAM_FORWARD(MPIX_Info_set_hex, info, key, value, value_size)
  if (!key || value_size < 0 || (value_size > 0 && !value))
    return gcoll::raise_error(MPI_COMM_SELF, Status::ErrArg, "MPIX_Info_set_hex", "null key or value");
  static const char digits[] = "0123456789ABCDEF";
  std::string hex;
  hex.reserve(static_cast<std::size_t>(value_size) * 2);
  const auto *b = static_cast<const unsigned char *>(value);
  for (int i = 0; i < value_size; ++i) {
    hex.push_back(digits[b[i] >> 4]);
    hex.push_back(digits[b[i] & 15]);
  }
  return PMPI_Info_set(info, key, hex.c_str());
}
#endif

GCOLL_EXPORT int MPIX_Stream_create(MPI_Info info, MPIX_Stream *stream) {
  GCOLL_STREAM_FORWARD(MPIX_Stream_create, info, stream)
  const char *func = "MPIX_Stream_create";
  std::string type, value;
  const bool gpu = gcoll::info_value(info, "type", &type) && type == "cudaStream_t";
#if GCOLL_STREAM_TAKEOVER
  if (!gpu) return PMPIX_Stream_create(info, stream);
#endif
  if (!stream) return gcoll::raise_error(MPI_COMM_SELF, Status::ErrArg, func, "stream is a null pointer");
  std::unique_ptr<gcoll_mpix_stream> s(new (std::nothrow) gcoll_mpix_stream);
  if (!s) return gcoll::raise_error(MPI_COMM_SELF, Status::ErrNoMem, func, "out of memory");
  if (gpu) {
    if (!gcoll::info_value(info, "value", &value))
      return gcoll::raise_error(MPI_COMM_SELF, Status::ErrArg, func,
                                "info type is cudaStream_t but there is no value (MPIX_Info_set_hex(info, \"value\", "
                                "&stream, sizeof stream))");
    unsigned char bytes[sizeof(void *)];
    if (!gcoll::hex_decode(value.c_str(), bytes, sizeof bytes))
      return gcoll::raise_error(MPI_COMM_SELF, Status::ErrArg, func,
                                "the info's value is not a cudaStream_t in hexadecimal (MPIX_Info_set_hex)");
    s->gpu = true;
    std::memcpy(&s->cuda, bytes, sizeof bytes);
  }
#if GCOLL_STREAM_TAKEOVER
  // MPICH's stream where it takes one (an error it returns: gcoll's handle instead).
  s->mpi_handle = gcoll::mpi_takes_cuda_streams() && PMPIX_Stream_create(info, &s->handle) == MPI_SUCCESS;
#endif
  gcoll::add_stream(s.get());
  *stream = s.release()->handle;
  return MPI_SUCCESS;
}

GCOLL_EXPORT int MPIX_Stream_free(MPIX_Stream *stream) {
  GCOLL_STREAM_FORWARD(MPIX_Stream_free, stream)
  const char *func = "MPIX_Stream_free";
  gcoll_mpix_stream *s = stream ? gcoll::find_stream(*stream) : nullptr;
#if GCOLL_STREAM_TAKEOVER
  if (!s) return PMPIX_Stream_free(stream);
#endif
  if (!s) return gcoll::raise_error(MPI_COMM_SELF, Status::ErrArg, func, "not a stream (null, or already freed)");
  if (const int n = s->comms.load(std::memory_order_acquire)) {
    char why[128];
    std::snprintf(why, sizeof why, "the stream is still attached to %d communicator(s): free them first", n);
    return gcoll::raise_error(MPI_COMM_SELF, Status::ErrArg, func, why);
  }
#if GCOLL_STREAM_TAKEOVER
  if (s->mpi_handle) {
    MPIX_Stream h = s->handle;
    if (const int rc = PMPIX_Stream_free(&h)) return rc;
  }
#endif
  {
    std::lock_guard<std::mutex> g(gcoll::g_mu);
    gcoll::streams().erase(s->handle);
  }
  delete s;
  *stream = MPIX_STREAM_NULL;
  return MPI_SUCCESS;
}

GCOLL_EXPORT int MPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm *newcomm) {
  GCOLL_STREAM_FORWARD(MPIX_Stream_comm_create, comm, stream, newcomm)
  const char *func = "MPIX_Stream_comm_create";
  if (!newcomm) return gcoll::raise_error(comm, Status::ErrArg, func, "newcomm is a null pointer");
  if (comm == MPI_COMM_NULL) return gcoll::raise_error(comm, Status::ErrComm, func, "the communicator is MPI_COMM_NULL");
  gcoll_mpix_stream *s = gcoll::find_stream(stream);
#if GCOLL_STREAM_TAKEOVER
  // A stream that is not a GPU stream: MPICH's. Of a GPU stream MPICH has, MPICH makes the
  // application's handle (its stream features work on it); gcoll's stream communicator
  // beside it as everywhere.
  if (!s) return PMPIX_Stream_comm_create(comm, stream, newcomm);
  int rc = s->mpi_handle ? PMPIX_Stream_comm_create(comm, stream, newcomm) : PMPI_Comm_dup(comm, newcomm);
#else
  if (stream != MPIX_STREAM_NULL && !s)
    return gcoll::raise_error(comm, Status::ErrArg, func, "not a stream (freed, or never made by MPIX_Stream_create)");
  int rc = PMPI_Comm_dup(comm, newcomm);
#endif
  if (rc != MPI_SUCCESS) return rc;
  MPI_Comm inner = MPI_COMM_NULL;
  rc = PMPI_Comm_dup(comm, &inner);
  if (rc != MPI_SUCCESS) {
    PMPI_Comm_free(newcomm);
    return rc;
  }
  PMPI_Comm_set_errhandler(inner, MPI_ERRORS_RETURN);
  auto *sc = new (std::nothrow) gcoll::StreamComm;
  const int kv = gcoll::keyval();
  if (!sc || kv == MPI_KEYVAL_INVALID) {
    delete sc;
    PMPI_Comm_free(&inner);
    PMPI_Comm_free(newcomm);
    return gcoll::raise_error(comm, Status::ErrNoMem, func, "out of memory");
  }
  sc->app = *newcomm;
  sc->inner = inner;
  // Device buffers on `inner` are always staged (Team::stage_device): the engine's device
  // path opens peers' IPC handles and allocates at a buffer's first sight, which the proxy
  // thread must not (mem/pinned.h). On every rank alike: `inner` is made here on all.
  gcoll::CommState *inner_team = nullptr;
  if (gcoll::ok(gcoll::comm_state(inner, &inner_team))) inner_team->stage_device = true;
  sc->stream = s;
  if (s) s->comms.fetch_add(1, std::memory_order_acq_rel);
  // The device path set up on `inner` now, on the application's thread, with nothing
  // waiting for it (StreamQueue::device_word): where every rank has a CUDA stream and a
  // word of device memory (agreed: the set-up is a collective), one 4-byte device
  // allreduce, counted on allreduce_enqueue.
  // A stream of another device than the current one (or not a stream of this process's
  // CUDA): refused on every rank, before anything is set up (agreed in the same exchange).
  std::string wrong;
  if (s && s->gpu) gcoll::StreamQueue::foreign_device(s->cuda, &wrong);
  void *dev = s && s->gpu && wrong.empty() ? gcoll::StreamQueue::device_word() : nullptr;
  int local = !wrong.empty() ? -1 : dev ? 1 : 0, all = 0;
  rc = PMPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, comm);
  if (rc == MPI_SUCCESS && all < 0) {
    gcoll::StreamQueue::free_device_word(dev);
    gcoll::release(sc);
    PMPI_Comm_free(newcomm);
    return gcoll::raise_error(comm, Status::ErrArg, func,
                              !wrong.empty() ? wrong.c_str()
                                             : "another rank's stream belongs to another device than its current one");
  }
  if (rc == MPI_SUCCESS && all) {
    gcoll::StatsFormScope form(gcoll::Form::Enqueue);
    const int wrc = gcoll::allreduce(gcoll::CallForm{}, MPI_IN_PLACE, dev, 1, MPI_INT, MPI_SUM, inner);
    if (wrc != MPI_SUCCESS) GCOLL_WARN("%s: the device path's set-up call failed (MPI error %d)", func, wrc);
  }
  gcoll::StreamQueue::free_device_word(dev);
  if (rc == MPI_SUCCESS && all) {
    // The device path (stream_device.h): collective, where every rank has a CUDA stream.
    std::string why;
    gcoll::no_throw("setting up a stream communicator's device path",
                    [&] { sc->dev = gcoll::StreamDevice::create(inner, s->cuda, &why); });
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    if (sc->dev && me == 0)
      GCOLL_INFO("%s: allreduce, bcast and allgather on device buffers as kernels on the stream (%d ranks)", func,
                 sc->dev->ranks());
    else if (!sc->dev && me == 0 && gcoll::config().stream_device)
      GCOLL_INFO("%s: no device path (%s): every enqueued call goes to the proxy thread", func, why.c_str());
  }
  if (s && s->gpu) {
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    std::string why;
    if (level == MPI_THREAD_MULTIPLE) {
      gcoll::no_throw("making a stream communicator's queue",
                      [&] { sc->queue = gcoll::StreamQueue::create(s->cuda, &why); });
      if (!sc->queue && why.empty()) why = "out of memory";
    } else {
      why = "the MPI did not grant MPI_THREAD_MULTIPLE (gcoll's proxy thread calls the MPI)";
    }
    if (!sc->queue)
      GCOLL_INFO("%s: enqueued calls on this communicator are host-synchronous: %s", func, why.c_str());
  }
  {
    std::lock_guard<std::mutex> g(gcoll::g_mu);
    gcoll::registry().push_back(sc);
  }
  rc = PMPI_Comm_set_attr(*newcomm, kv, sc);
  if (rc != MPI_SUCCESS) {
    gcoll::release(sc);
    PMPI_Comm_free(newcomm);
    return rc;
  }
  return MPI_SUCCESS;
}

GCOLL_EXPORT int MPIX_Comm_get_stream(MPI_Comm comm, int idx, MPIX_Stream *stream) {
  GCOLL_STREAM_FORWARD(MPIX_Comm_get_stream, comm, idx, stream)
  const char *func = "MPIX_Comm_get_stream";
  if (!stream) return gcoll::raise_error(comm, Status::ErrArg, func, "stream is a null pointer");
  if (comm == MPI_COMM_NULL) return gcoll::raise_error(comm, Status::ErrComm, func, "the communicator is MPI_COMM_NULL");
  if (idx < 0) return gcoll::raise_error(comm, Status::ErrArg, func, "negative index");
  gcoll::StreamComm *sc = gcoll::stream_comm_of(comm);
#if GCOLL_STREAM_TAKEOVER
  if (!sc) return PMPIX_Comm_get_stream(comm, idx, stream);
#endif
  *stream = sc && sc->stream && idx == 0 ? sc->stream->handle : MPIX_STREAM_NULL;
  return MPI_SUCCESS;
}

// ---- the enqueue forms -------------------------------------------------------------------

GCOLL_EXPORT int MPIX_Allreduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                        MPI_Op op, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Allreduce_enqueue, comm, sendbuf, recvbuf, count, datatype, op, comm)
  using gcoll::HeldType;
  return gcoll::enqueue(
      gcoll::Coll::Allreduce, "MPIX_Allreduce_enqueue", comm, {datatype},
      {gcoll::StagedSide{sendbuf, count, datatype}, gcoll::StagedSide{recvbuf, count, datatype}},
      [&](std::string *why) { return gcoll::reduction_ok(count, datatype, op, why); },
      [=](MPI_Comm c, const std::vector<HeldType> &h = {}) {
        return gcoll::allreduce(gcoll::CallForm{}, sendbuf, recvbuf, count, gcoll::type_at(h, 0, datatype), op, c);
      },
      [&](const gcoll::StreamDevice &d, gcoll::StreamDeviceCall *c) {
        // A predefined type and op the kernels reduce (the same on every rank, as MPI
        // requires of a reduction's datatype and op); the rest goes to the proxy.
        if (!gcoll::map_reduction(datatype, op, &c->dtype, &c->op) || !d.takes_reduction(c->dtype, c->op))
          return Status::NotSupported;
        c->kind = gcoll::FusedKind::Allreduce;
        c->elem = gcoll::dtype_size(c->dtype);
        c->in = sendbuf == MPI_IN_PLACE ? nullptr : sendbuf;
        c->out = recvbuf;
        c->bytes = static_cast<std::size_t>(count) * c->elem;
        return Status::Ok;
      });
}

GCOLL_EXPORT int MPIX_Bcast_enqueue(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Bcast_enqueue, comm, buffer, count, datatype, root, comm)
  using gcoll::HeldType;
  return gcoll::enqueue(
      gcoll::Coll::Bcast, "MPIX_Bcast_enqueue", comm, {datatype}, {gcoll::StagedSide{buffer, count, datatype}},
      [&](std::string *why) {
        Status st = gcoll::count_ok(count, why);
        if (gcoll::ok(st)) st = gcoll::check_type(datatype, why);
        if (gcoll::ok(st)) st = gcoll::root_ok(root, comm, why);
        return st;
      },
      [=](MPI_Comm c, const std::vector<HeldType> &h = {}) {
        return gcoll::bcast(gcoll::CallForm{}, buffer, count, gcoll::type_at(h, 0, datatype), root, c);
      },
      [&](const gcoll::StreamDevice &, gcoll::StreamDeviceCall *c) {
        // By the signature's bytes, alike on every rank whatever its datatype.
        gcoll::ByteLayout l;
        if (!gcoll::byte_layout(count, datatype, &l)) return Status::NotSupported;  // (checked before)
        c->kind = gcoll::FusedKind::Bcast;
        c->out = static_cast<char *>(buffer) + l.offset;
        c->bytes = l.bytes;
        c->root = root;
        gcoll::refuse_unless_direct(l, c);
        return Status::Ok;
      });
}

GCOLL_EXPORT int MPIX_Allgather_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Allgather_enqueue, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
  return gcoll::enqueue_blocks(
      gcoll::Coll::Allgather, "MPIX_Allgather_enqueue", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
      comm, false,
      [=](MPI_Comm c, MPI_Datatype st, MPI_Datatype rt) {
        return gcoll::allgather(gcoll::CallForm{}, sendbuf, sendcount, st, recvbuf, recvcount, rt, c);
      },
      [&](const gcoll::StreamDevice &, gcoll::StreamDeviceCall *c) {
        // By the signature's bytes, alike on every rank whatever its datatypes.
        gcoll::ByteLayout r, s;
        const bool in_place = sendbuf == MPI_IN_PLACE;
        if (!gcoll::byte_layout(recvcount, recvtype, &r) || (!in_place && !gcoll::byte_layout(sendcount, sendtype, &s)))
          return Status::NotSupported;  // (checked before)
        c->kind = gcoll::FusedKind::Allgather;
        c->in = in_place ? nullptr : static_cast<const char *>(sendbuf) + s.offset;
        c->out = static_cast<char *>(recvbuf) + r.offset;
        c->bytes = r.bytes;
        gcoll::refuse_unless_direct(r, c);
        if (!in_place) {
          gcoll::refuse_unless_direct(s, c);
          if (s.bytes != r.bytes && gcoll::ok(c->refused)) {
            c->refused = Status::ErrType;
            c->refused_why = "the send and receive type signatures differ in size";
          }
        }
        return Status::Ok;
      });
}

GCOLL_EXPORT int MPIX_Reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, int recvcount,
                                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Reduce_scatter_block_enqueue, comm, sendbuf, recvbuf, recvcount, datatype, op, comm)
  using gcoll::HeldType;
  return gcoll::enqueue(
      gcoll::Coll::Reduce_scatter_block, "MPIX_Reduce_scatter_block_enqueue", comm, {datatype},
      {gcoll::StagedSide{sendbuf, recvcount, datatype, true}, gcoll::StagedSide{recvbuf, recvcount, datatype}},
      [&](std::string *why) { return gcoll::reduction_ok(recvcount, datatype, op, why); },
      [=](MPI_Comm c, const std::vector<HeldType> &h = {}) {
        return gcoll::reduce_scatter_block(gcoll::CallForm{}, sendbuf, recvbuf, recvcount,
                                           gcoll::type_at(h, 0, datatype), op, c);
      });
}

GCOLL_EXPORT int MPIX_Reduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                     int root, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Reduce_enqueue, comm, sendbuf, recvbuf, count, datatype, op, root, comm)
  using gcoll::HeldType;
  return gcoll::enqueue(
      gcoll::Coll::Reduce, "MPIX_Reduce_enqueue", comm, {datatype},
      {gcoll::StagedSide{sendbuf, count, datatype}, gcoll::StagedSide{recvbuf, count, datatype}},
      [&](std::string *why) {
        Status st = gcoll::reduction_ok(count, datatype, op, why);
        if (gcoll::ok(st)) st = gcoll::root_ok(root, comm, why);
        return st;
      },
      [=](MPI_Comm c, const std::vector<HeldType> &h = {}) {
        return gcoll::reduce(gcoll::CallForm{}, sendbuf, recvbuf, count, gcoll::type_at(h, 0, datatype), op, root, c);
      });
}

GCOLL_EXPORT int MPIX_Alltoall_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Alltoall_enqueue, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
  return gcoll::enqueue_blocks(gcoll::Coll::Alltoall, "MPIX_Alltoall_enqueue", sendbuf, sendcount, sendtype, recvbuf,
                               recvcount, recvtype, comm, true, [=](MPI_Comm c, MPI_Datatype st, MPI_Datatype rt) {
                                 return gcoll::alltoall(gcoll::CallForm{}, sendbuf, sendcount, st, recvbuf,
                                                        recvcount, rt, c);
                               });
}

GCOLL_EXPORT int MPIX_Allreduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                                          MPI_Op op, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Allreduce_enqueue_c, comm, sendbuf, recvbuf, count, datatype, op, comm)
  if (count >= 0 && !gcoll::fits(count)) return gcoll::too_large(gcoll::Coll::Allreduce, comm, "MPIX_Allreduce_enqueue_c");
  return MPIX_Allreduce_enqueue(sendbuf, recvbuf, static_cast<int>(count < 0 ? -1 : count), datatype, op, comm);
}
GCOLL_EXPORT int MPIX_Bcast_enqueue_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Bcast_enqueue_c, comm, buffer, count, datatype, root, comm)
  if (count >= 0 && !gcoll::fits(count)) return gcoll::too_large(gcoll::Coll::Bcast, comm, "MPIX_Bcast_enqueue_c");
  return MPIX_Bcast_enqueue(buffer, static_cast<int>(count < 0 ? -1 : count), datatype, root, comm);
}
GCOLL_EXPORT int MPIX_Allgather_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                          void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Allgather_enqueue_c, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                        comm)
  if ((sendcount >= 0 && !gcoll::fits(sendcount)) || (recvcount >= 0 && !gcoll::fits(recvcount)))
    return gcoll::too_large(gcoll::Coll::Allgather, comm, "MPIX_Allgather_enqueue_c");
  return MPIX_Allgather_enqueue(sendbuf, static_cast<int>(sendcount < 0 ? -1 : sendcount), sendtype, recvbuf,
                                static_cast<int>(recvcount < 0 ? -1 : recvcount), recvtype, comm);
}
GCOLL_EXPORT int MPIX_Reduce_scatter_block_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Reduce_scatter_block_enqueue_c, comm, sendbuf, recvbuf, recvcount, datatype, op, comm)
  if (recvcount >= 0 && !gcoll::fits(recvcount))
    return gcoll::too_large(gcoll::Coll::Reduce_scatter_block, comm, "MPIX_Reduce_scatter_block_enqueue_c");
  return MPIX_Reduce_scatter_block_enqueue(sendbuf, recvbuf, static_cast<int>(recvcount < 0 ? -1 : recvcount),
                                           datatype, op, comm);
}
GCOLL_EXPORT int MPIX_Reduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                                       MPI_Op op, int root, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Reduce_enqueue_c, comm, sendbuf, recvbuf, count, datatype, op, root, comm)
  if (count >= 0 && !gcoll::fits(count)) return gcoll::too_large(gcoll::Coll::Reduce, comm, "MPIX_Reduce_enqueue_c");
  return MPIX_Reduce_enqueue(sendbuf, recvbuf, static_cast<int>(count < 0 ? -1 : count), datatype, op, root, comm);
}
GCOLL_EXPORT int MPIX_Alltoall_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  GCOLL_ENQUEUE_FORWARD(MPIX_Alltoall_enqueue_c, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
  if ((sendcount >= 0 && !gcoll::fits(sendcount)) || (recvcount >= 0 && !gcoll::fits(recvcount)))
    return gcoll::too_large(gcoll::Coll::Alltoall, comm, "MPIX_Alltoall_enqueue_c");
  return MPIX_Alltoall_enqueue(sendbuf, static_cast<int>(sendcount < 0 ? -1 : sendcount), sendtype, recvbuf,
                               static_cast<int>(recvcount < 0 ? -1 : recvcount), recvtype, comm);
}

}  // extern "C"

