// The emulated GPU of GCOLL_CUDA=emulate: a TESTING mode that makes CI, which has no GPU,
// catch the bugs of the device path that used to show only on a real GPU.
//   - Device memory (DEVICE and ASYNC kinds) is a memfd mapped twice: the address the
//     caller gets is a PROT_NONE view, so any CPU access (by gcoll or by a
//     non-CUDA-aware MPI) faults, as it would on a GPU; the emulation's own copies and
//     reductions go through a private read-write "shadow" view of the same pages.
//   - IPC handles name the exporter's memfd (/proc/<pid>/fd/<fd>), so peer processes map
//     the same bytes, as cuIpcOpenMemHandle does; a handle whose allocation was freed
//     fails to open.
//   - Devices (emulate_machine.h): one, as always, unless GCOLL_TOPO_FILE names a
//     topology file (topo/topo_xml.h) that can be read: then the machine has the file's N
//     GPUs, ordinal i being NodeTopo::gpus[i], each with the file's PCI bus id, a uuid
//     made from it (the same in every process, different per GPU) and the same SM count.
//     A file that cannot be read gives one warning and the one device. Each process's
//     default device is local_rank % N (the launcher's local rank: the first of
//     OMPI_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
//     SLURM_LOCALID, PMI_LOCAL_RANK that is set; 0 when none is), as OSU's benchmarks
//     choose; set_device changes the calling thread's current device only, as in CUDA.
//     Device memory is allocated on the calling thread's current device (PtrInfo::ordinal);
//     an IPC mapping belongs to the device it was opened into.
//   - Peer access is the file's machine's (topo::p2p_hardware: can_access_peer). An IPC
//     handle records its exporter's device; opening it into a device that cannot reach
//     that one fails, as on such hardware ("peer access is not supported between GPU
//     <bus> and GPU <bus> (topology file)"), and counts in denied_ipc_opens(). Across a
//     pair the file marks broken (topo::p2p_broken) the open succeeds, but maps a private
//     copy of the exporter's bytes as they were at the open: the importer's writes never
//     reach the owner and the owner's later writes never reach the importer, as when peer
//     writes land in a VM's private copy; only a data probe can tell (broken_ipc_opens()
//     counts them). The same device, or a pair with peer access: the same bytes, as
//     without a file.
//   - Streams run their work later, on one worker thread each, after a random delay
//     (GCOLL_EMU_DELAY): a missing wait gives a wrong result instead of a lucky one.
//   - Reductions run the host kernels (kernels/host_reduce.h) on the shadow views.
// runtime.cc / device.cc hand these out as runtime() / driver() under GCOLL_CUDA=emulate;
// the C API of include/gcoll/gcoll_emulate.h (src/api/emulate_api.cc) is what the test
// programs allocate and copy with.
#pragma once

#include <cstddef>

#include "cuda/device.h"
#include "cuda/runtime.h"

namespace gcoll {
namespace cuda {

// Process-wide singletons, created on first use and never destroyed (static destructors
// and atexit handlers, MPI_Finalize among them, may still use them; worker threads of
// live streams outlive main).
Driver &emulated_driver();
Runtime &emulated_runtime();

// The functions behind include/gcoll/gcoll_emulate.h. They work whether or not
// GCOLL_CUDA=emulate is set (unit tests call them directly); the C wrappers check
// active() first. Return values are gcoll_emu_error codes, kinds gcoll_emu_mem values.
namespace emu {

bool active();  // config().cuda_emulate
int malloc(void **p, std::size_t bytes, int kind);
// Waits for all queued work of the process first, as cudaFree does.
int free(void *p);
// cudaMemcpy on the legacy default stream: returns at once when the destination is
// device memory (a host source is staged first), after completion when it is host memory.
int memcpy(void *dst, const void *src, std::size_t bytes);
// cudaMemset on the legacy default stream: returns at once.
int memset(void *p, int value, std::size_t bytes);
// Waits for every stream of the process, the legacy default stream included (a stream
// blocked in stream_wait_value32 makes it wait until the word is set, as on a GPU).
int device_synchronize();

// Streams for test programs (gcoll_emu_stream_*). A stream argument may be nullptr (the
// legacy default stream); anything else must be a live stream of the emulation
// (GCOLL_EMU_ERR_INVALID otherwise). stream_create makes a non-blocking stream
// (cudaStreamNonBlocking: the emulation's streams never synchronise with the legacy one);
// stream_destroy waits for its queue first (CUDA returns at once).
int stream_create(void **stream);
int stream_destroy(void *stream);
int stream_synchronize(void *stream);
// GCOLL_EMU_OK when everything queued on the stream has run, else GCOLL_EMU_ERR_NOT_READY.
int stream_query(void *stream);
// cudaMemcpyAsync (cudaMemcpyDefault): queued on the stream; from pageable host memory
// to the device the source is staged first (the caller may reuse it at once), into
// pageable host memory it returns once the copy is complete, as CUDA does; between
// device, pinned and managed memory it returns at once and the bytes are read and
// written when the stream gets there.
int memcpy_async(void *dst, const void *src, std::size_t bytes, void *stream);
// cudaMemsetAsync: queued on the stream (not pageable host memory).
int memset_async(void *p, int value, std::size_t bytes, void *stream);
// Test-only: keeps the stream busy for `microseconds` (what a long kernel is on a GPU).
int stream_sleep(void *stream, unsigned int microseconds);
// Events for test programs (gcoll_emu_event_*), through the emulated Runtime's.
int event_create(void **event);
int event_destroy(void *event);
int event_record(void *event, void *stream);
int event_synchronize(void *event);
int stream_wait_event(void *stream, void *event);
// Graph capture (gcoll_emulate.h has the semantics): cudaStreamBeginCapture in relaxed
// mode (not on the default stream: GCOLL_EMU_ERR_INVALID); cudaStreamEndCapture with
// cudaGraphInstantiate (*graph: an executable graph of what the stream recorded);
// cudaStreamIsCapturing; cudaGraphLaunch (copies of the graph's operations queued on
// `stream`); cudaGraphExecDestroy. While a stream captures, a synchronize or a query of
// it, an event record or wait on it, and a copy to or from pageable host memory on it are
// refused (GCOLL_EMU_ERR_CAPTURE, Status::ErrArg in the runtime) and invalidate the
// capture.
int stream_begin_capture(void *stream);
int stream_end_capture(void *stream, void **graph);
int stream_is_capturing(void *stream, int *capturing);
int graph_launch(void *graph, void *stream);
int graph_destroy(void *graph);
// Ends every stream's worker thread once its queue has run; a stream used again gets one
// again (MPI_Finalize: no thread of gcoll's is left behind, coll/engine.cc).
void park_threads();
// The kind of the allocation that contains p (an IPC mapping counts as DEVICE), or -1.
int pointer_kind(const void *p);
// The device of the device allocation (or IPC mapping) that contains p, or -1.
int pointer_device(const void *p);

// The emulated machine's devices (see the file comment): how many (1 without a topology
// file), the calling thread's current one, making one current (GCOLL_EMU_ERR_INVALID when
// there is no such device), whether `dev` can map memory of `peer`, and the PCI bus id of
// a device ("0000:07:00.0"; nullptr when there is no such device).
int device_count();
int current_device();
int set_device(int dev);
bool can_access_peer(int dev, int peer);
const char *device_pci_bus_id(int dev);
// IPC opens refused for want of peer access, and opens across a broken pair, since the
// process started.
int denied_ipc_opens();
// Waits for every stream made on a stream-ordered call's thread (cuda/stream_order.h)
// since the process started: each could hang on a GPU (the application's stream waiting
// for that call); the emulated GPU warns at the first.
int stream_ordered_device_waits();
int broken_ipc_opens();
// Largest random delay of a queued operation, in microseconds, for operations queued from
// now on; overrides config().emu_delay_us (-1 restores it).
void set_delay_for_testing(int max_us);
// The address at which a transport with "GPUDirect" access reaches [p, p + bytes): the
// shadow of device memory (an IPC mapping's too), p itself for memory the emulation did
// not allocate or host kinds (so nullptr for nullptr); nullptr (message in the runtime's
// last_error) when the range runs past its allocation.
void *transport_view(const void *p, std::size_t bytes);

}  // namespace emu
}  // namespace cuda
}  // namespace gcoll
