// UCX transport, groups: creation (group id agreement, worker address exchange), the tag
// layout, and the group as a net::Channel (GroupChannel, what the engine's rails hold).
#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <thread>

#include "boot/bootstrap.h"
#include "base/log.h"
#include "net/ucx_internal.h"

namespace gcoll::ucx {

Status Group::create(MPI_Comm comm, std::unique_ptr<Group> *out) {
  if (out == nullptr) return Status::ErrArg;
  out->reset();
  if (comm == MPI_COMM_NULL) return Status::ErrComm;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return Status::ErrComm;
  if (inter) return Status::ErrComm;
  int rank = 0, size = 0;
  if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return Status::ErrComm;
  if (size > kMaxRanks) {
    GCOLL_INFO("ucx: communicator of %d ranks exceeds the %d ranks of the tag layout", size,
               kMaxRanks);
    return Status::NotSupported;
  }
  State &s = st();
  // Every rank takes part in every collective below, whatever its local init says, so
  // that all agree on the outcome.
  const Status ist = init();
  MpiBootstrap boot(comm, false);  // the agreement path (setup: not counted as hidden calls)

  // 1. Agree on a group id: MAX of the local counters, then check that it is free on
  //    every member (a concurrent create on another thread may have taken it); if not,
  //    everybody moves past it and tries again.
  std::uint32_t id = 0;
  for (std::uint32_t round = 0;; ++round) {
    std::uint64_t in[2], res[2] = {0, 0};
    {
      std::lock_guard<std::mutex> lk(s.mu);
      in[0] = s.next_id;
    }
    // Retries (only after a concurrent create on another thread took the id on some
    // member): a random step, so that two creates racing on the same processes do not
    // keep choosing the same id in lockstep.
    if (round > 0) {
      thread_local std::minstd_rand rng(static_cast<unsigned>(
          std::hash<std::thread::id>{}(std::this_thread::get_id()) ^
          static_cast<std::size_t>(now_s() * 1e9)));
      in[0] += rng() % 8;
    }
    in[1] = (ist == Status::Ok) ? 0 : 1;
    long long v[2] = {static_cast<long long>(in[0] & 0x7fffffffffffffffULL), static_cast<long long>(in[1])};
    if (!ok(boot.max(v, 2))) return Status::ErrInternal;
    res[0] = static_cast<std::uint64_t>(v[0]);
    res[1] = static_cast<std::uint64_t>(v[1]);
    if (res[1] != 0) {
      GCOLL_INFO("ucx: UCX is unavailable on at least one rank; no group");
      return Status::ErrTransport;
    }
    id = static_cast<std::uint32_t>(res[0] % kMaxGroups);
    int conflict = 0;
    {
      std::lock_guard<std::mutex> lk(s.mu);
      if (s.ids_in_use.test(id)) {
        conflict = 1;
      } else {
        s.ids_in_use.set(id);
      }
      s.next_id = std::max(s.next_id, res[0] + 1);
    }
    long long any_conflict = conflict;
    if (!ok(boot.max(&any_conflict, 1))) {
      if (!conflict) {
        std::lock_guard<std::mutex> lk(s.mu);
        s.ids_in_use.reset(id);
      }
      return Status::ErrInternal;
    }
    if (!any_conflict) break;
    GCOLL_TRACE("ucx: group id %u is taken on a member; agreeing on another one", id);
    if (!conflict) {
      std::lock_guard<std::mutex> lk(s.mu);
      s.ids_in_use.reset(id);
    }
    if (round + 1 >= kMaxGroups) {
      GCOLL_WARN("ucx: no free group id (%u groups alive)", kMaxGroups);
      return Status::ErrNoMem;
    }
  }
  auto release_id = [&s, id]() {
    std::lock_guard<std::mutex> lk(s.mu);
    s.ids_in_use.reset(id);
  };

  // 2. Exchange worker addresses: [int32 world rank][address bytes].
  int world_rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::vector<char> mine(sizeof(std::int32_t) + s.address_len);
  const std::int32_t wr32 = world_rank;
  std::memcpy(mine.data(), &wr32, sizeof wr32);
  std::memcpy(mine.data() + sizeof wr32, s.address, s.address_len);
  // Every rank's entry padded to the longest (the agreement path: fixed-size pieces).
  std::vector<int> lens(size), displs(size);
  int mylen = static_cast<int>(mine.size());
  if (!ok(boot.allgather(&mylen, sizeof mylen, lens.data()))) {
    release_id();
    return Status::ErrInternal;
  }
  std::size_t total = 0, longest = 0;
  for (int r = 0; r < size; ++r) {
    displs[r] = static_cast<int>(total);
    total += static_cast<std::size_t>(lens[r]);
    longest = std::max(longest, static_cast<std::size_t>(lens[r]));
  }
  if (total > static_cast<std::size_t>(INT32_MAX) || longest * static_cast<std::size_t>(size) > INT32_MAX) {
    release_id();
    return Status::NotSupported;  // same on all ranks: lens are allgathered
  }
  mine.resize(longest, 0);
  std::vector<char> padded(std::max<std::size_t>(longest * static_cast<std::size_t>(size), 1));
  if (!ok(boot.allgather(mine.data(), longest, padded.data()))) {
    release_id();
    return Status::ErrInternal;
  }
  std::vector<char> all(std::max<std::size_t>(total, 1));
  for (int r = 0; r < size; ++r)
    std::memcpy(all.data() + displs[r], padded.data() + longest * static_cast<std::size_t>(r),
                static_cast<std::size_t>(lens[r]));

  std::unique_ptr<Group> g(new (std::nothrow) Group);
  if (!g) {
    release_id();
    return Status::ErrNoMem;
  }
  g->rank_ = rank;
  g->size_ = size;
  g->id_ = id;
  g->epoch_ = s.epoch.load();
  g->peers_.resize(size, nullptr);
  g->world_ranks_.resize(size, -1);
  {
    std::lock_guard<std::mutex> lk(s.mu);
    for (int r = 0; r < size; ++r) {
      const char *p = all.data() + displs[r];
      std::int32_t w = -1;
      if (lens[r] < static_cast<int>(sizeof w)) continue;  // cannot happen
      std::memcpy(&w, p, sizeof w);
      std::string key(p + sizeof w, static_cast<std::size_t>(lens[r]) - sizeof w);
      auto it = s.peers.find(key);
      if (it == s.peers.end()) {
        auto e = std::make_unique<PeerEntry>();
        e->address = key;
        e->world_rank = w;
        it = s.peers.emplace(std::move(key), std::move(e)).first;
      }
      g->peers_[r] = it->second.get();
      g->world_ranks_[r] = w;
    }
  }
  GCOLL_TRACE("ucx: group %u created: rank %d of %d", id, rank, size);
  *out = std::move(g);
  return Status::Ok;
}

Group::~Group() {
  State &s = st();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.epoch.load() == epoch_) s.ids_in_use.reset(id_);
}

std::uint64_t Group::bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }

std::uint64_t Group::make_tag(int src, std::uint32_t tag) const {
  return (static_cast<std::uint64_t>(id_) << (kTagBits + kRankBits)) |
         (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << kTagBits) |
         static_cast<std::uint64_t>(tag);
}

// ---- GroupChannel ----------------------------------------------------------------------

GroupChannel::GroupChannel(std::unique_ptr<Group> group) : owned_(std::move(group)), group_(owned_.get()) {}
GroupChannel::GroupChannel(Group &group, Memory mem) : group_(&group), mem_(mem) {}
GroupChannel::~GroupChannel() = default;

int GroupChannel::rank() const { return group_->rank(); }
int GroupChannel::size() const { return group_->size(); }

Status GroupChannel::isend(int peer, const void *buf, std::size_t bytes, std::uint32_t tag, Request *req) {
  return group_->isend(peer, buf, bytes, tag, req, mem_);
}

Status GroupChannel::irecv(int peer, void *buf, std::size_t bytes, std::uint32_t tag, Request *req) {
  return group_->irecv(peer, buf, bytes, tag, req, mem_);
}

Status GroupChannel::test(Request *reqs, int n, bool *all_done) {
  progress();
  return Group::test(reqs, n, all_done);
}

Status GroupChannel::wait(Request *reqs, int n, double timeout_s) { return group_->wait(reqs, n, timeout_s); }

Status GroupChannel::cancel(Request *reqs, int n) { return Group::cancel(reqs, n); }

std::uint64_t GroupChannel::bytes_sent() const { return group_->bytes_sent(); }

}  // namespace gcoll::ucx
