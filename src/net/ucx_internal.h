// Private to the UCX transport (net/context.cc, endpoints.cc, group.cc, request.cc): the
// process-wide state, the endpoint cache entries and the helpers these files share. Not
// for use outside src/net (it includes the UCX headers, which transport.h keeps out of
// the engine).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <bitset>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "net/transport.h"
#include "net/ucx_api.h"

// The UCX functions the transport calls, through the table loaded at run time
// (ucx_api.h). ucp_init is an inline of ucp.h around ucp_init_version.
#define GCOLL_UCX_CALL(f) (::gcoll::ucx::api().f)
#define ucp_init(params, config, context) \
  GCOLL_UCX_CALL(ucp_init_version)(UCP_API_MAJOR, UCP_API_MINOR, params, config, context)
#define ucp_cleanup GCOLL_UCX_CALL(ucp_cleanup)
#define ucp_config_read GCOLL_UCX_CALL(ucp_config_read)
#define ucp_config_release GCOLL_UCX_CALL(ucp_config_release)
#define ucp_config_modify GCOLL_UCX_CALL(ucp_config_modify)
#define ucp_config_print GCOLL_UCX_CALL(ucp_config_print)
#define ucp_context_query GCOLL_UCX_CALL(ucp_context_query)
#define ucp_get_version_string GCOLL_UCX_CALL(ucp_get_version_string)
#define ucp_worker_create GCOLL_UCX_CALL(ucp_worker_create)
#define ucp_worker_destroy GCOLL_UCX_CALL(ucp_worker_destroy)
#define ucp_worker_query GCOLL_UCX_CALL(ucp_worker_query)
#define ucp_worker_get_address GCOLL_UCX_CALL(ucp_worker_get_address)
#define ucp_worker_release_address GCOLL_UCX_CALL(ucp_worker_release_address)
#define ucp_worker_progress GCOLL_UCX_CALL(ucp_worker_progress)
#define ucp_ep_create GCOLL_UCX_CALL(ucp_ep_create)
#define ucp_ep_close_nbx GCOLL_UCX_CALL(ucp_ep_close_nbx)
#define ucp_ep_flush_nbx GCOLL_UCX_CALL(ucp_ep_flush_nbx)
#define ucp_ep_print_info GCOLL_UCX_CALL(ucp_ep_print_info)
#define ucp_request_free GCOLL_UCX_CALL(ucp_request_free)
#define ucp_request_cancel GCOLL_UCX_CALL(ucp_request_cancel)
#define ucp_request_check_status GCOLL_UCX_CALL(ucp_request_check_status)
#define ucp_tag_send_nbx GCOLL_UCX_CALL(ucp_tag_send_nbx)
#define ucp_tag_recv_nbx GCOLL_UCX_CALL(ucp_tag_recv_nbx)
#define ucp_tag_recv_request_test GCOLL_UCX_CALL(ucp_tag_recv_request_test)
#define ucs_status_string GCOLL_UCX_CALL(ucs_status_string)

namespace gcoll::ucx {

// ---- tag layout ----------------------------------------------------------------------
constexpr int kTagBits = 32;
constexpr int kRankBits = 20;
constexpr int kGroupBits = 12;
static_assert(kTagBits + kRankBits + kGroupBits == 64, "tag layout must fill 64 bits");
constexpr std::uint32_t kMaxGroups = 1u << kGroupBits;
constexpr int kMaxRanks = 1 << kRankBits;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

// Bounds for the cleanup paths (they are failure paths: a peer is gone or stuck).
constexpr double kCancelGraceS = 1.0;   // after cancelling receives, before force-closing
constexpr double kForceDrainS = 5.0;    // after force-closing endpoints

inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// ---- process-wide state --------------------------------------------------------------

// One per peer process (keyed by its worker address), shared by all groups.
struct PeerEntry {
  std::string address;  // remote worker address (bytes)
  int world_rank = -1;  // for log lines
  std::mutex mu;        // endpoint creation / close; sends under UCS_THREAD_MODE_MULTI
  std::atomic<ucp_ep_h> ep{nullptr};
  std::atomic<bool> lost{false};
  std::atomic<int> err{UCS_OK};  // ucs_status_t that made it lost
  std::atomic<bool> torn_down{false};  // we force-closed it (request not cancellable)
  std::atomic<int> rma_lanes{-1};      // endpoint has RMA (rendezvous get/put) lanes: 1/0, -1 unknown
  bool closed = false;                 // guarded by mu
  bool peer_mode = true;         // created with UCP_ERR_HANDLING_MODE_PEER
};

enum class Phase { Uninit, Ready, Failed };

struct State {
  std::mutex mu;  // everything below except the atomics
  Phase phase = Phase::Uninit;
  Status init_status = Status::Ok;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_address_t *address = nullptr;
  std::size_t address_len = 0;
  bool multi = false;      // worker runs in UCS_THREAD_MODE_MULTI
  bool need_lock = false;  // MPI_THREAD_MULTIPLE but UCX gave less: we serialise
  std::mutex worker_mu;    // used only when need_lock
  std::atomic<std::uint64_t> epoch{0};  // bumped by init and finalize
  std::atomic<bool> ready{false};
  std::uint64_t next_id = 0;  // monotone group-id counter (never reset)
  std::bitset<kMaxGroups> ids_in_use;
  std::unordered_map<std::string, std::unique_ptr<PeerEntry>> peers;
  std::atomic<bool> logged_no_peer_mode{false};
  bool peer_mode = true;  // Options::peer_failure_detection of the init that made it
  bool flush_owed = true; // Options::flush_owed_on_wait
  std::string net_devices; // Options::net_devices
};

// Whether a UCX_TLS value lets UCX load a transport (context.cc): `aliases` name it or a
// group holding it (excluded by "^alias"), `members` load it only when listed positively
// (as "all" does). tls_allows("^tcp", {"shm", "sm", "mm"}, {"posix"}) is true.
bool tls_allows(const std::string &tls, std::initializer_list<const char *> aliases,
                std::initializer_list<const char *> members);

// The process-wide state (context.cc).
State &st();

// Serialises worker calls only when UCX could not give us a thread-safe worker.
class WorkerGuard {
 public:
  WorkerGuard() {
    if (st().need_lock) lk_ = std::unique_lock<std::mutex>(st().worker_mu);
  }

 private:
  std::unique_lock<std::mutex> lk_;
};

// Locks a peer entry when several threads may use it at once.
class PeerGuard {
 public:
  explicit PeerGuard(PeerEntry *e) {
    if (st().multi || st().need_lock) lk_ = std::unique_lock<std::mutex>(e->mu);
  }

 private:
  std::unique_lock<std::mutex> lk_;
};

// One call of ucp_worker_progress (0 when not initialised) (context.cc).
unsigned progress_once();

// ---- endpoints (endpoints.cc) ----------------------------------------------------------

// Why a lost peer was lost (for log lines).
const char *lost_reason(const PeerEntry *e);
// True when the endpoint has lanes for zero-copy rendezvous (RMA).
bool ep_has_rma_lanes(ucp_ep_h ep);
// Flushes the endpoints of the given peers, bounded in time.
void flush_peers(const std::vector<PeerEntry *> &peers, double bound_s);
// Force-closes the endpoint of a peer, which becomes lost. Caller must not hold e->mu.
void force_close_peer(PeerEntry *e, ucs_status_t reason, const char *why);

}  // namespace gcoll::ucx
