#include "pmpi/requests.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "base/wait.h"
#include "coll/team.h"
#include "coll/team_call.h"
#include "pmpi/errors.h"

namespace gcoll {

namespace {

// The table: the MPI's handle -> the ops kept beside it. A handle has one live op; a
// second one appears only for a moment, when the MPI hands out a just-freed handle again
// before the thread that completed it dropped its op (the newest is the live one; ops go
// by identity).
struct Table {
  std::mutex mu;
  std::unordered_map<std::uintptr_t, std::vector<std::shared_ptr<RequestOp>>> ops;
};
Table &table() {
  static Table *t = new Table;  // never destroyed: completion calls may come during exit
  return *t;
}
std::atomic<int> g_tracked{0};

std::uintptr_t key_of(MPI_Request r) {
  std::uintptr_t k = 0;
  std::memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
  return k;
}

std::shared_ptr<RequestOp> find(MPI_Request r) {
  Table &t = table();
  std::lock_guard<std::mutex> g(t.mu);
  const auto it = t.ops.find(key_of(r));
  return it == t.ops.end() || it->second.empty() ? nullptr : it->second.back();
}

// The op leaves the table (by identity; whoever still holds it keeps it alive).
void drop(MPI_Request handle_at_start, RequestOp *op) {
  Table &t = table();
  std::lock_guard<std::mutex> g(t.mu);
  const auto it = t.ops.find(key_of(handle_at_start));
  if (it == t.ops.end()) return;
  auto &v = it->second;
  for (auto p = v.begin(); p != v.end(); ++p)
    if (p->get() == op) {
      v.erase(p);
      g_tracked.fetch_sub(1, std::memory_order_relaxed);
      break;
    }
  if (v.empty()) t.ops.erase(it);
}

}  // namespace

void track_request(MPI_Request r, std::unique_ptr<RequestOp> op) {
  Table &t = table();
  std::lock_guard<std::mutex> g(t.mu);
  t.ops[key_of(r)].push_back(std::shared_ptr<RequestOp>(op.release()));
  g_tracked.fetch_add(1, std::memory_order_relaxed);
}

bool requests_tracked() { return g_tracked.load(std::memory_order_relaxed) != 0; }

namespace {
// The generalized request of an engine op: a collective's status (no source, tag or
// elements); its errors are raised by the completion call through the communicator's
// error handler (Watch::completed), as a staged request's are.
int greq_query(void *, MPI_Status *status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  return MPI_SUCCESS;
}
int greq_free(void *) { return MPI_SUCCESS; }
int greq_cancel(void *, int) { return MPI_SUCCESS; }
}  // namespace

int engine_request(MPI_Request *request) {
  return PMPI_Grequest_start(greq_query, greq_free, greq_cancel, nullptr, request);
}

namespace {
// The private duplicate of MPI_COMM_SELF of the persistent handles (RequestOp::self_tag),
// made at the first one, freed in MPI_Finalize (release_requests).
std::mutex g_self_mu;
MPI_Comm g_self = MPI_COMM_NULL;
std::atomic<int> g_next_tag{0};
MPI_Comm self_comm() {
  std::lock_guard<std::mutex> g(g_self_mu);
  if (g_self == MPI_COMM_NULL && PMPI_Comm_dup(MPI_COMM_SELF, &g_self) != MPI_SUCCESS) g_self = MPI_COMM_NULL;
  return g_self;
}
// The activation of a persistent handle of gcoll's is over: its receive matched.
void signal_end(RequestOp *op) {
  op->greq_done = true;
  PMPI_Send(nullptr, 0, MPI_BYTE, 0, op->self_tag, self_comm());
}
}  // namespace

int engine_persistent_request(RequestOp *op, MPI_Request *request) {
  const MPI_Comm self = self_comm();
  if (self == MPI_COMM_NULL || !op) return MPI_ERR_INTERN;
  const int tag = g_next_tag.fetch_add(1, std::memory_order_relaxed) & 0x7fff;  // MPI_TAG_UB >= 32767
  const int rc = PMPI_Recv_init(nullptr, 0, MPI_BYTE, 0, tag, self, request);
  if (rc != MPI_SUCCESS) return rc;
  op->self_tag = tag;
  return MPI_SUCCESS;
}

void Watch::settle() {
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    RequestOp *op = ops_[k].second.get();
    if (!op || op->greq_done) continue;
    if (op->self_tag >= 0) {
      // A persistent handle of gcoll's: its activation's end (the engine op run) is
      // signalled once.
      if (!op->active) continue;
      std::lock_guard<std::mutex> g(op->mu);
      if (op->greq_done || !op->active) continue;
      if (!op->engine || op->engine->done.load(std::memory_order_acquire)) signal_end(op);
      continue;
    }
    if (!op->engine || !op->engine->done.load(std::memory_order_acquire)) continue;
    std::lock_guard<std::mutex> g(op->mu);
    if (op->greq_done) continue;
    op->greq_done = true;
    PMPI_Grequest_complete(handles_[k]);
  }
}

bool Watch::engines_pending() const {
  for (const auto &e : ops_)
    if (e.second && engine_pending(*e.second)) return true;
  return false;
}

void Watch::wait_engines() {
  // Ops next in line that no thread has taken run here (AsyncQueue::run_here), in the
  // array's order as long as one does; the others are waited for.
  for (bool ran = true; ran && engines_pending();) {
    ran = false;
    for (const auto &e : ops_) {
      RequestOp *op = e.second.get();
      if (!op || !op->engine || op->engine->done.load(std::memory_order_acquire) || !op->engine->team) continue;
      ran = op->engine->team->async.run_here(op->engine->team, op->engine.get()) || ran;
    }
  }
  settle();
  if (engines_pending()) {
    WaitCallScope in_call;  // the MPI keeps progressing (base/wait.h)
    wait_until([&] {
      settle();
      return !engines_pending();
    });
  }
}

Watch::Watch(int n, const MPI_Request *requests) {
  if (!requests_tracked() || !requests) return;
  for (int i = 0; i < n; ++i)
    if (requests[i] != MPI_REQUEST_NULL)
      if (std::shared_ptr<RequestOp> op = find(requests[i])) {
        // A handle given twice (erroneous for an active request; an inactive persistent
        // one may be): its op is finished once, for the first.
        bool seen = false;
        for (const auto &e : ops_) seen = seen || e.second == op;
        if (!seen) ops_.push_back({i, std::move(op)});
      }
  handles_.reserve(ops_.size());
  for (const auto &e : ops_) handles_.push_back(requests[e.first]);
}

RequestOp *Watch::op(int i) const {
  for (const auto &e : ops_)
    if (e.first == i) return e.second.get();
  return nullptr;
}

MPI_Request Watch::handle(int i) const {
  for (std::size_t k = 0; k < ops_.size(); ++k)
    if (ops_[k].first == i) return handles_[k];
  return MPI_REQUEST_NULL;
}

namespace {
// An engine op's results into the application's buffers (deviator, packer), its stats.
StagedResult finish_engine(RequestOp *op) {
  StagedResult r;
  EngineOp &e = *op->engine;
  r.status = e.leave(e.run_status);
  if (ok(r.status)) process_stats().record_engine(op->coll, e.rec);
  else r.why = e.why().empty() ? "the collective failed" : e.why();
  return r;
}
}  // namespace

int Watch::completed(int i) {
  RequestOp *op = this->op(i);
  if (!op) return MPI_SUCCESS;
  StagedResult r;
  {
    // Serialised per op: a thread that finds the op through a handle the MPI just gave
    // again (it completed and freed the request, another thread got the same handle)
    // waits for the copies of the thread that completed it, and finds nothing to do.
    std::lock_guard<std::mutex> g(op->mu);
    if (op->stager && !op->engine && op->active && !op->finished && !op->stager->finish())
      r = op->stager->result(MPI_SUCCESS);
    if (op->engine && op->active && !op->finished) r = finish_engine(op);
    op->active = false;
    op->finished = false;
    if (op->self_tag >= 0) op->engine.reset();  // the next start queues a new one
  }
  const MPI_Comm comm = op->comm;
  const Coll coll = op->coll;
  if (!op->persistent) {
    drop(handle(i), op);
    for (auto &e : ops_)
      if (e.first == i) e.second.reset();
  }
  if (ok(r.status)) return MPI_SUCCESS;
  process_stats().record(coll, Path::Error, 0);
  return raise_error(comm, r.status, "MPI_Wait", r.why.c_str());
}

int Watch::all_completed() {
  int rc = MPI_SUCCESS;
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    const int e = ops_[k].second ? completed(ops_[k].first) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS) rc = e;
  }
  return rc;
}

int Watch::before_start(int i, const char *func) {
  RequestOp *op = this->op(i);
  if (!op || !op->persistent) return MPI_SUCCESS;  // not gcoll's, or not persistent: the MPI judges
  if (op->active)
    return raise_error(op->comm, Status::ErrRequest, func, "the persistent collective request is already active");
  if (op->self_tag < 0 && op->stager && !op->stager->start()) {
    const StagedResult r = op->stager->result(MPI_SUCCESS);
    process_stats().record(op->coll, Path::Error, 0);
    return raise_error(op->comm, r.status, func, r.why.c_str());
  }
  return MPI_SUCCESS;
}

int Watch::started(int i, const char *func) {
  RequestOp *op = this->op(i);
  if (!op || !op->persistent) return MPI_SUCCESS;
  op->finished = false;
  op->greq_done = false;
  if (op->self_tag < 0) {
    op->active = true;
    process_stats().record(op->coll, op->path, op->bytes);
    return MPI_SUCCESS;
  }
  // gcoll's handle is started (its receive posted): the engine op of this start, queued
  // (the path was decided at the _init: team_call.h, team_persistent_init).
  op->active = true;
  std::shared_ptr<EngineOp> eop;
  std::string why;
  const Status st = team_persistent_start(op->team, *op->engine_template, op->persistent_path, op->bufs, &eop, &why);
  if (ok(st) && eop) {
    op->engine = std::move(eop);
    process_stats().record(op->coll, Path::Engine, op->bytes);
    return MPI_SUCCESS;
  }
  // Nothing started: the handle ends at once (its completion copies nothing back).
  {
    std::lock_guard<std::mutex> g(op->mu);
    signal_end(op);
    op->active = false;
  }
  process_stats().record(op->coll, Path::Error, 0);
  return raise_error(op->comm, ok(st) ? Status::ErrInternal : st, func,
                     ok(st) ? "the persistent collective's engine op could not be made" : why.c_str());
}

void Watch::freed(int i) {
  RequestOp *op = this->op(i);
  if (!op) return;
  drop(handle(i), op);
  for (auto &e : ops_)
    if (e.first == i) e.second.reset();
}

int Watch::status_complete(int i) {
  RequestOp *op = this->op(i);
  if (!op) return MPI_SUCCESS;
  std::unique_lock<std::mutex> g(op->mu);
  if (!op->active || op->finished) return MPI_SUCCESS;
  // Complete, not yet freed: the results go back now (the application may read them).
  op->finished = true;
  if (op->engine) {
    const StagedResult r = finish_engine(op);
    g.unlock();
    if (ok(r.status)) return MPI_SUCCESS;
    process_stats().record(op->coll, Path::Error, 0);
    return raise_error(op->comm, r.status, "MPI_Request_get_status", r.why.c_str());
  }
  if (op->stager && !op->stager->finish()) {
    g.unlock();
    const StagedResult r = op->stager->result(MPI_SUCCESS);
    process_stats().record(op->coll, Path::Error, 0);
    return raise_error(op->comm, r.status, "MPI_Request_get_status", r.why.c_str());
  }
  return MPI_SUCCESS;
}

int Watch::may_free(int i) {
  RequestOp *op = this->op(i);
  if (op && op->active && !op->finished)
    return raise_error(op->comm, Status::ErrRequest, "MPI_Request_free",
                       "the request of a nonblocking or active persistent collective may not be freed (MPI-4.1 "
                       "6.12); complete it with MPI_Wait or MPI_Test");
  return MPI_SUCCESS;
}

int Watch::may_cancel(int i) {
  if (RequestOp *op = this->op(i))
    return raise_error(op->comm, Status::ErrRequest, "MPI_Cancel",
                       "the request of a nonblocking or persistent collective may not be cancelled (MPI-4.1 6.12)");
  return MPI_SUCCESS;
}

// ---- the entry points ------------------------------------------------------------------

namespace {

// A completion call's own error (a copy back failed) in an array call: in the request's
// status where there is one (MPI_ERR_IN_STATUS), else the call's return code.
int fold(int rc, int i, int e, MPI_Status statuses[]) {
  if (e == MPI_SUCCESS) return rc;
  if (statuses != MPI_STATUSES_IGNORE) {
    statuses[i].MPI_ERROR = e;
    return MPI_ERR_IN_STATUS;
  }
  return rc == MPI_SUCCESS ? e : rc;
}

// After the MPI's Waitall/Testall (complete): each op, errors folded into the statuses.
int all_done(Watch &w, int count, MPI_Status statuses[]) {
  int rc = MPI_SUCCESS;
  for (int i = 0; i < count; ++i)
    if (w.op(i)) rc = fold(rc, i, w.completed(i), statuses);
  return rc;
}

}  // namespace

int wait(MPI_Request *request, MPI_Status *status) {
  if (!requests_tracked() || !request) return PMPI_Wait(request, status);
  Watch w(1, request);
  w.wait_engines();
  const int rc = PMPI_Wait(request, status);
  if (!w.any() || rc != MPI_SUCCESS) return rc;
  return w.completed(0);
}

int test(MPI_Request *request, int *flag, MPI_Status *status) {
  if (!requests_tracked() || !request) return PMPI_Test(request, flag, status);
  Watch w(1, request);
  w.settle();
  const int rc = PMPI_Test(request, flag, status);
  if (!w.any() || rc != MPI_SUCCESS || !*flag) return rc;
  return w.completed(0);
}

int waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!requests_tracked()) return PMPI_Waitall(count, requests, statuses);
  Watch w(count, requests);
  w.wait_engines();
  const int rc = PMPI_Waitall(count, requests, statuses);
  if (!w.any()) return rc;
  if (rc == MPI_SUCCESS) return all_done(w, count, statuses);
  // Some failed: those whose status says success completed.
  if (rc == MPI_ERR_IN_STATUS && statuses != MPI_STATUSES_IGNORE)
    for (int i = 0; i < count; ++i)
      if (w.op(i) && statuses[i].MPI_ERROR == MPI_SUCCESS) fold(rc, i, w.completed(i), statuses);
  return rc;
}

int testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  if (!requests_tracked()) return PMPI_Testall(count, requests, flag, statuses);
  Watch w(count, requests);
  w.settle();
  const int rc = PMPI_Testall(count, requests, flag, statuses);
  if (!w.any() || !*flag) return rc;
  if (rc == MPI_SUCCESS) return all_done(w, count, statuses);
  if (rc == MPI_ERR_IN_STATUS && statuses != MPI_STATUSES_IGNORE)
    for (int i = 0; i < count; ++i)
      if (w.op(i) && statuses[i].MPI_ERROR == MPI_SUCCESS) fold(rc, i, w.completed(i), statuses);
  return rc;
}

int waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  if (!requests_tracked()) return PMPI_Waitany(count, requests, index, status);
  Watch w(count, requests);
  int rc;
  w.settle();
  if (w.engines_pending()) {
    // Whichever request completes first: poll (the MPI's wait would never see an engine
    // op complete).
    int flag = 0;
    WaitPolicy p;
    for (;;) {
      w.settle();
      rc = PMPI_Testany(count, requests, index, &flag, status);
      if (rc != MPI_SUCCESS || flag) break;
      p.pause();
    }
  } else {
    rc = PMPI_Waitany(count, requests, index, status);
  }
  if (!w.any() || rc != MPI_SUCCESS || *index == MPI_UNDEFINED) return rc;
  return w.completed(*index);
}

int testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
  if (!requests_tracked()) return PMPI_Testany(count, requests, index, flag, status);
  Watch w(count, requests);
  w.settle();
  const int rc = PMPI_Testany(count, requests, index, flag, status);
  if (!w.any() || rc != MPI_SUCCESS || !*flag || *index == MPI_UNDEFINED) return rc;
  return w.completed(*index);
}

namespace {

int some_done(Watch &w, int rc, int outcount, const int indices[], MPI_Status statuses[]) {
  if (!w.any() || outcount == MPI_UNDEFINED) return rc;
  int out = rc;
  for (int k = 0; k < outcount; ++k) {
    const int i = indices[k];
    if (!w.op(i)) continue;
    // With MPI_ERR_IN_STATUS, only the ones whose status says success completed.
    if (rc != MPI_SUCCESS && (statuses == MPI_STATUSES_IGNORE || statuses[k].MPI_ERROR != MPI_SUCCESS)) continue;
    const int e = w.completed(i);
    if (e != MPI_SUCCESS) {
      if (statuses != MPI_STATUSES_IGNORE) {
        statuses[k].MPI_ERROR = e;
        out = MPI_ERR_IN_STATUS;
      } else if (out == MPI_SUCCESS) {
        out = e;
      }
    }
  }
  return out;
}

}  // namespace

int waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]) {
  if (!requests_tracked()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  Watch w(incount, requests);
  int rc;
  w.settle();
  if (w.engines_pending()) {
    WaitPolicy p;
    for (;;) {
      w.settle();
      rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
      if ((rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || *outcount != 0) break;
      p.pause();
    }
  } else {
    rc = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  }
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return rc;
  return some_done(w, rc, *outcount, indices, statuses);
}

int testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]) {
  if (!requests_tracked()) return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  Watch w(incount, requests);
  w.settle();
  const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return rc;
  return some_done(w, rc, *outcount, indices, statuses);
}

int request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
  if (!requests_tracked()) return PMPI_Request_get_status(request, flag, status);
  Watch w(1, &request);
  w.settle();
  const int rc = PMPI_Request_get_status(request, flag, status);
  if (!w.any() || rc != MPI_SUCCESS || !*flag) return rc;
  return w.status_complete(0);
}

int request_free(MPI_Request *request) {
  if (!requests_tracked() || !request) return PMPI_Request_free(request);
  Watch w(1, request);
  const int e = w.may_free(0);
  if (e != MPI_SUCCESS) return e;
  const int rc = PMPI_Request_free(request);
  if (rc == MPI_SUCCESS) w.freed(0);
  return rc;
}

int start(MPI_Request *request) {
  if (!requests_tracked() || !request) return PMPI_Start(request);
  Watch w(1, request);
  const int e = w.before_start(0, "MPI_Start");
  if (e != MPI_SUCCESS) return e;
  const int rc = PMPI_Start(request);
  return rc == MPI_SUCCESS ? w.started(0, "MPI_Start") : rc;
}

int startall(int count, MPI_Request requests[]) {
  if (!requests_tracked()) return PMPI_Startall(count, requests);
  Watch w(count, requests);
  for (int i = 0; i < count; ++i) {
    const int e = w.before_start(i, "MPI_Startall");
    if (e != MPI_SUCCESS) return e;
  }
  int rc = PMPI_Startall(count, requests);
  if (rc == MPI_SUCCESS)
    for (int i = 0; i < count; ++i) {
      const int e = w.started(i, "MPI_Startall");
      if (rc == MPI_SUCCESS) rc = e;
    }
  return rc;
}

int cancel(MPI_Request *request) {
  if (!requests_tracked() || !request) return PMPI_Cancel(request);
  Watch w(1, request);
  const int e = w.may_cancel(0);
  return e != MPI_SUCCESS ? e : PMPI_Cancel(request);
}

void release_requests() {
  {
    Table &t = table();
    std::lock_guard<std::mutex> g(t.mu);
    t.ops.clear();
    g_tracked.store(0, std::memory_order_relaxed);
  }
  std::lock_guard<std::mutex> g(g_self_mu);
  if (g_self != MPI_COMM_NULL) PMPI_Comm_free(&g_self);
}

}  // namespace gcoll
