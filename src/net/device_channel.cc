#include "net/device_channel.h"

#include <algorithm>
#include <chrono>
#include <new>

#include "base/log.h"
#include "base/wait.h"
#include "mem/device_scope.h"
#include "mem/pinned.h"

namespace gcoll::net {

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

const char *kind_name(Request::Kind k) { return k == Request::Kind::Send ? "send to" : "receive from"; }

}  // namespace

// One request (Request::handle). Piece k lives in slot k % slots.size() while in flight:
// pieces start in order, and piece k + slots.size() starts only once piece k has left
// its slot, so no two pieces in flight share one. Created by isend/irecv, deleted when
// its owner sees it done (test, wait, cancel).
struct StagedOp {
  struct Slot {
    enum class State : std::uint8_t {
      Idle,     // free (its block and event, if any, stay with the request)
      Copying,  // send: D2H queued (or a 0-byte piece ready); recv: H2D queued
      Wire,     // the inner request wire[i] is outstanding
    };
    State state = State::Idle;
    std::size_t piece = 0;
    void *block = nullptr;           // pinned, piece_bytes
    cuda::Event event = nullptr;     // recorded after the slot's copy
  };

  Request::Kind kind = Request::Kind::None;
  int peer = -1;
  std::uint32_t tag = 0;
  char *buf = nullptr;  // the device buffer
  std::size_t bytes = 0;
  std::size_t piece_bytes = 0;
  std::size_t pieces = 1;
  std::size_t started = 0;   // pieces begun (send: D2H queued; recv: inner receive posted)
  std::size_t posted = 0;    // pieces whose inner request is posted
  std::size_t finished = 0;  // pieces sent / landed in the device buffer
  std::vector<Slot> slots;   // min(window, pieces)
  std::vector<Request> wire; // the inner request of each slot (done when it has none)
  bool done = false;         // finished or abandoned: nothing of it is in flight
  Status status = Status::Ok;

  std::size_t offset(std::size_t k) const { return k * piece_bytes; }
  std::size_t length(std::size_t k) const { return std::min(piece_bytes, bytes - offset(k)); }
  Slot &slot_of(std::size_t k) { return slots[k % slots.size()]; }
  bool on_wire() const {
    for (const Slot &s : slots)
      if (s.state == Slot::State::Wire) return true;
    return false;
  }
};

// ---- StagedChannel ----------------------------------------------------------------

StagedChannel::StagedChannel(Channel *inner, cuda::Runtime &rt, const StagedOptions &o)
    : inner_(inner), rt_(rt), o_(o) {}

StagedChannel::~StagedChannel() {
  DeviceScope cur(o_.device, rt_);
  for (StagedOp *op : active_) {
    if (!op->done) {
      GCOLL_WARN("staged channel: rank %d destroyed with a %s rank %d, tag %u, %zu bytes outstanding: cancelled",
                 rank(), kind_name(op->kind), op->peer, op->tag, op->bytes);
      abandon(op, Status::ErrTransport);
    }
    delete op;
  }
  active_.clear();
  for (cuda::Stream s : {d2h_, h2d_}) {
    if (s == nullptr) continue;
    rt_.stream_synchronize(s);
    rt_.stream_destroy(s);
  }
  for (cuda::Event e : free_events_) rt_.event_destroy(e);
  for (void *b : free_blocks_)
    pinned::free_host(rt_, b, std::find(pageable_.begin(), pageable_.end(), b) == pageable_.end());
  if (free_blocks_.size() != blocks_ || free_events_.size() != events_)
    GCOLL_WARN("staged channel: %zu of %zu pinned blocks still held by requests at destruction",
               blocks_ - free_blocks_.size(), blocks_);
}

Status StagedChannel::init() {
  if (ready_) return Status::Ok;
  if (inner_ == nullptr || o_.piece_bytes == 0 || o_.window < 1) {
    GCOLL_WARN("staged channel: invalid options (piece of %zu bytes, window %d)", o_.piece_bytes, o_.window);
    return Status::ErrArg;
  }
  DeviceScope cur(o_.device, rt_);
  if (!ok(cur.status())) {
    GCOLL_WARN("staged channel: cannot make device %d current: %s", o_.device, rt_.last_error());
    return cur.status();
  }
  Status st = rt_.stream_create(&d2h_);
  if (ok(st)) {
    st = rt_.stream_create(&h2d_);
    if (!ok(st)) {
      rt_.stream_destroy(d2h_);
      d2h_ = nullptr;
    }
  }
  if (!ok(st)) {
    d2h_ = h2d_ = nullptr;
    GCOLL_WARN("staged channel: cannot create its streams on device %d: %s", o_.device, rt_.last_error());
    return st;
  }
  ready_ = true;
  return Status::Ok;
}

Status StagedChannel::isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req) {
  return post(Request::Kind::Send, peer, const_cast<void *>(buf), bytes, tag, req);
}

Status StagedChannel::irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) {
  return post(Request::Kind::Recv, peer, buf, bytes, tag, req);
}

Status StagedChannel::post(Request::Kind kind, int peer, void *buf, std::size_t bytes, std::uint32_t tag,
                           Request *req) {
  if (req == nullptr) return Status::ErrArg;
  *req = Request{};
  req->owner = this;
  req->peer = peer;
  req->tag = tag;
  req->bytes = bytes;
  req->kind = kind;
  if (!ready_) {
    GCOLL_WARN("staged channel: %s rank %d before init()", kind_name(kind), peer);
    req->status = Status::ErrInternal;
    return req->status;
  }
  if (peer < 0 || peer >= size() || (buf == nullptr && bytes != 0)) {
    req->status = Status::ErrArg;
    return req->status;
  }
  DeviceScope cur(o_.device, rt_);
  if (!ok(cur.status())) {
    GCOLL_WARN("staged channel: cannot make device %d current: %s", o_.device, rt_.last_error());
    req->status = cur.status();
    return req->status;
  }
  StagedOp *op = nullptr;
  const Status st = without_exceptions("staged channel: posting a request", [&] {
    op = new StagedOp;
    op->kind = kind;
    op->peer = peer;
    op->tag = tag;
    op->buf = static_cast<char *>(buf);
    op->bytes = bytes;
    op->piece_bytes = o_.piece_bytes;
    op->pieces = bytes == 0 ? 1 : bytes / o_.piece_bytes + (bytes % o_.piece_bytes != 0);
    const std::size_t n = std::min(op->pieces, static_cast<std::size_t>(o_.window));
    op->slots.resize(n);
    op->wire.resize(n);
    active_.push_back(op);
    return Status::Ok;
  });
  if (!ok(st)) {
    if (!active_.empty() && active_.back() == op) active_.pop_back();
    delete op;
    req->status = st;
    return st;
  }
  req->handle = op;
  req->done = false;
  // Start it (and move the others on): a send's first copies are queued now.
  bool moved = false;
  progress_all(&moved);
  if (op->done) {
    end_request(req, op);
    return req->status;
  }
  return Status::Ok;
}

// Whether an earlier request with the same (direction, peer, tag) still has pieces to
// post: this one's must follow them on the wire.
bool StagedChannel::blocked(const StagedOp *op) const {
  for (const StagedOp *o : active_) {
    if (o == op) return false;
    if (!o->done && o->kind == op->kind && o->peer == op->peer && o->tag == op->tag && o->posted < o->pieces)
      return true;
  }
  return false;
}

Status StagedChannel::take_block(void **block) {
  if (!free_blocks_.empty()) {
    *block = free_blocks_.back();
    free_blocks_.pop_back();
    return Status::Ok;
  }
  // Room for every block in the free list, so that giving one back cannot fail.
  Status st = without_exceptions("staged channel: pooling a block", [&] {
    free_blocks_.reserve(blocks_ + 1);
    pageable_.reserve(blocks_ + 1);
    return Status::Ok;
  });
  bool pinned = true;
  if (ok(st)) st = pinned::alloc_host(rt_, o_.piece_bytes, block, &pinned);  // warns itself
  if (!ok(st)) return st;
  if (!pinned) pageable_.push_back(*block);
  ++blocks_;
  return Status::Ok;
}

Status StagedChannel::take_event(cuda::Event *ev) {
  if (!free_events_.empty()) {
    *ev = free_events_.back();
    free_events_.pop_back();
    return Status::Ok;
  }
  Status st = without_exceptions("staged channel: pooling an event", [&] {
    free_events_.reserve(events_ + 1);
    return Status::Ok;
  });
  if (ok(st)) st = rt_.event_create(ev);
  if (!ok(st)) {
    GCOLL_WARN("staged channel: cannot create an event: %s", rt_.last_error());
    return st;
  }
  ++events_;
  return Status::Ok;
}

// Gives a request's blocks and events back to the pools (nothing of it may be in flight).
void StagedChannel::release(StagedOp *op) {
  for (StagedOp::Slot &s : op->slots) {
    if (s.block) free_blocks_.push_back(s.block);  // capacity reserved in take_block
    if (s.event) free_events_.push_back(s.event);
    s = StagedOp::Slot{};
  }
}

// Ends a request that is still moving: cancels its inner requests, waits for the copies
// it queued (they touch its buffer and its blocks), and marks it done with `why`. The
// result is Ok unless that cleanup itself failed.
Status StagedChannel::abandon(StagedOp *op, Status why) {
  Status result = Status::Ok;
  if (op->on_wire()) {
    result = without_exceptions("staged channel: cancelling", [&] {
      return inner_->cancel(op->wire.data(), static_cast<int>(op->wire.size()));
    });
  }
  bool copying = false;
  for (const StagedOp::Slot &s : op->slots) copying = copying || (s.state == StagedOp::Slot::State::Copying && s.event);
  if (copying) {
    const Status st = rt_.stream_synchronize(op->kind == Request::Kind::Send ? d2h_ : h2d_);
    if (!ok(st)) {
      GCOLL_WARN("staged channel: waiting for the copies of a %s rank %d, tag %u: %s", kind_name(op->kind),
                 op->peer, op->tag, rt_.last_error());
      if (ok(result)) result = st;
    }
  }
  release(op);
  op->done = true;
  op->status = why;
  return result;
}

Status StagedChannel::step_send(StagedOp *op, bool *moved) {
  using State = StagedOp::Slot::State;
  const int n = static_cast<int>(op->slots.size());
  // Pieces sent: their blocks take the next pieces.
  if (op->on_wire()) {
    bool all = false;
    const Status st = without_exceptions("staged channel: test", [&] { return inner_->test(op->wire.data(), n, &all); });
    if (!ok(st)) return st;
    for (int i = 0; i < n; ++i) {
      if (op->slots[i].state != State::Wire || !op->wire[i].done) continue;
      op->slots[i].state = State::Idle;
      op->wire[i] = Request{};
      ++op->finished;
      *moved = true;
    }
  }
  // Pieces copied to their blocks go on the wire, in order, after those of earlier
  // requests with the same (peer, tag).
  while (op->posted < op->started && !blocked(op)) {
    const std::size_t k = op->posted;
    StagedOp::Slot &s = op->slot_of(k);
    if (s.event) {
      bool copied = false;
      const Status st = rt_.event_query(s.event, &copied);
      if (!ok(st)) {
        GCOLL_WARN("staged channel: copy of piece %zu of a send to rank %d, tag %u: %s", k, op->peer, op->tag,
                   rt_.last_error());
        return st;
      }
      if (!copied) break;
    }
    const std::size_t len = op->length(k);
    Request *w = &op->wire[k % op->slots.size()];
    const Status st = without_exceptions("staged channel: isend", [&] {
      return inner_->isend(op->peer, len ? s.block : op->buf, len, op->tag, w);
    });
    if (!ok(st)) return st;
    s.state = State::Wire;
    ++op->posted;
    *moved = true;
  }
  // Free slots take the next pieces: device -> block.
  while (op->started < op->pieces) {
    const std::size_t k = op->started;
    StagedOp::Slot &s = op->slot_of(k);
    if (s.state != State::Idle) break;
    const std::size_t len = op->length(k);
    if (len) {
      Status st = s.block ? Status::Ok : take_block(&s.block);
      if (ok(st) && !s.event) st = take_event(&s.event);
      if (!ok(st)) return st;
      st = rt_.memcpy_async(s.block, op->buf + op->offset(k), len, d2h_);
      if (ok(st)) {
        s.state = State::Copying;  // queued: a failure from here on waits for it
        st = rt_.event_record(s.event, d2h_);
      }
      if (!ok(st)) {
        GCOLL_WARN("staged channel: queueing the copy of piece %zu of a send to rank %d, tag %u: %s", k, op->peer,
                   op->tag, rt_.last_error());
        return st;
      }
    } else {
      s.state = State::Copying;  // a 0-byte message: nothing to copy, ready at once
    }
    s.piece = k;
    ++op->started;
    *moved = true;
  }
  return Status::Ok;
}

Status StagedChannel::step_recv(StagedOp *op, bool *moved) {
  using State = StagedOp::Slot::State;
  const int n = static_cast<int>(op->slots.size());
  // Pieces received: block -> device.
  if (op->on_wire()) {
    bool all = false;
    Status st = without_exceptions("staged channel: test", [&] { return inner_->test(op->wire.data(), n, &all); });
    if (!ok(st)) return st;
    for (int i = 0; i < n; ++i) {
      StagedOp::Slot &s = op->slots[i];
      if (s.state != State::Wire || !op->wire[i].done) continue;
      op->wire[i] = Request{};
      *moved = true;
      const std::size_t len = op->length(s.piece);
      if (len == 0) {
        s.state = State::Idle;
        ++op->finished;
        continue;
      }
      st = rt_.memcpy_async(op->buf + op->offset(s.piece), s.block, len, h2d_);
      if (ok(st)) {
        s.state = State::Copying;
        st = rt_.event_record(s.event, h2d_);
      }
      if (!ok(st)) {
        GCOLL_WARN("staged channel: queueing the copy of piece %zu of a receive from rank %d, tag %u: %s", s.piece,
                   op->peer, op->tag, rt_.last_error());
        return st;
      }
    }
  }
  // Pieces landed in the device buffer: their blocks take the next pieces.
  for (StagedOp::Slot &s : op->slots) {
    if (s.state != State::Copying) continue;
    bool landed = false;
    const Status st = rt_.event_query(s.event, &landed);
    if (!ok(st)) {
      GCOLL_WARN("staged channel: copy of piece %zu of a receive from rank %d, tag %u: %s", s.piece, op->peer,
                 op->tag, rt_.last_error());
      return st;
    }
    if (!landed) continue;
    s.state = State::Idle;
    ++op->finished;
    *moved = true;
  }
  // Free slots post the next pieces' receives, in order, after those of earlier requests
  // with the same (peer, tag).
  while (op->started < op->pieces && !blocked(op)) {
    const std::size_t k = op->started;
    StagedOp::Slot &s = op->slot_of(k);
    if (s.state != State::Idle) break;
    const std::size_t len = op->length(k);
    if (len) {
      Status st = s.block ? Status::Ok : take_block(&s.block);
      if (ok(st) && !s.event) st = take_event(&s.event);
      if (!ok(st)) return st;
    }
    Request *w = &op->wire[k % op->slots.size()];
    const Status st = without_exceptions("staged channel: irecv", [&] {
      return inner_->irecv(op->peer, len ? s.block : op->buf, len, op->tag, w);
    });
    if (!ok(st)) return st;
    s.state = State::Wire;
    s.piece = k;
    ++op->started;
    ++op->posted;
    *moved = true;
  }
  return Status::Ok;
}

Status StagedChannel::step(StagedOp *op, bool *moved) {
  const Status st = op->kind == Request::Kind::Send ? step_send(op, moved) : step_recv(op, moved);
  if (!ok(st)) return st;
  if (op->finished == op->pieces) {
    release(op);  // every copy has completed and every inner request is done
    op->done = true;
    op->status = Status::Ok;
    *moved = true;
  }
  return Status::Ok;
}

// Moves every outstanding request on once; a request that fails is abandoned with its
// failure, which its owner sees when it tests it.
void StagedChannel::progress_all(bool *moved) {
  for (std::size_t i = 0; i < active_.size(); ++i) {
    StagedOp *op = active_[i];
    if (op->done) continue;
    const Status st = step(op, moved);
    if (!ok(st)) {
      abandon(op, st);
      *moved = true;
    }
  }
  drop_finished();
}

void StagedChannel::drop_finished() {
  active_.erase(std::remove_if(active_.begin(), active_.end(), [](const StagedOp *op) { return op->done; }),
                active_.end());
}

Status StagedChannel::test(Request *reqs, int n, bool *all_done) {
  *all_done = true;
  if (n <= 0) return Status::Ok;
  if (reqs == nullptr) return Status::ErrArg;
  DeviceScope cur(o_.device, rt_);
  bool moved = false;
  int completed = 0;
  progress_all(&moved);
  const Status first = end_done_requests<StagedOp>(reqs, n, all_done, &completed);
  if (!ok(first)) {
    cancel(reqs, n);
    *all_done = true;
  }
  return first;
}

Status StagedChannel::wait(Request *reqs, int n, double timeout_s) {
  if (n <= 0) return Status::Ok;
  if (reqs == nullptr) return Status::ErrArg;
  DeviceScope cur(o_.device, rt_);
  WaitPolicy w;
  double last = now_s();
  for (;;) {
    bool moved = false, all_done = false;
    int completed = 0;
    progress_all(&moved);
    const Status first = end_done_requests<StagedOp>(reqs, n, &all_done, &completed);
    if (all_done) return first;
    if (!ok(first)) {  // a failure: the rest is cancelled
      cancel(reqs, n);
      return first;
    }
    const double t = now_s();
    if (moved || completed) {
      last = t;
      w.reset();
    } else if (timeout_s > 0 && t - last > timeout_s) {
      break;
    } else {
      w.pause();
    }
  }
  for (int i = 0; i < n; ++i) {
    if (reqs[i].done) continue;
    const auto *op = static_cast<const StagedOp *>(reqs[i].handle);
    GCOLL_WARN("staged channel: nothing completed for %.3f s: %s rank %d, tag %u, %zu bytes still pending "
               "(%zu of %zu pieces done; rank %d)",
               timeout_s, kind_name(op->kind), op->peer, op->tag, op->bytes, op->finished, op->pieces, rank());
    break;
  }
  cancel(reqs, n);
  return Status::ErrTransport;
}

Status StagedChannel::cancel(Request *reqs, int n) {
  if (n <= 0) return Status::Ok;
  if (reqs == nullptr) return Status::ErrArg;
  DeviceScope cur(o_.device, rt_);
  Status result = Status::Ok;
  for (int i = 0; i < n; ++i) {
    Request &r = reqs[i];
    if (r.done) continue;
    auto *op = static_cast<StagedOp *>(r.handle);
    if (!op->done) {
      const Status st = abandon(op, Status::ErrTransport);  // cancelled, as the inner channels report it
      if (ok(result) && !ok(st)) result = st;
    }
  }
  drop_finished();  // before the operations go: active_ must not hold a deleted one
  for (int i = 0; i < n; ++i)
    if (!reqs[i].done) end_request(&reqs[i], static_cast<StagedOp *>(reqs[i].handle));
  return result;
}

// ---- ViewChannel ------------------------------------------------------------------

namespace {

Status no_view(Request::Kind kind, int peer, const void *buf, std::size_t bytes, std::uint32_t tag, void *owner,
               Request *req) {
  GCOLL_WARN("view channel: %s rank %d, tag %u: no transport view of %zu bytes at %p", kind_name(kind), peer, tag,
             bytes, buf);
  if (req != nullptr) {
    *req = Request{};
    req->owner = owner;
    req->peer = peer;
    req->tag = tag;
    req->bytes = bytes;
    req->kind = kind;
    req->status = Status::ErrInternal;
  }
  return Status::ErrInternal;
}

}  // namespace

Status ViewChannel::isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req) {
  const void *v = buf ? view_(buf, bytes) : nullptr;
  if (buf && !v) return no_view(Request::Kind::Send, peer, buf, bytes, tag, this, req);
  return inner_->isend(peer, v, bytes, tag, req);
}

Status ViewChannel::irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) {
  void *v = buf ? view_(buf, bytes) : nullptr;
  if (buf && !v) return no_view(Request::Kind::Recv, peer, buf, bytes, tag, this, req);
  return inner_->irecv(peer, v, bytes, tag, req);
}

}  // namespace gcoll::net
