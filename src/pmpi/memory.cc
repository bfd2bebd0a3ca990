#include "pmpi/memory.h"

#include "base/config.h"
#include "cuda/device.h"

namespace gcoll {

LocalMemory classify_local(const void *const *bufs, int n, int engine_device) {
  LocalMemory lm;
  const bool cuda = cuda::usable();
  for (int i = 0; i < n; ++i) {
    if (!bufs[i]) continue;
    if (!cuda) {
      lm.host = true;
      continue;
    }
    const cuda::PtrInfo p = cuda::classify(bufs[i]);
    if (!p.device) {
      lm.host = true;
      continue;
    }
    lm.device = true;
    if (i < 2) lm.is_device[i] = true;
    lm.non_ipc |= !p.ipc_capable;
    if (lm.ordinal >= 0 && lm.ordinal != p.ordinal) lm.split_gpu = true;
    lm.ordinal = p.ordinal;
  }
  if (lm.device && engine_device >= 0 && lm.ordinal != engine_device) lm.split_gpu = true;
  return lm;
}

namespace {

enum : int { kHost = 1, kDevice = 2, kNonIpc = 4, kSplitGpu = 8 };

int bits_of(const LocalMemory &lm) {
  return (lm.host ? kHost : 0) | (lm.device ? kDevice : 0) | (lm.non_ipc ? kNonIpc : 0) |
         (lm.split_gpu ? kSplitGpu : 0);
}

}  // namespace

// Can any rank hold device memory; do all promise uniform kinds; do all let the engine
// take device buffers. (A rank without a driver has only host buffers, but it must still
// join the agreement of every call when a peer has a GPU.)
void agree_once(CommState *cs) {
  const Config &c = config();
  int v[3] = {cuda::usable() ? 1 : 0, c.uniform_memory ? 0 : 1, c.device_engine ? 0 : 1};
  if (PMPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MAX, cs->comm) != MPI_SUCCESS) {
    // The communicator cannot carry a collective: the call's own PMPI_* call will say
    // why. Assume the worst (a GPU somewhere), so that every later call agrees per call.
    v[0] = 1;
    v[1] = 1;
    v[2] = 1;
  }
  cs->gpu = v[0];
  cs->uniform_memory = v[1] == 0;
  cs->device_engine = v[2] == 0;
}

namespace {

CallMemory from_bits(int bits, bool device_engine) {
  CallMemory m;
  if ((bits & kDevice) && (bits & kHost)) m.mem = CallMem::Mixed;
  else if (bits & kDevice) m.mem = CallMem::Device;
  else m.mem = CallMem::Host;
  m.zero_copy = !(bits & kNonIpc);
  m.device_engine = device_engine && !(bits & kSplitGpu);
  return m;
}

}  // namespace

Status agree_memory(CommState *cs, const LocalMemory &lm, CallMemory *out) {
  if (cs->gpu < 0) agree_once(cs);
  int bits = bits_of(lm);
  if (cs->gpu == 0) {
    bits = kHost;  // nobody has a device buffer
  } else if (!cs->uniform_memory) {
    if (PMPI_Allreduce(MPI_IN_PLACE, &bits, 1, MPI_INT, MPI_BOR, cs->comm) != MPI_SUCCESS) return Status::ErrComm;
  }
  *out = from_bits(bits, cs->device_engine);
  return Status::Ok;
}

}  // namespace gcoll
