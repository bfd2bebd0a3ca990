// The transport interface the rails run on (as memory sits behind MemSpace): tagged,
// nonblocking point-to-point messages on host memory among the `size()` ranks of one
// group. Implementations:
//   - ucx::GroupChannel (net/transport.h): the ranks of an MPI communicator, over UCX;
//   - net::InProc (net/inproc.h): N endpoints in one process, one per thread, so that
//     schedules and algorithms are unit-tested in one process with threads as ranks.
// The rail code (coll/rail.*) sees only this interface.
//
// Semantics every implementation keeps:
//   - a message matches the receive posted with the same (source, tag); per (source,
//     tag) messages match in posting order; no wildcard;
//   - a receive must match a message of exactly `bytes` bytes (anything else fails the
//     request with ErrInternal: the ranks disagree on the schedule);
//   - a rank may send to itself;
//   - every request isend()/irecv() returned Ok for must be waited for (wait, or test
//     until done) or cancelled before its buffer is reused; afterwards the
//     implementation no longer touches the buffer and the request may be reused.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace gcoll::net {

// One nonblocking operation. Plain value type: default-constructed = inactive (done).
struct Request {
  enum class Kind : std::uint8_t { None, Send, Recv };
  void *handle = nullptr;  // the implementation's outstanding operation, nullptr when done
  void *owner = nullptr;   // the implementation object that made it (ucx: its Group)
  int peer = -1;
  std::uint32_t tag = 0;
  std::size_t bytes = 0;
  Kind kind = Kind::None;
  bool done = true;
  Status status = Status::Ok;  // final status once done
};

// For implementations whose Request::handle points to an operation object of their own
// (a class with `bool done` and `Status status`, allocated with new): ends request r with
// its operation's outcome and deletes the operation.
template <class Op>
void end_request(Request *r, Op *op) {
  r->status = op->status;
  r->done = true;
  r->handle = nullptr;
  delete op;
}

// The same for n requests: ends those whose operation is done (counted in *completed when
// not null), tells whether all n are done, and returns the first failure among them.
template <class Op>
Status end_done_requests(Request *reqs, int n, bool *all_done, int *completed) {
  Status first = Status::Ok;
  *all_done = true;
  for (int i = 0; i < n; ++i) {
    Request &r = reqs[i];
    if (!r.done) {
      auto *op = static_cast<Op *>(r.handle);
      if (!op->done) {
        *all_done = false;
        continue;
      }
      end_request(&r, op);
      if (completed) ++*completed;
    }
    if (ok(first) && !ok(r.status)) first = r.status;
  }
  return first;
}

class Channel {
 public:
  virtual ~Channel() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Nonblocking. On an immediate failure the request is left done with that status and
  // the error is returned.
  virtual Status isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req) = 0;
  virtual Status irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) = 0;
  // Moves the transport on once and polls the n requests. *all_done tells whether every
  // one is done. On a failure the others are cancelled (all done) and the failure returned.
  virtual Status test(Request *reqs, int n, bool *all_done) = 0;
  // Until all n requests are done. The first failure, or ErrTransport when nothing
  // completed for timeout_s seconds (0 = no timeout; an implementation may bound the
  // wait after a failure); on a timeout the pending requests are cancelled. Either way,
  // when it returns every request is done and no buffer is touched any more.
  virtual Status wait(Request *reqs, int n, double timeout_s) = 0;
  // Abandons outstanding requests (after a failure elsewhere); afterwards all are done.
  // Ok when each ended by completion or cancellation.
  virtual Status cancel(Request *reqs, int n) = 0;

  // Bytes this rank posted for sending through this channel (stats).
  virtual std::uint64_t bytes_sent() const = 0;

  // Blocking exchange: receive from src and send to dst with the same tag.
  Status sendrecv(int dst, const void *sbuf, std::size_t sbytes, int src, void *rbuf, std::size_t rbytes,
                  std::uint32_t tag, double timeout_s) {
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
};

}  // namespace gcoll::net
