// Device memory across nodes (issue 13): two net::Channel adapters that let the rails
// hand GPU buffers to a channel whose transport knows only host memory (or reaches the
// device by itself).
//
// StagedChannel: pipelined through pinned host memory. A message of `bytes` travels as
// max(1, ceil(bytes / piece_bytes)) inner messages with the same tag, in order (0 bytes:
// one 0-byte message); every rank must use the same piece_bytes, since the receiver cuts
// a message as the sender does. Each request keeps up to `window` pieces in flight, each
// in a pinned block of piece_bytes:
//
//   send:    D2H copy of piece k into a block, event   (device->host stream)
//            event done  -> inner isend from the block (pieces posted strictly in order)
//            send done   -> the block takes piece k + window
//   receive: inner irecv of piece k into a block       (posted strictly in order)
//            received    -> H2D copy to the buffer, event (host->device stream)
//            event done  -> the block takes piece k + window
//
// so the copies of some pieces overlap the wire time of others. A send is done when its
// last piece is sent, a receive when its last H2D copy is complete (seen through its
// event). Requests with the same (peer, tag) and direction post their pieces one request
// after the other, in posting order, so that they match as whole messages would; so
// isend, irecv, test and wait move every outstanding request of the channel on, not only
// the ones they name. Pinned blocks and events are pooled by the channel and reused
// across requests (a request takes min(window, pieces) of each); they are freed with the
// channel.
//
// The caller guarantees that the GPU work producing a send buffer or using a receive
// buffer is complete when it posts the request; the channel reads the send buffer only
// after the post, and after wait / test-done / cancel never touches either buffer again.
//
// Size mismatches: there is no header on the wire. Where the two piece lists differ in
// size at an index the receiver posts, the receiver fails at once (ErrInternal). Pieces
// one side has and the other never posts are waited for until the timeout (ErrTransport):
// a sender's pieces after a receiver's failure or beyond its size, a receiver's pieces
// beyond the sender's size. When the receiver's list is a prefix of the sender's (e.g.
// piece vs 2 x piece bytes), the receiver completes and only the sender reports an error.
//
// One thread at a time (the rail's), like the other channels' endpoints.
//
// ViewChannel: the "direct" way on gcoll's emulated GPU: the inner channel is handed the
// address at which a GPUDirect transport reaches each buffer (cuda::emu::transport_view:
// the shadow view of device memory) instead of the buffer itself. Its requests are the
// inner channel's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/runtime.h"
#include "net/channel.h"

namespace gcoll::net {

struct StagedOptions {
  int device = 0;                     // the GPU of the buffers (made current around runtime calls)
  std::size_t piece_bytes = 1 << 20;  // pipeline piece (equal on every rank)
  int window = 4;                     // pieces in flight per request (pinned memory: window x piece_bytes)
};

struct StagedOp;  // device_channel.cc: one request's state (Request::handle)

// Device memory over a host-memory channel, pipelined through pinned host pieces.
class StagedChannel final : public Channel {
 public:
  // inner: not owned, outlives this. rt: the runtime of the buffers (outlives this).
  StagedChannel(Channel *inner, cuda::Runtime &rt, const StagedOptions &o);
  // Frees pinned blocks, events and streams. Requests must be done; any that is not is
  // cancelled (with a warning) and its Request must not be used any more.
  ~StagedChannel() override;
  StagedChannel(const StagedChannel &) = delete;
  StagedChannel &operator=(const StagedChannel &) = delete;

  // Checks the options and creates the two streams (device->host, host->device). Ok, or
  // the error (logged with the runtime's message). Required before isend / irecv.
  Status init();

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req) override;
  Status irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) override;
  Status test(Request *reqs, int n, bool *all_done) override;
  Status wait(Request *reqs, int n, double timeout_s) override;
  Status cancel(Request *reqs, int n) override;
  std::uint64_t bytes_sent() const override { return inner_->bytes_sent(); }

  // Pinned blocks allocated so far (all of them pooled when no request is outstanding).
  std::size_t pinned_blocks() const { return blocks_; }

 private:
  Status post(Request::Kind kind, int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req);
  void progress_all(bool *moved);
  Status step(StagedOp *op, bool *moved);
  Status step_send(StagedOp *op, bool *moved);
  Status step_recv(StagedOp *op, bool *moved);
  bool blocked(const StagedOp *op) const;
  Status take_block(void **block);
  Status take_event(cuda::Event *ev);
  Status abandon(StagedOp *op, Status why);
  void release(StagedOp *op);
  void drop_finished();

  Channel *inner_;
  cuda::Runtime &rt_;
  StagedOptions o_;
  cuda::Stream d2h_ = nullptr, h2d_ = nullptr;
  bool ready_ = false;
  std::vector<StagedOp *> active_;  // requests still moving, in posting order
  std::vector<void *> free_blocks_;
  std::vector<void *> pageable_;  // blocks that could not be pinned (pinned::alloc_host)
  std::vector<cuda::Event> free_events_;
  std::size_t blocks_ = 0, events_ = 0;  // allocated so far
};

// Hands the inner channel view(buf, bytes) instead of buf (the emulated GPU's "direct"
// way; view = cuda::emu::transport_view). A nullptr view of a non-null buffer fails the
// call with ErrInternal.
class ViewChannel final : public Channel {
 public:
  using View = void *(*)(const void *, std::size_t);
  ViewChannel(Channel *inner, View view) : inner_(inner), view_(view) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req) override;
  Status irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) override;
  Status test(Request *reqs, int n, bool *all_done) override { return inner_->test(reqs, n, all_done); }
  Status wait(Request *reqs, int n, double timeout_s) override { return inner_->wait(reqs, n, timeout_s); }
  Status cancel(Request *reqs, int n) override { return inner_->cancel(reqs, n); }
  std::uint64_t bytes_sent() const override { return inner_->bytes_sent(); }

 private:
  Channel *inner_;
  View view_;
};

}  // namespace gcoll::net
