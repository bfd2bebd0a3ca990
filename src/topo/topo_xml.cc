// placeholder: being written
#include "topo/topo_xml.h"
