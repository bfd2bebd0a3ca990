// Whether the calling thread runs a stream-ordered call (issue 30: MPIX_<Name>_enqueue on a
// stream communicator's proxy thread, coll/stream_queue.h). Such a call starts only once
// the application's stream has reached it, so its inputs are ready; and the default
// streams may be held behind that very stream (the legacy stream waits for blocking
// streams, and the application's stream waits for the call to end): ordering the call's
// device work after the default streams, as a host-synchronous call must
// (Runtime::order_after_default_streams), would wait for itself. order_after_application
// orders after them everywhere else.
#pragma once

#include "cuda/runtime.h"

namespace gcoll {
namespace cuda {

bool in_stream_ordered_call();

class StreamOrderedScope {
 public:
  StreamOrderedScope();
  ~StreamOrderedScope();
  StreamOrderedScope(const StreamOrderedScope &) = delete;
  StreamOrderedScope &operator=(const StreamOrderedScope &) = delete;

 private:
  bool saved_;
};

// What the device path calls before it touches the application's buffers.
inline Status order_after_application(Runtime &rt, Stream s, Event scratch) {
  return in_stream_ordered_call() ? Status::Ok : rt.order_after_default_streams(s, scratch);
}

}  // namespace cuda
}  // namespace gcoll
