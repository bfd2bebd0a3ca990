#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/setup.sh"
source "$here/env.sh"
cuda_flag=()
command -v nvcc >/dev/null 2>&1 && cuda_flag=(-DGCOLL_WITH_CUDA=ON)
bash "$here/build.sh" "${cuda_flag[@]}"
cd "$GCOLL_BUILD"
# Unit tests in parallel; MPI tests one at a time (each runs up to 8 ranks on few cores).
ctest --output-on-failure -L unit -j "$(nproc)"
ctest --output-on-failure -L mpi -j 1
