// placeholder: being written
#include "topo/detect.h"
