// The one table of GCOLL_* settings. Parsed once from the environment; nothing else in
// gcoll reads the environment. gcoll_info prints the table.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gcoll {

enum class LogLevel : int { Warn = 0, Info = 1, Trace = 2 };
// The enum settings, in their table's order of choices (Value::choice).
enum class FusedMode : int { Auto = 0, On = 1, Off = 2 };              // GCOLL_DEVICE_FUSED
enum class DeviceNetMode : int { Auto = 0, Direct = 1, Pipelined = 2 };  // GCOLL_DEVICE_NET
enum class WaitMode : int { Auto = 0, Spin = 1, Yield = 2, Sleep = 3 };  // GCOLL_WAIT (src/base/wait.h)
// GCOLL_P2P_LEVEL: the farthest GPU pair path over which P2P is used (topo/node_topo.h: PathClass order).
enum class P2pLevel : int { Loc = 0, Nvl = 1, Pix = 2, Pxb = 3, Phb = 4, Node = 5, Sys = 6 };

// Typed view of the settings. Defaults here must equal the table's default strings
// (a unit test checks it).
struct Config {
  bool enable = true;
  LogLevel debug = LogLevel::Warn;
  std::string stats_file;
  bool host_engine = false;          // GCOLL_HOST_BUFFERS=engine
  int ranks_per_node = 0;            // 0: physical nodes
  std::string tune;                  // user's selection rules (validated in src/coll/tune)
  std::string host_tune = "default";  // host-buffer crossover rules (src/coll/tune: kHostTune)
  std::uint64_t host_busy_mpi = 256 << 10;  // GCOLL_HOST_BUSY_MPI: host calls from this size go to the MPI on a loaded machine (0: never)
  bool cost_model = true;            // GCOLL_COST_MODEL (src/coll/cost_model.h)
  std::uint64_t chunk_size = 1 << 20;
  int timeout_s = 0;                 // 0: no timeout
  bool cuda = true;                  // GCOLL_CUDA=auto|emulate (false: off, every buffer is host memory)
  bool cuda_emulate = false;         // GCOLL_CUDA=emulate: the emulated GPU (testing only)
  bool cuda_assume_gpu = false;      // GCOLL_CUDA_ASSUME_GPU: may hold device memory where no GPU is visible
  int emu_delay_us = 200;            // GCOLL_EMU_DELAY: largest random delay of an emulated device operation
  bool device_engine = true;         // GCOLL_DEVICE_BUFFERS=engine (false: staged)
  bool uniform_memory = false;       // GCOLL_UNIFORM_MEMORY: skip the per-call memory-kind agreement
  bool progress_thread = false;      // GCOLL_PROGRESS_THREAD: nonblocking calls through the engine
  bool stream_device = false;        // GCOLL_STREAM_DEVICE: enqueued calls as kernels on the stream
  std::uint64_t device_chunk_size = 8ull << 20;   // GCOLL_DEVICE_CHUNK_SIZE
  std::uint64_t ipc_cache_size = 16ull << 30;     // GCOLL_IPC_CACHE_SIZE
  FusedMode device_fused = FusedMode::Off;          // GCOLL_DEVICE_FUSED (src/mem/cuda_space.h)
  DeviceNetMode device_net = DeviceNetMode::Auto;   // GCOLL_DEVICE_NET (src/coll/engine.cc)
  std::uint64_t device_net_chunk = 1 << 20;  // GCOLL_DEVICE_NET_CHUNK: piece of the pipelined way
  bool memory_cache = true;          // GCOLL_MEMORY_CACHE: reuse buffer classifications (src/cuda/device.h)
  int agree_interval = 1024;         // GCOLL_MEMORY_AGREE_INTERVAL: most calls between memory-kind agreements
  WaitMode wait_mode = WaitMode::Auto;              // GCOLL_WAIT (src/base/wait.h)
  int shared_cores = 0;                             // GCOLL_SHARED_CORES: 0 auto, 1 yes, 2 no (wait.h)
  int wait_slice_us = 100;                          // GCOLL_WAIT_SLICE: thread's time slice in shared-core waits (wait.h)
  std::string topo_file;             // GCOLL_TOPO_FILE: NCCL topology XML that overrides detection (src/topo)
  std::string topo_dump_file;        // GCOLL_TOPO_DUMP_FILE: where the detected node topology is written
  P2pLevel p2p_level = P2pLevel::Pxb;  // GCOLL_P2P_LEVEL
  bool p2p_disable = false;          // GCOLL_P2P_DISABLE: no P2P between different GPUs
  bool p2p_check = true;             // GCOLL_P2P_CHECK: verify P2P with data at setup
  int allreduce_compress = 0;        // GCOLL_ALLREDUCE_COMPRESS: off|bf16|fp16|fp8 (kernels/compress.h: Compress)
};

enum class SettingType { Bool, Int, Size, Enum, String };

struct Value;  // parsed value, see config.cc

struct SettingDef {
  const char *name;           // GCOLL_...
  SettingType type;
  const char *default_value;  // as the user would write it
  const char *choices;        // Enum: "A|B|C"; Int/Size: "min:max"; else nullptr
  const char *help;
  void (*store)(Config &, const Value &);
  // Must be equal on every rank of a communicator (nullptr: may differ): what a
  // communicator whose ranks differ does instead (agreed at its first call,
  // base/uniform_settings.h).
  const char *differ = nullptr;
};

const std::vector<SettingDef> &settings_table();
const char *setting_type_name(SettingType t);

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct ParsedConfig {
  Config config;
  EnvList effective;                  // every setting with its effective value (string form)
  std::vector<std::string> messages;  // one line per bad value / unknown variable
};

// Pure: parses the given GCOLL_* variables (name, value). Bad values keep the default
// and produce one message naming the setting and the accepted values; unknown GCOLL_*
// names produce one message each.
ParsedConfig parse_config(const EnvList &env);

// The GCOLL_* variables of this process's environment.
EnvList process_environment();

// Parsed once (thread-safe) from the process environment. Messages are not printed
// here; see init.
const ParsedConfig &process_config();
inline const Config &config() { return process_config().config; }

// Other software's environment variables that gcoll reads as facts, not as its own
// settings (which live only in the table above): UCX_MM_ERROR_HANDLING (a user's choice
// wins over the one gcoll makes for its UCX context, src/net/context.cc), UCX_NET_DEVICES
// (likewise: the user's choice of NIC wins over gcoll's rail NIC) and
// OMPI_MCA_mpi_yield_when_idle (Open MPI told that ranks share cores, base/wait.cc),
// UCX_HANDLE_ERRORS, UCX_ERROR_SIGNALS, UCX_DEBUG_SIGNO and UCX_ASYNC_MODE (set: the user
// asked UCX to handle signals, and gcoll keeps the handlers UCX installs, base/foreign.h),
// the launchers' rank variables OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK (who prints the load
// check's line before MPI_Init, pmpi/load_check.cc), and their local rank variables
// OMPI_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID,
// PMI_LOCAL_RANK (the emulated GPU's device, cuda/emulate_machine.cc).
// The value, or nullptr when unset or when `name` is not one of those: every read of the
// environment goes through this file.
const char *foreign_env(const char *name);

// Value parsers, exposed for tests. Return false when `text` is not valid.
bool parse_bool(const std::string &text, bool *out);
bool parse_int(const std::string &text, long long *out);
bool parse_size(const std::string &text, std::uint64_t *out);  // 4096, 64K, 1M, 2GiB ...

}  // namespace gcoll
