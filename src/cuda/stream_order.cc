#include "cuda/stream_order.h"

namespace gcoll {
namespace cuda {

namespace {
thread_local bool t_stream_ordered = false;
}

bool in_stream_ordered_call() { return t_stream_ordered; }

StreamOrderedScope::StreamOrderedScope() : saved_(t_stream_ordered) { t_stream_ordered = true; }
StreamOrderedScope::~StreamOrderedScope() { t_stream_ordered = saved_; }

}  // namespace cuda
}  // namespace gcoll
