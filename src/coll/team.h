// One team per communicator: everything gcoll keeps about a communicator below the MPI's
// ABI, and the path of its calls (coll/team_call.h). src/pmpi keeps the ABI: the entry
// points, the communicator's attribute that holds the team (pmpi/comm_state.h), the
// exception guard and the error handler; it reaches classification, the memory-kind
// agreement, the path decision, the engine, deviation, packing and staging through here.
//
// Agreed once, at the communicator's first call (team_memory.h: agree_settings): every
// setting that must be equal on every rank (base/uniform_settings.h) and whether any rank
// can hold device memory. Agreed per collective and size class (team_memory.h:
// agree_memory): the memory kinds of the calls the engine could take.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/stats.h"
#include "base/status.h"
#include "coll/async_queue.h"
#include "coll/engine.h"
#include "coll/local_memory.h"

namespace gcoll {

struct Team {
  // What every call reads before it passes a call to the MPI (team_call.h), first: one
  // cache line (a rank that shares its core with another meets it cold).
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 0;
  int rank = 0;
  bool inter = false;
  // Agreed at the first call (-1: not yet).
  int gpu = -1;                 // some rank can hold device memory
  // Some rank did not take part in the agreement as gcoll (GCOLL_ENABLE=0 there, or no
  // libgcoll.so): the communicator's collectives no longer pair up, so every call on it
  // fails (MPI_ERR_OTHER) rather than return what another call sent.
  bool without_gcoll = false;
  bool host_engine = false;     // GCOLL_HOST_BUFFERS=engine on every rank
  // The blocking collectives (bit i: Coll i) whose host calls the host engine may take at
  // some size (tune.h: host_engine_colls_of, from the agreed crossovers): 0 without the host
  // engine; every one where the settings that shape the engine differ between the ranks.
  // The others' host calls go to the MPI at once (team_call.h).
  std::uint32_t host_engine_colls = 0;
  bool host_engine_may(Coll c) const {
    const unsigned i = static_cast<unsigned>(c);
    return i >= 32 || ((host_engine_colls >> i) & 1u);
  }
  bool compress_pending = false;  // the info key changed since the last agreement (below)
  // Per blocking collective, 1 + the bytes (the call's stats bytes: by type signature, so
  // the same on every rank) of its last call that the host crossovers gave to the MPI
  // (tune.h: host_declines) on a communicator where no rank can hold device memory; 0:
  // none. A call of the same bytes is declined alike (its selection bytes are the same), so
  // team_call() gives it to the MPI at once, without prepare() and the crossover check: the
  // same decision, on every rank alike (each rank's memory saw the same calls). Never kept
  // for an allreduce the communicator may compress; cleared where compression is agreed.
  std::uint64_t mpi_bytes[kBlockingColls] = {};
  // What the nonblocking calls since the last blocking one lacked to take the engine: an
  // agreement of their key's memory kinds, or the engine's setup (both collective, so
  // never made inside a nonblocking call). The next blocking call on the communicator
  // makes them (settle_async_wants), every rank alike: the list is rank-uniform (it grows
  // only from what every rank has alike), the kinds in it are each rank's own vote.
  struct AsyncWant {
    Coll coll;
    std::size_t bytes;
    LocalMemory lm;
  };
  std::vector<AsyncWant> async_wants;
  void settle_async_wants();

  std::uint64_t id = 0;               // process-local, for logs
  std::atomic<std::uint64_t> seq{0};  // collectives run through gcoll on this communicator
  bool uniform_memory = false;  // GCOLL_UNIFORM_MEMORY on every rank
  bool device_engine = true;    // GCOLL_DEVICE_BUFFERS=engine on every rank (and not stage_device)
  // Device buffers always staged, whatever the settings: a stream communicator's inner
  // communicator, whose calls run on the proxy thread (pmpi/stream.cc, mem/pinned.h). Set
  // on every rank before its first call.
  bool stage_device = false;
  bool engine_settings = true;  // the settings that shape the engine's schedules are equal
  int timeout_s = 0;            // GCOLL_TIMEOUT as agreed (the smallest nonzero value)
  int agree_interval = 1;       // GCOLL_MEMORY_AGREE_INTERVAL, equal on every rank (else 1)
  int device = -1;              // this rank's GPU for the device engine (set at its first device call)

  // The compressed allreduce (docs/compression.md). GCOLL_ALLREDUCE_COMPRESS as agreed at the
  // first call; the info key gcoll_allreduce_compress as agreed after the calls that set it
  // (pmpi/comm_info.cc: MPI_Comm_set_info, MPI_Comm_dup_with_info, MPI_Comm_dup of a keyed
  // communicator: collective, so compress_pending is alike on every rank; the next blocking
  // call that may take the engine agrees it, agree_compress). Compress values.
  int compress_setting = 0;
  int compress_info = -1;          // the key as agreed; -1: never set (the setting applies)
  int compress_info_mine = -1;     // this rank's value at its last call that set it; -1: key absent
  // (compress_pending: at the top)
  // Collective: the min and max of compress_info_mine over the ranks; equal: that value (-1
  // keeps the agreed one), different: off, with one warning per job.
  void agree_compress();
  // GCOLL_HOST_BUSY_MPI (issue 32 item 2): whether this host call of that size or more goes to
  // the MPI because the machine is loaded. Every kBusyAgreeEvery-th such call (the first
  // included) agrees, over the communicator, whether any rank sees its machine loaded
  // (base/wait.h: wait_machine_loaded); the calls up to the next agreement follow it. Called
  // at the same calls on every rank (rank-uniform: bytes by type signature, agreed settings,
  // the engine set up), so the answer is the same on every rank.
  bool busy_says_mpi();
  static constexpr unsigned kBusyAgreeEvery = 16;
  unsigned busy_calls = 0;
  bool busy_mpi = false;
  // The format of an allreduce of (t, op) on this communicator (Off unless compressible).
  Compress allreduce_compress(DType t, ROp op) const {
    if (!compressible(t, op)) return Compress::Off;
    const int v = compress_info >= 0 ? compress_info : compress_setting;
    return v > 0 && v < kCompressFormats ? static_cast<Compress>(v) : Compress::Off;
  }
  // Whether some allreduce on the communicator may be compressed (its format is not off).
  bool compresses() const {
    const int v = compress_info >= 0 ? compress_info : compress_setting;
    return v > 0 && v < kCompressFormats;
  }

  // The memory kinds agreed for the engine-eligible calls, one entry per collective and
  // size class (team_memory.h: agree_memory). Every field changes only at calls every rank
  // makes with the same key, so they are equal on all ranks.
  struct AgreedKind {
    std::uint64_t calls = 0;     // calls with this key so far
    std::uint64_t next = 0;      // the call (index) that agrees next
    std::uint64_t interval = 0;  // calls between the last agreement and the next
    int bits = -1;               // what the last agreement found (team_memory.cc), -1: none yet
    std::uint64_t answer = 0;    // that answer as team_memory.h's CallMemory (its bytes)
  };
  static constexpr int kSizeClasses = 65;  // 0 bytes, then [2^(k-1), 2^k) for k = 1..64
  AgreedKind agreed[kBlockingColls][kSizeClasses];  // the engine runs blocking forms only
  KindMemo memo;  // the last call's buffers and what they were (team_memory.h: classify_call)

  EngineSlot engine;  // gcoll's engine for it; released with the team

  // The nonblocking forms through the engine (team_call.h: team_async_call).
  bool progress_thread = false;  // GCOLL_PROGRESS_THREAD=on on every rank (agreed)
  // ... and every rank's MPI granted MPI_THREAD_MULTIPLE (agreed): the progress thread may
  // call the MPI, so it also runs the engine's calls across nodes (and islands), whose
  // closing agreements go over the MPI.
  bool thread_mpi = false;
  // (async_wants: at the top)
  AsyncQueue async;  // declared after `engine`: its thread ends first

  // Runs the engine for a call it supports, on GPU `device` for device memory.
  // NotSupported (the same on every rank, before any byte moved) sends the call to the
  // MPI (host buffers) or to the staged path (device). On the application's thread it
  // first waits for the nonblocking calls still queued on the progress thread (one engine
  // call at a time, in the order they were started) and keeps the MPI progressing while
  // it waits (base/wait.h); on the progress thread it calls the MPI only under thread_mpi.
  Status run_engine(const CollArgs &a, int device, EngineRecord *rec, bool on_app_thread = true);
};

}  // namespace gcoll
