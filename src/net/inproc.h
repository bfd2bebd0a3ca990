// In-process transport: N endpoints in one process, one net::Channel per rank, so that
// schedules and algorithms run in one process with threads as ranks (as gloo tests do).
//
// Matching: a message matches the receive posted at its destination with the same
// (source, tag), in posting order per (source, tag), as over UCX. Sends are rendezvous:
// a send that finds no posted receive waits in the destination's unexpected queue, and
// the bytes are copied straight from the send buffer into the receive buffer when the
// two meet (by whichever side comes second). A send therefore completes only once it is
// received, which is stricter than UCX's eager sends: a schedule that needs a send to
// complete before its receive is posted deadlocks here (and times out) instead of
// working by luck for small messages; a send buffer written while its send is in
// flight is read at match time and gives a wrong result.
// A receive whose message has another size fails with ErrInternal (the send completes).
//
// Thread-safe: any endpoint may be used from its own thread; all endpoints share one
// lock and one condition variable (wait() sleeps until something matches).
#pragma once

#include <memory>

#include "net/channel.h"

namespace gcoll::net {

class InProc {
 public:
  explicit InProc(int n);
  ~InProc();
  InProc(const InProc &) = delete;
  InProc &operator=(const InProc &) = delete;

  int size() const;
  // Rank r's channel; lives as long as this object. Requests still outstanding when it is
  // destroyed must not be used.
  Channel *endpoint(int r);

  struct Shared;  // inproc.cc

 private:
  std::unique_ptr<Shared> shared_;
};

}  // namespace gcoll::net
