// placeholder: being written (node_topology(): empty model until detection lands)
#include "topo/detect.h"

namespace gcoll {
namespace topo {

const NodeTopo &node_topology() {
  static const NodeTopo t;
  return t;
}
const std::string &node_topology_source() {
  static const std::string s = "nothing";
  return s;
}

}  // namespace topo
}  // namespace gcoll
