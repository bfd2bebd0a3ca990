#include "pmpi/comm_state.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include "base/hot.h"
#include "base/log.h"
#include "pmpi/errors.h"

namespace gcoll {

namespace {

std::mutex g_mu;                       // guards everything below
int g_keyval = MPI_KEYVAL_INVALID;
std::vector<CommState *> g_registry;  // live states
std::uint64_t g_next_id = 1;

void unregister(CommState *s) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_registry.erase(std::remove(g_registry.begin(), g_registry.end(), s), g_registry.end());
}

// Called by MPI (MPI_Comm_free, MPI_Finalize): nothing may be thrown into it.
int delete_state(MPI_Comm, int, void *attr, void *) {
  auto *s = static_cast<CommState *>(attr);
  GCOLL_TRACE("release state of communicator #%llu", static_cast<unsigned long long>(s->id));
  const bool done = no_throw("releasing a communicator's state", [s] {
    unregister(s);
    detail::g_generation.fetch_add(1, std::memory_order_acq_rel);
    delete s;
  });
  return done ? MPI_SUCCESS : MPI_ERR_INTERN;
}

Status keyval(int *out) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_keyval == MPI_KEYVAL_INVALID &&
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_keyval, nullptr) != MPI_SUCCESS)
    return Status::ErrInternal;
  *out = g_keyval;
  return Status::Ok;
}

}  // namespace

Status lookup_or_create(MPI_Comm comm, CommState **out);

namespace detail {

// initial-exec: a direct %fs access instead of a __tls_get_addr call (as the stats' cache).
__thread LastLookup t_last __attribute__((tls_model("initial-exec")));
GCOLL_HOT_DATA std::atomic<std::uint64_t> g_generation{1};

Status comm_state_slow(MPI_Comm comm, CommState **out) {
  const std::uint64_t gen = g_generation.load(std::memory_order_acquire);
  CommState *s = nullptr;
  const Status st = lookup_or_create(comm, &s);
  if (!ok(st)) return st;
  t_last = LastLookup{comm, s, gen};
  *out = s;
  return Status::Ok;
}

}  // namespace detail

Status lookup_or_create(MPI_Comm comm, CommState **out) {
  int kv;
  Status st = keyval(&kv);
  if (!ok(st)) return st;
  void *attr = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, kv, &attr, &found) != MPI_SUCCESS) return Status::ErrComm;
  if (found) {
    *out = static_cast<CommState *>(attr);
    return Status::Ok;
  }
  auto *s = new (std::nothrow) CommState;
  if (!s) return Status::ErrNoMem;
  s->comm = comm;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  s->inter = inter != 0;
  PMPI_Comm_size(comm, &s->size);
  PMPI_Comm_rank(comm, &s->rank);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    s->id = g_next_id++;
    g_registry.push_back(s);
  }
  if (PMPI_Comm_set_attr(comm, kv, s) != MPI_SUCCESS) {
    unregister(s);
    delete s;
    return Status::ErrInternal;
  }
  GCOLL_TRACE("state of communicator #%llu created (size %d)", static_cast<unsigned long long>(s->id), s->size);
  *out = s;
  return Status::Ok;
}

CommState *comm_state_peek(MPI_Comm comm) {
  int kv;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    kv = g_keyval;
  }
  if (kv == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL) return nullptr;
  void *attr = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, kv, &attr, &found) != MPI_SUCCESS || !found) return nullptr;
  return static_cast<CommState *>(attr);
}

int live_comm_states() {
  std::lock_guard<std::mutex> lock(g_mu);
  return static_cast<int>(g_registry.size());
}

void release_all_comm_states() {
  std::vector<CommState *> live;
  int kv;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    live = g_registry;
    kv = g_keyval;
  }
  if (kv == MPI_KEYVAL_INVALID) return;
  // Deleting the attribute runs delete_state, which unregisters and frees the state.
  for (CommState *s : live) PMPI_Comm_delete_attr(s->comm, kv);
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_registry.empty())
    GCOLL_WARN("%zu communicator states could not be released at finalize", g_registry.size());
  PMPI_Comm_free_keyval(&g_keyval);
  g_keyval = MPI_KEYVAL_INVALID;
}

}  // namespace gcoll
