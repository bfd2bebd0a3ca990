// Inter-node steps among the ranks of one rail (one rank per node), through the transport
// interface net::Channel: UCX in the engine (ucx::GroupChannel), or in-process endpoints
// (net::InProc) in the unit tests, which run these schedules with threads as ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "coll/engine.h"
#include "mem/memspace.h"
#include "kernels/compress.h"
#include "kernels/types.h"
#include "net/channel.h"

namespace gcoll {

struct Rail {
  // The rail's ranks. For a device call, a channel that takes device memory (the
  // engine's device_rail: UCX on CUDA memory, or pipelined through pinned host memory).
  net::Channel *channel;
  // The call's memory space: local copies and the reductions of received data run there,
  // and every network step first settles it (MemSpace::settle: its queued work done).
  // nullptr: the buffers are host memory and the rail uses memcpy and the host kernels
  // (host_reduce) itself (the in-process tests pass nullptr, so that they need neither a
  // node memory space nor a stub of one).
  MemSpace *space;
  std::uint32_t seq;      // call number: tags never match another call's messages
  double timeout_s;
  int *steps = nullptr;   // counts the network rounds this rank takes part in (stats)
  std::uint32_t tag(int step) const { return (seq << 12) | static_cast<std::uint32_t>(step & 0xfff); }
};

// Inter-node allreduce schedules as data. A schedule builder fills the list of steps one
// rail rank takes for an allreduce of buf[0, count) (in place) among the n ranks of its
// rail; RailAllreduce runs any such list. Step k: post the send and the receive, wait for
// both, then optionally reduce what was received into the local buffer. Messages match by
// (source, tag): a step's tag must be the same on both sides and unique per pair.
struct RailStep {
  int dst = -1, src = -1;  // -1: no send / no receive
  const void *sbuf = nullptr;
  std::size_t sbytes = 0;
  void *rbuf = nullptr;
  std::size_t rbytes = 0;
  void *acc = nullptr;  // acc = op(acc, rbuf) over `elems` elements after the receive
  std::size_t elems = 0;
  int tag = 0;  // 0 .. 4095
};

// What a builder gets: rail size and rank, the elements, and scratch (tmp holds count
// elements; a send buffer is never written while its step is in flight).
struct ScheduleArgs {
  int n = 1, rank = 0;
  std::size_t count = 0, elem = 1;
  void *buf = nullptr, *tmp = nullptr;
};

// ScheduleBuilder (engine.h): void (*)(const ScheduleArgs &, std::vector<RailStep> *).
// The builders; an allreduce algorithm names the one it runs in its registry row.
// Ring: reduce-scatter then allgather around the ring, 2(n-1) steps of ~count/n.
void schedule_ring(const ScheduleArgs &a, std::vector<RailStep> *steps);
// Recursive doubling of the whole buffer; non-powers of two fold the extra ranks in first
// and out last (rd_steps(n) steps).
void schedule_rd(const ScheduleArgs &a, std::vector<RailStep> *steps);
// Rabenseifner (rabenseifner.cc): recursive-halving reduce-scatter, recursive-doubling
// allgather, with rd's fold for non-powers of two.
void schedule_rabenseifner(const ScheduleArgs &a, std::vector<RailStep> *steps);

// An allreduce along the rail as a list of steps (built by a schedule builder), run
// nonblocking: start() posts the first step, advance() moves on as messages complete
// (call it often: from a sync's wait, between other work), finish() blocks until the end.
class RailAllreduce {
 public:
  Status start(Rail r, ScheduleBuilder build, DType t, ROp op, void *buf, std::size_t count, std::size_t elem,
               void *tmp);
  // Any step list (the reductions' builders below): run as a schedule's.
  Status start_steps(Rail r, DType t, ROp op, std::vector<RailStep> steps);
  // The compressed ring (docs/compression.md): the ring allreduce (schedule_ring, MPI_SUM)
  // of buf[0, count) (Float or Double) whose messages travel in format `c`
  // (kernels/compress.h): each reduce-scatter step sends its partial encoded and adds the
  // decoded one it receives in full precision; in the allgather the owner of a segment
  // encodes its sum once and keeps the decoded bytes itself, and every other rank decodes
  // and forwards the very bytes it received, so every rank ends with the same bits. buf
  // and cbuf are in the call's memory (Rail::space: host memory, or device memory, where
  // the space's runtime encodes and decodes on its stream); cbuf: cbuf_bytes of scratch
  // (2 x compressed_bytes of the largest segment, 64-aligned).
  Status start_compressed(Rail r, Compress c, DType t, void *buf, std::size_t count, std::size_t elem, void *cbuf,
                          std::size_t cbuf_bytes);
  Status advance(bool *done);
  Status finish();
  // After a failure elsewhere: cancel what is posted, so no buffer is touched afterwards.
  void abandon();

 private:
  Status start_steps(Rail r, DType t, ROp op, std::vector<RailStep> steps, Compress c, std::size_t elem);
  Status post();
  Status complete_step(const RailStep &s);
  Rail r_{};
  // The compressed ring (start_compressed): the format, the two message buffers (the one
  // sent, the one received: they swap in the allgather, where a received message is
  // forwarded as it came), and whether the allgather has begun (its first step encodes).
  Compress comp_ = Compress::Off;
  std::size_t elem_ = 1;
  char *cb_[2] = {nullptr, nullptr};
  int cur_ = 0;
  bool in_allgather_ = false;
  DType t_{};
  ROp op_{};
  std::vector<RailStep> steps_;
  std::size_t next_ = 0;
  bool posted_ = false;
  net::Request req_[2];
};

// Step lists of the rooted and scattered reductions along a rail (reduce_hier.cc,
// reduce_scatter_hier.cc), for RailAllreduce::start_steps. Steps that would move nothing
// (empty segments) are left out on both sides alike, so the lists still pair up.
//
// Ring reduce-scatter of variable segments: segment x (seg_len[x] elements at element
// seg_off[x] of buf) ends fully reduced on rail rank x; the other segments are left
// partial. n - 1 rounds; rank me sends every segment but its own once, so its bytes on
// the network are elem x (sum(seg_len) - seg_len[me]). tmp: max(seg_len) elements.
void steps_ring_reduce_scatter(int n, int me, const std::vector<std::size_t> &seg_off,
                               const std::vector<std::size_t> &seg_len, std::size_t elem, void *buf, void *tmp,
                               std::vector<RailStep> *steps);
// Binomial reduce of buf[0, count) toward rail rank `root`: ceil(log2 n) rounds at the
// root; every other rank sends buf once (count x elem bytes) and the root none. tmp:
// count elements.
void steps_binomial_reduce(int n, int me, int root, std::size_t count, std::size_t elem, void *buf, void *tmp,
                           std::vector<RailStep> *steps);

// Blocking allreduce of buf[0, count) in place with the given schedule (tmp: count
// elements).
Status rail_allreduce(Rail &r, ScheduleBuilder build, DType t, ROp op, void *buf, std::size_t count, std::size_t elem,
                      void *tmp);
// Binomial tree from rail rank `root`.
Status rail_bcast_binomial(Rail &r, void *buf, std::size_t bytes, int root);
// Allgather of variable-size pieces: piece i (sizes[i] bytes) of rail rank i is at
// out + offset(i) (node order); my piece must already be in place. Ring or Bruck
// (tmp: sum(sizes) bytes, Bruck only).
Status rail_allgatherv_ring(Rail &r, const std::vector<std::size_t> &sizes, void *out);
Status rail_allgatherv_bruck(Rail &r, const std::vector<std::size_t> &sizes, void *out, void *tmp);
// Alltoall of variable-size pieces, pairwise: n - 1 steps, step s sends my piece for rail
// rank (me + s) % n and receives the piece of rail rank (me - s + n) % n (one message per
// pair and call, tag s). out: my pieces in rail rank order (sizes_out[i] bytes for rank i,
// contiguous); in: what I receive, in rail rank order (sizes_in[i] bytes from rank i). My
// own piece is copied from out to in. sizes_out[i] on rank me must equal sizes_in[me] on
// rank i; empty pieces are not sent.
Status rail_alltoallv_pairwise(Rail &r, const std::vector<std::size_t> &sizes_out, const void *out,
                               const std::vector<std::size_t> &sizes_in, void *in);

// The end of a host call between nodes (coll/engine.cc: Engine::run): every rank of the
// rail tells every other one that its part of the call is done (one byte, step 0 of `r`:
// a call number of its own) and waits for theirs, its transport progressing meanwhile. A
// rank whose receives completed may still owe its senders a rendezvous acknowledgement
// that only its own progress sends; a sender says "done" only once its sends completed,
// so a rank that has every peer's "done" owes nobody. Through the rail's own transport,
// not the MPI's: an MPI told that ranks share cores yields in every test of a
// nonblocking barrier that finds it unfinished (base/wait.h), and on shared cores each
// such yield hands another process its time slice.
Status rail_barrier(Rail &r);

// Element range [*off, *off + *len) of part i when n elements are cut into `parts`
// near-equal contiguous parts (the first n % parts parts get one more).
void part_range(std::size_t n, int parts, int i, std::size_t *off, std::size_t *len);

// Steps of the recursive-doubling schedule for n ranks (floor(log2 n), plus 2 when n is
// not a power of two).
int rd_steps(int n);

// Recursive doubling / halving among n ranks: the largest power of two p <= n; ranks
// 0 .. 2(n-p)-1 pair up (the even one of each pair sits out). vrank: my rank among the p
// (-1: sitting out); real_rank: back to the rail rank.
int pow2_floor(int n);
int rd_vrank(int n, int rank);
int rd_real_rank(int n, int vrank);

}  // namespace gcoll
