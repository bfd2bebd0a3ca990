// A stream communicator's device path (issue 30, GCOLL_STREAM_DEVICE=on): an enqueued
// allreduce, bcast or allgather (MPIX_<Name>_enqueue, pmpi/stream.cc) is the fused one-shot
// kernel of kernels/fused.h, one per rank and chunk, queued on the application's own
// stream by the calling thread. No host thread takes part and nothing waits on the host:
// the kernel starts when the stream's earlier work is done (stream order), publishes my
// input into my bank, raises my flag, waits on the device for the peers' flags, and writes
// my result; the stream's later work starts when it ends.
//
// Where it runs: made at MPIX_Stream_comm_create, only where every rank says on, all the
// ranks are on one node (physical, or one virtual node of GCOLL_RANKS_PER_NODE), at most
// kFusedMaxRanks of them, and the fused kernels may spin there (MPS, or a GPU per rank:
// decide_fused, as the device space decides); elsewhere the communicator's calls all go
// to the proxy thread (coll/stream_queue.h), which is the safe path on a GPU time-sliced
// between ranks without MPS (a kernel waiting for a peer that cannot run meanwhile).
//
// Each rank owns one IPC-exported allocation: two banks, a FusedControl, the status words;
// every peer maps it once, at creation. The op number lives on the device (ctl.epoch,
// kernels/fused.h), so a CUDA graph that captured the calls replays them right: nothing of
// a launch depends on a count kept by the host. The banks and flags are the stream path's
// own, never shared with the blocking calls (which run on other communicators' spaces).
//
// Which calls: decided from what every rank has alike (the kind, the reduction's
// predefined type and op, the signature's bytes, GCOLL_STREAM_DEVICE agreed at creation),
// never from a rank's own memory: a rank whose buffer is not device memory of the
// stream's GPU (host memory, pinned or not, managed memory, another GPU) copies it
// through its private scratch, in stream order (a copy from or to pageable host memory
// blocks the host until the stream gets there, as cudaMemcpyAsync does); a bcast or
// allgather with a derived datatype on some rank cannot be read by the kernel: that rank
// gets MPI_ERR_TYPE and takes part as failed, so every peer's stream stops with an error
// (the kernel traps) instead of returning a wrong result.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cuda/runtime.h"
#include "kernels/fused.h"

namespace gcoll {

// One enqueued call, as the device path takes it.
struct StreamDeviceCall {
  FusedKind kind = FusedKind::Allreduce;
  DType dtype = DType::Uint8;  // allreduce
  ROp op = ROp::Sum;           // allreduce
  std::size_t elem = 1;        // allreduce: bytes per element; else 1
  const void *in = nullptr;    // allreduce: my input (nullptr: in place); allgather: my piece
                               // (nullptr: in place, at out + me x bytes); bcast: unused
  void *out = nullptr;         // allreduce: my result; bcast: the buffer; allgather: all pieces
  std::size_t bytes = 0;       // allreduce, bcast: the buffer's bytes; allgather: one piece
  int root = 0;                // bcast
  // Not Ok: my part of the call fails with this class and text (a layout the kernel cannot
  // read, sizes that do not match), and the rank takes part as failed.
  Status refused = Status::Ok;
  std::string refused_why;
};

class StreamDevice {
 public:
  // Bytes of one bank: a call larger than that (allgather: larger than bank / ranks per
  // piece) is queued as several kernels, each on the next chunk.
  static constexpr std::size_t kBankBytes = 4u << 20;

  // Collective over `comm` (the stream communicator's private duplicate): every rank calls
  // it, with its application's stream. nullptr on every rank (with *why) where the path
  // does not run (see above) or any rank's set-up failed.
  static std::unique_ptr<StreamDevice> create(MPI_Comm comm, cuda::Stream stream, std::string *why);
  // Collective too (MPI_Comm_free of the stream communicator, or MPI_Finalize): waits for
  // the device (the kernels that read my banks), then a barrier on `comm`, then unmaps and
  // frees, so that no peer reads memory already freed.
  ~StreamDevice();
  StreamDevice(const StreamDevice &) = delete;
  StreamDevice &operator=(const StreamDevice &) = delete;

  // Whether the device path takes a reduction of `dtype` and `op` (the kernels' reductions
  // on elements that divide kFusedAlign): the same answer on every rank.
  bool takes_reduction(DType dtype, ROp op) const;

  // Queues the call's kernels (and staging copies) on the stream. Status::Ok; call.refused,
  // an earlier call's failure (the communicator is broken from then on: every later call
  // fails alike on every rank) or a runtime failure, with *why, after taking part as
  // failed, so that the peers' kernels stop too.
  Status enqueue(const StreamDeviceCall &call, std::string *why);

  int ranks() const { return n_; }

 private:
  StreamDevice() = default;
  // Queues one kernel on the stream: the parameters the call does not set, then rt().fused.
  Status launch(FusedParams &p, bool failed);
  // A kernel of an earlier call that timed out or saw a failure (its status words, which
  // every rank's kernels of a failed op write alike), with *why; Status::Ok otherwise.
  Status earlier_failure(std::string *why) const;

  MPI_Comm comm_ = MPI_COMM_NULL;  // not owned
  cuda::Stream stream_ = nullptr;
  int device_ = -1, n_ = 0, me_ = 0, max_blocks_ = 1;
  char *mine_ = nullptr;     // my banks, control and status words (exported)
  char *scratch_ = nullptr;  // staging of buffers that are not device memory of my GPU
  std::vector<char *> peers_;  // every rank's allocation, mapped here (mine included)
  std::uint64_t *status_ = nullptr;  // mapped host memory: the kernels' outcomes
  int last_blocks_ = 0;              // blocks of my last kernel (status words to read)
};

}  // namespace gcoll
