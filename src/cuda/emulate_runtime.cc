// The emulated GPU's runtime (emulate.h): its devices (emulate_machine.h), streams and
// events, copies and reductions on the shadow views, the fused kernel.
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include "base/log.h"
#include "cuda/emulate.h"
#include "cuda/emulate_fused.h"
#include "cuda/emulate_machine.h"
#include "cuda/emulate_streams.h"
#include "kernels/compress.h"
#include "kernels/host_reduce.h"
#include "kernels/types.h"

namespace gcoll {
namespace cuda {
namespace {

using namespace emu_impl;

constexpr int kMaxSources = 16;

EmuEvent *as_event(Event e) { return static_cast<EmuEvent *>(e); }

class EmuRuntime final : public Runtime {
 public:
  const char *name() const override { return "emulated GPU"; }

  int current_device() override { return emu_impl::current_device(); }
  Status set_device(int dev) override { return set_current_device(dev) ? Status::Ok : Status::ErrArg; }
  int device_count() override { return machine().count(); }
  bool can_access_peer(int dev, int peer) override { return peer_hardware(dev, peer); }

  Status stream_create(Stream *s) override {
    note_exclusive("cudaStreamCreate");
    EmuStream *es = state().create_stream();
    *s = es;
    return es ? Status::Ok : Status::ErrNoMem;
  }
  void stream_destroy(Stream s) override {
    note_exclusive("cudaStreamDestroy");
    if (s) state().destroy_stream(static_cast<EmuStream *>(s));
  }
  Status stream_synchronize(Stream s) override {
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    if (refused_under_capture(es, "cudaStreamSynchronize")) return Status::ErrArg;
    es->synchronize();
    if (es->trapped()) {
      set_error("emulated GPU: a kernel on stream %p trapped", static_cast<void *>(es));
      return Status::ErrInternal;
    }
    return failure_check(es);
  }

  Status event_create(Event *e) override {
    note_exclusive("cudaEventCreate");
    try {
      *e = new EmuEvent{std::make_shared<EventState>()};
      return Status::Ok;
    } catch (const std::bad_alloc &) {
      *e = nullptr;
      set_error("emulated GPU: out of memory creating an event");
      return Status::ErrNoMem;
    }
  }
  void event_destroy(Event e) override {
    note_exclusive("cudaEventDestroy");
    delete as_event(e);
  }

  Status event_record(Event e, Stream s) override {
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    if (refused_under_capture(es, "cudaEventRecord", true)) return Status::ErrArg;
    std::shared_ptr<EventState> st = as_event(e)->st;
    std::uint64_t v;
    {
      std::lock_guard<std::mutex> lk(st->m);
      v = ++st->recorded;
    }
    const bool queued = es->enqueue([st, v, es] {
      const bool failed = es->take_failure();
      {
        std::lock_guard<std::mutex> lk(st->m);
        if (v > st->completed) st->completed = v;
        st->failed = st->failed || failed;
      }
      st->cv.notify_all();
    });
    if (!queued) {
      // As if never recorded: nothing will ever complete record v.
      std::lock_guard<std::mutex> lk(st->m);
      if (v > st->completed) st->completed = v;
      return Status::ErrNoMem;
    }
    return Status::Ok;
  }

  Status event_query(Event e, bool *done) override {
    EventState &st = *as_event(e)->st;
    std::lock_guard<std::mutex> lk(st.m);
    *done = st.completed >= st.recorded;
    if (*done && st.failed) {
      st.failed = false;
      set_error("emulated GPU: a reduction queued before the event failed");
      return Status::ErrInternal;
    }
    return Status::Ok;
  }

  Status stream_wait_event(Stream s, Event e) override {
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    if (refused_under_capture(es, "cudaStreamWaitEvent", true)) return Status::ErrArg;
    std::shared_ptr<EventState> st = as_event(e)->st;
    std::uint64_t v;
    {
      std::lock_guard<std::mutex> lk(st->m);
      v = st->recorded;
      if (st->completed >= v) return Status::Ok;  // nothing pending (or never recorded)
    }
    const bool queued = es->enqueue([st, v] {
      std::unique_lock<std::mutex> lk(st->m);
      st->cv.wait(lk, [&] { return st->completed >= v; });
    });
    return queued ? Status::Ok : Status::ErrNoMem;
  }

  Status order_after_default_streams(Stream s, Event scratch) override {
    // The emulation has one default stream, the legacy one (emu::memcpy/memset use it).
    const Status st = event_record(scratch, nullptr);
    return ok(st) ? stream_wait_event(s, scratch) : st;
  }

  Status malloc_device(void **p, std::size_t bytes) override {
    note_exclusive("cudaMalloc");
    return to_status(allocate(p, bytes, GCOLL_EMU_MEM_DEVICE));
  }
  void free_device(void *p) override {
    note_exclusive("cudaFree");
    warn_on_free_failure(release(p), p);
  }
  Status malloc_host(void **p, std::size_t bytes) override {
    note_exclusive("cudaHostAlloc");
    return to_status(allocate(p, bytes, GCOLL_EMU_MEM_PINNED));
  }
  void free_host(void *p) override {
    note_exclusive("cudaFreeHost");
    warn_on_free_failure(release(p), p);
  }

  Status memcpy_async(void *dst, const void *src, std::size_t bytes, Stream s) override {
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    Translated d, from;
    if (!state().registry.translate(dst, bytes, &d) || !state().registry.translate(src, bytes, &from))
      return Status::ErrArg;
    if (pageable_copy_refused(es, d.kind, from.kind)) return Status::ErrArg;
    void *dp = d.addr;
    const void *sp = from.addr;
    return es->enqueue([dp, sp, bytes] { host_copy(dp, sp, bytes); }) ? Status::Ok : Status::ErrNoMem;
  }

  bool reduce_supported(ROp op, DType t) const override { return op_supported(op, t); }
  int max_sources() const override { return kMaxSources; }

  Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count,
                Stream s) override {
    if (m < 1 || m > kMaxSources) {
      set_error("emulated GPU: reduction of %d sources (1 to %d)", m, kMaxSources);
      return Status::ErrArg;
    }
    if (!op_supported(op, t)) {
      set_error("emulated GPU: no reduction %s on %s", rop_name(op), dtype_name(t));
      return Status::NotSupported;
    }
    const std::size_t esize = dtype_size(t);
    if (count > SIZE_MAX / esize) {
      set_error("emulated GPU: reduction of %zu elements overflows", count);
      return Status::ErrArg;
    }
    const std::size_t bytes = count * esize;
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    Registry &reg = state().registry;
    Translated d;
    if (!reg.translate(dst, bytes, &d)) return Status::ErrArg;
    std::array<const void *, kMaxSources> from{};
    for (int i = 0; i < m; ++i) {
      Translated x;
      if (!reg.translate(srcs[i], bytes, &x)) return Status::ErrArg;
      from[static_cast<std::size_t>(i)] = x.addr;
    }
    void *dp = d.addr;
    // The failure goes to the stream that runs it: a graph's copy runs on the launch's.
    const bool queued = es->enqueue([t, op, dp, from, m, count] {
      if (!ok(host_reduce(t, op, dp, from.data(), m, count))) EmuStream::running()->fail();
    });
    return queued ? Status::Ok : Status::ErrNoMem;
  }

  // The host functions of kernels/compress.h on the shadow views, on the stream's worker.
  enum class CompressOp { Encode, Decode, DecodeAdd };
  Status compress(CompressOp what, Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) {
    if (c == Compress::Off || (t != DType::Float && t != DType::Double)) {
      set_error("emulated GPU: compression %s of %s", compress_name(c), dtype_name(t));
      return Status::ErrArg;
    }
    if (n == 0) return Status::Ok;
    const std::size_t esize = dtype_size(t);
    if (n > SIZE_MAX / esize) {
      set_error("emulated GPU: compression of %zu elements overflows", n);
      return Status::ErrArg;
    }
    const std::size_t raw = n * esize, packed = compressed_bytes(c, n);
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    Registry &reg = state().registry;
    Translated from, to;
    if (!reg.translate(src, what == CompressOp::Encode ? raw : packed, &from) ||
        !reg.translate(dst, what == CompressOp::Encode ? packed : raw, &to))
      return Status::ErrArg;
    const void *sp = from.addr;
    void *dp = to.addr;
    const bool queued = es->enqueue([what, c, t, sp, n, dp] {
      switch (what) {
        case CompressOp::Encode: gcoll::compress_encode(c, t, sp, n, dp); break;
        case CompressOp::Decode: gcoll::compress_decode(c, t, sp, n, dp); break;
        case CompressOp::DecodeAdd: gcoll::compress_decode_add(c, t, sp, n, dp); break;
      }
    });
    return queued ? Status::Ok : Status::ErrNoMem;
  }
  Status compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) override {
    return compress(CompressOp::Encode, c, t, src, n, dst, s);
  }
  Status compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) override {
    return compress(CompressOp::Decode, c, t, src, n, dst, s);
  }
  Status compress_decode_add(Compress c, DType t, const void *src, std::size_t n, void *dst, Stream s) override {
    return compress(CompressOp::DecodeAdd, c, t, src, n, dst, s);
  }

  Status device_info(int dev, DeviceInfo *out) override {
    *out = DeviceInfo{};
    if (!check_device(dev)) return Status::ErrArg;
    const Machine &m = machine();
    const auto i = static_cast<std::size_t>(dev);
    std::memcpy(out->uuid, m.uuids[i].data(), sizeof out->uuid);
    const std::string &bus = m.bus_ids[i];
    if (bus.size() < sizeof out->pci_bus_id) std::memcpy(out->pci_bus_id, bus.c_str(), bus.size() + 1);
    out->sm_count = kEmuSms;
    out->mps = 1;  // every process's stream work runs at once, as under MPS
    return Status::Ok;
  }

  // The kernel of kernels/fused.h on the stream's worker thread, block after block, with
  // the flags as atomics in the shared memory of the banks' memfds (device memory here is
  // shared between the processes, as IPC-mapped memory is on a GPU).
  Status fused(const FusedParams &p, Stream s) override {
    if (!fused_params_valid(p)) {
      set_error("emulated GPU: inconsistent fused-collective parameters");
      return Status::ErrArg;
    }
    if (p.kind == FusedKind::Allreduce) {
      if (!op_supported(p.op, p.dtype)) {
        set_error("emulated GPU: no reduction %s on %s", rop_name(p.op), dtype_name(p.dtype));
        return Status::NotSupported;
      }
      if (p.elem != dtype_size(p.dtype) || kFusedAlign % p.elem != 0) {
        set_error("emulated GPU: fused allreduce of %zu-byte elements of %s", p.elem, dtype_name(p.dtype));
        return Status::ErrArg;
      }
    }
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    FusedEmuJob j;
    j.p = p;
    Registry &reg = state().registry;
    const auto shadow = [&](const void *ptr, std::size_t bytes, void **out) {
      Translated t;
      if (!reg.translate(ptr, bytes, &t)) return false;
      *out = t.addr;
      return true;
    };
    bool good = true;
    const std::size_t banks = p.seq ? p.bytes : p.bank_stride + p.bytes;  // stream-ordered: both banks
    for (int q = 0; q < p.nranks && good; ++q) {
      void *b = nullptr, *c = nullptr;
      good = shadow(p.bank[q], banks, &b) && shadow(p.ctl[q], sizeof(FusedControl), &c);
      j.bank[q] = static_cast<unsigned char *>(b);
      j.ctl[q] = static_cast<FusedControl *>(c);
      if (good && p.kind == FusedKind::Allgather && p.dst[q]) {
        void *d = nullptr;
        good = shadow(p.dst[q], p.bytes, &d);
        j.dst[q] = static_cast<unsigned char *>(d);
      }
    }
    void *in = nullptr, *out = nullptr, *status = nullptr;
    const bool publishes = !p.failed && (p.kind != FusedKind::Bcast || p.me == p.root);
    if (good && publishes && !p.resume) good = shadow(p.in, p.bytes, &in);
    if (good && p.kind != FusedKind::Allgather) good = shadow(p.out, p.bytes, &out);
    if (good) good = shadow(p.status, sizeof(std::uint64_t) * static_cast<std::size_t>(p.blocks), &status);
    if (!good) return Status::ErrArg;
    j.in = static_cast<const unsigned char *>(in);
    j.out = static_cast<unsigned char *>(out);
    j.status = static_cast<std::uint64_t *>(status);
    // A stream-ordered op that failed or timed out stops the stream, as __trap() does on a
    // GPU: here the stream's next synchronisation reports it.
    return es->enqueue([j] {
      if (!run_fused(j) && j.p.trap) {
        GCOLL_WARN("emulated GPU: a stream-ordered collective failed or timed out: the kernel traps");
        if (EmuStream *now = EmuStream::running()) now->trap();  // (a graph's launch runs elsewhere)
      }
    })
               ? Status::Ok
               : Status::ErrNoMem;
  }

  // Mapped pinned memory is pinned memory here: the CPU reads and writes it, and the
  // stream workers too (the "device" reaches all host memory).
  Status malloc_host_mapped(void **p, std::size_t bytes) override {
    return to_status(allocate(p, bytes, GCOLL_EMU_MEM_PINNED));
  }

  // fn(arg) on the stream's worker, in its turn (after the random delay every operation
  // has).
  Status launch_host_func(Stream s, void (*fn)(void *), void *arg) override {
    if (!fn) {
      set_error("emulated GPU: launch_host_func without a function");
      return Status::ErrArg;
    }
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    return es->enqueue([fn, arg] { fn(arg); }) ? Status::Ok : Status::ErrNoMem;
  }

  // The wait blocks the stream's worker, and so everything queued after it on this
  // stream, until the word holds `value` (wait_value32: polling, no lock held). Other
  // streams run on; device_synchronize, free, stream_destroy and park_threads wait for it
  // (emulate_streams.h: State).
  Status stream_wait_value32(Stream s, const volatile std::uint32_t *word, std::uint32_t value) override {
    volatile std::uint32_t *w = memop_word(word);
    if (!w) return Status::ErrArg;
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    return es->enqueue([w, value] { wait_value32(w, value); }) ? Status::Ok : Status::ErrNoMem;
  }
  Status stream_write_value32(Stream s, volatile std::uint32_t *word, std::uint32_t value) override {
    volatile std::uint32_t *w = memop_word(word);
    if (!w) return Status::ErrArg;
    EmuStream *es = resolve(s);
    if (!es) return Status::ErrInternal;
    // Release: what the stream wrote before is visible to whoever sees the value.
    return es->enqueue([w, value] { __atomic_store_n(w, value, __ATOMIC_RELEASE); }) ? Status::Ok
                                                                                      : Status::ErrNoMem;
  }
  bool stream_memops_supported() override { return true; }
  // Captures are opened and closed through the C API (emu::stream_begin_capture); gcoll
  // only asks (the legacy stream never captures).
  bool stream_capturing(Stream s) override {
    EmuStream *es = resolve(s);
    return es && es->capturing();
  }

  Status stream_device(Stream s, int *dev) override {
    EmuStream *es = resolve_checked(s);
    if (!es) return Status::ErrArg;
    *dev = es == state().legacy() ? current_device() : es->device;
    return Status::Ok;
  }

  const char *last_error() override { return take_error(); }

 private:
  // Stream 0 is the legacy default stream, as in CUDA (resolve_stream).
  static EmuStream *resolve(Stream s) { return resolve_stream(s); }

  // A 32-bit word of the stream memory operations, where the worker reads or writes it
  // (host memory: itself; device memory: its shadow). nullptr (message) when misplaced.
  static volatile std::uint32_t *memop_word(const volatile std::uint32_t *word) {
    if (!word || reinterpret_cast<std::uintptr_t>(word) % sizeof(std::uint32_t) != 0) {
      set_error("emulated GPU: a stream memory operation on %p: not an aligned 32-bit word",
                const_cast<const void *>(static_cast<const volatile void *>(word)));
      return nullptr;
    }
    Translated t;
    if (!state().registry.translate(const_cast<const std::uint32_t *>(word), sizeof(std::uint32_t), &t))
      return nullptr;
    return static_cast<volatile std::uint32_t *>(t.addr);
  }

  static Status failure_check(EmuStream *es) {
    if (!es->take_failure()) return Status::Ok;
    set_error("emulated GPU: a reduction queued on stream %p failed", static_cast<void *>(es));
    return Status::ErrInternal;
  }

  static void warn_on_free_failure(int code, void *p) {
    if (code != GCOLL_EMU_OK) GCOLL_WARN("emulated GPU: cannot free %p: %s", p, error_text());
  }
};

}  // namespace

Runtime &emulated_runtime() {
  static Runtime *const r = new EmuRuntime;
  return *r;
}

}  // namespace cuda
}  // namespace gcoll
