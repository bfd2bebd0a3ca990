#include "base/uniform_settings.h"

#include <climits>
#include <cstring>
#include <functional>

#include "base/build_info.h"

namespace gcoll {

namespace {

// Vote layout: [magic, gpu, timeout (0 as "none"), then every uniform setting's value in
// table order].
// kProtocol: the same in every gcoll build, ever, so that a vote mixed with something
// else (an application's collective call met it: a rank without gcoll) is recognised.
// First, because a shorter message overwrites the start of the exchange; very negative,
// because the exchange is a maximum: nearly any other bits there are larger and show.
// kMagic: this build's.
enum : int { kProtocol = 0, kMagic = 1, kGpu = 2, kTimeoutMin = 3, kThreadMultiple = 4, kFirstSetting = 5 };
constexpr long long kProtocolWord = LLONG_MIN + 0x67636f6c6cLL;  // "gcoll"

// Differs between builds (a rank running another gcoll, or one whose GCOLL_ENABLE=0 made
// the MPI pair this agreement with another call, shows as a different magic).
long long magic() {
  static const long long m = static_cast<long long>(
      (std::hash<std::string>{}(std::string("gcoll-uniform-settings-1|") + GCOLL_VERSION_STRING) | 1) &
      0x3fffffffffffffffLL);
  return m;
}

std::vector<const SettingDef *> uniform_defs() {
  std::vector<const SettingDef *> v;
  for (const SettingDef &d : settings_table())
    if (d.differ) v.push_back(&d);
  return v;
}

std::vector<std::string> choices_of(const SettingDef &d) {
  std::vector<std::string> out;
  std::string cur;
  for (const char *p = d.choices ? d.choices : ""; *p; ++p) {
    if (*p == '|') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool same_word(const std::string &a, const std::string &b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// A setting's effective value as a number (strings: a hash).
long long number_of(const SettingDef &d, const std::string &text) {
  switch (d.type) {
    case SettingType::Bool: {
      bool b = false;
      return parse_bool(text, &b) && b ? 1 : 0;
    }
    case SettingType::Int: {
      long long v = 0;
      return parse_int(text, &v) ? v : 0;
    }
    case SettingType::Size: {
      std::uint64_t v = 0;
      return parse_size(text, &v) ? static_cast<long long>(v & 0x7fffffffffffffffULL) : 0;
    }
    case SettingType::Enum: {
      const auto c = choices_of(d);
      for (std::size_t k = 0; k < c.size(); ++k)
        if (same_word(c[k], text)) return static_cast<long long>(k);
      return -1;
    }
    case SettingType::String:
      return static_cast<long long>(std::hash<std::string>{}(text) & 0x3fffffffffffffffULL);
  }
  return 0;
}

std::string text_of(const SettingDef &d, long long v) {
  switch (d.type) {
    case SettingType::Bool: return v ? "1" : "0";
    case SettingType::Int: return std::to_string(v);
    case SettingType::Size: return format_size(static_cast<std::uint64_t>(v));
    case SettingType::Enum: {
      const auto c = choices_of(d);
      return v >= 0 && static_cast<std::size_t>(v) < c.size() ? c[static_cast<std::size_t>(v)] : "?";
    }
    case SettingType::String: return "";
  }
  return "";
}

int index_of(const std::vector<const SettingDef *> &defs, const char *name) {
  for (std::size_t i = 0; i < defs.size(); ++i)
    if (std::strcmp(defs[i]->name, name) == 0) return kFirstSetting + static_cast<int>(i);
  return -1;
}

}  // namespace

std::string format_size(std::uint64_t bytes) {
  static const char *const units[] = {"K", "M", "G", "T"};
  if (bytes == 0) return "0";
  std::uint64_t v = bytes;
  int u = -1;
  while (u < 3 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + (u >= 0 ? units[u] : "");
}

std::vector<long long> uniform_vote(const EnvList &effective, bool gpu_usable, bool thread_multiple) {
  const auto defs = uniform_defs();
  std::vector<long long> v(kFirstSetting + defs.size(), 0);
  v[kProtocol] = kProtocolWord;
  v[kMagic] = magic();
  v[kGpu] = gpu_usable ? 1 : 0;
  v[kThreadMultiple] = thread_multiple ? 1 : 0;
  v[kTimeoutMin] = LLONG_MAX;  // none
  for (std::size_t i = 0; i < defs.size(); ++i) {
    std::string text = defs[i]->default_value;
    for (const auto &kv : effective)
      if (kv.first == defs[i]->name) text = kv.second;
    const long long x = number_of(*defs[i], text);
    v[kFirstSetting + i] = x;
    if (std::strcmp(defs[i]->name, "GCOLL_TIMEOUT") == 0 && x > 0) v[kTimeoutMin] = x;
  }
  return v;
}

AgreedSettings agreed_settings(const std::vector<long long> &lo, const std::vector<long long> &hi) {
  const auto defs = uniform_defs();
  AgreedSettings a;
  const std::size_t n = kFirstSetting + defs.size();
  a.all_gcoll = !lo.empty() && !hi.empty() && lo[kProtocol] == kProtocolWord &&
                hi[kProtocol] == kProtocolWord;
  a.same_build = a.all_gcoll && lo.size() == n && hi.size() == n && lo[kMagic] == magic() && hi[kMagic] == magic();
  if (!a.same_build) {
    // Nothing the ranks sent can be read: the MPI for everything, memory kinds at every
    // call where they are asked for.
    a.gpu = true;
    a.host_engine = false;
    a.device_engine = false;
    a.engine = false;
    a.progress_thread = false;
    a.agree_interval = 1;
    return a;
  }
  auto at = [&](const char *name, long long fallback_lo, long long fallback_hi, long long *l, long long *h) {
    const int i = index_of(defs, name);
    *l = i >= 0 ? lo[static_cast<std::size_t>(i)] : fallback_lo;
    *h = i >= 0 ? hi[static_cast<std::size_t>(i)] : fallback_hi;
  };
  long long l, h;
  a.gpu = hi[kGpu] > 0;
  a.thread_multiple = lo[kThreadMultiple] == 1;
  at("GCOLL_HOST_BUFFERS", 0, 0, &l, &h);
  a.host_engine = l == 1;  // "mpi|engine": engine on every rank
  at("GCOLL_DEVICE_BUFFERS", 0, 0, &l, &h);
  a.device_engine = h == 0;  // "engine|staged": no rank says staged
  at("GCOLL_UNIFORM_MEMORY", 0, 0, &l, &h);
  a.uniform_memory = l == 1;
  at("GCOLL_PROGRESS_THREAD", 0, 0, &l, &h);
  a.progress_thread = h == 0;  // "on|off": on on every rank
  at("GCOLL_MEMORY_AGREE_INTERVAL", 1, 1, &l, &h);
  a.agree_interval = l == h && l > 0 && l <= INT_MAX ? static_cast<int>(l) : 1;
  a.timeout_s = lo[kTimeoutMin] == LLONG_MAX ? 0 : static_cast<int>(lo[kTimeoutMin]);
  at("GCOLL_ALLREDUCE_COMPRESS", 0, 0, &l, &h);
  a.allreduce_compress = l == h && l > 0 && l < 4 ? static_cast<int>(l) : 0;  // off where the ranks differ
  for (const char *name : {"GCOLL_RANKS_PER_NODE", "GCOLL_TUNE", "GCOLL_HOST_TUNE", "GCOLL_HOST_BUSY_MPI", "GCOLL_CHUNK_SIZE",
                           "GCOLL_DEVICE_CHUNK_SIZE", "GCOLL_DEVICE_NET_CHUNK", "GCOLL_CUDA"}) {
    at(name, 0, 0, &l, &h);
    if (l != h) a.engine = false;
  }
  for (std::size_t i = 0; i < defs.size(); ++i) {
    const long long x = lo[kFirstSetting + i], y = hi[kFirstSetting + i];
    if (x == y) continue;
    a.differences.push_back({defs[i]->name, text_of(*defs[i], x), text_of(*defs[i], y), defs[i]->differ});
  }
  return a;
}

std::string difference_message(const UniformDifference &d) {
  std::string s = d.setting + " differs between the ranks of a communicator";
  if (!d.lo.empty() || !d.hi.empty()) s += " (" + d.lo + " to " + d.hi + ")";
  return s + ": " + d.outcome;
}

}  // namespace gcoll
