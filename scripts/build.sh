#!/usr/bin/env bash
# Configures and builds gcoll into build/ (or $GCOLL_BUILD). CUDA sources are compiled
# whenever nvcc is found (GCOLL_WITH_CUDA=AUTO); pass -DGCOLL_WITH_CUDA=ON to insist.
# GCOLL_BUILD_TARGETS (space-separated) builds only those targets.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cmake -S "$GCOLL_ROOT" -B "$GCOLL_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
# GCOLL_BUILD_TARGETS="gcoll osu_allreduce": those targets only (scripts/main.sh).
targets=()
for t in ${GCOLL_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$GCOLL_BUILD" -j "$(nproc)" "${targets[@]}"
