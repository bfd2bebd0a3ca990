// UCX transport, process-wide part: the UCP context and worker (init, finalize), worker
// progress and the progress barrier.
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/config.h"
#include "base/foreign.h"
#include "base/log.h"
#include "base/wait.h"
#include "net/ucx_internal.h"

namespace gcoll::ucx {

State &st() {
  static State *s = new State;  // never destroyed: usable from any teardown order
  return *s;
}

unsigned progress_once() {
  State &s = st();
  if (!s.ready.load(std::memory_order_acquire)) return 0;
  WorkerGuard g;
  return ucp_worker_progress(s.worker);
}

namespace {

constexpr double kFinalizeCloseS = 5.0;  // flush-closing all endpoints in finalize()

void teardown_locked(State &s) {
  if (s.address != nullptr) ucp_worker_release_address(s.worker, s.address);
  s.address = nullptr;
  s.address_len = 0;
  if (s.worker != nullptr) ucp_worker_destroy(s.worker);
  s.worker = nullptr;
  if (s.context != nullptr) ucp_cleanup(s.context);
  s.context = nullptr;
}

// The UCX_TLS value of `config` ("all" when unset).
std::string tls_value(const ucp_config_t *config) {
  char *text = nullptr;
  std::size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == nullptr) return "all";
  ucp_config_print(config, f, nullptr, UCS_CONFIG_PRINT_CONFIG);
  fclose(f);
  std::string all(text ? text : "", len);
  free(text);
  const std::string key = "UCX_TLS=";
  for (std::size_t pos = 0; pos < all.size();) {
    std::size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) nl = all.size();
    if (all.compare(pos, key.size(), key) == 0) return all.substr(pos + key.size(), nl - pos - key.size());
    pos = nl + 1;
  }
  return "all";
}

}  // namespace

// True when a UCX_TLS value can load the transport: `aliases` name it or a group holding
// it ("shm" for the mm transports), `members` only when listed positively ("all", or a
// member of the group); a "^..." exclusion list loads it unless an alias is excluded.
bool tls_allows(const std::string &tls, std::initializer_list<const char *> aliases,
                std::initializer_list<const char *> members) {
  std::string value = tls;
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
    for (const char *a : aliases) listed = listed || tl == a;
    if (!negate) {
      listed = listed || tl == "all";
      for (const char *m : members) listed = listed || tl == m;
    }
    pos = comma + 1;
  }
  return negate ? !listed : listed;
}

namespace {

// UCX_TLS can load a shared-memory (mm) transport: "all", "shm"/"sm"/"mm", "posix",
// "sysv", "xpmem", or a "^..." exclusion list that does not exclude shm.
bool tls_may_use_mm(const ucp_config_t *config) {
  return tls_allows(tls_value(config), {"shm", "sm", "mm"}, {"posix", "sysv", "xpmem"});
}

// UCX_TLS can load cuda_ipc: "all", "cuda", "cuda_ipc", or an exclusion list without them.
bool tls_may_use_cuda_ipc(const ucp_config_t *config) {
  return tls_allows(tls_value(config), {"cuda", "cuda_ipc"}, {});
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

  std::string why;
  if (!load_api(&why)) {
    warn_shared(SharedWarning::UcxSetup, "ucx: %s: gcoll's transport between nodes is off (calls across nodes go to the MPI)",
                why.c_str());
    return Status::ErrTransport;
  }
  ucp_config_t *config = nullptr;
  ucs_status_t us = ucp_config_read(nullptr, nullptr, &config);
  if (us != UCS_OK) {
    warn_shared(SharedWarning::UcxSetup, "ucx: ucp_config_read failed: %s", ucs_status_string(us));
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
  if (s.peer_mode && foreign_env("UCX_MM_ERROR_HANDLING") == nullptr &&
      tls_may_use_mm(config)) {
    us = ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
    if (us != UCS_OK)
      GCOLL_INFO("ucx: cannot set MM_ERROR_HANDLING=y (%s); shared memory may be unused",
                 ucs_status_string(us));
  }

  // cuda_ipc's mapping cache off on gcoll's own configuration, unless the user set
  // UCX_CUDA_IPC_CACHE. gcoll maps its node peers' device buffers through CUDA IPC
  // itself (mem/cuda_space_expose.cc); with the cache on, UCX keeps its own mappings of
  // peers' allocations after a transfer, and once such an allocation is freed and another
  // comes at its address, the driver refuses gcoll's mapping of the new one
  // (CUDA_ERROR_ALREADY_MAPPED) while UCX's stale one stays open: gcoll cannot close it.
  // Found on an H100 (gpu.mpi.vnodes2.direct.np4: ranks on different virtual nodes of one
  // host send device memory through gcoll's UCX, then meet on one node in a split
  // communicator). gcoll's UCX peers are on other nodes, where cuda_ipc does not apply,
  // except for virtual nodes: nothing is lost on real ones. Set only where the cuda_ipc
  // transport loads: else UCX warns about a configuration nothing used.
  if (foreign_env("UCX_CUDA_IPC_CACHE") == nullptr && tls_may_use_cuda_ipc(config) && has_component("cuda_ipc")) {
    us = ucp_config_modify(config, "CUDA_IPC_CACHE", "n");
    if (us == UCS_OK)
      GCOLL_INFO("ucx: CUDA_IPC_CACHE=n (UCX keeps no mappings of peers' device buffers)");
    else
      GCOLL_INFO("ucx: cannot set CUDA_IPC_CACHE=n (%s)", ucs_status_string(us));
  }

  // The rail NIC chosen from the node topology (transport.h: Options::net_devices); a
  // device the UCX does not have leaves it with no network device, which the group's
  // creation reports (every rank then agrees to use the MPI).
  if (!s.net_devices.empty() && foreign_env("UCX_NET_DEVICES") == nullptr) {
    us = ucp_config_modify(config, "NET_DEVICES", s.net_devices.c_str());
    if (us == UCS_OK)
      GCOLL_INFO("ucx: network device %s (the NIC nearest this rank's GPU)", s.net_devices.c_str());
    else
      GCOLL_INFO("ucx: cannot set NET_DEVICES=%s (%s)", s.net_devices.c_str(), ucs_status_string(us));
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
    warn_shared(SharedWarning::UcxSetup, "ucx: ucp_init failed: %s", ucs_status_string(us));
    return Status::ErrTransport;
  }

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = want_multi ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SERIALIZED;
  us = ucp_worker_create(s.context, &wp, &s.worker);
  if (us != UCS_OK) {
    s.worker = nullptr;
    warn_shared(SharedWarning::UcxSetup, "ucx: ucp_worker_create failed: %s", ucs_status_string(us));
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
    warn_shared(SharedWarning::UcxSetup, "ucx: ucp_worker_get_address failed: %s", ucs_status_string(us));
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
  s.net_devices = options.net_devices;
  Status r;
  {
    // UCX's load, configuration and context leave the process as they found it
    // (base/foreign.h): signal handlers, the alternate stack, strtok, the FP modes, errno.
    ForeignScope scope(ucx_scope_signals());
    r = init_locked(s);
  }
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
  {
    ForeignScope scope(ucx_scope_signals());
    teardown_locked(s);
  }
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

namespace {

// Polls r to completion, progressing the worker in between (base/wait.h between polls).
Status progress_wait(MPI_Request *r, double timeout_s, const char *what) { return progress_wait_all(r, 1, timeout_s, what); }

}  // namespace

Status progress_wait_all(MPI_Request *reqs, int n, double timeout_s, const char *what) {
  const double t0 = now_s();
  WaitPolicy wp;  // base/wait.h (GCOLL_WAIT)
  for (;;) {
    int flag = 0;
    if (PMPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return Status::ErrInternal;
    if (flag) return Status::Ok;
    if (progress_once() == 0) wp.pause();
    else wp.reset();
    if (timeout_s > 0 && now_s() - t0 > timeout_s) {
      GCOLL_WARN("ucx: %s did not complete in %.3f s", what, timeout_s);
      return Status::ErrTransport;
    }
  }
}

Status progress_barrier(MPI_Comm comm, double timeout_s) {
  MPI_Request r = MPI_REQUEST_NULL;
  if (PMPI_Ibarrier(comm, &r) != MPI_SUCCESS) return Status::ErrInternal;
  return progress_wait(&r, timeout_s, "barrier");
}

Status progress_agree(MPI_Comm comm, Status mine, double timeout_s) {
  int in = mine == Status::Ok ? 1 : 0, out = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  if (PMPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm, &r) != MPI_SUCCESS) return Status::ErrInternal;
  const Status st = progress_wait(&r, timeout_s, "agreement on the outcome of a collective");
  if (mine != Status::Ok) return mine;
  if (st != Status::Ok) return st;
  if (!out) {
    GCOLL_WARN("ucx: another rank's part of the collective failed; it fails here too");
    return Status::ErrInternal;
  }
  return Status::Ok;
}

}  // namespace gcoll::ucx
