// UCX transport, endpoints: one per peer process, created on first use and shared by every
// group (the process-wide cache of PeerEntry), their failure, flush and forced close.
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/log.h"
#include "net/ucx_internal.h"

namespace gcoll::ucx {

namespace {

void on_ep_error(void *arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto *e = static_cast<PeerEntry *>(arg);
  e->err.store(status);
  e->lost.store(true, std::memory_order_release);
  // INFO only: at teardown, peers that finish first legitimately reset connections.
  GCOLL_INFO("ucx: endpoint to world rank %d failed: %s", e->world_rank,
             ucs_status_string(status));
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

}  // namespace

const char *lost_reason(const PeerEntry *e) {
  if (e->torn_down.load()) return "endpoint force-closed after a timeout";
  return ucs_status_string(static_cast<ucs_status_t>(e->err.load()));
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

}  // namespace gcoll::ucx
