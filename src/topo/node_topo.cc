// placeholder: being written
#include "topo/node_topo.h"
