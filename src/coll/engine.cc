// The engine's front door (engine.h): a communicator's engine, built collectively at its
// first engine call (EngineSlot::get), and one call run from start to end (Engine::run),
// its completion protocol included. src/pmpi sees only these two and the algorithm table.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "boot/bootstrap.h"
#include "coll/algorithms.h"
#include "coll/device_topo.h"
#include "mem/cuda_space.h"
#include "mem/host_space.h"
#include "coll/tune.h"
#include "cuda/emulate.h"
#include "net/device_channel.h"
#include "net/transport.h"
#include "topo/detect.h"

namespace gcoll {

namespace {

// Below this, UCX sends messages eagerly (its rendezvous thresholds are 8 KiB and more
// unless UCX_RNDV_THRESH is lowered below this).
constexpr std::size_t kRendezvousMinBytes = 1024;

// From this many bytes (the selection's: rank-uniform) a host call between nodes ends with
// the rail's own barrier (coll/rail.h: rail_barrier), below with the MPI's nonblocking one
// on the rail communicator. On shared cores the MPI's costs its yields (a busy
// reduce_scatter_block of 256 KiB - 2 MiB on the engine: 0.96-1.18x the MPI with it,
// 1.13-1.74x with the rail's); on a quiet machine the rail's round trip costs about 3 us
// more (UCX between the virtual nodes: allreduce 4-16 KiB 14.5-23.6 us against 11.1-20.2),
// which small calls feel and large ones do not.
constexpr std::size_t kRailBarrierMinBytes = 64 << 10;

// At least the largest message one rank sends on its rail in call `a` (rank-uniform),
// against kRendezvousMinBytes: bytes() bounds it where a rail piece is part of the
// message (allreduce, bcast, reduce, reduce_scatter, allgatherv: bytes() is the total);
// an allgather's or reduce_scatter_block's piece holds up to a node's blocks (P), an
// alltoall's up to P^2 blocks' chunks.
std::size_t rail_message_bound(const CollArgs &a, int size) {
  const std::size_t b = a.bytes(), p = static_cast<std::size_t>(size);
  switch (a.coll) {
    case Coll::Alltoall: return std::min(b, kRendezvousMinBytes) * p * p;
    case Coll::Allgather:
    case Coll::Reduce_scatter_block: return std::min(b, kRendezvousMinBytes) * p;
    default: return b;
  }
}

// The stats' counter of a device topology class (base/stats.h).
Counter topo_counter(topo::TopoClass c) {
  return static_cast<Counter>(static_cast<int>(Counter::TopoOneGpu) + static_cast<int>(c));
}

// engine_set_concurrent_threads (engine.h).
std::atomic<bool> g_concurrent_threads{true};

// What remains of an engine retired by ~EngineSlot (engine.h) until its rail peers let go
// of it: the closing barrier on each of its rail communicators, and those communicators
// (freed when the barrier has completed). The rest of the engine went at once: what a peer
// may still need of this rank is its UCX worker and endpoints, which are the process's.
struct Retired {
  std::vector<MPI_Request> barriers;
  std::vector<MPI_Comm> comms;
};
std::mutex g_retired_mu;
std::vector<Retired> g_retired;

void free_comms(Retired &r) {
  for (MPI_Comm &c : r.comms) PMPI_Comm_free(&c);
  r.comms.clear();
}

// Frees what remains of the retired engines whose closing barriers completed (MPI requests
// tested, no wait).
void reap_retired() {
  std::lock_guard<std::mutex> lk(g_retired_mu);
  for (std::size_t i = 0; i < g_retired.size();) {
    Retired &r = g_retired[i];
    int flag = 0;
    if (PMPI_Testall(static_cast<int>(r.barriers.size()), r.barriers.data(), &flag, MPI_STATUSES_IGNORE) !=
        MPI_SUCCESS)
      flag = 1;  // (the MPI reported the failure; nothing left to wait for)
    if (flag) {
      free_comms(r);
      g_retired.erase(g_retired.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

// MPI_Finalize: every retired engine's barriers to completion, progressing UCX (a peer
// may need this rank's progress to finish its part), before the transport goes.
void wait_retired() {
  std::vector<Retired> all;
  {
    std::lock_guard<std::mutex> lk(g_retired_mu);
    all.swap(g_retired);
  }
  std::vector<MPI_Request> reqs;
  for (Retired &r : all) reqs.insert(reqs.end(), r.barriers.begin(), r.barriers.end());
  if (!reqs.empty() &&
      ucx::progress_wait_all(reqs.data(), static_cast<int>(reqs.size()), config().timeout_s,
                             "the closing barrier of a communicator's rails (MPI_Finalize)") != Status::Ok) {
    GCOLL_WARN("a rail peer did not reach MPI_Finalize within GCOLL_TIMEOUT; gcoll's transport closes anyway");
    return;  // (the communicators stay: a pending barrier still uses them)
  }
  for (Retired &r : all) free_comms(r);
}

// The engine's setup agreements: v[i] becomes the largest of every rank's v[i] (as
// Bootstrap::max), and, in the same exchange, the warnings the ranks held back (base/log.h:
// warn_shared) are printed once each, by the lowest rank that holds it.
Status agree_setup(MpiBootstrap &boot, long long *v, int n) {
  const int size = boot.size(), w = n + 1;
  std::vector<long long> mine(v, v + n), all(static_cast<std::size_t>(w) * static_cast<std::size_t>(size));
  mine.push_back(static_cast<long long>(shared_warnings_pending()));
  const Status st = boot.allgather(mine.data(), sizeof(long long) * static_cast<std::size_t>(w), all.data());
  if (!ok(st)) return st;
  std::vector<std::uint32_t> masks(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const long long *row = all.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(w);
    for (int i = 0; i < n; ++i) v[i] = r == 0 ? row[i] : std::max(v[i], row[i]);
    masks[static_cast<std::size_t>(r)] = static_cast<std::uint32_t>(row[n]);
  }
  shared_warnings_report(masks.data(), size, boot.rank());
  return Status::Ok;
}

// One MPI call the engine makes on its own on the application's communicator (stats:
// hidden_mpi_calls).
void hidden_mpi_call() { process_stats().count(Counter::HiddenMpi); }

// Local allocations of a collective setup fail as a status (without_exceptions,
// base/log.h), so that the rank still takes part in the agreement that follows (an
// exception would leave its peers waiting).

Status build(MPI_Comm comm, const EngineSettings &s, std::unique_ptr<Engine> *out) {
  auto e = std::make_unique<Engine>();
  e->comm = comm;
  const Config &c = config();
  Status st = build_topology(comm, c.ranks_per_node, &e->topo);
  if (!ok(st)) return st;
  e->timeout_s = s.timeout_s;
  HostSpaceOptions opt;
  opt.bank_bytes = c.chunk_size;
  opt.timeout_s = s.timeout_s;
  if (e->topo.num_nodes > 1) opt.progress = [] { ucx::progress(); };
  st = create_host_space(e->topo.node_comm, opt, &e->host_space);
  if (!ok(st)) return st;
  e->space = e->host_space.get();
  e->chunk_bytes = e->space->capacity();
  e->scratch.resize(4 * e->chunk_bytes);  // two slices in flight + their receive buffers
  if (e->topo.num_nodes > 1 && e->topo.rail_comm != MPI_COMM_NULL) {
    ucx::Options uo;
    uo.flush_owed_on_wait = false;  // every engine call ends with a progress barrier instead
    uo.net_devices = rail_net_device();  // the NIC nearest this rank's GPU
    ucx::init(uo);                  // the first init's options apply; failures surface in create()
    std::unique_ptr<ucx::Group> group;
    st = ucx::Group::create(e->topo.rail_comm, &group);
    if (!ok(st)) return st;
    e->rail_group = group.get();
    e->rail = std::make_unique<ucx::GroupChannel>(std::move(group));
  }
  *out = std::move(e);
  return Status::Ok;
}

}  // namespace

EngineSlot::EngineSlot() = default;

EngineSlot::~EngineSlot() {
  if (!engine_) return;
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (finalized) return;  // (engine_ goes now: nothing can be waited for after MPI_Finalize)
  if (engine_->agree_comm != MPI_COMM_NULL) PMPI_Comm_free(&engine_->agree_comm);  // (no call is running)
  // The rails this rank talks over: the host rail, and the device engine's rail between
  // islands (its device rail is a view of one of these groups). Every member of a rail
  // communicator has the same engine, and retires it when it frees the communicator.
  Engine &e = *engine_;
  MPI_Comm *rails[2] = {e.rail ? &e.topo.rail_comm : nullptr,
                        e.island_rail && e.island_topo ? &e.island_topo->rail_comm : nullptr};
  Retired r;
  for (MPI_Comm *c : rails) {
    if (c == nullptr || *c == MPI_COMM_NULL) continue;
    MPI_Request q = MPI_REQUEST_NULL;
    if (PMPI_Ibarrier(*c, &q) != MPI_SUCCESS) continue;
    r.barriers.push_back(q);
    r.comms.push_back(*c);
    *c = MPI_COMM_NULL;  // the retired engine's now (the topology does not free it)
  }
  if (r.barriers.empty()) return;  // no rail: no peer can need this rank's transport
  GCOLL_TRACE("engine of communicator #%llu retired until its rail peers let go of it",
              static_cast<unsigned long long>(e.id));
  {
    std::lock_guard<std::mutex> lk(g_retired_mu);
    g_retired.push_back(std::move(r));
  }
  engine_.reset();
  reap_retired();
}

Engine *EngineSlot::peek() { return state_ == State::Ready ? engine_.get() : nullptr; }

Status EngineSlot::get(MPI_Comm comm, bool inter, std::uint64_t id, const EngineSettings &s, Engine **out) {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (g_concurrent_threads.load(std::memory_order_relaxed)) lock.lock();
  if (state_ == State::Unavailable) return Status::NotSupported;
  if (state_ == State::Ready) {
    *out = engine_.get();
    return Status::Ok;
  }
  // First engine call on this communicator (the same call on every rank).
  reap_retired();  // engines of freed communicators whose rail peers are done with them
  if (inter) {  // rank-uniform: every rank sees the same kind of communicator
    state_ = State::Unavailable;
    return Status::NotSupported;
  }
  // Settings that differ between the ranks (agreed at the communicator's first call, and
  // warned about there): the ranks would run different schedules.
  if (!s.usable) {
    state_ = State::Unavailable;
    return Status::NotSupported;
  }
  std::unique_ptr<Engine> e;
  const Status st = without_exceptions("engine setup", [&] { return build(comm, s, &e); });
  // Every rank's outcome: any failure sends the communicator to the MPI on every rank.
  // (ErrNoMem: said already, by what could not be had, once per node. The others: once
  // for the ranks that failed alike, at the agreement.)
  if (!ok(st) && st != Status::ErrNoMem)
    warn_shared(SharedWarning::EngineSetup, "engine setup failed (%s); this communicator uses the MPI's collectives",
                status_name(st));
  MpiBootstrap boot(comm);
  long long failed = ok(st) ? 0 : 1;
  if (!ok(agree_setup(boot, &failed, 1))) return Status::ErrComm;
  if (failed) {
    state_ = State::Unavailable;
    return Status::NotSupported;
  }
  GCOLL_INFO("engine on communicator #%llu: %d nodes, %d local ranks (node %d), %d rails",
             static_cast<unsigned long long>(id), e->topo.num_nodes, e->topo.local_size, e->topo.node,
             e->topo.min_local);
  e->id = id;
  engine_ = std::move(e);
  state_ = State::Ready;
  *out = engine_.get();
  return Status::Ok;
}

bool device_net_vote(const char **why) {
  const Config &c = config();
  if (c.device_net == DeviceNetMode::Pipelined) {
    *why = "GCOLL_DEVICE_NET=pipelined";
    return false;
  }
  if (c.cuda_emulate) {
    // The emulated GPU's "GPUDirect": the network reads and writes the emulated device
    // memory through the emulation's own view of it. Only when asked for: under auto the
    // emulated GPU goes the way a UCX without CUDA support goes.
    *why = c.device_net == DeviceNetMode::Direct ? "GCOLL_DEVICE_NET=direct on the emulated GPU"
                             : "the emulated GPU (GCOLL_DEVICE_NET=direct emulates the direct way)";
    return c.device_net == DeviceNetMode::Direct;
  }
  const bool cuda = ucx::supports_cuda_memory();
  *why = cuda ? "UCX reports CUDA memory support" : "UCX does not report CUDA memory support";
  return cuda;
}

// The device space (collective over the node) and, across nodes, the rail for device
// memory; then every rank of the communicator agrees on the outcome and on the way across
// the network. Collective over the communicator; the outcome is the same on every rank.
// First the device topology (coll/device_topo.h): where a node's GPUs form several P2P
// islands, the device engine runs on a topology of its own whose nodes are the islands,
// with rails of its own (host memory between the islands of one node).
Status Engine::create_device_space(int gpu) {
  const Config &c = config();
  DeviceTopology dt;
  Status st = without_exceptions("device topology", [&] { return discover_device_topology(comm, topo, gpu, timeout_s, &dt); });
  if (st == Status::ErrComm) return st;
  device_class = static_cast<int>(dt.node.cls);
  net::Channel *host_rail = rail.get();
  ucx::Group *group_of_rail = rail_group;
  if (ok(st) && dt.split) {
    island_topo = std::move(dt.topo);
    if (island_topo->num_nodes > 1 && island_topo->rail_comm != MPI_COMM_NULL)
      st = without_exceptions("device rails between islands", [&] {
        ucx::Options uo;
        uo.flush_owed_on_wait = false;
        uo.net_devices = rail_net_device();
        ucx::init(uo);
        std::unique_ptr<ucx::Group> group;
        Status s2 = ucx::Group::create(island_topo->rail_comm, &group);
        if (!ok(s2)) return s2;
        island_rail_group = group.get();
        island_rail = std::make_unique<ucx::GroupChannel>(std::move(group));
        return Status::Ok;
      });
    host_rail = island_rail.get();
    group_of_rail = island_rail_group;
  } else if (ok(st) && dt.ring) {
    island_topo = std::move(dt.topo);  // one node: no rails
  }
  const Topology &t = island_topo ? *island_topo : topo;
  CudaSpaceOptions o;
  o.device = gpu;
  o.bank_bytes = c.device_chunk_size;
  o.timeout_s = timeout_s;
  o.ipc_cache_bytes = c.ipc_cache_size;
  // Across nodes the bank algorithms run (the fused ops are one node's), and they need
  // the banks and the work area that a space which fuses does not have.
  o.fused = t.num_nodes > 1 ? FusedMode::Off : c.device_fused;
  // On the NVLink ring: only the two ring neighbours' banks are mapped (a pair without
  // NVLink may have no P2P at all), and no fused ops (their kernels read every peer).
  if (!t.ring.empty()) {
    o.fused = FusedMode::Off;
    const int L = static_cast<int>(t.ring.size());
    o.map_peers.assign(L, false);
    for (int i = 0; i < L; ++i)
      if (t.ring[i] == t.local_rank) o.map_peers[t.ring[(i + 1) % L]] = o.map_peers[t.ring[(i + L - 1) % L]] = true;
  }
  if (ok(st))
    st = without_exceptions("device engine setup", [&] { return create_cuda_space(t.node_comm, o, &device_space); });
  // Across nodes, on ranks with a rail: the pipelined channel (always possible, the
  // fallback) now; whether this rank could go direct (UCX on CUDA memory).
  std::unique_ptr<net::Channel> staged;
  int direct_ok = 1;  // ranks without a rail do not vote against it
  const char *why = "this rank has no rail";
  if (ok(st) && host_rail) {
    st = without_exceptions("device network setup", [&] {
      net::StagedOptions so;
      so.device = gpu;
      so.piece_bytes = c.device_net_chunk;
      auto ch = std::make_unique<net::StagedChannel>(host_rail, cuda::runtime(), so);
      const Status s2 = ch->init();
      if (ok(s2)) staged = std::move(ch);
      return s2;
    });
    direct_ok = device_net_vote(&why) ? 1 : 0;
  }
  // The cost model's links (coll/cost_model.h): my GPU's view of my node, agreed below in
  // the same exchange (min and max of each), so that every rank's model reads the same
  // numbers and picks the same algorithm. Only where my node has several GPUs: the node
  // topology detects at its first use, which ranks sharing one GPU never need. A failure
  // here (allocation) is a vote against the model, never an exception before agreeing.
  CostLinks links;
  if (ok(st) && c.cost_model && dt.node.cls != topo::TopoClass::OneGpu)
    (void)without_exceptions("cost model", [&] {
      const topo::NodeTopo &nt = topo::node_topology();
      links = gpu_cost_links(nt, nt.gpu_index(dt.gpu_bus_id), dt.node.cls, c.device_chunk_size,
                             topo.num_nodes > 1 && c.ranks_per_node == 0);
      return Status::Ok;
    });
  // The minimum of each (as the maximum of the negated): set up everywhere, direct everywhere.
  if (!ok(st) && st != Status::NotSupported)
    warn_shared(SharedWarning::DeviceEngineSetup,
                "device engine setup failed (%s); device buffers on this communicator are staged", status_name(st));
  // Across nodes, the closing agreements' own communicator (agree_comm): kept where every
  // rank has it.
  MPI_Comm dup = MPI_COMM_NULL;
  if (t.num_nodes > 1 && PMPI_Comm_dup(comm, &dup) != MPI_SUCCESS) dup = MPI_COMM_NULL;
  constexpr int kLinks = CostLinks::kFields;
  long long neg[3 + 2 * kLinks] = {ok(st) ? -1 : 0, -direct_ok, dup != MPI_COMM_NULL ? -1 : 0};
  {
    std::int64_t v[kLinks];
    links.to(v);
    for (int i = 0; i < kLinks; ++i) {  // max of each, and of its negation: the min
      neg[3 + 2 * i] = static_cast<long long>(v[i]);
      neg[4 + 2 * i] = -static_cast<long long>(v[i]);
    }
  }
  MpiBootstrap boot(comm);
  if (!ok(agree_setup(boot, neg, 3 + 2 * kLinks))) {
    if (dup != MPI_COMM_NULL) PMPI_Comm_free(&dup);
    return Status::ErrComm;
  }
  const int v[3] = {static_cast<int>(-neg[0]), static_cast<int>(-neg[1]), static_cast<int>(-neg[2])};
  if (dup != MPI_COMM_NULL && (!v[0] || !v[2])) PMPI_Comm_free(&dup);
  agree_comm = dup;
  if (!v[0]) {
    device_space.reset();
    return Status::NotSupported;
  }
  device_topo = &t;
  device_host_rail = host_rail;
  {
    std::int64_t lo[kLinks], hi[kLinks];
    for (int i = 0; i < kLinks; ++i) {
      hi[i] = static_cast<std::int64_t>(neg[3 + 2 * i]);
      lo[i] = -static_cast<std::int64_t>(neg[4 + 2 * i]);
    }
    CostLinks l, h;
    l.from(lo);
    h.from(hi);
    const char *model_why = nullptr;  // (no allocation after the agreement: nothing here can split the ranks)
    model_links = agree_cost_links(l, h, &model_why);
    if (!model_links.valid && h.valid && topo.rank == 0)
      GCOLL_INFO("cost model off on communicator #%llu: %s; the default rules choose",
                 static_cast<unsigned long long>(id), model_why);
    if (model_links.valid && topo.rank == 0)
      GCOLL_INFO("cost model on communicator #%llu (docs/cost-model.md): NVLink %lld/%lld MB/s (all peers/one), PCIe "
                 "%lld MB/s, sockets %lld MB/s, NIC %lld MB/s (the slowest rank's)",
                 static_cast<unsigned long long>(id), static_cast<long long>(model_links.nv_all_mbps),
                 static_cast<long long>(model_links.nv_pair_mbps), static_cast<long long>(model_links.pcie_mbps),
                 static_cast<long long>(model_links.sys_mbps), static_cast<long long>(model_links.net_mbps));
  }
  if (t.num_nodes > 1) {
    device_net = v[1] ? DeviceNet::Direct : DeviceNet::Pipelined;
    if (c.device_net == DeviceNetMode::Direct && !v[1] && topo.rank == 0)
      GCOLL_WARN("GCOLL_DEVICE_NET=direct: UCX does not support CUDA memory on every rank; device calls across "
                 "nodes go pipelined through pinned host memory");
    if (host_rail) {
      if (device_net == DeviceNet::Pipelined)
        device_rail = std::move(staged);
      else if (c.cuda_emulate)
        device_rail = std::make_unique<net::ViewChannel>(host_rail, cuda::emu::transport_view);
      else
        device_rail = std::make_unique<ucx::GroupChannel>(*group_of_rail, ucx::Memory::Cuda);
    }
    GCOLL_INFO("device engine on communicator #%llu: across %d nodes %s (%s%s)", static_cast<unsigned long long>(id),
               t.num_nodes, device_net_name(device_net), why,
               device_net == DeviceNet::Pipelined && v[1] == 0 && direct_ok ? "; another rank cannot go direct" : "");
  }
  if (topo.local_rank == 0)
    GCOLL_INFO("device topology on communicator #%llu, node %d: GPU %s, %s, %d P2P island%s%s%s",
               static_cast<unsigned long long>(id), topo.node, dt.gpu_bus_id.empty() ? "?" : dt.gpu_bus_id.c_str(),
               topo::topo_class_name(dt.node.cls), dt.node.count, dt.node.count == 1 ? "" : "s",
               dt.ring && dt.split ? " (the device engine runs along their NVLink ring, rails between the nodes)"
               : dt.split && dt.node.count == 1 && dt.nic_ordered ? " (the device engine's ranks go by distance to a NIC)"
               : dt.split ? " (the device engine's nodes are the islands)"
                        : dt.ring ? " (the device engine runs along their NVLink ring)" : "",
               dt.probe_failures ? ", P2P probe failed on some pairs" : "");
  process_stats().count(topo_counter(dt.node.cls));
  if (dt.ring) process_stats().count(Counter::NvlinkRings);
  // Once per node and communicator (every rank of the node found the same pairs).
  if (dt.probe_failures && topo.local_rank == 0) process_stats().count(Counter::P2pProbeFailures, dt.probe_failures);
  return Status::Ok;
}

Status Engine::select_space(MemKind mem, int gpu) {
  if (mem == MemKind::Host) {
    space = host_space.get();
    work = scratch.data();
    chunk_bytes = space->capacity();
    channel = rail.get();
    call_topo = &topo;
    call_host_rail = rail.get();
    return Status::Ok;
  }
  std::unique_lock<std::mutex> lock(device_mu, std::defer_lock);
  if (g_concurrent_threads.load(std::memory_order_relaxed)) lock.lock();
  if (device_state == DeviceState::Untried) {
    const Status st = create_device_space(gpu);
    if (st == Status::ErrComm) return st;
    if (ok(st)) {
      device_state = DeviceState::Ready;
      device = gpu;
      GCOLL_INFO("device engine on communicator #%llu: GPU %d, %d local ranks", static_cast<unsigned long long>(id),
                 gpu, device_topo->local_size);
    } else {
      device_state = DeviceState::Unavailable;
    }
  }
  if (device_state != DeviceState::Ready) return Status::NotSupported;
  space = device_space.get();
  work = space->work_area();
  chunk_bytes = space->capacity();
  channel = device_rail.get();
  call_topo = device_topo;
  call_host_rail = device_host_rail;
  return Status::Ok;
}

Status Engine::prepare_device(int gpu) {
  const Status st = select_space(MemKind::Device, gpu);
  return st == Status::ErrComm ? st : Status::Ok;
}

bool Engine::takes_async(const CollArgs &a, bool mpi) const {
  const MemSpace *sp = nullptr;
  const Topology *t = &topo;
  if (a.mem == MemKind::Host) {
    sp = host_space.get();
  } else {
    if (device_state != DeviceState::Ready) return false;
    sp = device_space.get();
    t = device_topo;
  }
  if (!sp) return false;
  if (t->num_nodes != 1 && (!mpi || (a.mem == MemKind::Device && agree_comm == MPI_COMM_NULL))) return false;
  CollArgs call = a;
  call.fused = a.mem == MemKind::Device && sp->can_fuse();
  call.time_sliced = a.mem == MemKind::Device && sp->time_sliced();
  call.reducible = !is_reduction(a.coll) || sp->can_reduce(a.dtype, a.op);
  call.model = a.mem == MemKind::Device && model_links.valid ? &model_links : nullptr;
  const Algorithm *algo = select_algorithm(user_tune_rules(), call, *t, &host_tune_rules());
  return algo && algo->run;
}

bool Engine::declines_host(const CollArgs &a) const {
  if (a.mem != MemKind::Host || !host_space) return false;
  CollArgs call = a;
  call.reducible = !is_reduction(a.coll) || host_space->can_reduce(a.dtype, a.op);
  const Algorithm *algo = select_algorithm(user_tune_rules(), call, topo, &host_tune_rules());
  return !algo || !algo->run;
}

Status Engine::run(const CollArgs &a, int gpu, EngineRecord *rec) {
  Status st = select_space(a.mem, gpu);
  if (!ok(st)) return st;
  // How the device space runs was agreed when it was created: rank-uniform.
  CollArgs call = a;
  call.fused = a.mem == MemKind::Device && space->can_fuse();
  call.time_sliced = a.mem == MemKind::Device && space->time_sliced();
  // What the kernels cannot do (the long double types on a GPU) is known to every
  // algorithm's supports() before anything is published: the call is staged (device) or
  // given to the MPI (host), on every rank alike.
  call.reducible = !is_reduction(a.coll) || space->can_reduce(a.dtype, a.op);
  // The model's links, agreed with the device space (rank-uniform).
  call.model = a.mem == MemKind::Device && model_links.valid ? &model_links : nullptr;
  const Topology &t = *call_topo;
  const Algorithm *algo = select_algorithm(user_tune_rules(), call, t, &host_tune_rules());
  if (!algo || !algo->run) return Status::NotSupported;  // no algorithm, or @staged: the caller stages it
  const std::uint64_t intra0 = space->bytes_published, inter0 = call_host_rail ? call_host_rail->bytes_sent() : 0;
  call_steps = 0;
  space->begin_call();
  CallContext ctx{t, space, channel, work, chunk_bytes, timeout_s, seq, call_steps};
  st = algo->run(ctx, call);
  if (ok(st)) st = space->finish();
  // The call's bytes between nodes (stats): its data, without the closing barrier's bytes.
  const std::uint64_t inter1 = call_host_rail ? call_host_rail->bytes_sent() : 0;
  // A rank whose receives completed may still owe its senders the acknowledgement of a
  // rendezvous, which only its own progress sends. Leave only when every rail peer is
  // done: then nobody waits for us. Small messages go eagerly and owe nothing. (The
  // condition is rank-uniform: the same size on every rank of the rail.)
  if (a.mem == MemKind::Device && t.num_nodes > 1) {
    // Device calls across nodes end with an agreement of the whole communicator on the
    // outcome: a rank whose part failed (a device error on its GPU) makes the call fail on
    // every rank instead of leaving other nodes with a result that lacks its part. It
    // progresses UCX while it waits, as the barrier below does.
    hidden_mpi_call();
    st = ucx::progress_agree(agree_comm != MPI_COMM_NULL ? agree_comm : comm, st, timeout_s);
  } else if (ok(st) && rail && rail_message_bound(a, topo.size) >= kRendezvousMinBytes) {
    if (a.bytes() >= kRailBarrierMinBytes) {
      // Through the rail itself (coll/rail.h: rail_barrier), with a call number of its own
      // (every rank of the rail ends the call here alike).
      Rail r{rail.get(), nullptr, seq++, timeout_s, nullptr};
      st = rail_barrier(r);
    } else {
      hidden_mpi_call();
      st = ucx::progress_barrier(topo.rail_comm, timeout_s);
    }
  }
  rec->algo = algorithm_index(algo);
  rec->inter_steps = call_steps;
  rec->intra = space->bytes_published - intra0;
  rec->inter = inter1 - inter0;
  GCOLL_TRACE("%s on communicator #%llu: @%s, %s memory, %zu bytes, intra %llu, inter %llu", coll_name(a.coll),
              static_cast<unsigned long long>(id), algo->name, a.mem == MemKind::Device ? "device" : "host",
              a.bytes(), static_cast<unsigned long long>(rec->intra), static_cast<unsigned long long>(rec->inter));
  return st;
}

const char *device_net_name(Engine::DeviceNet w) {
  switch (w) {
    case Engine::DeviceNet::Direct: return "direct";
    case Engine::DeviceNet::Pipelined: return "pipelined";
    case Engine::DeviceNet::None: break;
  }
  return "none";
}

// The device rail goes first: it may be a view of the UCX group that `rail` owns.
Engine::~Engine() {
  device_rail.reset();
  island_rail.reset();
}

void engine_shutdown() {
  wait_retired();
  ucx::finalize();
  // The emulated GPU's stream workers end (the streams stay, for an application that uses
  // its default stream after MPI_Finalize): no thread of gcoll's outlives MPI_Finalize.
  if (config().cuda_emulate) cuda::emu::park_threads();
}

void engine_set_concurrent_threads(bool concurrent) { g_concurrent_threads.store(concurrent); }

}  // namespace gcoll
