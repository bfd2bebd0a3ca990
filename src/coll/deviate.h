// The deviator's side of an engine call: a rank whose own buffers are not of the kind
// the ranks agreed for the call (memory.h: agree_memory) takes the same engine call on
// scratch memory that is, copying its inputs in before and its result out after:
//   - agreed device memory (the device engine): scratch on the communicator's engine GPU
//     (cudaMalloc: IPC-capable), for a rank passing host memory, device memory on
//     another GPU, or device memory without a legacy IPC handle where the agreement
//     promised one (zero copy);
//   - agreed host memory (GCOLL_HOST_BUFFERS=engine): pinned host memory, for a rank
//     passing device memory.
// Scratch is pooled per process (cudaMalloc and cudaHostAlloc cost milliseconds) and
// freed inside MPI_Finalize. A failure (out of memory, a CUDA error) is this rank's
// alone, before it joined the engine call: its caller reports it through the error
// handler, and its peers wait in the engine as they would for any rank that leaves a
// collective with an error (the staged path does the same, coll/staged.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"
#include "coll/engine.h"

namespace gcoll {

class Deviator {
 public:
  // `mem`: the agreed kind; `gpu`: the engine's GPU (device memory), or the GPU of this
  // rank's device buffers (host memory: the copies run there); -1: the current device.
  Deviator(MemKind mem, int gpu);
  ~Deviator();  // gives the scratch back
  Deviator(const Deviator &) = delete;
  Deviator &operator=(const Deviator &) = delete;

  // Points a's buffers at scratch, with the inputs copied in (waiting for the
  // application's work on its default streams first, as the staged path does). `rank`
  // and `size`: the caller's in the communicator (bcast root, allgather in place).
  Status enter(CollArgs *a, int rank, int size);
  // After a successful engine call: copies the result to the application's buffers.
  Status leave();
  // What failed, for the error message.
  const std::string &why() const { return why_; }
  // The GPU the copies ran on (after enter(): the current device when none was given).
  int gpu() const { return gpu_; }

 private:
  Status copy(void *dst, const void *src, std::size_t bytes);
  Status fail(const char *what, Status st);

  MemKind mem_;
  int gpu_;
  void *scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  void *stream_ = nullptr;  // cuda::Stream
  void *order_ = nullptr;   // cuda::Event
  // The application's buffer the result goes to, and from where in scratch.
  void *out_ = nullptr;
  const void *out_from_ = nullptr;
  std::size_t out_bytes_ = 0;
  // Allgatherv: the result goes back block by block (v_bytes_[q] bytes from the scratch's
  // v_scratch_[q] to out_ + v_out_[q]) unless the blocks already lie one after the other.
  const std::size_t *v_bytes_ = nullptr;
  std::vector<std::size_t> v_out_, v_scratch_;
  std::string why_;
};

}  // namespace gcoll
