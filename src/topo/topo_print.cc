// placeholder: being written
#include "topo/topo_print.h"
