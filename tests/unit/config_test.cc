#include <gtest/gtest.h>

#include "base/config.h"

namespace gcoll {
namespace {

const std::string *effective(const ParsedConfig &pc, const std::string &name) {
  for (const auto &kv : pc.effective)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

TEST(ConfigValues, Bool) {
  bool b = false;
  for (const char *t : {"1", "y", "YES", "true", "On", " 1 "}) {
    b = false;
    EXPECT_TRUE(parse_bool(t, &b)) << t;
    EXPECT_TRUE(b) << t;
  }
  for (const char *t : {"0", "n", "no", "FALSE", "off"}) {
    b = true;
    EXPECT_TRUE(parse_bool(t, &b)) << t;
    EXPECT_FALSE(b) << t;
  }
  for (const char *t : {"", "2", "yess", "enable", "-1"}) EXPECT_FALSE(parse_bool(t, &b)) << t;
}

TEST(ConfigValues, Int) {
  long long v = 0;
  EXPECT_TRUE(parse_int("42", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(parse_int("-7", &v));
  EXPECT_EQ(v, -7);
  for (const char *t : {"", "4x", "1.5", "99999999999999999999", "abc"}) EXPECT_FALSE(parse_int(t, &v)) << t;
}

TEST(ConfigValues, Size) {
  std::uint64_t v = 0;
  EXPECT_TRUE(parse_size("4096", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(parse_size("64K", &v));
  EXPECT_EQ(v, 64u << 10);
  EXPECT_TRUE(parse_size("1m", &v));
  EXPECT_EQ(v, 1u << 20);
  EXPECT_TRUE(parse_size("2GiB", &v));
  EXPECT_EQ(v, 2ull << 30);
  EXPECT_TRUE(parse_size("3tb", &v));
  EXPECT_EQ(v, 3ull << 40);
  for (const char *t : {"", "K", "-1", "1.5M", "12Q", "99999999999999999999", "20000000000T"})
    EXPECT_FALSE(parse_size(t, &v)) << t;
}

TEST(ConfigTable, DefaultsParseAndMatchStruct) {
  const ParsedConfig pc = parse_config({});
  EXPECT_TRUE(pc.messages.empty());
  const Config def;
  EXPECT_EQ(pc.config.enable, def.enable);
  EXPECT_EQ(pc.config.debug, def.debug);
  EXPECT_EQ(pc.config.stats_file, def.stats_file);
  EXPECT_EQ(pc.config.host_engine, def.host_engine);
  EXPECT_EQ(pc.config.ranks_per_node, def.ranks_per_node);
  EXPECT_EQ(pc.config.tune, def.tune);
  EXPECT_EQ(pc.config.chunk_size, def.chunk_size);
  EXPECT_EQ(pc.config.timeout_s, def.timeout_s);
  EXPECT_EQ(pc.config.cuda, def.cuda);
  EXPECT_EQ(pc.config.device_engine, def.device_engine);
  EXPECT_EQ(pc.config.uniform_memory, def.uniform_memory);
  EXPECT_EQ(pc.config.device_chunk_size, def.device_chunk_size);
  EXPECT_EQ(pc.config.ipc_cache_size, def.ipc_cache_size);
  EXPECT_EQ(pc.config.memory_cache, def.memory_cache);
  EXPECT_EQ(pc.config.agree_interval, def.agree_interval);
  EXPECT_EQ(pc.config.cuda_emulate, def.cuda_emulate);
  EXPECT_EQ(pc.config.emu_delay_us, def.emu_delay_us);
  EXPECT_EQ(pc.config.device_fused, def.device_fused);
  EXPECT_EQ(pc.config.device_net, def.device_net);
  EXPECT_EQ(pc.config.device_net_chunk, def.device_net_chunk);
  EXPECT_EQ(pc.config.wait_mode, def.wait_mode);
  ASSERT_EQ(pc.effective.size(), settings_table().size());
  for (const auto &d : settings_table()) {
    EXPECT_EQ(std::string(d.name).rfind("GCOLL_", 0), 0u) << d.name;
    EXPECT_NE(std::string(d.help), "") << d.name;
  }
}

TEST(ConfigTable, ValidValuesApply) {
  const ParsedConfig pc =
      parse_config({{"GCOLL_ENABLE", "off"}, {"GCOLL_DEBUG", "trace"}, {"GCOLL_STATS_FILE", "/tmp/x y.json"}});
  EXPECT_TRUE(pc.messages.empty());
  EXPECT_FALSE(pc.config.enable);
  EXPECT_EQ(pc.config.debug, LogLevel::Trace);
  EXPECT_EQ(pc.config.stats_file, "/tmp/x y.json");
  EXPECT_EQ(*effective(pc, "GCOLL_ENABLE"), "0");
  EXPECT_EQ(*effective(pc, "GCOLL_DEBUG"), "TRACE");  // canonical spelling
}

TEST(ConfigTable, EngineSettings) {
  const ParsedConfig pc = parse_config({{"GCOLL_HOST_BUFFERS", "ENGINE"},
                                        {"GCOLL_RANKS_PER_NODE", "3"},
                                        {"GCOLL_CHUNK_SIZE", "64K"},
                                        {"GCOLL_TIMEOUT", "30"},
                                        {"GCOLL_TUNE", "allreduce:0-inf:@ring"}});
  EXPECT_TRUE(pc.messages.empty());
  EXPECT_TRUE(pc.config.host_engine);
  EXPECT_EQ(pc.config.ranks_per_node, 3);
  EXPECT_EQ(pc.config.chunk_size, 64u << 10);
  EXPECT_EQ(pc.config.timeout_s, 30);
  EXPECT_EQ(pc.config.tune, "allreduce:0-inf:@ring");
}

TEST(ConfigTable, DeviceSettings) {
  const ParsedConfig pc = parse_config({{"GCOLL_CUDA", "OFF"},
                                        {"GCOLL_DEVICE_BUFFERS", "staged"},
                                        {"GCOLL_UNIFORM_MEMORY", "yes"},
                                        {"GCOLL_DEVICE_CHUNK_SIZE", "8M"},
                                        {"GCOLL_IPC_CACHE_SIZE", "1G"},
                                        {"GCOLL_DEVICE_FUSED", "on"},
                                        {"GCOLL_DEVICE_NET", "Pipelined"}});
  EXPECT_TRUE(pc.messages.empty());
  EXPECT_EQ(pc.config.device_fused, FusedMode::On);
  EXPECT_EQ(pc.config.device_net, DeviceNetMode::Pipelined);
  EXPECT_EQ(parse_config({{"GCOLL_DEVICE_FUSED", "auto"}}).config.device_fused, FusedMode::Auto);
  EXPECT_EQ(parse_config({{"GCOLL_DEVICE_NET", "direct"}}).config.device_net, DeviceNetMode::Direct);
  EXPECT_FALSE(pc.config.cuda);
  EXPECT_FALSE(pc.config.device_engine);
  EXPECT_TRUE(pc.config.uniform_memory);
  EXPECT_EQ(pc.config.device_chunk_size, 8u << 20);
  EXPECT_EQ(pc.config.ipc_cache_size, 1u << 30);
  const ParsedConfig bad = parse_config({{"GCOLL_DEVICE_BUFFERS", "gpu"}, {"GCOLL_DEVICE_CHUNK_SIZE", "1K"}});
  EXPECT_EQ(bad.messages.size(), 2u);
  EXPECT_TRUE(bad.config.device_engine);
  EXPECT_EQ(bad.config.device_chunk_size, Config().device_chunk_size);
}

TEST(ConfigTable, MemoryKindSettings) {
  const ParsedConfig pc = parse_config({{"GCOLL_MEMORY_CACHE", "0"}, {"GCOLL_MEMORY_AGREE_INTERVAL", "1"}});
  EXPECT_TRUE(pc.messages.empty());
  EXPECT_FALSE(pc.config.memory_cache);
  EXPECT_EQ(pc.config.agree_interval, 1);
  const ParsedConfig bad = parse_config({{"GCOLL_MEMORY_AGREE_INTERVAL", "0"}});
  EXPECT_EQ(bad.messages.size(), 1u);
  EXPECT_EQ(bad.config.agree_interval, Config().agree_interval);
}

TEST(ConfigTable, RangesAreEnforced) {
  const ParsedConfig pc =
      parse_config({{"GCOLL_RANKS_PER_NODE", "-1"}, {"GCOLL_CHUNK_SIZE", "100"}, {"GCOLL_TIMEOUT", "x"}});
  ASSERT_EQ(pc.messages.size(), 3u);
  EXPECT_EQ(pc.config.ranks_per_node, 0);
  EXPECT_EQ(pc.config.chunk_size, 1u << 20);
  EXPECT_NE(pc.messages[0].find("[0, 1048576]"), std::string::npos) << pc.messages[0];
  EXPECT_NE(pc.messages[1].find("[4096, 1073741824]"), std::string::npos) << pc.messages[1];
}

TEST(ConfigTable, BadValueKeepsDefaultAndNamesAcceptedValues) {
  const ParsedConfig pc = parse_config({{"GCOLL_ENABLE", "maybe"}, {"GCOLL_DEBUG", "LOUD"}});
  ASSERT_EQ(pc.messages.size(), 2u);
  EXPECT_TRUE(pc.config.enable);
  EXPECT_EQ(pc.config.debug, LogLevel::Warn);
  bool saw_enable = false, saw_debug = false;
  for (const auto &m : pc.messages) {
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
    if (m.find("GCOLL_ENABLE='maybe'") != std::string::npos && m.find("0|1") != std::string::npos) saw_enable = true;
    if (m.find("GCOLL_DEBUG='LOUD'") != std::string::npos && m.find("WARN|INFO|TRACE") != std::string::npos)
      saw_debug = true;
  }
  EXPECT_TRUE(saw_enable);
  EXPECT_TRUE(saw_debug);
}

TEST(ConfigTable, UnknownNamesWarnedOnceEach) {
  const ParsedConfig pc =
      parse_config({{"GCOLL_ENABEL", "1"}, {"GCOLL_ENABEL", "1"}, {"GCOLL_FOO", "x"}, {"GCOLL_ENABLE", "1"}});
  ASSERT_EQ(pc.messages.size(), 2u);
  EXPECT_NE(pc.messages[0].find("GCOLL_ENABEL"), std::string::npos);
  EXPECT_NE(pc.messages[1].find("GCOLL_FOO"), std::string::npos);
  EXPECT_TRUE(pc.config.enable);
}

TEST(ConfigTable, EveryTypeRejectsGarbage) {
  // Each setting in the table, given a value no type accepts except String.
  for (const auto &d : settings_table()) {
    const ParsedConfig pc = parse_config({{d.name, "\x01garbage"}});
    if (d.type == SettingType::String) {
      EXPECT_TRUE(pc.messages.empty()) << d.name;
    } else {
      ASSERT_EQ(pc.messages.size(), 1u) << d.name;
      EXPECT_EQ(*effective(pc, d.name), *effective(parse_config({}), d.name)) << d.name;
    }
  }
}

}  // namespace
}  // namespace gcoll
