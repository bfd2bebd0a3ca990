// NVML loaded at run time (no link dependency; every symbol optional), and an emulated
// NVML that answers from a topology model (the emulated GPU's, so that the NVML code runs
// in CI). Being written: see topo/detect.h.
#pragma once
