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
