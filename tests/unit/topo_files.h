// The topology files of tests/topo (GCOLL_TOPO_DIR), read for the topology unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "topo/node_topo.h"
#include "topo/topo_xml.h"

namespace gcoll {
namespace topo {

// tests/topo/<name>, read; a failure to read is a test failure (with the reader's message).
inline NodeTopo load(const std::string &name) {
  NodeTopo t;
  std::string err;
  EXPECT_TRUE(read_topo_file(std::string(GCOLL_TOPO_DIR) + "/" + name, &t, &err)) << err;
  return t;
}

// The first line that differs, both ways: shorter than the whole texts.
inline std::string first_difference(const std::string &got, const std::string &want) {
  std::istringstream g(got), w(want);
  std::string gl, wl;
  for (int line = 1;; ++line) {
    const bool gm = static_cast<bool>(std::getline(g, gl)), wm = static_cast<bool>(std::getline(w, wl));
    if (!gm && !wm) return "(no line differs)";
    if (gm != wm || gl != wl) {
      return "line " + std::to_string(line) + "\n  got:    " + (gm ? gl : "(end)") +
             "\n  golden: " + (wm ? wl : "(end)");
    }
  }
}

// `text` against the golden file at `path` (under tests/topo/golden); with
// GCOLL_UPDATE_GOLDEN=1 the file is written instead (read the diff).
inline void expect_golden(const std::string &path, const std::string &text) {
  const char *update = std::getenv("GCOLL_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " missing (GCOLL_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_TRUE(text == want.str()) << path << " differs (GCOLL_UPDATE_GOLDEN=1 rewrites it): "
                                  << first_difference(text, want.str());
}

}  // namespace topo
}  // namespace gcoll
