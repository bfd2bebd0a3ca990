// UCX transport, requests: tagged sends and receives, polling, waiting (with timeouts and
// the flush of owed rendezvous acknowledgements) and cancellation.
#include <sched.h>

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "base/wait.h"
#include "net/ucx_internal.h"

namespace gcoll::ucx {

namespace {
// A receive of at least this size may have been a rendezvous: its completion can leave
// a message this process still owes the sender (the ATS acknowledging a zero-copy get),
// which only our own progress sends. UCX's rendezvous thresholds are 8 KiB and more
// unless the user lowers UCX_RNDV_THRESH below this.
constexpr std::size_t kFlushMinBytes = 1024;
// Bound of that flush. An owed message leaves as soon as the sender, which waits for it
// and so progresses, has made room; but UCX 1.13's tcp endpoint flush sometimes does not
// complete at all (seen with UCX_TLS=tcp): do not let that cost more than this.
constexpr double kOwedFlushMaxS = 0.5;

// The group that made a request (Request::owner).
Group *group_of(const Request &r) { return static_cast<Group *>(r.owner); }

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

// UCX's memory type of a buffer of `mem` (set explicitly: no detection per message). A
// 0-byte message travels from a host dummy.
static void set_memory(ucp_request_param_t *prm, Memory mem, std::size_t bytes) {
  if (mem != Memory::Cuda || bytes == 0) return;
  prm->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  prm->memory_type = UCS_MEMORY_TYPE_CUDA;
}

Status Group::isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag,
                    Request *req, Memory mem) {
  if (req == nullptr) return Status::ErrArg;
  *req = Request{};
  req->owner = this;
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
  set_memory(&prm, mem, bytes);
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

Status Group::irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req, Memory mem) {
  if (req == nullptr) return Status::ErrArg;
  *req = Request{};
  req->owner = this;
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
  set_memory(&prm, mem, bytes);
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
  Group *g = group_of(*r);
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
    Group *g = group_of(*r);
    if (g == nullptr || r->peer < 0 || r->peer >= g->size()) return nullptr;
    return g->peers_[r->peer];
  }
  static int world_rank(const Request &r) { return group_of(r)->world_ranks_[r.peer]; }
};

Status Group::cancel(Request *reqs, int n) {
  if (n <= 0) return Status::Ok;
  if (!st().ready.load(std::memory_order_acquire)) return Status::ErrInternal;
  for (int i = 0; i < n; ++i) {
    if (!reqs[i].done && group_of(reqs[i])->epoch_ != st().epoch.load()) return Status::ErrInternal;
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
    if (!st().ready.load(std::memory_order_acquire) || reqs[i].owner == nullptr ||
        group_of(reqs[i])->epoch_ != epoch) {
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
  WaitPolicy wp;  // between polls that found nothing (base/wait.h: GCOLL_WAIT)
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
                     r.peer, e->world_rank, group_of(r)->id(), r.tag, r.bytes,
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
      wp.reset();
    } else if (limit > 0 && t - last > limit) {
      timed_out = true;
      break;
    } else if (events == 0) {
      wp.pause();  // oversubscribed runs: let the peers we wait for run
    } else {
      wp.reset();  // data is moving (UCX progress did something): keep polling
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
                 limit, kind_name(r), r.peer, GroupAccess::world_rank(r), group_of(r)->id(),
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
