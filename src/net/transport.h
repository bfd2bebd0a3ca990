// UCX transport: one process-wide UCP context and worker, tagged point-to-point messages
// on host memory between the ranks of a "group" (the ranks of an MPI communicator).
// GroupChannel (at the end) is a group behind the rails' transport interface,
// net::Channel (net/channel.h).
// Sources: context.cc (context, worker, progress), endpoints.cc (the peer endpoint
// cache), group.cc (group creation, GroupChannel), request.cc (sends, receives, waiting,
// cancellation); ucx_internal.h is what they share.
//
// Tag layout (64-bit UCP tag; receives match all 64 bits, there is no wildcard):
//   bits 63..52  group id     (12 bits; agreed at Group::create, unique among the
//                              groups alive at the same time on every member)
//   bits 51..32  source rank  (20 bits; rank of the sender in the group)
//   bits 31..0   caller tag   (the `tag` argument)
// so messages of different groups, sources and caller tags never match each other.
//
// Endpoints: one UCP endpoint per peer *process*, created on first use (isend or irecv
// to/from that peer) and shared by every group that contains the peer; they live until
// finalize(). Creating and destroying groups therefore costs no connections after the
// first one, and does not pile up half-closed endpoints inside UCX.
//
// Failures: endpoints use UCP_ERR_HANDLING_MODE_PEER (unless Options say otherwise), so a
// dead peer makes its requests fail instead of hanging (tcp: at once, through the socket;
// shared memory: through UCX keepalive, UCX_KEEPALIVE_INTERVAL, 20 s by default). PEER
// mode drops the shared-memory transports of UCX 1.13 unless MM_ERROR_HANDLING=y: init()
// sets it on its own ucp_config_t (ucp_config_modify; no environment change) when UCX_TLS
// allows a shared-memory transport and the user did not set UCX_MM_ERROR_HANDLING. A
// peer reachable only by transports without failure support (e.g. UCX_TLS=shm,self with
// UCX_MM_ERROR_HANDLING=n) is connected in NONE mode after the PEER attempt fails (UCX
// then prints one "no active messages transport" error per such endpoint).
// A peer whose endpoint failed, or whose endpoint had to be torn down because a send to
// it could not be cancelled after a timeout, is "lost" for the rest of the process:
// later operations to it fail at once with ErrTransport.
//
// Threads: init() is once-only and thread-safe. Under MPI_THREAD_MULTIPLE the worker is
// created with UCS_THREAD_MODE_MULTI and different groups may be used from different
// threads at the same time (one group from one thread at a time, as MPI requires for a
// communicator's collectives).
#pragma once

#include <string>

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "net/channel.h"

namespace gcoll::ucx {

struct Options {
  // true: endpoints use UCP_ERR_HANDLING_MODE_PEER (a dead peer fails its requests; on
  // UCX 1.13 this drops CMA, so same-host rendezvous is copied through shared memory,
  // several times slower). false: UCP_ERR_HANDLING_MODE_NONE (fastest transports; a dead
  // peer is noticed only through wait()'s timeout).
  bool peer_failure_detection = true;
  // true: wait() flushes, after large receives, the endpoints of their senders, so that
  // an acknowledgement this process owes (zero-copy rendezvous) leaves before wait()
  // returns (bounded at 0.5 s: UCX 1.13's tcp endpoint flush may never complete).
  // false: the caller guarantees it keeps progressing until its peers' sends completed
  // (the engine ends every call with progress_barrier on the group's communicator).
  bool flush_owed_on_wait = true;
  // UCX_NET_DEVICES of gcoll's own UCX configuration (ucp_config_modify: the environment
  // and other UCX users are untouched): the rail NIC nearest this rank's GPU
  // (coll/device_topo.h: rail_net_device). Empty, or UCX_NET_DEVICES set by the user: UCX
  // chooses.
  std::string net_devices;
};

// Process-wide UCP context + worker, created on first use. Idempotent; a failure is
// remembered (later calls return the same status without retrying) until finalize().
// The options of the first call that creates the context apply; later calls (and the
// implicit calls from Group::create) do not change them.
Status init();  // = init(Options{})
Status init(const Options &options);
// Closes all endpoints (flush, bounded in time), destroys the worker and the context.
// Groups still alive become unusable (their operations return ErrInternal); requests still
// outstanding must not be used afterwards. Call it while MPI still works, after the
// last wait(). Safe to call when init() never ran; init() may be called again after it.
void finalize();
// ucp_context_query(UCP_ATTR_FIELD_MEMORY_TYPES) reports CUDA memory. Calls init().
bool supports_cuda_memory();

// The version of the UCX the process has loaded, or loads now ("1.20.1"), or why it
// cannot be loaded (gcoll_info; UCX is loaded at run time, net/ucx_api.h).
std::string loaded_version();
// One call of ucp_worker_progress (0 when not initialised). For code that waits on
// something else (flags in shared memory, an MPI request) while peers may need us.
unsigned progress();
// PMPI_Ibarrier on comm, polled together with the worker's progress, so that peers whose
// protocols need this process's progress (emulated RMA, rendezvous over tcp/shm) are not
// blocked by a plain PMPI_Barrier. 0 = no timeout; ErrTransport when the barrier has not
// completed after timeout_s (its MPI request is then left behind: a barrier cannot be
// cancelled, and the communicator is to be considered broken).
Status progress_barrier(MPI_Comm comm, double timeout_s);
// The same with an agreement on an outcome: every rank of comm passes its own status;
// returns it where it is not Ok, else ErrInternal when another rank's was not (logged
// once), else Ok (PMPI_Iallreduce, MPI_MIN, polled with the worker's progress).
Status progress_agree(MPI_Comm comm, Status mine, double timeout_s);
// Polls n MPI requests to completion together with the worker's progress (as
// progress_barrier; `what` names them in the timeout's warning). Completed requests
// become MPI_REQUEST_NULL; on ErrTransport the others are left as they are.
Status progress_wait_all(MPI_Request *reqs, int n, double timeout_s, const char *what);

class Group;

// What the buffers of a group's messages are: host memory, or CUDA device memory (only
// where supports_cuda_memory(): UCX then reads and writes it itself, through its CUDA
// transports, GPUDirect RDMA where the NIC allows).
enum class Memory { Host, Cuda };

// One nonblocking operation (net/channel.h; Request::owner is the Group that made it).
// Every request that isend()/irecv() returned Ok for must be passed to wait() (or
// cancel()) before its buffer is reused; after that it is finished and may be reused.
using Request = net::Request;

struct PeerEntry;  // process-wide endpoint cache entry (ucx_internal.h)

// A group of processes = the ranks of an (intra)communicator.
class Group {
 public:
  // Collective over comm (every rank must call it, also when its own init() fails: all
  // ranks then return the same error). Uses PMPI_Allreduce twice (or more, rarely) and
  // PMPI_Allgather + PMPI_Allgatherv once. Errors: ErrComm (null/inter communicator),
  // NotSupported (more than 2^20 ranks), ErrTransport (UCX init failed on some rank),
  // ErrNoMem (4096 groups alive in this process), ErrInternal (an MPI call failed).
  static Status create(MPI_Comm comm, std::unique_ptr<Group> *out);
  // Local. Outstanding requests of this group must have been waited for. Never blocks
  // (endpoints are process-wide, see above).
  ~Group();
  Group(const Group &) = delete;
  Group &operator=(const Group &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::uint32_t id() const { return id_; }  // the agreed group id (tag bits 63..52)

  // Nonblocking tagged messages on host memory. peer may be rank() itself. A receive must
  // match a message of exactly `bytes` bytes (a longer or shorter message fails the
  // request with ErrInternal: the ranks disagree on the schedule). On an immediate
  // failure the request is left done with that status and the error is returned.
  // `mem` tells UCX what the buffer is (Memory::Cuda: device memory, no detection).
  Status isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req,
               Memory mem = Memory::Host);
  Status irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req,
               Memory mem = Memory::Host);
  // Progresses the worker until all n requests are done. The requests may belong to any
  // group. Returns Ok, or the first failure: ErrTransport (peer unreachable/lost, request
  // failed, or nothing completed for timeout_s seconds; 0 = no timeout), ErrInternal
  // (size mismatch). After a failure the other requests may still complete normally (a
  // failed receive does not cost a healthy peer), but the idle limit then applies even
  // with timeout_s = 0 (10 s). When the idle limit expires, the pending requests are
  // abandoned as by cancel(). Either way, when wait returns every request is done and
  // UCX no longer touches any of the n buffers. One log line per failure names the peer
  // (group rank and world rank), the operation, tag and size.
  // On success, when the batch had receives of 1 KiB or more from peers whose endpoint
  // has zero-copy (RMA) rendezvous lanes, those endpoints are flushed before returning
  // (for at most 0.5 s): a get-based rendezvous receive completes before its
  // acknowledgement to the sender has left, and the sender's request waits for it. The
  // caller may then block in MPI (no UCX progress) without leaving a peer stuck. (In
  // PEER mode on shared memory and tcp, UCX 1.13 has no such lanes: nothing to flush.)
  Status wait(Request *reqs, int n, double timeout_s);
  // Abandons outstanding requests: receives are cancelled (ucp_request_cancel); sends,
  // and receives already matched to a rendezvous, cannot be cancelled by UCX 1.13, so
  // after a 1 s grace the endpoints of their peers are force-closed (UCX then fails the
  // requests) and those peers are lost. Returns Ok when all ended by completion or
  // cancellation, ErrTransport when an endpoint had to be force-closed (or, should UCX
  // still hold a request after that, when it had to be released to UCX: logged).
  static Status cancel(Request *reqs, int n);
  // Nonblocking: polls the n requests once (call progress() too). *all_done tells whether
  // every one is done. On a failure the others are cancelled and the failure returned.
  static Status test(Request *reqs, int n, bool *all_done);
  Status sendrecv(int dst, const void *sbuf, std::size_t sbytes, int src, void *rbuf,
                  std::size_t rbytes, std::uint32_t tag, double timeout_s);

  // Bytes this process posted for sending through this group.
  std::uint64_t bytes_sent() const;

 private:
  Group() = default;
  PeerEntry *peer_entry(int peer);  // creates the endpoint on first use (check ->lost)
  std::uint64_t make_tag(int src, std::uint32_t tag) const;

  int rank_ = 0;
  int size_ = 0;
  std::uint32_t id_ = 0;
  std::uint64_t epoch_ = 0;              // transport epoch (finalize() bumps it)
  std::vector<PeerEntry *> peers_;       // by group rank, process-wide entries
  std::vector<int> world_ranks_;         // for log lines
  std::atomic<std::uint64_t> bytes_sent_{0};
  friend struct GroupAccess;
};

// A group as a net::Channel: isend/irecv/wait are the group's, test() is one progress()
// then Group::test(), cancel() is Group::cancel(). Either owns its group, or is a second
// view of a group owned by another channel, for buffers of another kind of memory (the
// engine's device calls across nodes with UCX on CUDA memory: Memory::Cuda).
class GroupChannel final : public net::Channel {
 public:
  explicit GroupChannel(std::unique_ptr<Group> group);
  GroupChannel(Group &group, Memory mem);  // not owned: `group` must outlive this
  ~GroupChannel() override;
  Group &group() { return *group_; }

  int rank() const override;
  int size() const override;
  Status isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req) override;
  Status irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) override;
  Status test(Request *reqs, int n, bool *all_done) override;
  Status wait(Request *reqs, int n, double timeout_s) override;
  Status cancel(Request *reqs, int n) override;
  std::uint64_t bytes_sent() const override;

 private:
  std::unique_ptr<Group> owned_;
  Group *group_;
  Memory mem_ = Memory::Host;
};

}  // namespace gcoll::ucx
