// Memory kinds of a call: what this rank's buffers are (classified through the CUDA
// driver, cuda/device.h, with its memory-kind cache) and what the ranks agreed the call
// is (agreed at rank-uniform moments, before any byte moves; docs/engine.md "Agreement").
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/stats.h"
#include "coll/decide.h"
#include "coll/local_memory.h"
#include "coll/team.h"

namespace gcoll {

// What a rank says when some rank of a communicator does not run gcoll (agree_once), and
// what every call on that communicator reports then (MPI_ERR_OTHER).
inline constexpr const char *kWithoutGcoll =
    "some rank of this communicator does not run gcoll (GCOLL_ENABLE=0 there, or libgcoll.so not preloaded): "
    "GCOLL_ENABLE must be equal on every rank. That rank's collective call met gcoll's agreement, so the "
    "communicator's collectives no longer pair up: every call on it fails";



// Whether this process can hold device memory at all (a usable CUDA driver, or the
// emulated GPU): cheap after the first call.
bool device_memory_possible();

// Classifies the buffers that carry bytes (nullptr entries are skipped: MPI_IN_PLACE, no
// bytes). Without a usable driver every buffer is host memory, at the cost of a branch.
LocalMemory classify_local(const void *const *bufs, int n, int engine_device);

// classify_local of a call's two buffers through `memo` (the communicator's): the kept
// answer when the buffers, the engine GPU and the driver's epoch are the same as then.
LocalMemory classify_call(KindMemo *memo, const void *const bufs[2], int engine_device);

// The size class of a message: 0 for 0 bytes, else the bit length of `bytes`.
inline int size_class(std::size_t bytes) {
  return bytes ? 64 - __builtin_clzll(static_cast<unsigned long long>(bytes)) : 0;
}

struct CallMemory {
  CallMem mem = CallMem::Host;
  bool zero_copy = false;      // Device: every rank's buffers can be exposed
  bool device_engine = false;  // Device: the engine may take it (settings, one GPU per rank)
  bool agreed_now = false;     // this call ran an agreement
};
static_assert(sizeof(CallMemory) <= sizeof(std::uint64_t), "kept in Team::AgreedKind::answer");

// Once per intracommunicator, at its first call (any collective: every rank makes it):
// whether any rank can hold device memory, and every setting that must be equal on every
// rank (base/uniform_settings.h), into `cs`.
void agree_once(Team *cs);

// For a call the engine supports on an intracommunicator: what every rank takes the
// call to be, the same on all ranks. Where no rank can hold device memory: host. Where
// every rank promised uniform kinds (GCOLL_UNIFORM_MEMORY): this rank's own. Otherwise
// the answer of the last agreement for this communicator, collective and size class of
// `bytes` (all fixed by arguments MPI requires to match): one small PMPI_Allreduce of
// every rank's kinds at the first such call, then after 1, 2, 4, ... calls, up to
// GCOLL_MEMORY_AGREE_INTERVAL, while the answer stays the same (back to 1 when it
// changes). Between agreements no communication at all: a rank whose own buffers differ
// from the answer (a deviator) adapts locally (collectives.cc, deviate.h).
// Collective: every rank must call it for the same calls (engine_supports is
// rank-uniform), before any byte moves.
Status agree_memory_slow(Team *cs, Coll coll, std::size_t bytes, const LocalMemory &lm, CallMemory *out);
// The same for one call, agreed now whatever the table says, the table left as it was: a
// persistent call's _init, whose buffers are its own (team_call.h: team_persistent_init).
// Collective.
Status agree_memory_now(Team *cs, const LocalMemory &lm, CallMemory *out);
inline Status agree_memory(Team *cs, Coll coll, std::size_t bytes, const LocalMemory &lm, CallMemory *out) {
  // Between agreements (almost every call): the last answer, nothing else.
  if (cs->gpu > 0 && !cs->uniform_memory) {
    Team::AgreedKind &k = cs->agreed[static_cast<int>(coll)][size_class(bytes)];
    if (k.calls != k.next) {
      ++k.calls;
      std::memcpy(out, &k.answer, sizeof *out);
      return Status::Ok;
    }
  }
  return agree_memory_slow(cs, coll, bytes, lm, out);
}

// Whether this rank's buffers fit an engine call agreed as `cm` on the communicator's
// engine GPU `engine_device` (-1: none yet): false makes this rank a deviator.
bool fits_agreed(const LocalMemory &lm, const CallMemory &cm, int engine_device);


// This rank's own view, for calls that never take the engine (no agreement needed).
inline CallMem local_kind(const LocalMemory &lm) {
  return lm.device ? (lm.host ? CallMem::Mixed : CallMem::Device) : CallMem::Host;
}

}  // namespace gcoll
