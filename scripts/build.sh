#!/usr/bin/env bash
# Configures and builds gcoll into build/ (or $GCOLL_BUILD). CUDA sources are compiled
# whenever nvcc is found (GCOLL_WITH_CUDA=AUTO); pass -DGCOLL_WITH_CUDA=ON to insist.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cmake -S "$GCOLL_ROOT" -B "$GCOLL_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$GCOLL_BUILD" -j "$(nproc)"
