// User buffers exposed to the node's peers through CUDA IPC (cuda_space_impl.h).
#include <cstring>

#include "mem/cuda_space_impl.h"
#include "mem/device_scope.h"

namespace gcoll {
namespace cuda_space_impl {

Status CudaSpace::expose(int slot, const void *buf, std::size_t bytes) {
  if (slot < 0 || slot >= kExposeSlots) return Status::ErrInternal;
  Exposure rec{};
  own_[slot] = const_cast<void *>(buf);
  exposed_ = true;
  Status st = Status::Ok;
  if (bytes) {
    const cuda::PtrInfo info = cuda::classify(buf);
    if (!info.device || !info.ipc_capable || info.ordinal != opt_.device) {
      GCOLL_WARN("buffer %p cannot be exposed through CUDA IPC", buf);
      st = Status::ErrInternal;
    } else {
      DeviceScope d(opt_.device);
      st = export_cache_.get(info, &rec.handle);
    }
    if (ok(st)) {
      rec.base = info.base;
      rec.size = info.size;
      rec.id = info.buffer_id;
      rec.offset = reinterpret_cast<std::uintptr_t>(buf) - info.base;
      rec.valid = 1;
    }
  }
  const Status s2 = ctl_->publish(slot * sizeof(Exposure), &rec, sizeof rec);
  return failed_if(ok(st) ? s2 : st);
}

Status CudaSpace::exposed(int lr, int slot, void **out) {
  if (slot < 0 || slot >= kExposeSlots || lr < 0 || lr >= local_size()) return Status::ErrInternal;
  if (lr == local_rank()) {
    *out = own_[slot];
    return Status::Ok;
  }
  Exposure rec;
  std::memcpy(&rec, static_cast<const char *>(ctl_->peer(lr)) + slot * sizeof(Exposure), sizeof rec);
  if (!rec.valid) {
    *out = nullptr;  // nothing exposed (zero bytes): never dereferenced
    return Status::Ok;
  }
  DeviceScope d(opt_.device);
  void *base = nullptr;
  const Status st = open_cache_.open(tokens_[lr], rec.base, rec.size, rec.id, rec.handle, &base);
  if (!ok(st)) return failed_if(st);
  *out = static_cast<char *>(base) + rec.offset;
  return Status::Ok;
}

}  // namespace cuda_space_impl
}  // namespace gcoll
