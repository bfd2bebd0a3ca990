#include "base/config.h"

#include "base/wait.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

extern char **environ;

namespace gcoll {

struct Value {
  bool b = false;
  long long i = 0;
  std::uint64_t size = 0;
  int choice = 0;  // index into the Enum's choices
  std::string s;
};

namespace {

std::vector<std::string> split_choices(const char *choices) {
  std::vector<std::string> out;
  if (!choices) return out;
  std::string cur;
  for (const char *p = choices; *p; ++p) {
    if (*p == '|') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  out.push_back(cur);
  return out;
}

std::string lower(std::string s) {
  for (auto &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool parse_range(const char *choices, long long *lo, long long *hi) {
  if (!choices) return false;
  const char *colon = std::strchr(choices, ':');
  if (!colon) return false;
  *lo = std::strtoll(choices, nullptr, 10);
  *hi = std::strtoll(colon + 1, nullptr, 10);
  return true;
}

// Accepted values, for messages.
std::string accepted(const SettingDef &d) {
  switch (d.type) {
    case SettingType::Bool: return "0|1 (also no|yes, off|on, false|true)";
    case SettingType::Int: {
      long long lo, hi;
      if (parse_range(d.choices, &lo, &hi))
        return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      return "an integer";
    }
    case SettingType::Size: {
      long long lo, hi;
      std::string r = "a byte count with optional K, M, G suffix (e.g. 4096, 64K, 1M)";
      if (parse_range(d.choices, &lo, &hi)) r += " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      return r;
    }
    case SettingType::Enum: return d.choices;
    case SettingType::String: return "any text";
  }
  return "";
}

// Parses `text` for setting `d`; on success fills `v` and returns true.
bool parse_value(const SettingDef &d, const std::string &raw, Value *v) {
  const std::string text = trim(raw);
  switch (d.type) {
    case SettingType::Bool: return parse_bool(text, &v->b);
    case SettingType::Int: {
      long long lo, hi;
      if (!parse_int(text, &v->i)) return false;
      return !parse_range(d.choices, &lo, &hi) || (v->i >= lo && v->i <= hi);
    }
    case SettingType::Size: {
      long long lo, hi;
      if (!parse_size(text, &v->size)) return false;
      return !parse_range(d.choices, &lo, &hi) ||
             (v->size >= static_cast<std::uint64_t>(lo) && v->size <= static_cast<std::uint64_t>(hi));
    }
    case SettingType::Enum: {
      const auto options = split_choices(d.choices);
      for (size_t k = 0; k < options.size(); ++k) {
        if (lower(options[k]) == lower(text)) {
          v->choice = static_cast<int>(k);
          v->s = options[k];
          return true;
        }
      }
      return false;
    }
    case SettingType::String: v->s = raw; return true;
  }
  return false;
}

// Canonical string form of a parsed value (what gcoll_info shows).
std::string format_value(const SettingDef &d, const Value &v) {
  switch (d.type) {
    case SettingType::Bool: return v.b ? "1" : "0";
    case SettingType::Int: return std::to_string(v.i);
    case SettingType::Size: return std::to_string(v.size);
    case SettingType::Enum: return v.s;
    case SettingType::String: return v.s;
  }
  return "";
}

const std::vector<SettingDef> kSettings = {
    {"GCOLL_ENABLE", SettingType::Bool, "1", nullptr,
     "0: every call goes straight to the MPI's PMPI_* function; the library does nothing else "
     "(no stats). Must be the same on every rank: a rank that is off takes part in none of gcoll's agreements "
     "(the ranks that are on fail every call on a communicator where they see it).",
     [](Config &c, const Value &v) { c.enable = v.b; },
     "cannot be agreed (a rank that is off takes part in nothing of gcoll): must be set alike on every rank"},
    {"GCOLL_DEBUG", SettingType::Enum, "WARN", "WARN|INFO|TRACE",
     "Log level on stderr, lines prefixed with [gcoll host:rank]. TRACE logs every call.",
     [](Config &c, const Value &v) { c.debug = static_cast<LogLevel>(v.choice); }},
    {"GCOLL_STATS_FILE", SettingType::String, "", nullptr,
     "If set, rank 0 of MPI_COMM_WORLD writes a JSON summary of all ranks' calls to this path "
     "at MPI_Finalize.",
     [](Config &c, const Value &v) { c.stats_file = v.s; }},
    {"GCOLL_HOST_BUFFERS", SettingType::Enum, "mpi", "mpi|engine",
     "Host-memory calls: mpi = the MPI's own collectives; engine = gcoll's node-aware algorithms "
     "(shared memory inside a node, UCX between nodes).",
     [](Config &c, const Value &v) { c.host_engine = v.choice == 1; },
     "host buffers go to the MPI where any rank says mpi"},
    {"GCOLL_PROGRESS_THREAD", SettingType::Enum, "off", "on|off",
     "Nonblocking and persistent collectives (MPI_Iallreduce, ...) through gcoll's engine (off by default until "
     "a GPU run validates it without MPS and with persistent calls): on = where the engine takes the blocking form's "
     "call (device buffers, or host buffers with GCOLL_HOST_BUFFERS=engine) on one node (across nodes too where "
     "every rank's MPI granted MPI_THREAD_MULTIPLE), a "
     "thread per communicator (started at its first such call, ended with it; it calls the MPI only under "
     "MPI_THREAD_MULTIPLE) runs "
     "them while the application computes; off = they go to the MPI's own nonblocking call (device buffers "
     "staged through host memory). Persistent collectives (MPI_Allreduce_init, ...) alike, decided at each "
     "MPI_Start.",
     [](Config &c, const Value &v) { c.progress_thread = v.choice == 0; },
     "nonblocking calls go to the MPI (device buffers staged) where any rank says off"},
    {"GCOLL_STREAM_DEVICE", SettingType::Enum, "off", "on|off",
     "Stream-ordered collectives (MPIX_Allreduce_enqueue, MPIX_Bcast_enqueue, MPIX_Allgather_enqueue) on the GPU "
     "(off by default until a GPU run validates it): on = on a stream communicator whose ranks are all on one node, "
     "with MPS or a GPU per rank, a call on device buffers of a predefined type (and op) is one kernel per rank "
     "queued on the application's stream (the fused one-shot, its op number kept on the device, so CUDA graphs "
     "replay it), no host thread involved; off = every enqueued call runs on gcoll's proxy thread, the host "
     "driving the collective while the stream waits. Decided at MPIX_Stream_comm_create.",
     [](Config &c, const Value &v) { c.stream_device = v.choice == 0; },
     "stream communicators run every enqueued call on the proxy thread where any rank says off"},
    {"GCOLL_RANKS_PER_NODE", SettingType::Int, "0", "0:1048576",
     "0: nodes are the machines. k > 0: cut each machine into virtual nodes of k consecutive local ranks "
     "(runs the multi-node paths on one machine).",
     [](Config &c, const Value &v) { c.ranks_per_node = static_cast<int>(v.i); },
     "the communicator uses the MPI (device buffers staged)"},
    {"GCOLL_TUNE", SettingType::String, "", nullptr,
     "Algorithm selection rules tried before the defaults, e.g. allreduce:0-64K:@rd,allreduce:64K-inf:@ring. "
     "Grammar: coll:lo-hi:@algorithm, comma-separated, sizes with K/M/G or inf, [lo, hi) in message bytes "
     "(allgather: the per-rank block). gcoll_info lists every algorithm with its default size range and the "
     "rules in effect. Invalid rules are reported and ignored whole.",
     [](Config &c, const Value &v) { c.tune = v.s; },
     "the communicator uses the MPI (device buffers staged)"},
    {"GCOLL_HOST_TUNE", SettingType::String, "default", nullptr,
     "Host buffers through the engine (GCOLL_HOST_BUFFERS=engine): the sizes that go to the MPI's own collective "
     "instead, where the MPI is faster. default = the built-in crossovers (measured on 2 x 2 virtual nodes; "
     "gcoll_info lists them); off = none (the engine at every size); else rules in GCOLL_TUNE's grammar that "
     "replace the built-in ones, e.g. allgather:0-inf:@mpi,allreduce:0-4K:@mpi (scripts/tune_host.py measures "
     "them on this machine). Tried after GCOLL_TUNE, before the default rules. Invalid rules are reported and the "
     "built-in ones used.",
     [](Config &c, const Value &v) { c.host_tune = v.s; },
     "the communicator uses the MPI (device buffers staged)"},
    {"GCOLL_HOST_BUSY_MPI", SettingType::Size, "256K", "0:1099511627776",
     "Host buffers through the engine, on cores shared with other processes: calls of this many bytes and more "
     "(the selection's bytes, as GCOLL_TUNE's; reduce, reduce_scatter and reduce_scatter_block at any size below "
     "64 KiB and none from 64 KiB: there their engine beats the busy MPI) go "
     "to the MPI's own collective while any "
     "rank of the communicator finds its cores shared (GCOLL_SHARED_CORES). The ranks agree on that at one call in "
     "16 of these sizes (one small hidden allreduce), so every rank takes the same path. Where other work holds "
     "the cores, large engine calls used to slow down more than the MPI's (docs/host-engine-vs-mpi.md). 0 = never. "
     "Not with GCOLL_HOST_TUNE=off (the engine at every size) nor where a GCOLL_TUNE rule covers the size.",
     [](Config &c, const Value &v) { c.host_busy_mpi = v.size; },
     "the communicator uses the MPI (device buffers staged)"},
    {"GCOLL_COST_MODEL", SettingType::Bool, "1", nullptr,
     "1: on nodes of several GPUs, device-buffer calls that no GCOLL_TUNE rule takes get the algorithm the cost model "
     "predicts fastest from the node's links (docs/cost-model.md; gcoll_info --topology prints its picks). 0: the "
     "default rules. A communicator where some rank sets 0 runs without the model (agreed at its first device call).",
     [](Config &c, const Value &v) { c.cost_model = v.b; }},
    {"GCOLL_CHUNK_SIZE", SettingType::Size, "1M", "4096:1073741824",
     "Pipeline chunk of the engine; also each rank's shared-memory bank (node segment = 2 x ranks x chunk).",
     [](Config &c, const Value &v) { c.chunk_size = v.size; },
     "the communicator uses the MPI (device buffers staged)"},
    {"GCOLL_ALLREDUCE_COMPRESS", SettingType::Enum, "off", "off|bf16|fp16|fp8",
     "MPI_Allreduce of MPI_FLOAT or MPI_DOUBLE with MPI_SUM through the engine (host buffers: "
     "GCOLL_HOST_BUFFERS=engine; device buffers: encoded on the GPU) on several nodes: the data between nodes "
     "travels compressed, bf16 or fp16 (round to nearest even; fp16 overflows to inf) or fp8 (e4m3 with a float "
     "scale per 256 elements), along a ring; sums in full precision, every rank gets the same bits. Lossy: "
     "docs/compression.md gives the error bound of each format. Other types, ops, calls on one node and device "
     "calls along NVLink rings (nvring_hier) are never compressed. Per communicator: the info key "
     "gcoll_allreduce_compress (MPI_Comm_set_info, MPI_Comm_dup_with_info) overrides it.",
     [](Config &c, const Value &v) { c.allreduce_compress = v.choice; },
     "off (uncompressed)"},
    {"GCOLL_TIMEOUT", SettingType::Int, "0", "0:86400",
     "Seconds an engine call waits for a peer before failing with MPI_ERR_OTHER; 0 = wait as long as the "
     "peer lives (dead peers are detected either way).",
     [](Config &c, const Value &v) { c.timeout_s = static_cast<int>(v.i); },
     "the smallest nonzero value of the ranks"},
    {"GCOLL_WAIT", SettingType::Enum, "auto", "auto|spin|yield|sleep",
     "How a rank waits for its peers (engine syncs, device work): spin = poll without giving the core away "
     "(dedicated cores); yield = sched_yield between polls; sleep = a few yields, then sleeps of 16 to 128 us; "
     "auto = sleep where ranks outnumber cores (this job's ranks on the node > the CPUs they may run on, "
     "OMPI_MCA_mpi_yield_when_idle=1, or more runnable threads than CPUs on the machine: other jobs), else "
     "yield, and sleep once a wait lasts 1 ms.",
     [](Config &c, const Value &v) { c.wait_mode = static_cast<WaitMode>(v.choice); }},
    {"GCOLL_SHARED_CORES", SettingType::Enum, "auto", "auto|yes|no",
     "Whether other processes (another job, CPU-bound helpers) share this rank's cores, for GCOLL_HOST_BUSY_MPI. "
     "auto = seen by the waits: a sched_yield that came back after 1 ms or more within the last second (the core "
     "went to someone else's thread for its whole time slice; this job's own ranks hand it back at once, so "
     "ranks that merely outnumber the cores do not count); yes = always (a batch system that packs jobs onto "
     "shared cores); no = never (dedicated cores).",
     [](Config &c, const Value &v) { c.shared_cores = static_cast<int>(v.choice); }},
    {"GCOLL_WAIT_SLICE", SettingType::Int, "100", "0:100000",
     "Microseconds. On shared cores (GCOLL_SHARED_CORES), an engine call (from its start, or from its first "
     "sleep if it finds the cores shared) and a call gcoll hands to the MPI ask the kernel for this time slice "
     "for the calling thread until the call returns (sched_setattr's sched_runtime; Linux 6.12 and later: a woken thread whose slice is shorter than "
     "the running one's takes the core at once instead of after that thread's slice), then gives the thread its "
     "own slice back. 0 = never; the kernel keeps it within 100-100000.",
     [](Config &c, const Value &v) { c.wait_slice_us = static_cast<int>(v.i); }},
    {"GCOLL_TOPO_FILE", SettingType::String, "", nullptr,
     "A node topology file in NCCL's XML dialect (what NCCL_TOPO_FILE takes and NCCL_TOPO_DUMP_FILE writes; "
     "clouds ship them for their VMs): its GPUs (by PCI bus id), NVLinks, PCI tree, NUMA nodes and NICs "
     "override what gcoll detects. With GCOLL_CUDA=emulate, the emulated GPU has the file's GPUs. Empty: "
     "detection (CUDA, hwloc, NVML).",
     [](Config &c, const Value &v) { c.topo_file = v.s; }},
    {"GCOLL_TOPO_DUMP_FILE", SettingType::String, "", nullptr,
     "Writes the node topology gcoll uses (detected, or read from GCOLL_TOPO_FILE) to this file in NCCL's "
     "XML dialect, once per process (%h: host name, %p: process id).",
     [](Config &c, const Value &v) { c.topo_dump_file = v.s; }},
    {"GCOLL_P2P_LEVEL", SettingType::Enum, "PXB", "LOC|NVL|PIX|PXB|PHB|NODE|SYS",
     "The farthest path between two GPUs over which they read each other's memory (CUDA IPC), in NCCL's and "
     "nvidia-smi topo -m's words: LOC never between different GPUs, NVL NVLink only, PIX one PCIe switch, "
     "PXB several PCIe switches (default, as NCCL), PHB through a CPU host bridge, NODE between host bridges "
     "of one NUMA node, SYS across sockets. NVLink is used at every level but LOC. GPU pairs beyond it go through host memory.",
     [](Config &c, const Value &v) { c.p2p_level = static_cast<P2pLevel>(v.choice); }},
    {"GCOLL_P2P_DISABLE", SettingType::Bool, "0", nullptr,
     "1: never P2P between different GPUs (ranks on one GPU still share it); as NCCL_P2P_DISABLE.",
     [](Config &c, const Value &v) { c.p2p_disable = v.b; }},
    {"GCOLL_P2P_CHECK", SettingType::Bool, "1", nullptr,
     "1: at a communicator's first device call, every GPU pair that may use P2P is checked with data (each rank "
     "writes a pattern through the peer's IPC mapping, the owner checks it); a pair that fails (ACS or IOMMU "
     "settings, a VM without real P2P) goes through host memory, with one warning. 0: trust the topology.",
     [](Config &c, const Value &v) { c.p2p_check = v.b; }},
    {"GCOLL_CUDA", SettingType::Enum, "auto", "auto|off|emulate",
     "auto: classify every buffer with the CUDA driver once the application's process has loaded it "
     "(libcuda.so.1) and a GPU exists; gcoll never loads the driver before the application does (until then, "
     "and without a driver, every buffer is host memory, silently). off: never touch CUDA; device buffers "
     "reach the MPI as they would without gcoll. emulate: TESTING ONLY, never for real jobs: CUDA is not used; an emulated GPU "
     "(include/gcoll/gcoll_emulate.h) stands in for it, with device memory the CPU cannot touch, IPC between "
     "processes and streams whose work runs later on worker threads; the test programs allocate from it.",
     [](Config &c, const Value &v) {
       c.cuda = v.choice != 1;
       c.cuda_emulate = v.choice == 2;
     },
     "the communicator uses the MPI (device buffers staged where a rank sees them)"},
    {"GCOLL_CUDA_ASSUME_GPU", SettingType::Bool, "0", nullptr,
     "GCOLL_CUDA=auto: a process that has not loaded libcuda.so.1 by its communicators' first calls counts "
     "as one that may hold device memory later (those communicators classify its buffers, so that device "
     "buffers are seen when they come) where an NVIDIA GPU is visible (/dev/nvidiactl, "
     "/proc/driver/nvidia/gpus, /dev/dxg); elsewhere it has host memory only. 1: everywhere (a machine whose "
     "GPU device files appear only at the first CUDA call). Either way the driver is loaded only once the "
     "application has loaded libcuda.so.1.",
     [](Config &c, const Value &v) { c.cuda_assume_gpu = v.b; }},
    {"GCOLL_EMU_DELAY", SettingType::Int, "200", "0:1000000",
     "GCOLL_CUDA=emulate only: each operation queued on an emulated stream (copy, reduction, event) waits a "
     "random 0 to this many microseconds before it runs, so that a missing wait shows as a wrong result.",
     [](Config &c, const Value &v) { c.emu_delay_us = static_cast<int>(v.i); }},
    {"GCOLL_DEVICE_BUFFERS", SettingType::Enum, "engine", "engine|staged",
     "Device-memory calls: engine = gcoll's algorithms on the GPU (CUDA IPC and kernels inside a node); "
     "staged = copy to pinned host memory, run the MPI's collective, copy back.",
     [](Config &c, const Value &v) { c.device_engine = v.choice == 0; },
     "device buffers are staged where any rank says staged"},
    {"GCOLL_UNIFORM_MEMORY", SettingType::Bool, "0", nullptr,
     "1: the application promises that in every call all ranks pass the same kind of memory (all host, or all "
     "device allocated the same way), which saves the memory-kind agreements (a small allreduce now and then, "
     "GCOLL_MEMORY_AGREE_INTERVAL) on communicators that can see a GPU. Applies only where every rank of the "
     "communicator sets it. A broken promise hangs.",
     [](Config &c, const Value &v) { c.uniform_memory = v.b; },
     "memory kinds are agreed where any rank does not promise them"},
    {"GCOLL_DEVICE_CHUNK_SIZE", SettingType::Size, "8M", "65536:4294967296",
     "Pipeline chunk of device-memory calls that do not read peers' buffers in place (small messages, "
     "cudaMallocAsync memory): each rank holds 2 banks + 4 work chunks of GPU memory per communicator, "
     "allocated at its first device call.",
     [](Config &c, const Value &v) { c.device_chunk_size = v.size; },
     "the communicator uses the MPI (device buffers staged)"},
    {"GCOLL_IPC_CACHE_SIZE", SettingType::Size, "16G", "0:1099511627776",
     "Bound on the bytes of peers' device buffers kept mapped (CUDA IPC) between calls; least recently used "
     "mappings are closed first. A stale mapping keeps the peer's freed memory alive.",
     [](Config &c, const Value &v) { c.ipc_cache_size = v.size; }},
    {"GCOLL_DEVICE_FUSED", SettingType::Enum, "off", "auto|on|off",
     "Device-memory calls on one node: one kernel per rank and call that publishes, waits for its peers in "
     "device memory and writes the result. auto: where every GPU that ranks share runs them under MPS (a "
     "time-sliced GPU would stall a waiting kernel). on: also where that cannot be told. off (default: correct on "
     "an H200 under MPS, and faster than off there, but slower than its targets; docs/gpu-validation.md): never. Agreed by the node's "
     "ranks (any off wins). Whatever it says, small calls on GPUs shared without MPS are staged.",
     [](Config &c, const Value &v) { c.device_fused = static_cast<FusedMode>(v.choice); },
     "off where any rank of a node says off, else auto where any says auto"},
    {"GCOLL_DEVICE_NET", SettingType::Enum, "auto", "auto|direct|pipelined",
     "Device-memory calls across nodes: how the bytes between nodes leave and reach GPU memory. direct: UCX "
     "sends and receives from device memory itself (GPUDirect RDMA where the NIC and driver allow); needs a "
     "UCX that reports CUDA memory support. pipelined: through pinned host memory in pieces of "
     "GCOLL_DEVICE_NET_CHUNK, the copy out of one piece, the network transfer of the one before and the copy "
     "in of the one before that in flight together. auto: direct where UCX supports CUDA memory on every rank, "
     "else pipelined. Agreed by all ranks of a communicator at its first device call (pipelined wins where "
     "direct cannot run everywhere); gcoll_info and GCOLL_DEBUG=INFO say which was chosen and why.",
     [](Config &c, const Value &v) { c.device_net = static_cast<DeviceNetMode>(v.choice); },
     "pipelined where any rank says pipelined or cannot go direct"},
    {"GCOLL_DEVICE_NET_CHUNK", SettingType::Size, "1M", "4096:1073741824",
     "Piece of the pipelined way across nodes (GCOLL_DEVICE_NET): each message between nodes travels in pieces "
     "of this size through pinned host memory, at most 4 pieces in flight per message and direction. Must be "
     "equal on every rank.",
     [](Config &c, const Value &v) { c.device_net_chunk = v.size; },
     "the communicator uses the MPI (device buffers staged)"},
    {"GCOLL_MEMORY_CACHE", SettingType::Bool, "1", nullptr,
     "1: remember what kind of memory a buffer is, so that a buffer seen before costs no driver query; kept "
     "exact by the emulated GPU's allocations and frees, and on a real GPU by UCX's memory hooks (any unmap or "
     "map in the process forgets what was remembered; only memory CUDA does not know is remembered there). "
     "0: query the driver for every buffer of every call.",
     [](Config &c, const Value &v) { c.memory_cache = v.b; }},
    {"GCOLL_MEMORY_AGREE_INTERVAL", SettingType::Int, "1024", "1:1073741824",
     "Most calls between two agreements of the ranks on the memory kinds of the calls of one communicator, "
     "collective and size class (a small hidden allreduce, where a rank can see a GPU): agreed at the first call, "
     "then after 1, 2, 4, ... calls up to this many while the answer stays the same; in between every rank "
     "follows the last answer and a rank whose buffers differ copies them. 1: agree at every call.",
     [](Config &c, const Value &v) { c.agree_interval = static_cast<int>(v.i); },
     "1: the memory kinds are agreed at every call"},
};

}  // namespace

const std::vector<SettingDef> &settings_table() { return kSettings; }

const char *setting_type_name(SettingType t) {
  switch (t) {
    case SettingType::Bool: return "bool";
    case SettingType::Int: return "int";
    case SettingType::Size: return "size";
    case SettingType::Enum: return "enum";
    case SettingType::String: return "string";
  }
  return "?";
}

bool parse_bool(const std::string &raw, bool *out) {
  const std::string t = lower(trim(raw));
  if (t == "1" || t == "y" || t == "yes" || t == "true" || t == "on") {
    *out = true;
    return true;
  }
  if (t == "0" || t == "n" || t == "no" || t == "false" || t == "off") {
    *out = false;
    return true;
  }
  return false;
}

bool parse_int(const std::string &raw, long long *out) {
  const std::string t = trim(raw);
  if (t.empty()) return false;
  // strtoll reports range errors only through errno: the application's errno is kept
  // (these parsers run inside its calls: invisible, issue 28).
  const int app_errno = errno;
  errno = 0;
  char *end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  const bool bad = errno != 0 || *end != '\0';
  errno = app_errno;
  if (bad) return false;
  *out = v;
  return true;
}

bool parse_size(const std::string &raw, std::uint64_t *out) {
  const std::string t = lower(trim(raw));
  if (t.empty() || !std::isdigit(static_cast<unsigned char>(t[0]))) return false;
  const int app_errno = errno;  // kept, as in parse_int
  errno = 0;
  char *end = nullptr;
  const unsigned long long v = std::strtoull(t.c_str(), &end, 10);
  const bool range_error = errno != 0;
  errno = app_errno;
  if (range_error) return false;
  const std::string suffix = end;
  unsigned shift = 0;
  if (suffix.empty() || suffix == "b") shift = 0;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib") shift = 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib") shift = 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib") shift = 30;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib") shift = 40;
  else return false;
  if (shift && v > (ULLONG_MAX >> shift)) return false;
  *out = static_cast<std::uint64_t>(v) << shift;
  return true;
}

ParsedConfig parse_config(const EnvList &env) {
  ParsedConfig pc;
  const auto &table = settings_table();
  std::vector<std::string> values(table.size());
  std::vector<bool> given(table.size(), false);
  for (size_t k = 0; k < table.size(); ++k) values[k] = table[k].default_value;

  std::set<std::string> unknown_seen;
  for (const auto &kv : env) {
    size_t k = 0;
    while (k < table.size() && kv.first != table[k].name) ++k;
    if (k == table.size()) {
      if (unknown_seen.insert(kv.first).second)
        pc.messages.push_back("unknown setting " + kv.first + " ignored (gcoll_info lists the settings)");
      continue;
    }
    values[k] = kv.second;
    given[k] = true;
  }

  for (size_t k = 0; k < table.size(); ++k) {
    const SettingDef &d = table[k];
    Value v;
    if (!parse_value(d, values[k], &v)) {
      pc.messages.push_back(std::string(d.name) + "='" + values[k] + "' is not valid: expected " +
                            accepted(d) + "; using the default '" + d.default_value + "'");
      parse_value(d, d.default_value, &v);  // defaults always parse (unit-tested)
    }
    d.store(pc.config, v);
    pc.effective.emplace_back(d.name, format_value(d, v));
  }
  return pc;
}

const char *foreign_env(const char *name) {
  static const char *const kKnown[] = {"UCX_MM_ERROR_HANDLING", "UCX_NET_DEVICES", "OMPI_MCA_mpi_yield_when_idle",
                                       // the user asked UCX to handle signals (base/foreign.h)
                                       "UCX_HANDLE_ERRORS", "UCX_ERROR_SIGNALS", "UCX_DEBUG_SIGNO", "UCX_ASYNC_MODE",
                                       // the user chose where UCX logs (base/foreign.cc)
                                       "UCX_LOG_FILE",
                                       // the launchers' rank, before MPI_Init (pmpi/load_check.cc)
                                       "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                       // the launchers' local rank: the emulated GPU's device
                                       // (cuda/emulate_machine.cc)
                                       "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                                       "MPI_LOCALRANKID", "SLURM_LOCALID", "PMI_LOCAL_RANK"};
  for (const char *k : kKnown)
    if (std::strcmp(k, name) == 0) return std::getenv(name);
  return nullptr;
}

EnvList process_environment() {
  EnvList env;
  for (char **e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "GCOLL_", 6) != 0) continue;
    const char *eq = std::strchr(*e, '=');
    if (!eq) continue;
    env.emplace_back(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

const ParsedConfig &process_config() {
  static const ParsedConfig pc = [] {
    ParsedConfig p = parse_config(process_environment());
    // GCOLL_SHARED_CORES=yes: the calls given to the MPI get the short slice from the first
    // (base/wait.h: MpiSliceScope), not only once some wait has asked.
    if (p.config.shared_cores == 1) detail::g_slice_hint.store(true, std::memory_order_relaxed);
    return p;
  }();
  return pc;
}

}  // namespace gcoll
