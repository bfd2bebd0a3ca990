#include "net/inproc.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/log.h"

namespace gcoll::net {

namespace {

// One posted send or receive (Request::handle). Created by isend/irecv, matched under
// the shared lock (the bytes are copied then), deleted by its owner once it saw it done.
struct Op {
  Request::Kind kind = Request::Kind::None;
  const void *sbuf = nullptr;
  void *rbuf = nullptr;
  std::size_t bytes = 0;
  int dst = -1;              // the endpoint whose queue holds it while unmatched
  std::uint64_t key = 0;     // (source, tag) at dst
  Status status = Status::Ok;
  bool done = false;         // guarded by the shared lock
};

std::uint64_t key_of(int src, std::uint32_t tag) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) | tag;
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

class InProcEndpoint;

struct InProc::Shared {
  std::mutex mu;
  std::condition_variable cv;  // notified at every match and cancellation
  struct Queues {
    std::unordered_map<std::uint64_t, std::deque<Op *>> posted;      // receives waiting for a send
    std::unordered_map<std::uint64_t, std::deque<Op *>> unexpected;  // sends waiting for a receive
  };
  std::vector<Queues> q;  // by destination rank
  std::vector<std::unique_ptr<InProcEndpoint>> eps;
};

namespace {

// Completes a matched pair (lock held): copies the bytes, or fails the receive on a size
// mismatch.
void match(Op *send, Op *recv) {
  if (send->bytes == recv->bytes) {
    if (send->bytes) std::memcpy(recv->rbuf, send->sbuf, send->bytes);
    recv->status = Status::Ok;
  } else {
    GCOLL_WARN("inproc: receive at rank %d, tag %u: got %zu bytes, expected %zu", recv->dst,
               static_cast<std::uint32_t>(recv->key), send->bytes, recv->bytes);
    recv->status = Status::ErrInternal;
  }
  send->status = Status::Ok;
  send->done = recv->done = true;
}

// Removes op from its queue (lock held); false when it is in none (already matched).
bool unqueue(std::unordered_map<std::uint64_t, std::deque<Op *>> &m, Op *op) {
  auto it = m.find(op->key);
  if (it == m.end()) return false;
  for (auto d = it->second.begin(); d != it->second.end(); ++d) {
    if (*d == op) {
      it->second.erase(d);
      if (it->second.empty()) m.erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace

class InProcEndpoint final : public Channel {
 public:
  InProcEndpoint(InProc::Shared *s, int rank) : s_(s), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(s_->q.size()); }

  Status isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req) override {
    Op *op = nullptr;
    Status st = begin(Request::Kind::Send, peer, bytes, tag, buf == nullptr && bytes != 0, req, &op);
    if (!ok(st)) return st;
    op->sbuf = buf;
    op->dst = peer;
    op->key = key_of(rank_, tag);
    bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lk(s_->mu);
    auto &q = s_->q[peer];
    auto it = q.posted.find(op->key);
    if (it != q.posted.end()) {
      Op *recv = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) q.posted.erase(it);
      match(op, recv);
      s_->cv.notify_all();
    } else {
      q.unexpected[op->key].push_back(op);
    }
    return Status::Ok;
  }

  Status irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) override {
    Op *op = nullptr;
    Status st = begin(Request::Kind::Recv, peer, bytes, tag, buf == nullptr && bytes != 0, req, &op);
    if (!ok(st)) return st;
    op->rbuf = buf;
    op->dst = rank_;
    op->key = key_of(peer, tag);
    std::lock_guard<std::mutex> lk(s_->mu);
    auto &q = s_->q[rank_];
    auto it = q.unexpected.find(op->key);
    if (it != q.unexpected.end()) {
      Op *send = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) q.unexpected.erase(it);
      match(send, op);
      s_->cv.notify_all();
    } else {
      q.posted[op->key].push_back(op);
    }
    return Status::Ok;
  }

  Status test(Request *reqs, int n, bool *all_done) override {
    Status first = Status::Ok;
    {
      std::lock_guard<std::mutex> lk(s_->mu);
      first = end_done_requests<Op>(reqs, n, all_done, nullptr);
    }
    if (!ok(first)) {
      cancel(reqs, n);
      *all_done = true;
    }
    return first;
  }

  Status wait(Request *reqs, int n, double timeout_s) override {
    Status first = Status::Ok;
    double last = now_s();
    std::unique_lock<std::mutex> lk(s_->mu);
    for (;;) {
      bool all_done = false;
      int completed = 0;
      first = end_done_requests<Op>(reqs, n, &all_done, &completed);
      if (all_done) return first;
      if (!ok(first)) break;  // a failed receive: the rest is cancelled, no grace period
      const double t = now_s();
      if (completed) last = t;
      if (timeout_s > 0 && t - last > timeout_s) break;
      // Sleep until something matches (bounded, to check the timeout).
      const double left = timeout_s > 0 ? last + timeout_s - t : 0.1;
      s_->cv.wait_for(lk, std::chrono::duration<double>(left < 0.1 ? left : 0.1));
    }
    lk.unlock();
    for (int i = 0; i < n && ok(first); ++i) {
      if (reqs[i].done) continue;
      GCOLL_WARN("inproc: nothing completed for %.3f s: %s rank %d, tag %u, %zu bytes still pending (rank %d)",
                 timeout_s, reqs[i].kind == Request::Kind::Send ? "send to" : "receive from", reqs[i].peer,
                 reqs[i].tag, reqs[i].bytes, rank_);
      break;
    }
    cancel(reqs, n);
    return ok(first) ? Status::ErrTransport : first;
  }

  Status cancel(Request *reqs, int n) override {
    std::lock_guard<std::mutex> lk(s_->mu);
    for (int i = 0; i < n; ++i) {
      Request &r = reqs[i];
      if (r.done) continue;
      auto *op = static_cast<Op *>(r.handle);
      if (!op->done) {
        auto &q = s_->q[op->dst];
        if (!unqueue(op->kind == Request::Kind::Send ? q.unexpected : q.posted, op)) {
          GCOLL_WARN("inproc: rank %d: an unmatched request is in no queue", rank_);  // cannot happen
        }
        op->status = Status::ErrTransport;  // cancelled, as UCX reports a cancelled request
        op->done = true;
      }
      end_request(&r, op);
    }
    s_->cv.notify_all();
    return Status::Ok;
  }

  std::uint64_t bytes_sent() const override { return bytes_sent_.load(std::memory_order_relaxed); }

 private:
  Status begin(Request::Kind kind, int peer, std::size_t bytes, std::uint32_t tag, bool null_buf, Request *req,
               Op **out) {
    if (req == nullptr) return Status::ErrArg;
    *req = Request{};
    req->owner = this;
    req->peer = peer;
    req->tag = tag;
    req->bytes = bytes;
    req->kind = kind;
    if (peer < 0 || peer >= size() || null_buf) {
      req->status = Status::ErrArg;
      return Status::ErrArg;
    }
    Op *op = new Op;
    op->kind = kind;
    op->bytes = bytes;
    req->handle = op;
    req->done = false;
    *out = op;
    return Status::Ok;
  }

  InProc::Shared *s_;
  int rank_;
  std::atomic<std::uint64_t> bytes_sent_{0};
};

InProc::InProc(int n) : shared_(std::make_unique<Shared>()) {
  shared_->q.resize(n);
  for (int r = 0; r < n; ++r) shared_->eps.push_back(std::make_unique<InProcEndpoint>(shared_.get(), r));
}

InProc::~InProc() = default;

int InProc::size() const { return static_cast<int>(shared_->q.size()); }

Channel *InProc::endpoint(int r) { return shared_->eps[r].get(); }

}  // namespace gcoll::net
