// The engine: per-communicator resources, call arguments, and the algorithm descriptors.
// One algorithm = one function + one row in the table (registry.cc); an allreduce of the
// hierarchical shape = one inter-node schedule builder + one row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/stats.h"
#include "base/status.h"
#include "coll/cost_model.h"
#include "kernels/compress.h"
#include "kernels/types.h"
#include "topo/topology.h"

namespace gcoll {

class MemSpace;  // mem/memspace.h: algorithms include it, src/pmpi does not need it
namespace net {
class Channel;  // net/channel.h: the rails' transport
}
namespace ucx {
class Group;  // net/transport.h: the UCX group under the rail's channel
}

// Where a call's buffers live, agreed by all ranks before the call moves anything.
enum class MemKind { Host, Device };

struct CollArgs;

// What an algorithm sees of one call: the communicator's topology, the call's memory
// space, its rail channel (several nodes), the pipeline chunk and the private scratch;
// nothing else of the engine (which Engine::run builds it from).
struct CallContext {
  const Topology &topo;
  MemSpace *space;            // the node's memory space of the call's buffers
  net::Channel *channel;      // my rail for this memory kind; nullptr on one node or without a rail
  char *work;                 // private scratch (4 x space->capacity())
  std::size_t chunk_bytes;    // pipeline chunk (<= space->capacity())
  double timeout_s;
  std::uint32_t &seq;         // chunks run on the communicator (rail tags; next_rail())
  int &call_steps;            // network rounds of this call (stats)
};

// Everything an algorithm needs about one communicator, built once (collectively) at
// the first engine call on it (EngineSlot::get, engine.cc).
struct Engine {
  // One call, start to end: points the engine at the call's memory space (the first
  // device call creates the device space, collectively, on GPU `gpu`), selects the
  // algorithm (GCOLL_TUNE rules, then the defaults), runs it, and ends with the engine's
  // completion protocol (the space's finish(), the rails' progress barrier), so that no
  // peer still needs this rank when it returns. NotSupported, alike on every rank and
  // before any byte moved, when the engine does not take the call.
  Status run(const CollArgs &a, int gpu, EngineRecord *rec);
  // The device space on GPU `gpu`, created (collectively) if it was not tried yet: what a
  // first device call does before it runs. ErrComm where the ranks could not agree.
  Status prepare_device(int gpu);
  // Whether run() would take the call on the progress thread: without any collective
  // setup (its memory space exists), an algorithm other than @staged selected, and either
  // the call's topology is one node (no MPI call at all) or `mpi` (the thread may call the
  // MPI: MPI_THREAD_MULTIPLE agreed) and the agreements that end calls across nodes go over
  // communicators nobody else uses (the rails'; agree_comm for device memory).
  // Rank-uniform (all of it was agreed); changes nothing (the progress thread may be
  // inside run()).
  bool takes_async(const CollArgs &a, bool mpi) const;
  // Whether run() would decline the host-buffer call `a` (@mpi: the host crossovers or
  // GCOLL_TUNE; or no algorithm for it), known without running anything: the caller gives
  // the call to the MPI before packing or deviating. Rank-uniform; changes nothing.
  bool declines_host(const CollArgs &a) const;

  MPI_Comm comm = MPI_COMM_NULL;           // the communicator it serves (the application's)
  // Device calls across nodes end with an agreement of the whole communicator: over this
  // private duplicate of `comm` (made with the device space, on every rank or none), so
  // that the progress thread may make it while the application calls collectives on
  // `comm` (one communicator's collectives must be started in one order on every rank).
  MPI_Comm agree_comm = MPI_COMM_NULL;
  std::uint64_t id = 0;                    // the communicator's number in the logs
  Topology topo;
  std::unique_ptr<MemSpace> host_space;    // node memory space for host buffers
  std::unique_ptr<MemSpace> device_space;  // for device buffers (created at the first device call)
  enum class DeviceState { Untried, Ready, Unavailable } device_state = DeviceState::Untried;
  int device = -1;                         // the GPU of device_space
  MemSpace *space = nullptr;               // the current call's (host_space or device_space)
  char *work = nullptr;                    // the current call's private scratch (4 x capacity)
  std::unique_ptr<net::Channel> rail;  // my rail (UCX), when there are several nodes and I have one
  ucx::Group *rail_group = nullptr;    // the UCX group under `rail`
  // Device calls across nodes: my rail for device memory (created with the device space;
  // the way, direct or pipelined, agreed by every rank: GCOLL_DEVICE_NET), over the same
  // UCX group as `rail`.
  std::unique_ptr<net::Channel> device_rail;
  enum class DeviceNet { None, Direct, Pipelined } device_net = DeviceNet::None;
  // The device engine's topology (coll/device_topo.h, found with the device space): `topo`
  // itself where every node's GPUs are one P2P island; else its own, each island a node,
  // with its own rails (UCX between the islands of a node too: host memory).
  const Topology *device_topo = &topo;
  std::unique_ptr<Topology> island_topo;        // device_topo when the islands split nodes, when ranks are
                                                // reordered by distance to a NIC, or on the NVLink ring
  std::unique_ptr<net::Channel> island_rail;    // host-memory rail channel of island_topo
  ucx::Group *island_rail_group = nullptr;
  net::Channel *device_host_rail = nullptr;     // the host-memory channel under device_rail
  int device_class = -1;                        // topo::TopoClass of my node's GPUs (stats, logs)
  // The cost model's links (coll/cost_model.h), agreed with the device space; valid = 0
  // where the model is off for this communicator (one GPU per node, ranks that disagree).
  CostLinks model_links;
  net::Channel *channel = nullptr;   // the current call's rail channel (rail or device_rail)
  const Topology *call_topo = &topo; // the current call's topology (topo or *device_topo)
  net::Channel *call_host_rail = nullptr;  // the host-memory channel of the current call (byte counts)
  std::size_t chunk_bytes = 0;       // pipeline chunk (<= space->capacity())
  double timeout_s = 0;
  std::uint32_t seq = 0;             // chunks run on this communicator (tags)
  int call_steps = 0;                // network rounds of the current call (stats)
  std::vector<char> scratch;         // host scratch (work for host calls)
  std::mutex device_mu;              // creation of the device space (threads of one communicator)
  ~Engine();

 private:
  Status select_space(MemKind mem, int gpu);
  Status create_device_space(int gpu);
};

// What the engine says about the device path across nodes of one communicator (gcoll_info,
// logs): "direct (...)" / "pipelined (...)", with the reason.
const char *device_net_name(Engine::DeviceNet w);
// This process's vote on the way across nodes for device memory (GCOLL_DEVICE_NET, and
// under auto whether its UCX reports CUDA memory support; initialises UCX for that):
// true for direct; *why says why (static text). The engine agrees on it over the
// communicator (any pipelined vote wins).
bool device_net_vote(const char **why);

// Arguments of one call, already validated and mapped from MPI handles.
struct CollArgs {
  Coll coll = Coll::Allreduce;
  const void *sendbuf = nullptr;  // nullptr: in place
  void *recvbuf = nullptr;        // allreduce/allgather result; bcast buffer
  std::size_t count = 0;          // allreduce/bcast/reduce: elements; allgather: elements per rank;
                                  // alltoall: bytes per block; reduce_scatter: all blocks' elements;
                                  // allgatherv: all blocks' bytes
  DType dtype = DType::Uint8;
  ROp op = ROp::Sum;              // the reductions
  int root = 0;                   // bcast, reduce
  const int *counts = nullptr;    // reduce_scatter: elements of each rank's block (the same
                                  // array on every rank, as MPI requires; the call's own)
  // allgatherv (count: the sum of the blocks' bytes, dtype Uint8, elem 1): block_bytes[i],
  // the bytes of rank i's block (recvcounts[i] x recvtype size: rank-uniform, the only
  // sizes an algorithm may decide anything from); block_offsets[i], where that block lies in
  // recvbuf (this rank's own: displacements may differ per rank; local copies only). Arrays
  // of the communicator's size, owned by the call (pmpi/calls/allgatherv.cc; the packer and
  // the deviator point block_offsets at their scratch's).
  const std::size_t *block_bytes = nullptr;
  const std::size_t *block_offsets = nullptr;
  std::size_t elem = 1;           // bytes per element
  MemKind mem = MemKind::Host;    // all ranks' buffers (agreed)
  bool zero_copy = false;         // device: every rank's buffers can be exposed (CUDA IPC)
  bool fused = false;             // device: the node's device space runs fused ops (set by Engine::run)
  bool time_sliced = false;       // device: ranks share a GPU without MPS (set by Engine::run)
  bool reducible = true;          // reductions: the space's kernels take (dtype, op) (set by Engine::run)
  // device: the node's links as every rank agreed them at the device space's setup, for
  // the cost model's choice (coll/cost_model.h); nullptr: no model (set by Engine::run).
  const CostLinks *model = nullptr;
  // allreduce: the compressed format the ranks agreed for the communicator (GCOLL_ALLREDUCE_COMPRESS, the info
  // key gcoll_allreduce_compress), Off unless the (type, op) is compressible (kernels/compress.h); only the
  // @compressed row takes it (host or device buffers, several nodes, not on an NVLink ring: tune.cc selects it
  // before any rule).
  Compress compress = Compress::Off;
  std::size_t bytes() const { return count * elem; }  // the size selection looks at
};

// The collectives that reduce (their dtype and op count; the kernels must take them).
inline bool is_reduction(Coll c) {
  return c == Coll::Allreduce || c == Coll::Reduce_scatter_block || c == Coll::Reduce || c == Coll::Reduce_scatter;
}

// Fills the steps one rail rank takes in an inter-node allreduce (rail.h: RailStep,
// ScheduleArgs, the builders).
struct RailStep;
struct ScheduleArgs;
using ScheduleBuilder = void (*)(const ScheduleArgs &a, std::vector<RailStep> *steps);

struct Algorithm {
  Coll coll;
  const char *name;
  const char *description;
  // Depends only on rank-uniform data: the arguments MPI requires to agree and the topology.
  bool (*supports)(const CollArgs &a, const Topology &t);
  Status (*run)(CallContext &c, const CollArgs &a);
  // The inter-node schedule it runs (allreduce; nullptr: none or not a step list).
  ScheduleBuilder schedule = nullptr;
};

const std::vector<Algorithm> &algorithms();
const Algorithm *find_algorithm(Coll c, const std::string &name);
int algorithm_index(const Algorithm *a);  // position in algorithms() (for stats)

// What the ranks of a communicator agreed at its first call (base/uniform_settings.h)
// that the engine needs: whether the settings that shape its schedules are equal on every
// rank, and the timeout every rank uses.
struct EngineSettings {
  bool usable = true;
  int timeout_s = 0;
};

// The engine's front door, one per communicator (held by src/pmpi's communicator state).
class EngineSlot {
 public:
  EngineSlot();
  // (MPI_Comm_free, MPI_Finalize.) An engine with rails is retired: a rail peer may still
  // be inside the communicator's last collective, waiting for what this rank already sent,
  // and connect to this rank's UCX to receive it. A nonblocking barrier on each of its rail
  // communicators is posted, and the engine goes; the barrier and its communicator remain
  // until it completes (every rail peer has let go too): tested when another engine is
  // set up or retired, and waited for in MPI_Finalize before the transport goes
  // (engine_shutdown). Nonblocking, so that communicators freed in any order never wait
  // on one another.
  ~EngineSlot();
  EngineSlot(const EngineSlot &) = delete;
  EngineSlot &operator=(const EngineSlot &) = delete;
  // The engine of `comm` (`id`: its number in the logs). The first call is collective
  // over the communicator: it builds the topology, the node memory space and the rail
  // transport, and all ranks agree on the outcome before anything else happens.
  // NotSupported, on every rank alike, when the engine cannot serve the communicator (an
  // intercommunicator, settings that differ: !s.usable, a failed setup): from then on,
  // without asking again.
  Status get(MPI_Comm comm, bool inter, std::uint64_t id, const EngineSettings &s, Engine **out);
  // The engine if it is set up, else nullptr (never sets it up).
  Engine *peek();

 private:
  enum class State { Untried, Ready, Unavailable };
  std::mutex mu_;
  State state_ = State::Untried;
  std::unique_ptr<Engine> engine_;
};

// Inside MPI_Finalize, after every communicator's engine is gone: waits for the retired
// engines' closing barriers (~EngineSlot; progressing UCX, as long as GCOLL_TIMEOUT
// allows), destroys them, then the transport.
void engine_shutdown();

// Whether several threads may call into the engine at once (MPI_THREAD_MULTIPLE; told
// once at start-up, before any engine call). Only then do EngineSlot::get and the device
// space's creation lock per call; at lower thread levels the MPI already serialises every
// call, and the engine takes no lock it does not need. Default: true (safe).
void engine_set_concurrent_threads(bool concurrent);

}  // namespace gcoll
