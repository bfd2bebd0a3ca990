// The engine: per-communicator resources, call arguments, and the algorithm descriptors.
// One algorithm = one function + one row in the table (registry.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/stats.h"
#include "base/status.h"
#include "coll/memspace.h"
#include "kernels/types.h"
#include "topo/topology.h"

namespace gcoll {

namespace ucx {
class Group;
}

// Where a call's buffers live, agreed by all ranks before the call moves anything.
enum class MemKind { Host, Device };

// Everything an algorithm needs about one communicator, built once (collectively) at
// the first engine call on it.
struct Engine {
  Topology topo;
  std::unique_ptr<MemSpace> host_space;    // node memory space for host buffers
  std::unique_ptr<MemSpace> device_space;  // for device buffers (created at the first device call)
  enum class DeviceState { Untried, Ready, Unavailable } device_state = DeviceState::Untried;
  int device = -1;                         // the GPU of device_space
  MemSpace *space = nullptr;               // the current call's (host_space or device_space)
  char *work = nullptr;                    // the current call's private scratch (4 x capacity)
  std::unique_ptr<ucx::Group> rail;  // my rail, when there are several nodes and I have one
  std::size_t chunk_bytes = 0;       // pipeline chunk (<= space->capacity())
  double timeout_s = 0;
  std::uint32_t seq = 0;             // chunks run on this communicator (tags)
  int call_steps = 0;                // network rounds of the current call (stats)
  std::vector<char> scratch;         // host scratch (work for host calls)
  ~Engine();
};

// Arguments of one call, already validated and mapped from MPI handles.
struct CollArgs {
  Coll coll = Coll::Allreduce;
  const void *sendbuf = nullptr;  // nullptr: in place
  void *recvbuf = nullptr;        // allreduce/allgather result; bcast buffer
  std::size_t count = 0;          // allreduce/bcast: elements; allgather: elements per rank
  DType dtype = DType::Uint8;
  ROp op = ROp::Sum;              // allreduce only
  int root = 0;                   // bcast only
  std::size_t elem = 1;           // bytes per element
  MemKind mem = MemKind::Host;    // all ranks' buffers (agreed)
  bool zero_copy = false;         // device: every rank's buffers can be exposed (CUDA IPC)
  std::size_t bytes() const { return count * elem; }  // the size selection looks at
};

struct Traffic {
  std::uint64_t intra = 0;  // bytes this rank published to its node
  std::uint64_t inter = 0;  // bytes this rank sent to other nodes
};

struct Algorithm {
  Coll coll;
  const char *name;
  const char *description;
  // Depends only on rank-uniform data: the arguments MPI requires to agree and the topology.
  bool (*supports)(const CollArgs &a, const Topology &t);
  Status (*run)(Engine &e, const CollArgs &a);
};

const std::vector<Algorithm> &algorithms();
const Algorithm *find_algorithm(Coll c, const std::string &name);
int algorithm_index(const Algorithm *a);  // position in algorithms() (for stats)

}  // namespace gcoll
