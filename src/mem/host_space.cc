#include "mem/host_space.h"

#include "boot/bootstrap.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <ctime>
#include <string>

#include "base/log.h"
#include "base/wait.h"
#include "kernels/host_reduce.h"

namespace gcoll {

namespace {

constexpr std::size_t kLine = 64;

// One cache line per rank: its sync epoch, pid (for dead-peer detection), and the epoch
// of the sync that reports its failure in a call (mark_failed; 0: none yet).
struct alignas(kLine) Control {
  std::atomic<std::uint64_t> epoch;
  std::int64_t pid;
  std::atomic<std::uint64_t> failed_at;
};

class HostSpace final : public MemSpace {
 public:
  HostSpace(int lr, int n, const HostSpaceOptions &opt, void *base, std::size_t bytes)
      : lr_(lr), n_(n), opt_(opt), base_(static_cast<char *>(base)), bytes_(bytes) {}
  ~HostSpace() override { munmap(base_, bytes_); }

  int local_rank() const override { return lr_; }
  int local_size() const override { return n_; }
  std::size_t capacity() const override { return opt_.bank_bytes; }

  Status publish(std::size_t at, const void *src, std::size_t bytes) override {
    if (at + bytes > opt_.bank_bytes) return Status::ErrInternal;
    if (bytes) std::memcpy(bank(lr_, epoch_ & 1) + at, src, bytes);
    bytes_published += bytes;
    return Status::Ok;
  }
  Status sync() override {
    const std::uint64_t e = ++epoch_;
    control(lr_)->epoch.store(e, std::memory_order_release);  // publishes failed_at too
    WaitPolicy w;
    for (int p = 0; p < n_; ++p) {
      if (p == lr_) continue;
      Status st = wait_for(p, e, w);
      if (!ok(st)) return st;
    }
    // Epochs advance alike on every rank, so a failure reported at a sync of this call
    // (after call_start_) and not after this one is seen by every rank at the same sync.
    for (int p = 0; p < n_; ++p) {
      const std::uint64_t f = control(p)->failed_at.load(std::memory_order_acquire);
      if (f > call_start_ && f <= e) return Status::ErrInternal;
    }
    return Status::Ok;
  }

  void begin_call() override { call_start_ = epoch_; }

  void mark_failed() override {
    Control *c = control(lr_);
    if (c->failed_at.load(std::memory_order_relaxed) <= call_start_)  // the first failure of the call
      c->failed_at.store(epoch_ + 1, std::memory_order_relaxed);      // reported by my next sync
  }

  const void *peer(int lr) const override { return bank(lr, (epoch_ - 1) & 1); }

  Status reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count) override {
    return host_reduce(t, op, dst, srcs, m, count);
  }
  Status copy(void *dst, const void *src, std::size_t bytes) override {
    if (bytes && dst != src) std::memcpy(dst, src, bytes);
    return Status::Ok;
  }

 private:
  Control *control(int lr) const { return reinterpret_cast<Control *>(base_) + lr; }
  char *bank(int lr, std::uint64_t which) const {
    const std::size_t data0 = n_ * sizeof(Control);
    return base_ + data0 + (static_cast<std::size_t>(lr) * 2 + which) * opt_.bank_bytes;
  }

  // Waits for peer p's epoch e, pausing by the wait policy (src/base/wait.h: spin, then
  // yield or sleep, so that ranks that outnumber the cores let their peers run); one
  // policy spans a whole sync. Checks that the peer is alive about once a second.
  Status wait_for(int p, std::uint64_t e, WaitPolicy &w) {
    const auto start = std::chrono::steady_clock::now();
    auto next_check = start + std::chrono::seconds(1);
    for (;;) {
      if (control(p)->epoch.load(std::memory_order_acquire) >= e) return Status::Ok;
      if (opt_.progress) opt_.progress();
      if (while_waiting) {
        Status st = while_waiting();
        if (!ok(st)) return st;
      }
      w.pause();
      if ((w.polls() & 255) != 0) continue;
      const auto now = std::chrono::steady_clock::now();
      if (now < next_check) continue;
      next_check = now + std::chrono::seconds(1);
      const pid_t pid = static_cast<pid_t>(control(p)->pid);
      if (kill(pid, 0) != 0 && errno == ESRCH) {
        GCOLL_WARN("node peer %d (pid %d) has died; the collective cannot complete", p, static_cast<int>(pid));
        return Status::ErrTransport;
      }
      if (opt_.timeout_s > 0 && std::chrono::duration<double>(now - start).count() > opt_.timeout_s) {
        GCOLL_WARN("node peer %d did not arrive within %.0f s (GCOLL_TIMEOUT)", p, opt_.timeout_s);
        return Status::ErrTransport;
      }
    }
  }

  int lr_, n_;
  HostSpaceOptions opt_;
  char *base_;
  std::size_t bytes_;
  std::uint64_t epoch_ = 0;
  std::uint64_t call_start_ = 0;  // epoch_ at the current call's begin_call()
};

std::atomic<unsigned> g_segment_counter{0};
// Segment names: /dev/shm/gcoll.<creator pid>.<counter>.<random> (cleanup_segments parses them).
constexpr const char *kSegmentPrefix = "gcoll.";

}  // namespace

Status create_host_space(MPI_Comm node_comm, const HostSpaceOptions &opt, std::unique_ptr<MemSpace> *out) {
  int lr = 0, n = 0;
  if (PMPI_Comm_rank(node_comm, &lr) != MPI_SUCCESS || PMPI_Comm_size(node_comm, &n) != MPI_SUCCESS)
    return Status::ErrComm;
  const std::size_t bytes = n * sizeof(Control) + static_cast<std::size_t>(n) * 2 * opt.bank_bytes;
  MpiBootstrap boot(node_comm, false);  // the agreement path (setup: not counted as hidden calls)
  // The CPUs the node's ranks may run on together: more ranks than that, and the waits
  // must give their CPU away (src/base/wait.h).
  {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) {
      const int on = wait_process_cpus();
      for (int c = 0; c < on && c < CPU_SETSIZE; ++c) CPU_SET(c, &cpus);
    }
    // Their union (every rank's set, OR-ed here).
    std::vector<cpu_set_t> all(static_cast<std::size_t>(n));
    if (!ok(boot.allgather(&cpus, sizeof cpus, all.data()))) return Status::ErrComm;
    for (const cpu_set_t &c : all) CPU_OR(&cpus, &cpus, &c);
    wait_note_node(n, CPU_COUNT(&cpus));
  }

  // Local rank 0 creates the segment; everyone learns its name (empty name: failure).
  char name[64] = "";
  if (lr == 0) {
    // Unique per job and communicator: my pid (live processes differ), a counter (my
    // communicators differ), and a random part (processes of other pid namespaces that
    // share /dev/shm, e.g. containers, may have my pid). O_EXCL: never someone else's.
    std::uint32_t nonce = 0;
    if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof nonce))
      nonce = static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::snprintf(name, sizeof name, "/%s%d.%u.%08x", kSegmentPrefix, static_cast<int>(getpid()), g_segment_counter++,
                  static_cast<unsigned>(nonce));
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    int err = fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0 ? errno : 0;
    // tmpfs gives pages on first touch: a segment larger than what /dev/shm has left (a
    // container's default is 64 MiB) would map fine and then kill the rank with SIGBUS.
    // Reserve the pages now, so that a full /dev/shm is a setup failure instead.
    if (!err) {
      const int fa = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
      if (fa != 0 && fa != EOPNOTSUPP && fa != EINVAL) err = fa;  // (a file system without it: as before)
    }
    if (err) {
      struct statvfs vfs {};
      const bool known = statvfs("/dev/shm", &vfs) == 0;
      GCOLL_WARN("the node's shared memory segment (%zu bytes: 2 banks of GCOLL_CHUNK_SIZE for each of %d ranks, plus "
                 "flags) cannot be had in /dev/shm (%s; %s%llu bytes free there): this communicator uses the MPI's "
                 "collectives on every rank. Give the job more shared memory (e.g. docker run --shm-size) or set a "
                 "smaller GCOLL_CHUNK_SIZE",
                 bytes, n, std::strerror(err), known ? "" : "unknown, ",
                 known ? static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize : 0ULL);
      if (fd >= 0) {
        close(fd);
        shm_unlink(name);
      }
      name[0] = '\0';
    } else {
      close(fd);
    }
  }
  if (!ok(boot.bcast(name, sizeof name, 0))) {
    if (lr == 0 && name[0]) shm_unlink(name);
    return Status::ErrComm;
  }
  if (name[0] == '\0') return Status::ErrNoMem;

  void *base = MAP_FAILED;
  const int fd = shm_open(name, O_RDWR, 0600);
  if (fd >= 0) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
  }
  int mapped = base != MAP_FAILED, all_mapped = 0;
  if (mapped) {
    auto *c = reinterpret_cast<Control *>(static_cast<char *>(base) + lr * sizeof(Control));
    c->epoch.store(0, std::memory_order_relaxed);
    c->pid = getpid();
    c->failed_at.store(0, std::memory_order_relaxed);
  }
  // Everyone mapped (or failed): unlink now, so a killed job leaves nothing behind.
  long long unmapped = mapped ? 0 : 1;
  const Status rc = boot.max(&unmapped, 1);
  all_mapped = unmapped == 0;
  if (lr == 0) shm_unlink(name);
  if (!ok(rc) || !all_mapped) {
    if (mapped) munmap(base, bytes);
    GCOLL_WARN("could not map the node's shared memory segment %s", name);
    return Status::ErrNoMem;
  }
  out->reset(new HostSpace(lr, n, opt, base, bytes));
  return Status::Ok;
}

int cleanup_segments(double min_age_s, bool dry_run, std::FILE *out) {
  DIR *d = opendir("/dev/shm");
  if (!d) return -1;
  const std::size_t plen = std::strlen(kSegmentPrefix);
  const time_t now = time(nullptr);
  int n = 0;
  while (const dirent *e = readdir(d)) {
    if (std::strncmp(e->d_name, kSegmentPrefix, plen) != 0) continue;
    char *end = nullptr;
    const long pid = std::strtol(e->d_name + plen, &end, 10);
    if (end == e->d_name + plen || *end != '.' || pid <= 0) continue;  // not one of ours
    const bool alive = kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
    const std::string path = std::string("/dev/shm/") + e->d_name;
    struct stat sb {};
    if (stat(path.c_str(), &sb) != 0) continue;
    const double age = difftime(now, sb.st_mtime);
    if (alive || age < min_age_s) continue;
    const bool removed = dry_run || shm_unlink((std::string("/") + e->d_name).c_str()) == 0;
    if (out)
      std::fprintf(out, "%s %s (%lld bytes, creator pid %ld not alive, %.0f s old)%s%s\n",
                   dry_run ? "would remove" : removed ? "removed" : "could not remove", path.c_str(),
                   static_cast<long long>(sb.st_size), pid, age, removed ? "" : ": ",
                   removed ? "" : std::strerror(errno));
    if (removed) ++n;
  }
  closedir(d);
  return n;
}

}  // namespace gcoll
