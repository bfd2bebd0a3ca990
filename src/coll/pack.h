// Collectives that move bytes (MPI_Bcast, MPI_Allgather; gather, scatter and all-to-all
// later) by type signature, never by datatype handle. MPI requires only that the type
// signatures of the ranks' buffers match: one rank may pass 12 x MPI_INT while another
// passes 4 x contiguous(3 x MPI_INT) or 3 x an indexed type whose ints lie out of order
// in memory. So whether such a call takes the engine is decided from what every rank
// knows alike, the bytes the signature carries (count x type size), and the engine moves
// those bytes in type-map order. A rank whose own layout is not those bytes in one run
// in type-map order (a derived datatype; a predefined type with padding, such as
// MPI_DOUBLE_INT with several elements) takes the same engine call on packed host
// scratch: PMPI_Pack before the call, PMPI_Unpack after (device buffers through a host
// copy of their span, coll/staged.h). Packing is local: the other ranks never know.
// (Called from the call path, coll/team_call.h; it is pmpi's argument files that fill
// the plan.)
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "coll/engine.h"
#include "coll/staged.h"

namespace gcoll {

// How `count` elements of `type` lie at a buffer, for a byte-moving collective.
struct ByteLayout {
  std::size_t bytes = 0;  // count x type size: what the type signature carries
  bool direct = false;    // those bytes lie in one run, in type-map order, at ptr + offset
  MPI_Aint offset = 0;
  MPI_Aint extent = 0;    // the type's extent (MPI_Type_get_extent)
};

// false when the count is negative or the type is MPI_DATATYPE_NULL or has no size (the
// call then goes to the MPI, which reports it). Predefined types only can be direct (a
// derived datatype's type map is not read, so it is packed, even when contiguous).
bool byte_layout(long long count, MPI_Datatype type, ByteLayout *out);

// One buffer of a byte-moving call, as the application passed it.
struct PackSide {
  void *user = nullptr;  // nullptr: no such buffer (MPI_IN_PLACE, no bytes)
  int count = 0;         // elements of `type` at `user` (allgather receive, alltoall: per rank)
  MPI_Datatype type = MPI_DATATYPE_NULL;
  ByteLayout layout;     // of `count` elements (allgather receive, alltoall: of all ranks' blocks)
  bool device = false;   // device memory (classified)
  // Allgatherv receive: block i is counts[i] elements at displs[i] extents (the call's
  // arrays, of the communicator's size; `count` unused, `layout` that of the largest block).
  const int *counts = nullptr;
  const int *displs = nullptr;
  bool packs() const { return user != nullptr && !layout.direct; }
};

// What a byte-moving call's engine arguments need from this rank's layouts: `send` and
// `recv` (bcast: the buffer, as recv).
struct PackPlan {
  PackSide send, recv;
  bool any() const { return send.packs() || recv.packs(); }
};

// The packing side of one engine call. enter() points the call's buffers at packed host
// scratch (and direct sides at their first byte), leave() unpacks the result after a
// successful call. A failure (a datatype the MPI refuses to pack, such as an uncommitted
// one; out of memory; a CUDA error) is this rank's alone, before it joined the engine
// call: the caller reports it through the error handler with error_class() and why().
class Packer {
 public:
  Packer() = default;
  ~Packer();
  Packer(const Packer &) = delete;
  Packer &operator=(const Packer &) = delete;

  // `rank` and `size`: the caller's in the communicator; `gpu`: the GPU of the device
  // buffers (device sides only).
  Status enter(CollArgs *a, const PackPlan &plan, int rank, int size, int gpu);
  Status leave();
  // Whether this rank's buffers in the engine call are host memory (packed scratch) for
  // the send and receive sides: the memory kinds the engine sees.
  bool packed_send() const { return packed_send_; }
  bool packed_recv() const { return packed_recv_; }
  int error_class() const { return error_class_; }
  const std::string &why() const { return why_; }

 private:
  Status fail(Status st, int cls, std::string why);
  // `n` elements of `type` from `user` (host memory, or a host copy) into `out`.
  Status pack(const void *user, int n, MPI_Datatype type, char *out, std::size_t bytes);
  Status unpack(const char *in, std::size_t bytes, void *user, int n, MPI_Datatype type);
  // A host view of a device side's span (copied in), for packing and unpacking.
  void *host_view(const PackSide &s, long long elements);
  void *host_view(const PackSide &s, const Span &span);
  // Allgatherv (Coll::Allgatherv: blocks of uneven sizes at displacements).
  Status enter_v(CollArgs *a);

  Coll coll_ = Coll::Bcast;
  PackPlan plan_;
  int rank_ = 0, size_ = 0, gpu_ = -1;
  bool root_ = false;
  bool packed_send_ = false, packed_recv_ = false;
  std::vector<char> send_scratch_, recv_scratch_;
  std::unique_ptr<Stager> stager_;
  void *recv_view_ = nullptr;  // host view of a device receive side (leave unpacks into it)
  Span recv_span_;
  std::vector<std::size_t> v_offsets_;  // allgatherv: the blocks' offsets in recv_scratch_
  int error_class_ = MPI_SUCCESS;
  std::string why_;
};

// Inside MPI_Finalize: frees the communicator packing probes use.
void release_pack_comm();

}  // namespace gcoll
