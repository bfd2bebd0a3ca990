#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the OSU-style allreduce
# benchmark with and without libgcoll.so under mpirun, alternating, then prints the
# table and where the CSV and the plot are.
#   - with a GPU: device buffers (-d cuda), baseline = copy to host + MPI + copy back;
#   - without one: host buffers through gcoll's engine (GCOLL_HOST_BUFFERS=engine) on 4
#     ranks cut into 2 virtual nodes of 2 (GCOLL_RANKS_PER_NODE=2), baseline = the MPI.
# Extra arguments go to the benchmark (default: -m 8:16777216 -T mpi_float -i 200).
set -euo pipefail
source "$(dirname "$0")/env.sh"
# Only what it runs: the library and the benchmark (not the tests: scripts/test.sh).
gcoll_setup_and_build gcoll osu_allreduce

bench_args=("$@")
[ ${#bench_args[@]} -gt 0 ] || bench_args=(-m 8:16777216 -T mpi_float -i 200)
out="$GCOLL_BUILD/osu_compare/main"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "main: GPU found: device buffers"
  python3 "$GCOLL_ROOT/benchmarks/osu_style/compare.py" --build-dir "$GCOLL_BUILD" --bench osu_allreduce \
    --np 4 --device cuda --out "$out" -- "${bench_args[@]}"
else
  echo "main: no GPU: host buffers through the engine, 4 ranks as 2 virtual nodes x 2"
  # Fewer cores than ranks: the ranks bound, two to a core (unbound, the scheduler's
  # placement changes a run's small-message times by up to 70 % from one run to the next;
  # docs/host-engine-vs-mpi.md, "Paired").
  bind=()
  [ "$(nproc)" -ge 4 ] || bind=(--mpirun-arg=--map-by --mpirun-arg=core:OVERSUBSCRIBE
                                --mpirun-arg=--bind-to --mpirun-arg=core:overload-allowed)
  python3 "$GCOLL_ROOT/benchmarks/osu_style/compare.py" --build-dir "$GCOLL_BUILD" --bench osu_allreduce \
    --np 4 --env GCOLL_HOST_BUFFERS=engine --env GCOLL_RANKS_PER_NODE=2 --reps 3 "${bind[@]}" --out "$out" \
    -- "${bench_args[@]}"
fi
