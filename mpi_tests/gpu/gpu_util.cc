// Device-buffer helpers and checks for the gcoll GPU tests. See gpu_util.h.
#include "gpu_util.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace gct {
namespace gpu {
namespace {

int g_ndev = 0;
int g_device = -1;
int g_local = -1;

int env_int(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return -1;
  char *end = nullptr;
  long x = strtol(v, &end, 10);
  return (end && *end == '\0' && x >= 0 && x < (1L << 30)) ? static_cast<int>(x) : -1;
}

// Runs before main(), hence before MPI_Init: without a usable device the program
// prints the skip line and exits 77 (CTest's SKIP_RETURN_CODE) on every rank, before
// anything else can fail; otherwise the rank picks its device from the launcher's
// local rank (as CUDA-aware MPI applications do), so that the MPI and gcoll initialize
// on the right device. On the emulated GPU there is one device, or a topology file's (GCOLL_TOPO_FILE), and no CUDA call.
void select_device_before_mpi_init() {
  int n = 0;
  int e = gpu_device_count(&n);
  if (e != 0 || n < 1) {
    if (e != 0)
      printf("SKIPPED: no GPU (%s device count: %s, error %d)\n", gpu_mode_name(), gpu_error_string(e), e);
    else
      printf("SKIPPED: no GPU (%s found no device)\n", gpu_mode_name());
    fflush(stdout);
    _exit(77);
  }
  g_ndev = n;
  for (const char *v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                        "SLURM_LOCALID", "PMI_LOCAL_RANK"}) {
    int lr = env_int(v);
    if (lr >= 0) {
      g_local = lr;
      break;
    }
  }
  if (g_local >= 0) {
    g_device = g_local % g_ndev;
    e = gpu_set_device(g_device);
    if (e != 0) {
      fprintf(stderr, "gcoll_gpu_mpi_test: local rank %d: device %d not usable: %s (%s error %d)\n", g_local,
              g_device, gpu_error_string(e), gpu_mode_name(), e);
      _exit(1);
    }
  }
}

struct EarlyDeviceSelection {
  EarlyDeviceSelection() { select_device_before_mpi_init(); }
} g_early_device_selection;

// After MPI_Init: the world rank where no launcher variable said the local rank; a
// summary of the placement on rank 0.
class GpuEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (g_device < 0) {
      g_device = world_rank() % g_ndev;
      GCT_GPU(gpu_set_device(g_device));
    }
    int cur = -1;
    GCT_GPU(gpu_get_device(&cur));
    std::vector<int> devs(static_cast<size_t>(world_size()), -1);
    PMPI_Gather(&cur, 1, MPI_INT, devs.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (world_rank() == 0) {
      char name[256];
      GCT_GPU(gpu_device_name(cur, name, sizeof name));
      std::string per;
      for (int d = 0; d < g_ndev; ++d) {
        int k = 0;
        for (int x : devs) k += x == d;
        per += (d ? ", " : "") + std::string("gpu ") + std::to_string(d) + ": " + std::to_string(k);
      }
      printf("gcoll GPU tests: %d rank(s), %d device(s) (%s; rank 0 on %s); ranks per device: %s; "
             "device chosen %s\n",
             world_size(), g_ndev, name, cur == 0 ? "gpu 0" : "another gpu", per.c_str(),
             g_local >= 0 ? "before MPI_Init from the local rank" : "after MPI_Init from the world rank");
      fflush(stdout);
    }
  }
};

::testing::Environment *const g_env = ::testing::AddGlobalTestEnvironment(new GpuEnvironment);

std::string where(const char *coll, const std::string &type, const char *op, size_t count,
                  const TestComm &c, int root, bool in_place, const Layout &l) {
  std::string s = std::string(coll) + " type=" + type;
  if (op) s += std::string(" op=") + op;
  s += " count=" + std::to_string(count) + " comm=" + c.name +
       " comm_rank=" + std::to_string(c.rank);
  if (root >= 0) s += " root=" + std::to_string(root);
  if (in_place) s += " MPI_IN_PLACE";
  s += " [" + l.describe() + "]";
  return s;
}


// Filler of the allocation bytes outside the buffers (differs from checks.h's pattern).
inline unsigned char filler(size_t i, uint32_t seed) {
  return static_cast<unsigned char>(0x5A ^ (i * 131 + seed * 7 + (i >> 8)));
}

// The allocation(s) of one rank's buffers in one call: they are filled on the host
// (filler, the send input, the receive buffer's initial contents), uploaded in one
// copy each, and after the call read back whole and compared outside the result.
class Arena {
 public:
  Arena(const Layout &l, bool has_send, size_t send_bytes, size_t recv_bytes, uint32_t seed)
      : l_(l), has_send_(has_send), sb_(has_send ? send_bytes : 0), rb_(recv_bytes) {
    if (l.shared) {
      s_at_ = l.send_off;
      r_at_ = l.send_off + sb_ + l.recv_off;
      r_ = Buf(l.recv, r_at_ + rb_ + kGuardBytes);
    } else {
      if (has_send_) {
        s_at_ = l.send_off;
        s_ = Buf(l.send, s_at_ + sb_ + kGuardBytes);
      }
      r_at_ = l.recv_off;
      r_ = Buf(l.recv, r_at_ + rb_ + kGuardBytes);
    }
    r_img_.resize(r_.size());
    for (size_t i = 0; i < r_img_.size(); ++i) r_img_[i] = filler(i, seed);
    if (!s_.empty()) {
      s_img_.resize(s_.size());
      for (size_t i = 0; i < s_img_.size(); ++i) s_img_[i] = filler(i, seed + 1);
    }
  }

  void *send() const { return l_.shared ? r_.at(s_at_) : s_.at(s_at_); }
  void *recv() const { return r_.at(r_at_); }

  // send_input: sb_ bytes (ignored without a send buffer); recv_init: rb_ bytes.
  void setup(const void *send_input, const void *recv_init) {
    if (has_send_ && sb_ > 0) {
      auto &img = l_.shared ? r_img_ : s_img_;
      memcpy(img.data() + s_at_, send_input, sb_);
    }
    if (rb_ > 0) memcpy(r_img_.data() + r_at_, recv_init, rb_);
    r_.put(0, r_img_.data(), r_img_.size());
    if (!s_.empty()) s_.put(0, s_img_.data(), s_img_.size());
  }

  // After the call: the result region in *got; false with *problem set when any other
  // byte of the allocation(s) changed.
  bool read_back(std::vector<unsigned char> *got, std::string *problem) const {
    std::vector<unsigned char> now = r_.image();
    got->assign(now.begin() + static_cast<std::ptrdiff_t>(r_at_),
                now.begin() + static_cast<std::ptrdiff_t>(r_at_ + rb_));
    for (size_t i = 0; i < now.size(); ++i) {
      if (i >= r_at_ && i < r_at_ + rb_) continue;
      if (now[i] != r_img_[i]) {
        const char *part = "before the receive buffer";
        if (i >= r_at_ + rb_) part = "after the end of the receive buffer";
        if (l_.shared && has_send_ && i >= s_at_ && i < s_at_ + sb_) part = "in the send buffer";
        else if (l_.shared && has_send_ && i >= s_at_ + sb_ && i < r_at_) part = "between the send and receive buffers";
        char buf[256];
        snprintf(buf, sizeof buf, "byte %zu of the %s allocation changed (%s): 0x%02x, was 0x%02x",
                 i, mem_name(r_.kind()), part, now[i], r_img_[i]);
        *problem = buf;
        return false;
      }
    }
    if (!s_.empty()) {
      std::vector<unsigned char> s = s_.image();
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != s_img_[i]) {
          const bool in = i >= s_at_ && i < s_at_ + sb_;
          char buf[256];
          snprintf(buf, sizeof buf, "byte %zu of the send allocation (%s) changed (%s): 0x%02x, was 0x%02x",
                   i, mem_name(s_.kind()), in ? "the send buffer was modified" : "outside the send buffer",
                   s[i], s_img_[i]);
          *problem = buf;
          return false;
        }
      }
    }
    return true;
  }

 private:
  Layout l_;
  bool has_send_;
  size_t sb_, rb_;
  size_t s_at_ = 0, r_at_ = 0;
  Buf s_, r_;
  std::vector<unsigned char> s_img_, r_img_;
};

}  // namespace

void gpu_ok(int e, const char *what, const char *file, int line) {
  if (e == 0) return;
  fprintf(stderr, "[rank %d] GPU error: %s failed: %s (%s error %d) at %s:%d; aborting the job\n",
          world_rank(), what, gpu_error_string(e), gpu_mode_name(), e, file, line);
  fflush(stderr);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) PMPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);
}

int device() { return g_device; }
int device_count() { return g_ndev; }
int local_rank_from_env() { return g_local; }

const char *mem_name(Mem m) {
  switch (m) {
    case Mem::Host: return "host";
    case Mem::Pinned: return "pinned";
    case Mem::Managed: return "managed";
    case Mem::Device: return "device";
    case Mem::Async: return "device-async";
  }
  return "?";
}

bool is_device(Mem m) { return m == Mem::Device || m == Mem::Async; }

Buf::Buf(Mem kind, size_t bytes) : kind_(kind), bytes_(bytes) {
  const size_t n = bytes ? bytes : 1;
  switch (kind) {
    case Mem::Host:
      p_ = malloc(n);
      if (!p_) {
        fprintf(stderr, "[rank %d] malloc(%zu) failed\n", world_rank(), n);
        PMPI_Abort(MPI_COMM_WORLD, 1);
      }
      break;
    case Mem::Pinned: GCT_GPU(gpu_malloc(&p_, n, GPU_MEM_PINNED)); break;
    case Mem::Managed: GCT_GPU(gpu_malloc(&p_, n, GPU_MEM_MANAGED)); break;
    case Mem::Device: GCT_GPU(gpu_malloc(&p_, n, GPU_MEM_DEVICE)); break;
    case Mem::Async: GCT_GPU(gpu_malloc(&p_, n, GPU_MEM_ASYNC)); break;
  }
}

void Buf::reset() {
  if (!p_) return;
  switch (kind_) {
    case Mem::Host: free(p_); break;
    case Mem::Pinned: GCT_GPU(gpu_free(p_, GPU_MEM_PINNED)); break;
    case Mem::Managed: GCT_GPU(gpu_free(p_, GPU_MEM_MANAGED)); break;
    case Mem::Device: GCT_GPU(gpu_free(p_, GPU_MEM_DEVICE)); break;
    case Mem::Async: GCT_GPU(gpu_free(p_, GPU_MEM_ASYNC)); break;
  }
  p_ = nullptr;
  bytes_ = 0;
}

Buf::~Buf() { reset(); }

Buf::Buf(Buf &&o) noexcept : kind_(o.kind_), p_(o.p_), bytes_(o.bytes_) {
  o.p_ = nullptr;
  o.bytes_ = 0;
}

Buf &Buf::operator=(Buf &&o) noexcept {
  if (this != &o) {
    reset();
    kind_ = o.kind_;
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Buf::put(size_t off, const void *src, size_t n) {
  if (n == 0) return;
  if (kind_ == Mem::Host || kind_ == Mem::Pinned)
    memcpy(at(off), src, n);
  else
    GCT_GPU(gpu_memcpy(at(off), src, n));
}

void Buf::get(size_t off, void *dst, size_t n) const {
  if (n == 0) return;
  if (kind_ == Mem::Host || kind_ == Mem::Pinned)
    memcpy(dst, at(off), n);
  else
    GCT_GPU(gpu_memcpy(dst, at(off), n));
}

std::vector<unsigned char> Buf::image() const {
  std::vector<unsigned char> v(bytes_);
  get(0, v.data(), bytes_);
  return v;
}

std::string Layout::describe() const {
  if (shared)
    return std::string("send and recv in one ") + mem_name(recv) + " allocation, send at +" +
           std::to_string(send_off) + ", recv " + std::to_string(recv_off) + " bytes after it";
  std::string s = std::string("send ") + mem_name(send);
  if (send_off) s += "+" + std::to_string(send_off);
  s += std::string(", recv ") + mem_name(recv);
  if (recv_off) s += "+" + std::to_string(recv_off);
  return s;
}

bool dev_allreduce(const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count, bool in_place,
                   uint32_t seed, const Layout &l) {
  const std::string ctx = where("MPI_Allreduce", t.name, op_name(op), count, c, -1, in_place, l);
  set_phase("%s", ctx.c_str());
  const size_t bytes = count * t.extent;
  const int n = static_cast<int>(count);

  std::vector<unsigned char> input(bytes + kGuardBytes, 0);
  t.fill(input.data(), count, world_rank(), seed, op);

  // Reference: PMPI on host copies.
  const MPI_Datatype ref_type = reference_type(t, op);
  std::vector<unsigned char> ref_send = input, ref = patterned(bytes);
  if (in_place) memcpy(ref.data(), input.data(), bytes);
  const int rc_ref = PMPI_Allreduce(in_place ? MPI_IN_PLACE : ref_send.data(), ref.data(), n, ref_type, op, c.comm);
  std::vector<unsigned char> ref_mpi;  // the MPI's own (wrong) answer, see types.h
  if (ref_type != t.type) {
    ref_mpi = patterned(bytes);
    std::vector<unsigned char> s2 = input;
    if (in_place) memcpy(ref_mpi.data(), input.data(), bytes);
    if (PMPI_Allreduce(in_place ? MPI_IN_PLACE : s2.data(), ref_mpi.data(), n, t.type, op, c.comm) != MPI_SUCCESS)
      ref_mpi.clear();
  }

  // The call under test on the layout's buffers.
  Arena a(l, !in_place, bytes, bytes, seed);
  std::vector<unsigned char> init = in_place ? input : patterned(bytes);
  a.setup(input.data(), init.data());
  const int rc_got = MPI_Allreduce(in_place ? MPI_IN_PLACE : a.send(), a.recv(), n, t.type, op, c.comm);
  std::vector<unsigned char> got;
  std::string outside;
  const bool untouched = a.read_back(&got, &outside);

  bool ok = check_rc(rc_ref, "reference PMPI_Allreduce", ctx);
  ok = check_rc(rc_got, "MPI_Allreduce", ctx) && ok;
  if (ok) {
    if (!untouched) {
      report("MPI_Allreduce wrote outside its receive buffer: %s: %s", outside.c_str(), ctx.c_str());
      ok = false;
    }
    size_t first = 0;
    std::string detail;
    size_t bad = t.compare(got.data(), ref.data(), count, op, c.size, &first, &detail);
    if (bad && !ref_mpi.empty()) {
      size_t first2 = 0;
      std::string detail2;
      if (t.compare(got.data(), ref_mpi.data(), count, op, c.size, &first2, &detail2) == 0) bad = 0;
    }
    if (bad) {
      report("MISMATCH %s: %zu of %zu elements differ from PMPI_Allreduce on host copies; first "
             "index %zu: %s",
             ctx.c_str(), bad, count, first, detail.c_str());
      ok = false;
    }
  }
  if (t.group == Group::Floating || t.group == Group::Complex) {
    const bool same = same_on_all_ranks(rc_got == MPI_SUCCESS ? value_hash(t, got.data(), count) : 0, c.comm);
    if (ok && !same) {
      report("MPI_Allreduce results differ between ranks of the communicator: %s", ctx.c_str());
      ok = false;
    }
  }
  return ok;
}

bool dev_reduce_scatter_block(const TestComm &c, const TypeDesc &t, MPI_Op op, size_t count, bool in_place,
                              uint32_t seed, const Layout &l) {
  const std::string ctx = where("MPI_Reduce_scatter_block", t.name, op_name(op), count, c, -1, in_place, l);
  set_phase("%s", ctx.c_str());
  const size_t block = count * t.extent, total = block * static_cast<size_t>(c.size);
  const size_t rbytes = in_place ? total : block;
  const int n = static_cast<int>(count);

  std::vector<unsigned char> input(total + kGuardBytes, 0);
  t.fill(input.data(), count * static_cast<size_t>(c.size), world_rank(), seed, op);

  // Reference: PMPI on host copies.
  const MPI_Datatype ref_type = reference_type(t, op);
  std::vector<unsigned char> ref_send = input, ref = patterned(rbytes);
  if (in_place) memcpy(ref.data(), input.data(), total);
  const int rc_ref =
      PMPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : ref_send.data(), ref.data(), n, ref_type, op, c.comm);
  std::vector<unsigned char> ref_mpi;  // the MPI's own (wrong) answer, see types.h
  if (ref_type != t.type) {
    ref_mpi = patterned(rbytes);
    std::vector<unsigned char> s2 = input;
    if (in_place) memcpy(ref_mpi.data(), input.data(), total);
    if (PMPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : s2.data(), ref_mpi.data(), n, t.type, op, c.comm) !=
        MPI_SUCCESS)
      ref_mpi.clear();
  }

  // The call under test on the layout's buffers (in place: the receive buffer holds the
  // input, the result is its first block; only that block is compared).
  Arena a(l, !in_place, total, rbytes, seed);
  std::vector<unsigned char> init = in_place ? std::vector<unsigned char>(input.begin(), input.begin() + total)
                                             : patterned(rbytes);
  a.setup(input.data(), init.data());
  const int rc_got = MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : a.send(), a.recv(), n, t.type, op, c.comm);
  std::vector<unsigned char> got;
  std::string outside;
  const bool untouched = a.read_back(&got, &outside);

  bool ok = check_rc(rc_ref, "reference PMPI_Reduce_scatter_block", ctx);
  ok = check_rc(rc_got, "MPI_Reduce_scatter_block", ctx) && ok;
  if (ok) {
    if (!untouched) {
      report("MPI_Reduce_scatter_block wrote outside its receive buffer: %s: %s", outside.c_str(), ctx.c_str());
      ok = false;
    }
    size_t first = 0;
    std::string detail;
    size_t bad = t.compare(got.data(), ref.data(), count, op, c.size, &first, &detail);
    if (bad && !ref_mpi.empty()) {
      size_t first2 = 0;
      std::string detail2;
      if (t.compare(got.data(), ref_mpi.data(), count, op, c.size, &first2, &detail2) == 0) bad = 0;
    }
    if (bad) {
      report("MISMATCH %s: %zu of %zu elements differ from PMPI_Reduce_scatter_block on host copies; first "
             "index %zu: %s",
             ctx.c_str(), bad, count, first, detail.c_str());
      ok = false;
    }
  }
  return ok;
}

bool dev_allreduce_derived(const TestComm &c, MPI_Datatype type, const std::string &tname,
                           const TypeDesc &base, MPI_Op op, MPI_Op fill_op, size_t count,
                           bool in_place, uint32_t seed, const Layout &l) {
  const std::string ctx = where("MPI_Allreduce", tname, op_name(op), count, c, -1, in_place, l);
  set_phase("%s", ctx.c_str());
  MPI_Aint lb = 0, ext = 0;
  PMPI_Type_get_extent(type, &lb, &ext);
  const size_t extent = static_cast<size_t>(ext);
  const size_t bytes = count * extent;
  const int n = static_cast<int>(count);

  std::vector<unsigned char> input(bytes + kGuardBytes, 0);
  base.fill(input.data(), bytes / base.extent, world_rank(), seed, fill_op);  // holes too

  std::vector<unsigned char> ref_send = input, ref = patterned(bytes);
  if (in_place) memcpy(ref.data(), input.data(), bytes);
  const int rc_ref = PMPI_Allreduce(in_place ? MPI_IN_PLACE : ref_send.data(), ref.data(), n, type, op, c.comm);

  Arena a(l, !in_place, bytes, bytes, seed);
  std::vector<unsigned char> init = in_place ? input : patterned(bytes);
  a.setup(input.data(), init.data());
  const int rc_got = MPI_Allreduce(in_place ? MPI_IN_PLACE : a.send(), a.recv(), n, type, op, c.comm);
  std::vector<unsigned char> got;
  std::string outside;
  const bool untouched = a.read_back(&got, &outside);

  bool ok = check_rc(rc_ref, "reference PMPI_Allreduce", ctx);
  ok = check_rc(rc_got, "MPI_Allreduce", ctx) && ok;
  if (!ok) return false;
  if (!untouched) {
    report("MPI_Allreduce wrote outside its receive buffer: %s: %s", outside.c_str(), ctx.c_str());
    ok = false;
  }
  const std::vector<unsigned char> mask = significant_bytes(type);
  size_t bad_data = 0, bad_holes = 0, first_data = 0, first_hole = 0;
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] == ref[i]) continue;
    if (mask[i % extent]) {
      if (!bad_data++) first_data = i;
    } else if (!bad_holes++) {
      first_hole = i;
    }
  }
  if (bad_data) {
    size_t e = first_data / extent;
    report("MISMATCH %s: %zu data byte(s) differ from PMPI_Allreduce on host copies; first in "
           "element %zu: got %s, expected %s (hex)",
           ctx.c_str(), bad_data, e, hex_element(got.data(), e, extent).c_str(),
           hex_element(ref.data(), e, extent).c_str());
    ok = false;
  }
  if (bad_holes) {
    report("MPI_Allreduce changed %zu byte(s) in the holes of the datatype (PMPI leaves them as "
           "they were); first at byte %zu: %s",
           bad_holes, first_hole, ctx.c_str());
    ok = false;
  }
  return ok;
}

bool dev_bcast(const TestComm &c, const DataSpec &d, size_t count, int root, uint32_t seed,
               const Layout &l) {
  const std::string ctx = where("MPI_Bcast", d.name, nullptr, count, c, root, false, l);
  set_phase("%s", ctx.c_str());
  const size_t bytes = count * d.extent;
  const int n = static_cast<int>(count);

  // The root's data, and different data on the other ranks (it must be overwritten).
  std::vector<unsigned char> init = patterned(bytes);
  d.fill(init.data(), count, c.rank == root ? -1 : world_rank(), seed);
  std::vector<unsigned char> ref = init;
  const int rc_ref = PMPI_Bcast(ref.data(), n, d.type, root, c.comm);

  Arena a(l, false, 0, bytes, seed);
  a.setup(nullptr, init.data());
  const int rc_got = MPI_Bcast(a.recv(), n, d.type, root, c.comm);
  std::vector<unsigned char> got;
  std::string outside;
  const bool untouched = a.read_back(&got, &outside);

  bool ok = check_rc(rc_ref, "reference PMPI_Bcast", ctx);
  ok = check_rc(rc_got, "MPI_Bcast", ctx) && ok;
  if (!ok) return false;
  if (!untouched) {
    report("MPI_Bcast wrote outside its buffer: %s: %s", outside.c_str(), ctx.c_str());
    ok = false;
  }
  size_t first = 0;
  const size_t bad = compare_masked(got.data(), ref.data(), count, d.extent, d.mask, &first);
  if (bad) {
    report("MISMATCH %s: %zu of %zu elements differ from PMPI_Bcast on host copies; first index "
           "%zu: got %s, expected %s (hex)",
           ctx.c_str(), bad, count, first, hex_element(got.data(), first, d.extent).c_str(),
           hex_element(ref.data(), first, d.extent).c_str());
    ok = false;
  }
  return ok;
}

bool dev_allgather(const TestComm &c, const DataSpec &send, size_t send_count, const DataSpec &recv,
                   size_t recv_count, bool in_place, uint32_t seed, const Layout &l) {
  const std::string tname = send.name == recv.name ? send.name : send.name + "->" + recv.name;
  std::string ctx = where("MPI_Allgather", tname, nullptr, recv_count, c, -1, in_place, l);
  if (send.name != recv.name) ctx += " sendcount=" + std::to_string(send_count);
  set_phase("%s", ctx.c_str());
  const size_t block = recv_count * recv.extent;
  const size_t bytes = block * static_cast<size_t>(c.size);
  const size_t send_bytes = send_count * send.extent;

  std::vector<unsigned char> input(send_bytes + kGuardBytes, 0);
  send.fill(input.data(), send_count, world_rank(), seed);
  std::vector<unsigned char> init = patterned(bytes);
  if (in_place)  // this rank's contribution is its own block of the receive buffer
    recv.fill(init.data() + block * static_cast<size_t>(c.rank), recv_count, world_rank(), seed);
  std::vector<unsigned char> ref = init, ref_send = input;
  const int rc_ref =
      in_place ? PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref.data(), static_cast<int>(recv_count),
                                recv.type, c.comm)
               : PMPI_Allgather(ref_send.data(), static_cast<int>(send_count), send.type, ref.data(),
                                static_cast<int>(recv_count), recv.type, c.comm);

  Arena a(l, !in_place, send_bytes, bytes, seed);
  a.setup(input.data(), init.data());
  const int rc_got =
      in_place ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a.recv(), static_cast<int>(recv_count),
                               recv.type, c.comm)
               : MPI_Allgather(a.send(), static_cast<int>(send_count), send.type, a.recv(),
                               static_cast<int>(recv_count), recv.type, c.comm);
  std::vector<unsigned char> got;
  std::string outside;
  const bool untouched = a.read_back(&got, &outside);

  bool ok = check_rc(rc_ref, "reference PMPI_Allgather", ctx);
  ok = check_rc(rc_got, "MPI_Allgather", ctx) && ok;
  if (!ok) return false;
  if (!untouched) {
    report("MPI_Allgather wrote outside its receive buffer: %s: %s", outside.c_str(), ctx.c_str());
    ok = false;
  }
  const size_t total = recv_count * static_cast<size_t>(c.size);
  size_t first = 0;
  const size_t bad = compare_masked(got.data(), ref.data(), total, recv.extent, recv.mask, &first);
  if (bad) {
    const size_t from = recv_count ? first / recv_count : 0;
    report("MISMATCH %s: %zu of %zu elements differ from PMPI_Allgather on host copies; first "
           "index %zu (block of comm rank %zu): got %s, expected %s (hex)",
           ctx.c_str(), bad, total, first, from, hex_element(got.data(), first, recv.extent).c_str(),
           hex_element(ref.data(), first, recv.extent).c_str());
    ok = false;
  }
  return ok;
}

bool dev_check_case(const TestComm &c, const CollCase &k, const Layout &l) {
  const std::string ctx = k.ctx + " [" + l.describe() + "]";
  set_phase("%s", ctx.c_str());
  std::vector<unsigned char> ref_send = k.send, ref = k.recv;
  ref_send.resize(k.send.size() + kGuardBytes);
  ref.resize(k.recv.size() + kGuardBytes);
  const int rc_ref = k.call(ref_send.data(), ref.data(), true);
  const std::vector<unsigned char> alt = mpi_own_result(k);
  const bool has_send = !k.send.empty();
  Arena a(l, has_send, k.send.size(), k.recv.size(), next_seed());
  a.setup(k.send.data(), k.recv.data());
  const int rc_got = k.call(has_send ? a.send() : nullptr, a.recv(), false);
  std::vector<unsigned char> got;
  std::string outside;
  const bool untouched = a.read_back(&got, &outside);
  bool ok = check_rc(rc_ref, "reference PMPI_*", ctx);
  ok = check_rc(rc_got, "the call under test", ctx) && ok;
  if (!ok) return false;
  if (!untouched) {
    report("wrote outside its receive buffer: %s: %s", outside.c_str(), ctx.c_str());
    ok = false;
  }
  return compare_recv(k, ctx, got.data(), ref.data(), alt) && ok;
}

}  // namespace gpu
}  // namespace gct
