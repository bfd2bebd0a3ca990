// The public gcoll_* API (include/gcoll/gcoll.h).
#include "gcoll/gcoll.h"

#include <mpi.h>

#include <cstring>
#include <string>

#include "base/build_info.h"
#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/uniform_settings.h"
#include "coll/cost_model.h"
#include "coll/device_topo.h"
#include "coll/engine.h"
#include "coll/tune.h"
#include "cuda/device.h"
#include "pmpi/comm_state.h"
#include "net/transport.h"
#include "pmpi/mpi_flavor.h"
#include "topo/detect.h"
#include "topo/topo_print.h"

#define GCOLL_EXPORT __attribute__((visibility("default")))

namespace gcoll {
const char *build_commit();  // generated: cmake/GcollCommit.cmake
}

namespace {

int print_info(FILE *out) {
  using namespace gcoll;
  const ParsedConfig &pc = process_config();
  int rc = 0;
  rc |= fprintf(out, "gcoll %s\n", GCOLL_VERSION_STRING) < 0;
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  PMPI_Get_library_version(mpi, &len);  // allowed before MPI_Init
  // The first line (MPICH's runs on with its whole configure line), commas as spaces.
  for (char *c = mpi; *c; ++c) {
    if (*c == '\n') {
      *c = '\0';
      break;
    }
    if (*c == ',' || *c == '\t') *c = ' ';
  }
  rc |= fprintf(out, "build: %s, CUDA %s, UCX headers %s, hwloc %s\n", GCOLL_BUILD_TYPE, GCOLL_BUILD_CUDA,
                GCOLL_BUILD_UCX, GCOLL_BUILD_HWLOC) < 0;
  rc |= fprintf(out, "UCX loaded at run time: %s\n", ucx::loaded_version().c_str()) < 0;
  rc |= fprintf(out, "MPI: built for %s %s (GCOLL_MPI); library: %s\n", flavor::built_for(), flavor::kBuiltVersion,
                mpi) < 0;
  rc |= fprintf(out, "\nsettings (environment variables):\n") < 0;
  const auto &table = settings_table();
  for (size_t k = 0; k < table.size(); ++k) {
    const SettingDef &d = table[k];
    std::string value = pc.effective[k].second;
    std::uint64_t bytes = 0;
    if (d.type == SettingType::Size && parse_size(value, &bytes)) value = format_size(bytes);  // 16G, not 17179869184
    rc |= fprintf(out, "  %-20s = %-10s [%s%s%s, default '%s'%s%s]\n      %s\n", d.name, value.c_str(),
                  setting_type_name(d.type), d.choices ? ": " : "", d.choices ? d.choices : "", d.default_value,
                  d.differ ? "; ranks that differ: " : "", d.differ ? d.differ : "", d.help) < 0;
  }
  for (const auto &m : pc.messages) rc |= fprintf(out, "warning: %s\n", m.c_str()) < 0;
  rc |= fprintf(out, "\n%s", describe_algorithms(pc.config.tune).c_str()) < 0;
  if (pc.config.enable && pc.config.cuda) {
    const char *why = "";
    const bool direct = device_net_vote(&why);
    rc |= fprintf(out, "\ndevice buffers across nodes (GCOLL_DEVICE_NET): %s in this process (%s); the ranks of a "
                       "communicator agree at its first device call\n",
                  direct ? "direct" : "pipelined", why) < 0;
    engine_shutdown();
  }
  return rc ? -1 : 0;
}

// The README's settings table (gcoll_info --markdown): one row per setting, from the one
// table; CI checks that the README holds exactly these rows.
std::string type_text(const gcoll::SettingDef &d) {
  using gcoll::SettingType;
  std::string choices;
  for (const char *p = d.choices ? d.choices : ""; *p; ++p) {
    if (*p == '|') choices += "`, `";
    else choices += *p;
  }
  switch (d.type) {
    case SettingType::Bool: return "bool (`0/1`, `no/yes`, `off/on`, `false/true`)";
    case SettingType::Int: {
      std::string r = d.choices ? d.choices : "";
      const auto colon = r.find(':');
      return colon == std::string::npos ? "int" : "int, " + r.substr(0, colon) + " to " + r.substr(colon + 1);
    }
    case SettingType::Size: return "size (`4096`, `64K`, `1M`, `2G`)";
    case SettingType::Enum: return "`" + choices + "`";
    case SettingType::String: return "string";
  }
  return "";
}

int print_markdown(FILE *out) {
  using namespace gcoll;
  int rc = 0;
  rc |= fprintf(out, "| setting | type | default | when ranks differ | meaning |\n|---|---|---|---|---|\n") < 0;
  for (const SettingDef &d : settings_table()) {
    std::string def = d.default_value;
    def = def.empty() ? "(unset)" : "`" + def + "`";
    rc |= fprintf(out, "| `%s` | %s | %s | %s | %s |\n", d.name, type_text(d).c_str(), def.c_str(),
                  d.differ ? d.differ : "may differ", d.help) < 0;
  }
  return rc ? -1 : 0;
}

}  // namespace

extern "C" {

GCOLL_EXPORT const char *gcoll_version(void) { return GCOLL_VERSION_STRING; }

GCOLL_EXPORT int gcoll_print_settings_markdown(FILE *out) {
  try {
    return print_markdown(out);
  } catch (...) {
    gcoll::log_exception("gcoll_print_settings_markdown");
    return -1;
  }
}

GCOLL_EXPORT int gcoll_print_topology(FILE *out, int ranks_per_gpu) {
  try {
    using namespace gcoll;
    // Asked for the machine's GPUs: CUDA's view of them, even though this process (gcoll_info,
    // or an application that asks) has not loaded the driver itself (cuda/driver_gate.h).
    if (config().cuda && !config().cuda_emulate) cuda::driver().load();
    const topo::NodeTopo &t = topo::node_topology();
    topo::PrintOptions o;
    o.level = config().p2p_level;
    o.p2p_disable = config().p2p_disable;
    o.ranks_per_gpu = ranks_per_gpu > 0 ? ranks_per_gpu : 1;
    std::string text = "node topology from " + topo::node_topology_source() + "\n\n" + topo::format_topology(t, o);
    text += "\n" + device_paths_text(t, o.ranks_per_gpu * static_cast<int>(t.gpus.size()));
    text += cost_model_text(t, o.ranks_per_gpu * static_cast<int>(t.gpus.size()));
    if (std::fputs(text.c_str(), out) < 0) return -1;
    // A topology file that could not be used: the detected topology was printed above, and
    // the caller (gcoll_info --topology) fails, naming the file's line.
    const std::string &file_error = topo::node_topology_file_error();
    if (!file_error.empty()) {
      std::fprintf(stderr, "gcoll: GCOLL_TOPO_FILE %s (the topology above was detected instead)\n", file_error.c_str());
      return 1;
    }
    return 0;
  } catch (...) {
    gcoll::log_exception("gcoll_print_topology");
    return -1;
  }
}

// Parsing the settings allocates: no exception may reach the caller (C has none).
GCOLL_EXPORT int gcoll_enabled(void) {
  try {
    return gcoll::config().enable ? 1 : 0;
  } catch (...) {
    gcoll::log_exception("gcoll_enabled");
    return 0;
  }
}

GCOLL_EXPORT int gcoll_live_comm_states(void) { return gcoll::live_comm_states(); }

GCOLL_EXPORT long long gcoll_library_counter(const char *name) {
  if (!name) return -1;
  for (int k = 0; k < gcoll::kLibCounters; ++k) {
    const auto c = static_cast<gcoll::Counter>(k);
    if (std::strcmp(name, gcoll::counter_name(c)) == 0)
      return static_cast<long long>(gcoll::process_stats().total(c));
  }
  return -1;
}

namespace {

int coll_by_name(const char *name) {
  for (int k = 0; name && k < gcoll::kColls; ++k)
    if (std::strcmp(name, gcoll::coll_name(static_cast<gcoll::Coll>(k))) == 0) return k;
  return -1;
}

// The blocking collective whose algorithm table a stats line's calls run (the engine runs
// every form with the blocking row's algorithms).
gcoll::Coll blocking_of(int line) {
  using gcoll::kBlockingColls;
  if (line < 3 * kBlockingColls) return static_cast<gcoll::Coll>(line % kBlockingColls);
  const std::string name = gcoll::coll_name(static_cast<gcoll::Coll>(line));
  const std::string base = name.substr(0, name.rfind('_'));  // "allreduce_enqueue" -> "allreduce"
  const int b = coll_by_name(base.c_str());
  return static_cast<gcoll::Coll>(b >= 0 ? b : line);
}

}  // namespace

GCOLL_EXPORT long long gcoll_call_count(const char *coll, const char *what) {
  using namespace gcoll;
  try {
    const int line = coll_by_name(coll);
    if (line < 0 || !what) return -1;
    const std::vector<std::uint64_t> v = process_stats().snapshot();
    if (what[0] == '@') {
      const Coll b = blocking_of(line);
      for (const Algorithm &a : algorithms())
        if (a.coll == b && std::strcmp(what + 1, a.name) == 0) {
          const int i = algorithm_index(&a);
          return i < kMaxAlgos ? static_cast<long long>(v[kFields * kColls + i]) : -1;
        }
      return -1;
    }
    for (int p = 0; p < static_cast<int>(Path::kCount); ++p)
      if (std::strcmp(what, path_name(static_cast<Path>(p))) == 0)
        return static_cast<long long>(v[line * kFields + p]);
    return -1;
  } catch (...) {
    log_exception("gcoll_call_count");
    return -1;
  }
}

GCOLL_EXPORT const char *gcoll_algorithm_name(const char *coll, int i) {
  using namespace gcoll;
  const int line = coll_by_name(coll);
  if (line < 0 || i < 0) return nullptr;
  const Coll b = blocking_of(line);
  for (const Algorithm &a : algorithms())
    if (a.coll == b && i-- == 0) return a.name;
  return nullptr;
}

GCOLL_EXPORT const char *gcoll_build_commit(void) { return gcoll::build_commit(); }

GCOLL_EXPORT int gcoll_print_info(FILE *out) {
  try {
    return print_info(out);
  } catch (...) {
    gcoll::log_exception("gcoll_print_info");
    return -1;
  }
}

}  // extern "C"
