// MPICH's stream API as gcoll defines it, or takes it over (pmpi/stream.cc, include/gcoll/mpix_stream.h).
#pragma once

namespace gcoll {

// Inside MPI_Finalize, first: frees the stream communicators the application left (their
// queues drained: the enqueued calls the streams have not reached yet are waited for).
void release_stream_comms();

}  // namespace gcoll
