// The staged path: a call on device buffers that the engine does not take (a derived
// datatype, a user-defined op, several nodes, ranks with mixed memory kinds,
// GCOLL_DEVICE_BUFFERS=staged) is run by the real MPI on pinned host copies. The MPI only
// ever sees host memory, so an MPI that is not CUDA-aware is safe.
//
// Each rank stages only its own device buffers and makes exactly the PMPI_* call it would
// make on host buffers, so staged ranks and ranks passing host memory (passthrough) may
// meet in the same call. What is copied is the buffer's span as the datatype lays it out
// (true lower bound to the end of the last element); a receive buffer whose datatype has
// holes is copied in first too, so the holes keep their contents as the MPI leaves them.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "base/status.h"
#include "coll/mpi_forms.h"

namespace gcoll {

class Stager;

struct StagedBuffers {
  bool send_device = false;  // send buffer (not MPI_IN_PLACE)
  bool recv_device = false;  // receive buffer; bcast buffer
  int device = 0;            // the GPU of the device buffer(s)
  // Set by the caller of a staged_<name> function: the host copies (a Stager of the
  // call's form, on `device`) and the form, whose MPI call the function makes
  // (coll/mpi_forms.h): blocking, the copies back follow it; nonblocking, the MPI's
  // request is the application's and the copies back wait for its completion
  // (Stager::finish, pmpi/requests.h); persistent, the copies in wait for each start.
  Stager *stager = nullptr;
  const CallForm *form = nullptr;
};

// The outcome of a staged call: the MPI's own return code (its error handler has already
// seen any error), or, when `status` is not Ok, a staging failure (out of pinned memory, a
// CUDA error) that the caller reports through the communicator's error handler with `why`.
struct StagedResult {
  int mpi_rc = MPI_SUCCESS;
  Status status = Status::Ok;
  std::string why;
};

StagedResult staged_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, StagedBuffers b);
StagedResult staged_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          StagedBuffers b);
StagedResult staged_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b);
StagedResult staged_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                         MPI_Op op, MPI_Comm comm, StagedBuffers b);

// The collectives the engine has no algorithm for: always staged on device buffers. Each
// copies in what the MPI reads on this rank and copies back only what it writes there (the
// root's receive buffer of a gather, a v-form's blocks at their displacements; never the
// bytes between blocks). Invalid arguments (a bad datatype, root or array) go to the MPI as
// they are, which reports them before touching a buffer; negative counts are the caller's
// (pmpi/calls: MPICH crashes on some).
StagedResult staged_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                           MPI_Comm comm, StagedBuffers b);
StagedResult staged_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, int root, MPI_Comm comm, StagedBuffers b);
StagedResult staged_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm, StagedBuffers b);
StagedResult staged_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b);
StagedResult staged_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                   MPI_Op op, MPI_Comm comm, StagedBuffers b);
StagedResult staged_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                               StagedBuffers b);
StagedResult staged_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                            StagedBuffers b);
StagedResult staged_scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                             StagedBuffers b);

StagedResult staged_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                              MPI_Comm comm, StagedBuffers b);
// Alltoallw: block i of sendcounts[i] x sendtypes[i] at sdispls[i] bytes (likewise received).
StagedResult staged_alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, StagedBuffers b);
// The neighbourhood collectives: blocks per neighbour (neighbor_degrees below); no in place.
StagedResult staged_neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b);
StagedResult staged_neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                        MPI_Comm comm, StagedBuffers b);
StagedResult staged_neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b);
StagedResult staged_neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, StagedBuffers b);
StagedResult staged_neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                       StagedBuffers b);
// MPI_Reduce_local: both buffers copied in, the in-out one back.
StagedResult staged_reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                 StagedBuffers b);
// MPI_Scan and MPI_Exscan (`exclusive`): the receive buffer as allreduce's; rank 0 of an
// exscan gets nothing (its receive buffer is left as it is).
StagedResult staged_scan(bool exclusive, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, StagedBuffers b);

// Where a rooted collective's arguments count on this rank (MPI-4.0 6.1: root-only
// arguments at the root; on an intercommunicator the root's group passes MPI_ROOT or
// MPI_PROC_NULL, the other group the root's rank).
struct RootRole {
  bool valid = false;   // a root the MPI accepts (else nothing is significant: the MPI reports it)
  bool root = false;    // this rank is the root: the root-only arguments count
  bool member = false;  // this rank gives or gets a block (intracommunicator: every rank)
  bool inter = false;   // an intercommunicator (MPI_IN_PLACE is not allowed there)
  int rank = -1;        // this rank in its group
  int n = 0;            // the root's blocks: the communicator's size (intercommunicator: remote group's)
};
RootRole root_role(MPI_Comm comm, int root);
// An intracommunicator's roles from its size and this rank's rank in it.
inline RootRole intra_root_role(int rank, int size, int root) {
  RootRole r;
  r.rank = rank;
  r.n = size;
  r.valid = root >= 0 && root < size;
  r.root = r.valid && root == rank;
  r.member = r.valid;
  return r;
}
// The ranks a non-rooted collective's blocks are for: the communicator's size (an
// intercommunicator's remote group).
int group_size(MPI_Comm comm);
// A neighbourhood collective's blocks: the communicator's topology's in-degree (the
// blocks received) and out-degree (sent); MPI_CART: 2 x ndims both; MPI_GRAPH: the
// rank's neighbours both; MPI_DIST_GRAPH: as created. 0 and 0 without a topology (the MPI
// reports the error).
struct NeighborDegrees {
  int in = 0;
  int out = 0;
};
NeighborDegrees neighbor_degrees(MPI_Comm comm);

// Inside MPI_Finalize: frees the pooled buffers (pinned staging buffers, the deviators'
// device scratch) and the staging streams (before the application may reset its devices;
// mem/pinned.h).
void release_staging();

// Where `count` elements of `type` lie relative to the buffer pointer: [lo, lo + bytes).
struct Span {
  MPI_Aint lo = 0;
  std::size_t bytes = 0;
  bool holes = false;  // bytes the datatype does not describe lie inside the span
};
// false: the MPI would reject the count or the type (nothing to stage).
bool span_of(long long count, MPI_Datatype type, Span *out);

// Host copies of device buffers for one call (what the staged path and the packing of
// derived datatypes on device buffers, coll/pack.h, go through): the buffers' GPU made
// current (and restored), pinned host copies of the buffers' spans, copies in both
// directions on the GPU's staging stream, each ordered after the application's work on
// its default streams.
class Stager {
 public:
  // `form`: blocking, every copy happens when asked; nonblocking, the copies out are kept
  // for finish(); persistent, the copies in are kept for start() and the copies out for
  // finish(). The GPU stays current until the object goes (blocking) or leave_call().
  explicit Stager(int device, Form form = Form::Blocking);
  ~Stager();
  Stager(const Stager &) = delete;
  Stager &operator=(const Stager &) = delete;
  // A host copy of the span `s` of the buffer at `dev`; `copy_in` fills it from the
  // device. Returns the pointer the MPI gets (span start minus lo); after a failure,
  // failed() is true and the pointer must not be used.
  void *host_copy(const void *dev, const Span &s, bool copy_in);
  // Copies the span of `host` (a pointer from host_copy) back to the device buffer.
  void copy_out(void *dev, const void *host, const Span &s);
  // Copies the span `s` of the device buffer into `host` (a pointer from host_copy).
  void copy_in(const void *dev, void *host, const Span &s);
  bool failed() const;
  // The outcome: the MPI's return code, or the staging failure.
  StagedResult result(int mpi_rc) const;
  // Nonblocking and persistent forms, once the MPI's call is made: the application's
  // current GPU back; the host copies stay until the object goes.
  void leave_call();
  // Persistent: the copies in, before each start of the MPI's request. false: failed
  // (why()).
  bool start();
  // Nonblocking and persistent: the copies out, once the MPI's request completed.
  bool finish();
  std::string why() const;

 private:
  struct Impl;
  Impl *impl_;
};

}  // namespace gcoll
