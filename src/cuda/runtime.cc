// Which Runtime the process uses (runtime.h): the emulated GPU under GCOLL_CUDA=emulate,
// else the CUDA runtime when gcoll is built with CUDA, else none.
#include "cuda/runtime.h"

#include "base/config.h"
#include "cuda/emulate.h"

namespace gcoll {
namespace cuda {

#if GCOLL_HAVE_CUDA
Runtime *make_cuda_runtime();  // runtime_cuda.cc
#endif

namespace {

// Built without CUDA and not emulating: there is no device memory, so nothing calls this
// (driver().usable() is false); every call says so rather than pretending.
class NoRuntime final : public Runtime {
 public:
  const char *name() const override { return "none"; }
  int current_device() override { return -1; }
  Status set_device(int) override { return Status::NotSupported; }
  int device_count() override { return 0; }
  bool can_access_peer(int, int) override { return false; }
  Status stream_create(Stream *s) override {
    *s = nullptr;
    return Status::NotSupported;
  }
  void stream_destroy(Stream) override {}
  Status stream_synchronize(Stream) override { return Status::NotSupported; }
  Status event_create(Event *e) override {
    *e = nullptr;
    return Status::NotSupported;
  }
  void event_destroy(Event) override {}
  Status event_record(Event, Stream) override { return Status::NotSupported; }
  Status event_query(Event, bool *done) override {
    *done = true;
    return Status::NotSupported;
  }
  Status stream_wait_event(Stream, Event) override { return Status::NotSupported; }
  Status order_after_default_streams(Stream, Event) override { return Status::NotSupported; }
  Status malloc_device(void **p, std::size_t) override {
    *p = nullptr;
    return Status::NotSupported;
  }
  void free_device(void *) override {}
  Status malloc_host(void **p, std::size_t) override {
    *p = nullptr;
    return Status::NotSupported;
  }
  void free_host(void *) override {}
  Status memcpy_async(void *, const void *, std::size_t, Stream) override { return Status::NotSupported; }
  bool reduce_supported(ROp, DType) const override { return false; }
  int max_sources() const override { return 1; }
  Status reduce(DType, ROp, void *, const void *const *, int, std::size_t, Stream) override {
    return Status::NotSupported;
  }
  Status compress_encode(Compress, DType, const void *, std::size_t, void *, Stream) override {
    return Status::NotSupported;
  }
  Status compress_decode(Compress, DType, const void *, std::size_t, void *, Stream) override {
    return Status::NotSupported;
  }
  Status compress_decode_add(Compress, DType, const void *, std::size_t, void *, Stream) override {
    return Status::NotSupported;
  }
  Status device_info(int, DeviceInfo *out) override {
    *out = DeviceInfo{};
    return Status::NotSupported;
  }
  Status fused(const FusedParams &, Stream) override { return Status::NotSupported; }
  Status malloc_host_mapped(void **p, std::size_t) override {
    *p = nullptr;
    return Status::NotSupported;
  }
  Status launch_host_func(Stream, void (*)(void *), void *) override { return Status::NotSupported; }
  Status stream_wait_value32(Stream, const volatile std::uint32_t *, std::uint32_t) override {
    return Status::NotSupported;
  }
  Status stream_write_value32(Stream, volatile std::uint32_t *, std::uint32_t) override {
    return Status::NotSupported;
  }
  bool stream_memops_supported() override { return false; }
  bool stream_capturing(Stream) override { return false; }
  Status stream_device(Stream, int *) override { return Status::NotSupported; }
  const char *last_error() override { return "gcoll was built without CUDA"; }
};

}  // namespace

Runtime &runtime() {
  // Never destroyed: MPI_Finalize may run from an atexit handler after static destructors.
  static Runtime *const r = [] () -> Runtime * {
    if (config().cuda_emulate) return &emulated_runtime();
#if GCOLL_HAVE_CUDA
    return make_cuda_runtime();
#else
    return new NoRuntime;
#endif
  }();
  return *r;
}

}  // namespace cuda
}  // namespace gcoll
