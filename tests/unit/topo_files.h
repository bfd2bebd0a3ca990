// The topology files of tests/topo (GCOLL_TOPO_DIR), read for the topology unit tests.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace topo
}  // namespace gcoll
