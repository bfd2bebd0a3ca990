// Device-buffer helpers for the gcoll GPU tests (gcoll_gpu_mpi_test).
//
// The checks here are the device counterparts of mpi_tests/checks.h: the MPI_* call
// under test runs on buffers of a chosen memory kind (cudaMalloc, cudaMallocAsync,
// managed, pinned or plain host memory), placed at chosen offsets inside their
// allocations; the PMPI_* reference runs on HOST copies of the same inputs. After the
// call the whole allocation(s) are copied back (cudaMemcpy) and compared:
//   - the result region with the reference (integers bitwise, floating point with the
//     tolerances of types.h, derived datatypes byte for byte, holes included);
//   - every other byte of the allocation(s) (send buffer, bytes before and after the
//     result) with what was there before the call;
//   - for floating-point reductions, the result bits are the same on every rank.
// Every check is collective over c.comm and returns this rank's verdict, reporting the
// first problem with gct::report (memory kinds and offsets included).
//
// All device work goes through gpu_api.h: on a real GPU the CUDA runtime calls named
// here, on the emulated GPU (GCOLL_CUDA=emulate) their gcoll_emu_* counterparts.
#pragma once

#include "gpu_api.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checks.h"
#include "coll_cases.h"
#include "harness.h"
#include "types.h"

namespace gct {
namespace gpu {

// A failed gpu_api call (CUDA or the emulated GPU) in a test is not a verdict but a
// broken environment: report it with the running test and end the job (PMPI_Abort), so
// that no rank waits in a collective.
void gpu_ok(int err, const char *what, const char *file, int line);
#define GCT_GPU(call) ::gct::gpu::gpu_ok((call), #call, __FILE__, __LINE__)

// The device this rank selected (before MPI_Init, from the local rank) and the number
// of devices; filled in before the first test.
int device();
int device_count();
// Local rank as used for the device choice (launcher variables; -1 when none was set
// and the world rank was used after MPI_Init).
int local_rank_from_env();

enum class Mem {
  Host,     // malloc: the MPI reads it (passthrough by default)
  Pinned,   // cudaMallocHost: host memory as far as the library is concerned
  Managed,  // cudaMallocManaged: the CPU can read it, so the library may treat it as host
  Device,   // cudaMalloc
  Async,    // cudaMallocAsync from the device's default pool (cannot be IPC-exported)
};
const char *mem_name(Mem m);
bool is_device(Mem m);  // Device or Async

// One allocation of a memory kind. Move-only; freed (cudaFree, cudaFreeAsync + stream
// synchronize, cudaFreeHost, free: gpu_free) by the destructor.
class Buf {
 public:
  Buf() = default;
  Buf(Mem kind, size_t bytes);
  ~Buf();
  Buf(Buf &&o) noexcept;
  Buf &operator=(Buf &&o) noexcept;
  Buf(const Buf &) = delete;
  Buf &operator=(const Buf &) = delete;

  Mem kind() const { return kind_; }
  size_t size() const { return bytes_; }
  bool empty() const { return p_ == nullptr; }
  unsigned char *at(size_t off) const { return static_cast<unsigned char *>(p_) + off; }
  // Copies in and out: gpu_memcpy (cudaMemcpy semantics) for device and managed memory.
  void put(size_t off, const void *src, size_t n);
  void get(size_t off, void *dst, size_t n) const;
  std::vector<unsigned char> image() const;  // the whole allocation
  void reset();

 private:
  Mem kind_ = Mem::Host;
  void *p_ = nullptr;
  size_t bytes_ = 0;
};

// Where one rank's send and receive buffers are.
struct Layout {
  Mem send = Mem::Device;
  Mem recv = Mem::Device;
  size_t send_off = 0;  // bytes before the send buffer in its allocation
  size_t recv_off = 0;  // bytes before the receive buffer (shared: after the send buffer)
  bool shared = false;  // send and receive buffers in one allocation (of kind `recv`)
  std::string describe() const;
};
inline Layout device_layout() { return Layout{}; }
inline Layout layout_of(Mem send, Mem recv) {
  Layout l;
  l.send = send;
  l.recv = recv;
  return l;
}

// Allreduce of a predefined type (the table of types.h).
bool dev_allreduce(const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count, bool in_place,
                   uint32_t seed, const Layout &l = device_layout());

// Reduce_scatter_block of a predefined type: count x size elements per rank in, this
// rank's block out (in place: the input in the receive buffer).
bool dev_reduce_scatter_block(const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count, bool in_place,
                              uint32_t seed, const Layout &l = device_layout());

// Allreduce with any datatype `type` (derived or predefined) whose basic elements are
// all of `base`, with any op (Open MPI takes only user-defined ops on derived types);
// the inputs are base's values for the predefined op `fill_op`, holes filled too. The
// result is compared byte for byte (data and holes), so the op must be exact (integer
// arithmetic, MAX/MIN).
bool dev_allreduce_derived(const TestComm &c, MPI_Datatype type, const std::string &type_name,
                           const TypeDesc &base, MPI_Op op, MPI_Op fill_op, size_t count,
                           bool in_place, uint32_t seed, const Layout &l = device_layout());

// Broadcast (the buffer is the layout's receive buffer).
bool dev_bcast(const TestComm &c, const DataSpec &d, size_t count, int root, uint32_t seed,
               const Layout &l = device_layout());

// Allgather; send and recv may differ (same type signature), as in checks.h.
bool dev_allgather(const TestComm &c, const DataSpec &send, size_t send_count,
                   const DataSpec &recv, size_t recv_count, bool in_place, uint32_t seed,
                   const Layout &l = device_layout());
inline bool dev_allgather(const TestComm &c, const DataSpec &d, size_t count, bool in_place,
                          uint32_t seed, const Layout &l = device_layout()) {
  return dev_allgather(c, d, count, d, count, in_place, seed, l);
}

// A case of a collective without an engine algorithm (coll_cases.h) on the layout's
// buffers, against its PMPI_* reference on host copies: the whole receive buffer byte for
// byte (the bytes the MPI does not write included), every other byte of the allocations
// unchanged.
bool dev_check_case(const TestComm &c, const CollCase &k, const Layout &l = device_layout());

}  // namespace gpu
}  // namespace gct
