#include "ucx/transport.h"

#include <sched.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <bitset>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/log.h"

namespace gcoll::ucx {

// ---- tag layout ----------------------------------------------------------------------
namespace {
constexpr int kTagBits = 32;
constexpr int kRankBits = 20;
constexpr int kGroupBits = 12;
static_assert(kTagBits + kRankBits + kGroupBits == 64, "tag layout must fill 64 bits");
constexpr std::uint32_t kMaxGroups = 1u << kGroupBits;
constexpr int kMaxRanks = 1 << kRankBits;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

// Bounds for the cleanup paths (they are failure paths: a peer is gone or stuck).
constexpr double kCancelGraceS = 1.0;   // after cancelling receives, before force-closing
constexpr double kForceDrainS = 5.0;    // after force-closing endpoints
constexpr double kFinalizeCloseS = 5.0; // flush-closing all endpoints in finalize()
// A receive of at least this size may have been a rendezvous: its completion can leave
// a message this process still owes the sender (the ATS acknowledging a zero-copy get),
// which only our own progress sends. UCX's rendezvous thresholds are 8 KiB and more
// unless the user lowers UCX_RNDV_THRESH below this.
constexpr std::size_t kFlushMinBytes = 1024;
// Bound of that flush. An owed message leaves as soon as the sender, which waits for it
// and so progresses, has made room; but UCX 1.13's tcp endpoint flush sometimes does not
// complete at all (seen with UCX_TLS=tcp): do not let that cost more than this.
constexpr double kOwedFlushMaxS = 0.5;

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace

// ---- process-wide state --------------------------------------------------------------

// One per peer process (keyed by its worker address), shared by all groups.
struct PeerEntry {
  std::string address;  // remote worker address (bytes)
  int world_rank = -1;  // for log lines
  std::mutex mu;        // endpoint creation / close; sends under UCS_THREAD_MODE_MULTI
  std::atomic<ucp_ep_h> ep{nullptr};
  std::atomic<bool> lost{false};
  std::atomic<int> err{UCS_OK};  // ucs_status_t that made it lost
  std::atomic<bool> torn_down{false};  // we force-closed it (request not cancellable)
  std::atomic<int> rma_lanes{-1};      // endpoint has RMA (rendezvous get/put) lanes: 1/0, -1 unknown
  bool closed = false;                 // guarded by mu
  bool peer_mode = true;         // created with UCP_ERR_HANDLING_MODE_PEER
};

namespace {

enum class Phase { Uninit, Ready, Failed };

struct State {
  std::mutex mu;  // everything below except the atomics
  Phase phase = Phase::Uninit;
  Status init_status = Status::Ok;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_address_t *address = nullptr;
  std::size_t address_len = 0;
  bool multi = false;      // worker runs in UCS_THREAD_MODE_MULTI
  bool need_lock = false;  // MPI_THREAD_MULTIPLE but UCX gave less: we serialise
  std::mutex worker_mu;    // used only when need_lock
  std::atomic<std::uint64_t> epoch{0};  // bumped by init and finalize
  std::atomic<bool> ready{false};
  std::uint64_t next_id = 0;  // monotone group-id counter (never reset)
  std::bitset<kMaxGroups> ids_in_use;
  std::unordered_map<std::string, std::unique_ptr<PeerEntry>> peers;
  std::atomic<bool> logged_no_peer_mode{false};
  bool peer_mode = true;  // Options::peer_failure_detection of the init that made it
  bool flush_owed = true; // Options::flush_owed_on_wait
};

State &st() {
  static State *s = new State;  // never destroyed: usable from any teardown order
  return *s;
}

// Serialises worker calls only when UCX could not give us a thread-safe worker.
class WorkerGuard {
 public:
  WorkerGuard() {
    if (st().need_lock) lk_ = std::unique_lock<std::mutex>(st().worker_mu);
  }

 private:
  std::unique_lock<std::mutex> lk_;
};

// Locks a peer entry when several threads may use it at once.
class PeerGuard {
 public:
  explicit PeerGuard(PeerEntry *e) {
    if (st().multi || st().need_lock) lk_ = std::unique_lock<std::mutex>(e->mu);
  }

 private:
  std::unique_lock<std::mutex> lk_;
};

unsigned progress_once() {
  State &s = st();
  if (!s.ready.load(std::memory_order_acquire)) return 0;
  WorkerGuard g;
  return ucp_worker_progress(s.worker);
}

void on_ep_error(void *arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto *e = static_cast<PeerEntry *>(arg);
  e->err.store(status);
  e->lost.store(true, std::memory_order_release);
  // INFO only: at teardown, peers that finish first legitimately reset connections.
  GCOLL_INFO("ucx: endpoint to world rank %d failed: %s", e->world_rank,
             ucs_status_string(status));
}

const char *lost_reason(const PeerEntry *e) {
  if (e->torn_down.load()) return "endpoint force-closed after a timeout";
  return ucs_status_string(static_cast<ucs_status_t>(e->err.load()));
}

void log_ep_info(ucp_ep_h ep, int world_rank) {
  if (!log_on(LogLevel::Trace)) return;
  char *text = nullptr;
  std::size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == nullptr) return;
  ucp_ep_print_info(ep, f);
  fclose(f);
  // One line per lane; the config lines of ucp_ep_print_info are enough to see the
  // transports chosen.
  std::string all(text ? text : "", len);
  free(text);
  std::size_t pos = 0;
  while (pos < all.size()) {
    std::size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) nl = all.size();
    std::string line = all.substr(pos, nl - pos);
    if (!line.empty())
      GCOLL_TRACE("ucx: ep to world rank %d: %s", world_rank, line.c_str());
    pos = nl + 1;
  }
}

// Waits (progressing the worker) for a UCP request returned by a close call.
void drain_close_request(void *req, double bound_s) {
  if (req == nullptr || UCS_PTR_IS_ERR(req)) return;
  const double t0 = now_s();
  for (;;) {
    ucs_status_t s;
    {
      WorkerGuard g;
      s = ucp_request_check_status(req);
    }
    if (s != UCS_INPROGRESS) break;
    if (now_s() - t0 > bound_s) {
      GCOLL_INFO("ucx: endpoint close did not complete in %.1f s; releasing it", bound_s);
      break;
    }
    if (progress_once() == 0) sched_yield();
  }
  WorkerGuard g;
  ucp_request_free(req);
}

// True when the endpoint has lanes for zero-copy rendezvous (RMA: cma, tcp rma, RDMA).
// Only then can a completed receive leave an acknowledgement (ATS) owed to its sender;
// with active-message rendezvous (shared memory and tcp in PEER mode) it cannot. UCX 1.13
// has no query for this: the lane list printed by ucp_ep_print_info ("... rma_bw#0") is
// the only source. When the text cannot be understood, assume RMA lanes (safe side).
bool ep_has_rma_lanes(ucp_ep_h ep) {
  char *text = nullptr;
  std::size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == nullptr) return true;
  ucp_ep_print_info(ep, f);
  fclose(f);
  std::string all(text ? text : "", len);
  free(text);
  if (all.find("lane[") == std::string::npos) return true;
  return all.find("rma_bw#") != std::string::npos;
}

// Flushes the endpoints of the given peers: every protocol message queued on them leaves
// (shared memory, tcp: handed to the transport; RDMA: completed at the peer). A worker
// flush would not do: in UCX 1.13 it returns at once when the interfaces are idle, even
// with messages still queued on an endpoint. Bounded; an unfinished flush is left to UCX
// (logged at INFO level).
void flush_peers(const std::vector<PeerEntry *> &peers, double bound_s) {
  std::vector<void *> reqs;
  for (PeerEntry *e : peers) {
    PeerGuard pg(e);
    ucp_ep_h ep = e->ep.load(std::memory_order_acquire);
    if (ep == nullptr || e->lost.load(std::memory_order_acquire)) continue;
    ucp_request_param_t prm{};
    void *req;
    {
      WorkerGuard g;
      req = ucp_ep_flush_nbx(ep, &prm);
    }
    if (req == nullptr) continue;
    if (UCS_PTR_IS_ERR(req)) {
      GCOLL_INFO("ucx: flushing the endpoint to world rank %d failed: %s", e->world_rank,
                 ucs_status_string(UCS_PTR_STATUS(req)));
      continue;
    }
    reqs.push_back(req);
  }
  const double t0 = now_s();
  while (!reqs.empty()) {
    const unsigned events = progress_once();
    {
      WorkerGuard g;
      for (std::size_t i = 0; i < reqs.size();) {
        if (ucp_request_check_status(reqs[i]) != UCS_INPROGRESS) {
          ucp_request_free(reqs[i]);
          reqs[i] = reqs.back();
          reqs.pop_back();
        } else {
          ++i;
        }
      }
    }
    if (!reqs.empty() && now_s() - t0 > bound_s) {
      GCOLL_INFO("ucx: %zu endpoint flush(es) did not complete in %.1f s (first: world rank %d)", reqs.size(), bound_s, -1);
      WorkerGuard g;
      for (void *r : reqs) ucp_request_free(r);  // released when UCX completes them
      break;
    }
    if (events == 0) sched_yield();
  }
}

// Force-closes the endpoint of a peer (which becomes lost): UCX completes every request
// still queued on it with an error. Caller must not hold e->mu. `why` is logged when an
// endpoint is actually closed.
void force_close_peer(PeerEntry *e, ucs_status_t reason, const char *why) {
  std::lock_guard<std::mutex> lk(e->mu);
  int expected = UCS_OK;
  if (e->err.compare_exchange_strong(expected, reason)) e->torn_down.store(true);
  e->lost.store(true, std::memory_order_release);
  ucp_ep_h ep = e->ep.exchange(nullptr);
  if (ep == nullptr || e->closed) return;
  e->closed = true;
  GCOLL_WARN("ucx: force-closing the endpoint to world rank %d: %s", e->world_rank, why);
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void *req;
  {
    WorkerGuard g;
    req = ucp_ep_close_nbx(ep, &prm);
  }
  drain_close_request(req, kForceDrainS);
}

void teardown_locked(State &s) {
  if (s.address != nullptr) ucp_worker_release_address(s.worker, s.address);
  s.address = nullptr;
  s.address_len = 0;
  if (s.worker != nullptr) ucp_worker_destroy(s.worker);
  s.worker = nullptr;
  if (s.context != nullptr) ucp_cleanup(s.context);
  s.context = nullptr;
}

// True when the UCX_TLS value of `config` can load a shared-memory (mm) transport:
// "all", "shm"/"sm"/"mm", "posix", "sysv", "xpmem", or a "^..." exclusion list that does
// not exclude shm.
bool tls_may_use_mm(const ucp_config_t *config) {
  char *text = nullptr;
  std::size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == nullptr) return true;
  ucp_config_print(config, f, nullptr, UCS_CONFIG_PRINT_CONFIG);
  fclose(f);
  std::string all(text ? text : "", len);
  free(text);
  std::string value = "all";
  const std::string key = "UCX_TLS=";
  for (std::size_t pos = 0; pos < all.size();) {
    std::size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) nl = all.size();
    if (all.compare(pos, key.size(), key) == 0) {
      value = all.substr(pos + key.size(), nl - pos - key.size());
      break;
    }
    pos = nl + 1;
  }
  bool negate = false;
  if (!value.empty() && value[0] == '^') {
    negate = true;
    value.erase(0, 1);
  }
  bool listed = false;
  for (std::size_t pos = 0; pos <= value.size();) {
    std::size_t comma = value.find(',', pos);
    if (comma == std::string::npos) comma = value.size();
    std::string tl = value.substr(pos, comma - pos);
    tl = tl.substr(0, tl.find(':'));  // "name:aux"
    if (tl == "shm" || tl == "sm" || tl == "mm" ||
        (!negate && (tl == "all" || tl == "posix" || tl == "sysv" || tl == "xpmem")))
      listed = true;
    pos = comma + 1;
  }
  return negate ? !listed : listed;
}

Status init_locked(State &s) {
  // Thread level of MPI decides the worker's thread mode. SINGLE and FUNNELED get
  // SERIALIZED too: it costs the same inside UCX (no locks) and stays valid should gcoll
  // ever call UCX from a helper thread serialised with the application's thread.
  int provided = MPI_THREAD_SERIALIZED;
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (initialized && !finalized) PMPI_Query_thread(&provided);
  const bool want_multi = (provided == MPI_THREAD_MULTIPLE);

  ucp_config_t *config = nullptr;
  ucs_status_t us = ucp_config_read(nullptr, nullptr, &config);
  if (us != UCS_OK) {
    GCOLL_WARN("ucx: ucp_config_read failed: %s", ucs_status_string(us));
    return Status::ErrTransport;
  }
  // UCP_ERR_HANDLING_MODE_PEER (see peer_entry) excludes transports that do not declare peer
  // failure support; UCX 1.13's shared-memory transports declare it only with
  // MM_ERROR_HANDLING=y (they then detect a dead peer through keepalive, checking the
  // peer process). Without it, intra-node traffic would fall back to tcp loopback, or
  // be unreachable with UCX_TLS=shm,self. We set it on our own configuration object,
  // which changes neither the environment nor any other UCX user in the process; a
  // value the user set in UCX_MM_ERROR_HANDLING wins. Only when UCX_TLS lets a
  // shared-memory transport load: otherwise UCX warns "invalid configuration:
  // MM_ERROR_HANDLING=y" at worker creation. (CMA, the zero-copy shared-memory
  // rendezvous, has no peer failure support in 1.13 and is dropped by PEER mode anyway.)
  if (s.peer_mode && std::getenv("UCX_MM_ERROR_HANDLING") == nullptr &&
      tls_may_use_mm(config)) {
    us = ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
    if (us != UCS_OK)
      GCOLL_INFO("ucx: cannot set MM_ERROR_HANDLING=y (%s); shared memory may be unused",
                 ucs_status_string(us));
  }

  int world_size = 1;
  if (initialized && !finalized) PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = want_multi ? 1 : 0;
  params.estimated_num_eps = static_cast<std::size_t>(world_size);
  params.name = "gcoll";
  us = ucp_init(&params, config, &s.context);
  ucp_config_release(config);
  if (us != UCS_OK) {
    s.context = nullptr;
    GCOLL_WARN("ucx: ucp_init failed: %s", ucs_status_string(us));
    return Status::ErrTransport;
  }

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = want_multi ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SERIALIZED;
  us = ucp_worker_create(s.context, &wp, &s.worker);
  if (us != UCS_OK) {
    s.worker = nullptr;
    GCOLL_WARN("ucx: ucp_worker_create failed: %s", ucs_status_string(us));
    teardown_locked(s);
    return Status::ErrTransport;
  }
  s.multi = false;
  s.need_lock = false;
  if (want_multi) {
    ucp_worker_attr_t wa{};
    wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    if (ucp_worker_query(s.worker, &wa) == UCS_OK && wa.thread_mode == UCS_THREAD_MODE_MULTI) {
      s.multi = true;
    } else {
      s.need_lock = true;
      GCOLL_INFO("ucx: UCX gave no multi-threaded worker; gcoll serialises worker calls");
    }
  }

  us = ucp_worker_get_address(s.worker, &s.address, &s.address_len);
  if (us != UCS_OK) {
    s.address = nullptr;
    GCOLL_WARN("ucx: ucp_worker_get_address failed: %s", ucs_status_string(us));
    teardown_locked(s);
    return Status::ErrTransport;
  }
  GCOLL_INFO("ucx: initialised (UCX %s, worker address %zu bytes, thread mode %s, peer "
             "failure detection %s)",
             ucp_get_version_string(), s.address_len,
             s.multi ? "multi" : (s.need_lock ? "serialized+lock" : "serialized"),
             s.peer_mode ? "on" : "off");
  return Status::Ok;
}

}  // namespace

// ---- lifecycle -----------------------------------------------------------------------

Status init() { return init(Options{}); }

Status init(const Options &options) {
  State &s = st();
  if (s.ready.load(std::memory_order_acquire)) return Status::Ok;
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.phase == Phase::Ready) return Status::Ok;
  if (s.phase == Phase::Failed) return s.init_status;
  s.peer_mode = options.peer_failure_detection;
  s.flush_owed = options.flush_owed_on_wait;
  Status r = init_locked(s);
  if (r != Status::Ok) {
    s.phase = Phase::Failed;
    s.init_status = r;
    return r;
  }
  s.phase = Phase::Ready;
  s.epoch.fetch_add(1);
  s.ready.store(true, std::memory_order_release);
  return Status::Ok;
}

void finalize() {
  State &s = st();
  std::unique_lock<std::mutex> lk(s.mu);
  if (s.phase != Phase::Ready) {
    s.phase = Phase::Uninit;  // a failed init may be retried after finalize
    return;
  }
  s.epoch.fetch_add(1);  // every existing Group becomes stale
  // Close all endpoints at once, then progress until they are closed (bounded).
  std::vector<void *> reqs;
  for (auto &kv : s.peers) {
    PeerEntry *e = kv.second.get();
    std::lock_guard<std::mutex> elk(e->mu);
    ucp_ep_h ep = e->ep.exchange(nullptr);
    if (ep == nullptr || e->closed) continue;
    e->closed = true;
    ucp_request_param_t prm{};
    if (e->lost.load()) {
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    void *r;
    {
      WorkerGuard g;
      r = ucp_ep_close_nbx(ep, &prm);
    }
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) reqs.push_back(r);
  }
  const double t0 = now_s();
  while (!reqs.empty()) {
    {
      WorkerGuard g;
      if (ucp_worker_progress(s.worker) == 0) sched_yield();
      for (std::size_t i = 0; i < reqs.size();) {
        if (ucp_request_check_status(reqs[i]) != UCS_INPROGRESS) {
          ucp_request_free(reqs[i]);
          reqs[i] = reqs.back();
          reqs.pop_back();
        } else {
          ++i;
        }
      }
    }
    if (!reqs.empty() && now_s() - t0 > kFinalizeCloseS) {
      GCOLL_INFO("ucx: %zu endpoint(s) did not close in %.1f s; destroying the worker anyway",
                 reqs.size(), kFinalizeCloseS);
      WorkerGuard g;
      for (void *r : reqs) ucp_request_free(r);
      reqs.clear();
    }
  }
  s.ready.store(false, std::memory_order_release);
  teardown_locked(s);
  s.peers.clear();
  s.ids_in_use.reset();
  s.phase = Phase::Uninit;
  s.multi = s.need_lock = false;
  GCOLL_INFO("ucx: finalized");
}

bool supports_cuda_memory() {
  if (init() != Status::Ok) return false;
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(st().context, &attr) != UCS_OK) return false;
  return (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

unsigned progress() { return progress_once(); }

Status progress_barrier(MPI_Comm comm, double timeout_s) {
  MPI_Request r = MPI_REQUEST_NULL;
  if (PMPI_Ibarrier(comm, &r) != MPI_SUCCESS) return Status::ErrInternal;
  const double t0 = now_s();
  int idle = 0;
  for (;;) {
    int flag = 0;
    if (PMPI_Test(&r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return Status::ErrInternal;
    if (flag) return Status::Ok;
    if (progress_once() == 0 && ++idle >= 16) {
      idle = 0;
      sched_yield();
    }
    if (timeout_s > 0 && now_s() - t0 > timeout_s) {
      GCOLL_WARN("ucx: barrier did not complete in %.3f s", timeout_s);
      return Status::ErrTransport;
    }
  }
}

// ---- Group -----------------------------------------------------------------------------

Status Group::create(MPI_Comm comm, std::unique_ptr<Group> *out) {
  if (out == nullptr) return Status::ErrArg;
  out->reset();
  if (comm == MPI_COMM_NULL) return Status::ErrComm;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return Status::ErrComm;
  if (inter) return Status::ErrComm;
  int rank = 0, size = 0;
  if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return Status::ErrComm;
  if (size > kMaxRanks) {
    GCOLL_INFO("ucx: communicator of %d ranks exceeds the %d ranks of the tag layout", size,
               kMaxRanks);
    return Status::NotSupported;
  }
  State &s = st();
  // Every rank takes part in every collective below, whatever its local init says, so
  // that all agree on the outcome.
  const Status ist = init();

  // 1. Agree on a group id: MAX of the local counters, then check that it is free on
  //    every member (a concurrent create on another thread may have taken it); if not,
  //    everybody moves past it and tries again.
  std::uint32_t id = 0;
  for (std::uint32_t round = 0;; ++round) {
    std::uint64_t in[2], res[2] = {0, 0};
    {
      std::lock_guard<std::mutex> lk(s.mu);
      in[0] = s.next_id;
    }
    // Retries (only after a concurrent create on another thread took the id on some
    // member): a random step, so that two creates racing on the same processes do not
    // keep choosing the same id in lockstep.
    if (round > 0) {
      thread_local std::minstd_rand rng(static_cast<unsigned>(
          std::hash<std::thread::id>{}(std::this_thread::get_id()) ^
          static_cast<std::size_t>(now_s() * 1e9)));
      in[0] += rng() % 8;
    }
    in[1] = (ist == Status::Ok) ? 0 : 1;
    if (PMPI_Allreduce(in, res, 2, MPI_UINT64_T, MPI_MAX, comm) != MPI_SUCCESS)
      return Status::ErrInternal;
    if (res[1] != 0) {
      GCOLL_INFO("ucx: UCX is unavailable on at least one rank; no group");
      return Status::ErrTransport;
    }
    id = static_cast<std::uint32_t>(res[0] % kMaxGroups);
    int conflict = 0;
    {
      std::lock_guard<std::mutex> lk(s.mu);
      if (s.ids_in_use.test(id)) {
        conflict = 1;
      } else {
        s.ids_in_use.set(id);
      }
      s.next_id = std::max(s.next_id, res[0] + 1);
    }
    int any_conflict = 0;
    if (PMPI_Allreduce(&conflict, &any_conflict, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) {
      if (!conflict) {
        std::lock_guard<std::mutex> lk(s.mu);
        s.ids_in_use.reset(id);
      }
      return Status::ErrInternal;
    }
    if (!any_conflict) break;
    GCOLL_TRACE("ucx: group id %u is taken on a member; agreeing on another one", id);
    if (!conflict) {
      std::lock_guard<std::mutex> lk(s.mu);
      s.ids_in_use.reset(id);
    }
    if (round + 1 >= kMaxGroups) {
      GCOLL_WARN("ucx: no free group id (%u groups alive)", kMaxGroups);
      return Status::ErrNoMem;
    }
  }
  auto release_id = [&s, id]() {
    std::lock_guard<std::mutex> lk(s.mu);
    s.ids_in_use.reset(id);
  };

  // 2. Exchange worker addresses: [int32 world rank][address bytes].
  int world_rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::vector<char> mine(sizeof(std::int32_t) + s.address_len);
  const std::int32_t wr32 = world_rank;
  std::memcpy(mine.data(), &wr32, sizeof wr32);
  std::memcpy(mine.data() + sizeof wr32, s.address, s.address_len);
  std::vector<int> lens(size), displs(size);
  int mylen = static_cast<int>(mine.size());
  if (PMPI_Allgather(&mylen, 1, MPI_INT, lens.data(), 1, MPI_INT, comm) != MPI_SUCCESS) {
    release_id();
    return Status::ErrInternal;
  }
  std::size_t total = 0;
  for (int r = 0; r < size; ++r) {
    displs[r] = static_cast<int>(total);
    total += static_cast<std::size_t>(lens[r]);
  }
  if (total > static_cast<std::size_t>(INT32_MAX)) {
    release_id();
    return Status::NotSupported;  // same on all ranks: lens are allgathered
  }
  std::vector<char> all(std::max<std::size_t>(total, 1));
  if (PMPI_Allgatherv(mine.data(), mylen, MPI_BYTE, all.data(), lens.data(), displs.data(),
                      MPI_BYTE, comm) != MPI_SUCCESS) {
    release_id();
    return Status::ErrInternal;
  }

  std::unique_ptr<Group> g(new (std::nothrow) Group);
  if (!g) {
    release_id();
    return Status::ErrNoMem;
  }
  g->rank_ = rank;
  g->size_ = size;
  g->id_ = id;
  g->epoch_ = s.epoch.load();
  g->peers_.resize(size, nullptr);
  g->world_ranks_.resize(size, -1);
  {
    std::lock_guard<std::mutex> lk(s.mu);
    for (int r = 0; r < size; ++r) {
      const char *p = all.data() + displs[r];
      std::int32_t w = -1;
      if (lens[r] < static_cast<int>(sizeof w)) continue;  // cannot happen
      std::memcpy(&w, p, sizeof w);
      std::string key(p + sizeof w, static_cast<std::size_t>(lens[r]) - sizeof w);
      auto it = s.peers.find(key);
      if (it == s.peers.end()) {
        auto e = std::make_unique<PeerEntry>();
        e->address = key;
        e->world_rank = w;
        it = s.peers.emplace(std::move(key), std::move(e)).first;
      }
      g->peers_[r] = it->second.get();
      g->world_ranks_[r] = w;
    }
  }
  GCOLL_TRACE("ucx: group %u created: rank %d of %d", id, rank, size);
  *out = std::move(g);
  return Status::Ok;
}

Group::~Group() {
  State &s = st();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.epoch.load() == epoch_) s.ids_in_use.reset(id_);
}

std::uint64_t Group::bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }

std::uint64_t Group::make_tag(int src, std::uint32_t tag) const {
  return (static_cast<std::uint64_t>(id_) << (kTagBits + kRankBits)) |
         (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << kTagBits) |
         static_cast<std::uint64_t>(tag);
}

PeerEntry *Group::peer_entry(int peer) {
  PeerEntry *e = peers_[peer];
  if (e->lost.load(std::memory_order_acquire) || e->ep.load(std::memory_order_acquire))
    return e;
  State &s = st();
  std::lock_guard<std::mutex> lk(e->mu);
  if (e->lost.load() || e->ep.load() || e->closed) return e;
  ucp_ep_params_t p{};
  p.address = reinterpret_cast<const ucp_address_t *>(e->address.data());
  ucp_ep_h ep = nullptr;
  ucs_status_t us = UCS_ERR_UNREACHABLE;
  if (s.peer_mode) {
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb = on_ep_error;
    p.err_handler.arg = e;
    WorkerGuard g;
    us = ucp_ep_create(s.worker, &p, &ep);
  }
  if (us == UCS_ERR_UNREACHABLE) {
    // The transports that reach this peer do not support peer failure detection: connect
    // without it (a dead peer is then detected only by the caller's timeout).
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    {
      WorkerGuard g;
      us = ucp_ep_create(s.worker, &p, &ep);
    }
    if (us == UCS_OK) {
      e->peer_mode = false;
      if (s.peer_mode && !s.logged_no_peer_mode.exchange(true)) {
        GCOLL_INFO("ucx: no transport with peer failure detection reaches world rank %d; "
                   "connected without it (only timeouts detect a dead peer)",
                   e->world_rank);
      }
    }
  }
  if (us != UCS_OK) {
    e->err.store(us);
    e->lost.store(true, std::memory_order_release);
    e->closed = true;
    GCOLL_WARN("ucx: cannot connect to world rank %d (rank %d of group %u): ucp_ep_create: %s",
               e->world_rank, peer, id_, ucs_status_string(us));
    return e;
  }
  log_ep_info(ep, e->world_rank);
  e->ep.store(ep, std::memory_order_release);
  return e;
}

namespace {
// Marks a request done with a status.
void finish(Request *req, Status status) {
  req->handle = nullptr;
  req->done = true;
  req->status = status;
}

const char *kind_name(const Request &r) {
  return r.kind == Request::Kind::Send ? "send to" : "receive from";
}
}  // namespace

// Checked at each entry point: the transport must be initialised and not finalized since
// the group was made.
#define GCOLL_UCX_CHECK_LIVE()                                                        \
  do {                                                                                \
    if (!st().ready.load(std::memory_order_acquire) || st().epoch.load() != epoch_) { \
      GCOLL_WARN("ucx: group %u used after ucx::finalize()", id_);                    \
      return Status::ErrInternal;                                                     \
    }                                                                                 \
  } while (0)

Status Group::isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag,
                    Request *req) {
  if (req == nullptr) return Status::ErrArg;
  *req = Request{};
  req->group = this;
  req->peer = peer;
  req->tag = tag;
  req->bytes = bytes;
  req->kind = Request::Kind::Send;
  GCOLL_UCX_CHECK_LIVE();
  if (peer < 0 || peer >= size_ || (buf == nullptr && bytes != 0)) {
    finish(req, Status::ErrArg);
    return Status::ErrArg;
  }
  PeerEntry *e = peer_entry(peer);
  static const char dummy = 0;
  const void *b = bytes ? buf : &dummy;
  ucp_request_param_t prm{};
  void *sp;
  {
    PeerGuard pg(e);
    ucp_ep_h ep = e->ep.load(std::memory_order_acquire);
    if (e->lost.load(std::memory_order_acquire) || ep == nullptr) {
      GCOLL_WARN("ucx: send to rank %d (world rank %d) of group %u, tag %u, %zu bytes: peer "
                 "lost (%s)",
                 peer, world_ranks_[peer], id_, tag, bytes,
                 lost_reason(e));
      finish(req, Status::ErrTransport);
      return Status::ErrTransport;
    }
    WorkerGuard g;
    sp = ucp_tag_send_nbx(ep, b, bytes, make_tag(rank_, tag), &prm);
  }
  if (UCS_PTR_IS_ERR(sp)) {
    GCOLL_WARN("ucx: send to rank %d (world rank %d) of group %u, tag %u, %zu bytes: %s", peer,
               world_ranks_[peer], id_, tag, bytes, ucs_status_string(UCS_PTR_STATUS(sp)));
    finish(req, Status::ErrTransport);
    return Status::ErrTransport;
  }
  bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
  if (sp == nullptr) {
    finish(req, Status::Ok);
  } else {
    req->handle = sp;
    req->done = false;
  }
  return Status::Ok;
}

Status Group::irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) {
  if (req == nullptr) return Status::ErrArg;
  *req = Request{};
  req->group = this;
  req->peer = peer;
  req->tag = tag;
  req->bytes = bytes;
  req->kind = Request::Kind::Recv;
  GCOLL_UCX_CHECK_LIVE();
  if (peer < 0 || peer >= size_ || (buf == nullptr && bytes != 0)) {
    finish(req, Status::ErrArg);
    return Status::ErrArg;
  }
  // The endpoint is not needed to receive, but with it UCX watches the peer (keepalive,
  // connection state), so a dead sender fails the receive instead of leaving it hanging.
  PeerEntry *e = peer_entry(peer);
  if (e->lost.load(std::memory_order_acquire)) {
    GCOLL_WARN("ucx: receive from rank %d (world rank %d) of group %u, tag %u, %zu bytes: "
               "peer lost (%s)",
               peer, world_ranks_[peer], id_, tag, bytes,
               lost_reason(e));
    finish(req, Status::ErrTransport);
    return Status::ErrTransport;
  }
  static char dummy;
  void *b = bytes ? buf : &dummy;
  ucp_tag_recv_info_t info{};
  ucp_request_param_t prm{};
  // UCX 1.13 may complete a receive immediately without filling recv_info (seen here:
  // info.length stayed 0 for a 4-byte message): always get a request and test it.
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  prm.recv_info.tag_info = &info;
  void *rp;
  {
    WorkerGuard g;
    rp = ucp_tag_recv_nbx(st().worker, b, bytes, make_tag(peer, tag), kFullMask, &prm);
  }
  if (UCS_PTR_IS_ERR(rp)) {
    GCOLL_WARN("ucx: receive from rank %d (world rank %d) of group %u, tag %u, %zu bytes: %s",
               peer, world_ranks_[peer], id_, tag, bytes, ucs_status_string(UCS_PTR_STATUS(rp)));
    finish(req, Status::ErrTransport);
    return Status::ErrTransport;
  }
  if (rp == nullptr) {
    if (info.length != bytes) {
      GCOLL_WARN("ucx: receive from rank %d (world rank %d) of group %u, tag %u: got %zu bytes, "
                 "expected %zu",
                 peer, world_ranks_[peer], id_, tag, info.length, bytes);
      finish(req, Status::ErrInternal);
      return Status::ErrInternal;
    }
    finish(req, Status::Ok);
  } else {
    req->handle = rp;
    req->done = false;
  }
  return Status::Ok;
}

namespace {

// Polls one outstanding request; true when it is done now. Logs failures when `log`.
bool poll_request(Request *r, bool log) {
  if (r->done) return true;
  Group *g = r->group;
  ucs_status_t us;
  std::size_t got = r->bytes;
  {
    WorkerGuard wg;
    if (r->kind == Request::Kind::Recv) {
      ucp_tag_recv_info_t info{};
      us = ucp_tag_recv_request_test(r->handle, &info);
      if (us == UCS_OK) got = info.length;
    } else {
      us = ucp_request_check_status(r->handle);
    }
    if (us == UCS_INPROGRESS) return false;
    ucp_request_free(r->handle);
  }
  r->handle = nullptr;
  Status status = Status::Ok;
  if (us == UCS_OK && got != r->bytes) {
    if (log)
      GCOLL_WARN("ucx: receive from rank %d of group %u, tag %u: got %zu bytes, expected %zu",
                 r->peer, g->id(), r->tag, got, r->bytes);
    status = Status::ErrInternal;
  } else if (us == UCS_ERR_MESSAGE_TRUNCATED) {
    if (log)
      GCOLL_WARN("ucx: receive from rank %d of group %u, tag %u: message longer than %zu bytes",
                 r->peer, g->id(), r->tag, r->bytes);
    status = Status::ErrInternal;
  } else if (us != UCS_OK) {
    if (log)
      GCOLL_WARN("ucx: %s rank %d of group %u, tag %u, %zu bytes failed: %s", kind_name(*r),
                 r->peer, g->id(), r->tag, r->bytes, ucs_status_string(us));
    status = Status::ErrTransport;
  }
  finish(r, status);
  return true;
}

}  // namespace

// Ends every outstanding request of reqs[0..n): cancels receives, then force-closes the
// endpoints of peers with requests still outstanding, then (should UCX still hold some)
// releases them to UCX. After it returns, UCX touches none of the buffers except in the
// last, logged, case.
static Status abandon(Request *reqs, int n, PeerEntry *(*entry_of)(Request *)) {
  auto drain = [&](double bound_s) {
    const double t0 = now_s();
    int pending;
    do {
      pending = 0;
      progress_once();
      for (int i = 0; i < n; ++i)
        if (!reqs[i].done && !poll_request(&reqs[i], false)) ++pending;
      if (pending == 0) break;
      sched_yield();
    } while (now_s() - t0 < bound_s);
    return pending;
  };
  Status result = Status::Ok;
  bool any = false;
  for (int i = 0; i < n; ++i) {
    Request &r = reqs[i];
    if (r.done) continue;
    any = true;
    if (r.kind == Request::Kind::Recv) {
      WorkerGuard g;
      ucp_request_cancel(st().worker, r.handle);
    }
  }
  if (!any) return result;
  if (drain(kCancelGraceS) == 0) return result;
  // Receives already matched (rendezvous in progress) and sends cannot be cancelled:
  // tear down the endpoints of their peers; UCX then fails those requests.
  for (int i = 0; i < n; ++i) {
    if (reqs[i].done) continue;
    PeerEntry *e = entry_of(&reqs[i]);
    if (e != nullptr)
      force_close_peer(e, UCS_ERR_CANCELED,
                       reqs[i].kind == Request::Kind::Send
                           ? "a send to it cannot be cancelled"
                           : "a receive from it is in a rendezvous and cannot be cancelled");
    result = Status::ErrTransport;
  }
  if (drain(kForceDrainS) == 0) return result;
  for (int i = 0; i < n; ++i) {
    Request &r = reqs[i];
    if (r.done) continue;
    GCOLL_WARN("ucx: %s rank %d, tag %u, %zu bytes could not be cancelled; released to UCX, "
               "which may still access its buffer",
               kind_name(r), r.peer, r.tag, r.bytes);
    {
      WorkerGuard g;
      ucp_request_free(r.handle);
    }
    finish(&r, Status::ErrTransport);
  }
  return Status::ErrTransport;
}

struct GroupAccess {
  static PeerEntry *entry(Request *r) {
    Group *g = r->group;
    if (g == nullptr || r->peer < 0 || r->peer >= g->size()) return nullptr;
    return g->peers_[r->peer];
  }
  static int world_rank(const Request &r) { return r.group->world_ranks_[r.peer]; }
};

Status Group::cancel(Request *reqs, int n) {
  if (n <= 0) return Status::Ok;
  if (!st().ready.load(std::memory_order_acquire)) return Status::ErrInternal;
  for (int i = 0; i < n; ++i) {
    if (!reqs[i].done && reqs[i].group->epoch_ != st().epoch.load()) return Status::ErrInternal;
  }
  return abandon(reqs, n, &GroupAccess::entry);
}

Status Group::wait(Request *reqs, int n, double timeout_s) {
  if (n <= 0) return Status::Ok;
  if (reqs == nullptr) return Status::ErrArg;
  const std::uint64_t epoch = st().epoch.load();
  int pending = 0;
  for (int i = 0; i < n; ++i) {
    if (reqs[i].done) continue;
    if (!st().ready.load(std::memory_order_acquire) || reqs[i].group == nullptr ||
        reqs[i].group->epoch_ != epoch) {
      GCOLL_WARN("ucx: wait on a request of a group used after ucx::finalize()");
      return Status::ErrInternal;
    }
    ++pending;
  }
  Status first = Status::Ok;
  auto note = [&](const Request &r) {
    if (first == Status::Ok && r.status != Status::Ok) first = r.status;
  };
  // Peers we may owe a rendezvous acknowledgement once our receives complete (see
  // kFlushMinBytes); usually none or a few.
  std::vector<PeerEntry *> owed;
  for (int i = 0; i < n; ++i) {
    if (reqs[i].done) note(reqs[i]);
    if (!reqs[i].done && reqs[i].kind == Request::Kind::Recv && reqs[i].bytes >= kFlushMinBytes) {
      PeerEntry *e = GroupAccess::entry(&reqs[i]);
      if (e != nullptr && std::find(owed.begin(), owed.end(), e) == owed.end()) {
        int rma = e->rma_lanes.load(std::memory_order_relaxed);
        if (rma < 0) {
          PeerGuard pg(e);
          ucp_ep_h ep = e->ep.load(std::memory_order_acquire);
          if (ep != nullptr && !e->lost.load()) {
            WorkerGuard g;
            rma = ep_has_rma_lanes(ep) ? 1 : 0;
            e->rma_lanes.store(rma, std::memory_order_relaxed);
          }
        }
        if (rma != 0) owed.push_back(e);
      }
    }
  }

  // After a failure, the other requests still get the chance to complete (a failed
  // receive must not cost the endpoint of a healthy peer), but with a bounded idle time
  // even when the caller gave none.
  constexpr double kErrorGraceS = 10.0;
  std::vector<char> cancelled;  // receives cancelled because their peer was lost
  double last = now_s();
  int lo = 0;  // requests below lo are all done
  int idle = 0;
  bool timed_out = false;
  double limit = timeout_s;
  while (pending > 0) {
    const unsigned events = progress_once();
    bool completed = false;
    while (lo < n && reqs[lo].done) ++lo;
    for (int i = lo; i < n; ++i) {
      Request &r = reqs[i];
      if (r.done) continue;
      if (poll_request(&r, first == Status::Ok)) {
        --pending;
        completed = true;
        if (!cancelled.empty() && cancelled[i]) r.status = Status::ErrTransport;
        note(r);
        continue;
      }
      if (r.kind == Request::Kind::Recv && (cancelled.empty() || !cancelled[i])) {
        // A receive does not fail by itself when its sender dies; the sender's endpoint
        // does (UCX fails the sends on it, not the receives).
        PeerEntry *e = GroupAccess::entry(&r);
        if (e != nullptr && e->lost.load(std::memory_order_acquire)) {
          GCOLL_WARN("ucx: receive from rank %d (world rank %d) of group %u, tag %u, %zu "
                     "bytes: peer lost (%s)",
                     r.peer, e->world_rank, r.group->id(), r.tag, r.bytes,
                     lost_reason(e));
          if (first == Status::Ok) first = Status::ErrTransport;
          if (cancelled.empty()) cancelled.assign(n, 0);
          cancelled[i] = 1;
          WorkerGuard g;
          ucp_request_cancel(st().worker, r.handle);
        }
      }
    }
    if (first != Status::Ok && limit <= 0) limit = kErrorGraceS;
    const double t = now_s();
    if (completed) {
      last = t;
      idle = 0;
    } else if (limit > 0 && t - last > limit) {
      timed_out = true;
      break;
    } else if (events == 0 && ++idle >= 32) {
      idle = 0;
      sched_yield();  // oversubscribed runs: let the peers we wait for run
    }
  }
  if (timed_out) {
    int shown = 0;
    for (int i = 0; i < n && shown < 4; ++i) {
      const Request &r = reqs[i];
      if (r.done) continue;
      ++shown;
      GCOLL_WARN("ucx: nothing completed for %.3f s: %s rank %d (world rank %d) of group %u, "
                 "tag %u, %zu bytes still pending (%d of %d requests pending)",
                 limit, kind_name(r), r.peer, GroupAccess::world_rank(r), r.group->id(),
                 r.tag, r.bytes, pending, n);
    }
    if (first == Status::Ok) first = Status::ErrTransport;
    abandon(reqs, n, &GroupAccess::entry);
  }
  // Our receives are complete, but a sender may still wait for our acknowledgement of a
  // rendezvous, and this process may not call UCX again for a long time (the caller
  // returns to the application, which may block in MPI): push such messages out now.
  if (first == Status::Ok && !owed.empty() && st().flush_owed)
    flush_peers(owed, std::min(limit > 0 ? limit : kErrorGraceS, kOwedFlushMaxS));
  return first;
}

Status Group::sendrecv(int dst, const void *sbuf, std::size_t sbytes, int src, void *rbuf,
                       std::size_t rbytes, std::uint32_t tag, double timeout_s) {
  Request reqs[2];
  Status s = irecv(src, rbuf, rbytes, tag, &reqs[0]);
  if (s != Status::Ok) return s;
  s = isend(dst, sbuf, sbytes, tag, &reqs[1]);
  if (s != Status::Ok) {
    cancel(reqs, 1);
    return s;
  }
  return wait(reqs, 2, timeout_s);
}

Status Group::test(Request *reqs, int n, bool *all_done) {
  *all_done = true;
  Status first = Status::Ok;
  for (int i = 0; i < n; ++i) {
    if (!poll_request(&reqs[i], true)) {
      *all_done = false;
      continue;
    }
    if (reqs[i].status != Status::Ok && first == Status::Ok) first = reqs[i].status;
  }
  if (first != Status::Ok) {
    cancel(reqs, n);
    *all_done = true;
  }
  return first;
}

}  // namespace gcoll::ucx
