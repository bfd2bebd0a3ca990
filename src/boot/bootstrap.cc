#include "boot/bootstrap.h"

#include <climits>
#include <cstring>

#include "base/stats.h"

namespace gcoll {

Status min_max(Bootstrap &b, const long long *mine, int n, long long *lo, long long *hi) {
  std::vector<long long> v(2 * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    v[static_cast<std::size_t>(i)] = mine[i];
    // (LLONG_MIN has no negation: it is taken as LLONG_MIN + 1)
    v[static_cast<std::size_t>(n + i)] = mine[i] == LLONG_MIN ? LLONG_MAX : -mine[i];
  }
  const Status st = b.max(v.data(), 2 * n);
  if (!ok(st)) return st;
  for (int i = 0; i < n; ++i) {
    hi[i] = v[static_cast<std::size_t>(i)];
    lo[i] = -v[static_cast<std::size_t>(n + i)];
  }
  return Status::Ok;
}

// ---- over PMPI ---------------------------------------------------------------------------

void MpiBootstrap::count() const {
  if (hidden_) process_stats().count(Counter::HiddenMpi);
}

MpiBootstrap::MpiBootstrap(MPI_Comm comm, bool hidden) : comm_(comm), hidden_(hidden) {
  PMPI_Comm_rank(comm, &rank_);
  PMPI_Comm_size(comm, &size_);
}

Status MpiBootstrap::max(long long *v, int n) {
  count();
  return PMPI_Allreduce(MPI_IN_PLACE, v, n, MPI_LONG_LONG, MPI_MAX, comm_) == MPI_SUCCESS ? Status::Ok
                                                                                          : Status::ErrComm;
}

Status MpiBootstrap::allgather(const void *mine, std::size_t bytes, void *all) {
  if (bytes > INT_MAX) return Status::ErrCount;
  count();
  return PMPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, comm_) ==
                 MPI_SUCCESS
             ? Status::Ok
             : Status::ErrComm;
}

Status MpiBootstrap::bcast(void *buf, std::size_t bytes, int root) {
  if (bytes > INT_MAX) return Status::ErrCount;
  count();
  return PMPI_Bcast(buf, static_cast<int>(bytes), MPI_BYTE, root, comm_) == MPI_SUCCESS ? Status::Ok
                                                                                         : Status::ErrComm;
}

Status MpiBootstrap::barrier() {
  count();
  return PMPI_Barrier(comm_) == MPI_SUCCESS ? Status::Ok : Status::ErrComm;
}

// ---- between threads ---------------------------------------------------------------------

class InProcBootstrap final : public Bootstrap {
 public:
  InProcBootstrap(InProcBootstrapGroup *g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_->n_; }
  Status max(long long *v, int n) override {
    std::vector<unsigned char> all;
    const std::size_t bytes = sizeof(long long) * static_cast<std::size_t>(n);
    g_->exchange(rank_, v, bytes, &all);
    for (int r = 0; r < g_->n_; ++r) {
      const unsigned char *p = all.data() + bytes * static_cast<std::size_t>(r);
      for (int i = 0; i < n; ++i) {
        long long x;
        std::memcpy(&x, p + sizeof x * static_cast<std::size_t>(i), sizeof x);
        if (r == 0 || x > v[i]) v[i] = x;
      }
    }
    return Status::Ok;
  }
  Status allgather(const void *mine, std::size_t bytes, void *all) override {
    std::vector<unsigned char> v;
    g_->exchange(rank_, mine, bytes, &v);
    if (bytes) std::memcpy(all, v.data(), v.size());
    return Status::Ok;
  }
  Status bcast(void *buf, std::size_t bytes, int root) override {
    std::vector<unsigned char> v;
    g_->exchange(rank_, buf, bytes, &v);
    if (bytes) std::memcpy(buf, v.data() + bytes * static_cast<std::size_t>(root), bytes);
    return Status::Ok;
  }
  Status barrier() override {
    std::vector<unsigned char> v;
    g_->exchange(rank_, nullptr, 0, &v);
    return Status::Ok;
  }

 private:
  InProcBootstrapGroup *g_;
  int rank_;
};

InProcBootstrapGroup::InProcBootstrapGroup(int n) : n_(n) {}
InProcBootstrapGroup::~InProcBootstrapGroup() = default;

std::unique_ptr<Bootstrap> InProcBootstrapGroup::member(int rank) {
  return std::unique_ptr<Bootstrap>(new InProcBootstrap(this, rank));
}

void InProcBootstrapGroup::exchange(int rank, const void *mine, std::size_t bytes, std::vector<unsigned char> *all) {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return !draining_; });  // the previous round is still being read
  if (arrived_ == 0) {
    slot_bytes_ = bytes;
    slots_.assign(bytes * static_cast<std::size_t>(n_), 0);
  }
  if (bytes) std::memcpy(slots_.data() + bytes * static_cast<std::size_t>(rank), mine, bytes);
  const unsigned long long my_round = round_;
  if (++arrived_ == n_) {
    draining_ = true;
    ++round_;
    cv_.notify_all();
  } else {
    cv_.wait(lk, [&] { return round_ != my_round; });
  }
  *all = slots_;
  if (++departed_ == n_) {
    arrived_ = 0;
    departed_ = 0;
    draining_ = false;
    cv_.notify_all();
  }
}

}  // namespace gcoll
