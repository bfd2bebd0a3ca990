#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test.
set -euo pipefail
source "$(dirname "$0")/env.sh"
gcoll_setup_and_build
cd "$GCOLL_BUILD"
# Unit tests in parallel; everything else (MPI jobs of up to 8 ranks, benchmark smoke
# tests, GPU tests, which skip without a GPU) one at a time.
ctest --output-on-failure -L unit -j "$(nproc)"
ctest --output-on-failure -LE unit -j 1

# The subset that runs under every MPI (ctest label portable: C and Fortran preload tests
# with their stats, the correctness matrix on 1 to 5 ranks, the engine on virtual nodes,
# bad input), under MPICH: its own build directory, without CUDA (issue 14).
mpich_build="${GCOLL_BUILD_MPICH:-$GCOLL_ROOT/build-mpich}"
cmake -S "$GCOLL_ROOT" -B "$mpich_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCOLL_MPI=mpich \
  -DGCOLL_WITH_CUDA=OFF -DGCOLL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$mpich_build" -j "$(nproc)" --target gcoll_portable_tests
cd "$mpich_build"
ctest --output-on-failure -L portable -j 1

# AddressSanitizer + UndefinedBehaviorSanitizer: unit tests and an MPI subset on their own
# build without CUDA (scripts/sanitize.sh, issue 15).
bash "$GCOLL_ROOT/scripts/sanitize.sh"
