// The agreement path: what the ranks of a communicator agree on outside a collective's
// data path (settings, memory kinds, setup outcomes, the node's and the network's setup
// exchanges) goes through a Bootstrap, as UCC's out-of-band collectives: small, blocking,
// collective over the communicator. Over PMPI on a communicator, or between threads of one
// process for unit tests. Used by topo, mem, net and coll (base and MPI only here).
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"

namespace gcoll {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place: v[i] = the largest v[i] of all ranks. (For a minimum, negate.)
  virtual Status max(long long *v, int n) = 0;
  // all[r * bytes .. (r + 1) * bytes) = rank r's `mine`.
  virtual Status allgather(const void *mine, std::size_t bytes, void *all) = 0;
  virtual Status bcast(void *buf, std::size_t bytes, int root) = 0;
  virtual Status barrier() = 0;
};

// Minimum and maximum over the ranks of each of `n` values, in one exchange.
Status min_max(Bootstrap &b, const long long *mine, int n, long long *lo, long long *hi);

// Over PMPI on `comm` (not owned). ErrComm when the MPI fails the call. `hidden`: each
// call counts as one of gcoll's hidden MPI calls in the stats (base/stats.h says which
// agreements are counted: those inside intercepted calls after a communicator's setup).
class MpiBootstrap final : public Bootstrap {
 public:
  explicit MpiBootstrap(MPI_Comm comm, bool hidden = true);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status max(long long *v, int n) override;
  Status allgather(const void *mine, std::size_t bytes, void *all) override;
  Status bcast(void *buf, std::size_t bytes, int root) override;
  Status barrier() override;

 private:
  void count() const;
  MPI_Comm comm_;
  bool hidden_ = true;
  int rank_ = 0, size_ = 1;
};

// `n` threads of one process as ranks (tests): member(r) for the thread of rank r; every
// member must make the same calls in the same order, as ranks would.
class InProcBootstrapGroup {
 public:
  explicit InProcBootstrapGroup(int n);
  ~InProcBootstrapGroup();
  std::unique_ptr<Bootstrap> member(int rank);

 private:
  friend class InProcBootstrap;
  // One exchange: every rank contributes `bytes`, then reads all contributions.
  void exchange(int rank, const void *mine, std::size_t bytes, std::vector<unsigned char> *all);
  int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<unsigned char> slots_;   // the current exchange's contributions
  std::size_t slot_bytes_ = 0;
  int arrived_ = 0, departed_ = 0;
  bool draining_ = false;  // the last rank has arrived: the others read before a new round
  unsigned long long round_ = 0;
};

}  // namespace gcoll
