#!/usr/bin/env bash
# GPU validation, run ON the GPU machine from the repository root, with the MPI bundle
# (../shared/gpu-node/make-bundle.sh) carried along as .gpu-bundle/:
#
#   scripts/gpu_validate.sh [all]          build, then the `gpu` tests (default)
#   scripts/gpu_validate.sh build          install the bundle, configure and build only
#   scripts/gpu_validate.sh test [ARGS]    the `gpu` tests only (build-gpu must exist);
#                                          ARGS go to ctest (e.g. -R gpu.mpi.default.np2)
#   scripts/gpu_validate.sh bench          performance: 4 ranks on one GPU, osu_allreduce
#                                          -d cuda -T mpi_float up to 256 MiB, gcoll
#                                          (LD_PRELOAD) vs the staged baseline (osu's
#                                          --staged on plain MPI), plus the 8-byte latency
#
# Steps: install the bundle into /opt/gcoll-deps (GCOLL_DEPS) unless already there and
# source its env.sh; print the machine (nvidia-smi, MPS, toolchain, commit); configure
# build-gpu (GCOLL_GPU_BUILD) as Release with GCOLL_WITH_CUDA=ON and build with -j16
# (GCOLL_GPU_JOBS); run `gpu.kernels` first, then every other test labelled `gpu`.
# Logs (one file per step, plus validate.log with timestamps and summary.txt) go to
# "$OUT" if set, else ./gpu-out. Exit status: 0 when every step passed; 1 when a test
# failed; 2 when a step (install, configure, build, benchmark run) failed; 3 when the
# tests were skipped (no usable GPU: nothing was validated).
#
# Settings (environment): GCOLL_DEPS, GCOLL_BUNDLE (default .gpu-bundle), GCOLL_GPU_BUILD,
# GCOLL_GPU_JOBS, GCOLL_GPU_BUILD_ALL=1 (build every target, not only what the gpu tests
# run), BENCH_REPS (default 3), BENCH_ITERS / BENCH_WARMUP (sweep, default 20 / 5),
# BENCH_LAT_ITERS / BENCH_LAT_WARMUP (8-byte latency, default 10000 / 1000),
# BENCH_MAX (largest size in bytes, default 268435456 = 256 MiB), BENCH_NP (default 4).
set -uo pipefail

mode=${1:-all}
[ $# -gt 0 ] && shift
case "$mode" in
  all|build|test|bench) ;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0 [all|build|test [ctest args]|bench]" >&2; exit 64 ;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
OUTDIR=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUTDIR" || exit 2
OUTDIR=$(cd "$OUTDIR" && pwd)
DEPS=${GCOLL_DEPS:-/opt/gcoll-deps}
BUNDLE=${GCOLL_BUNDLE:-$ROOT/.gpu-bundle}
BUILD=${GCOLL_GPU_BUILD:-$ROOT/build-gpu}
JOBS=${GCOLL_GPU_JOBS:-16}
LOG=$OUTDIR/validate.log
SUMMARY=$OUTDIR/summary.txt
status=0   # worst outcome so far (see the exit codes above)

ts() { date -u +%Y-%m-%dT%H:%M:%SZ; }
log() { printf '[%s] %s\n' "$(ts)" "$*" | tee -a "$LOG"; }
note() { printf '%s\n' "$*" >>"$SUMMARY"; }
worse() { [ "$1" -gt "$status" ] && status=$1; return 0; }

# run_step NAME CMD...: runs CMD with stdout+stderr in $OUTDIR/NAME.log (and on the
# console), logs start, end, duration and exit status. Returns CMD's status.
run_step() {
  local name=$1
  shift
  local start end rc
  start=$(date +%s)
  log "step $name: start: $*"
  "$@" 2>&1 | tee "$OUTDIR/$name.log"
  rc=${PIPESTATUS[0]}
  end=$(date +%s)
  log "step $name: exit $rc after $((end - start)) s (log: $OUTDIR/$name.log)"
  note "$(printf '%-28s exit %-4s %5s s' "$name" "$rc" "$((end - start))")"
  return "$rc"
}

log "gpu_validate.sh $mode $*: repository $ROOT, logs in $OUTDIR"
: >"$SUMMARY"
note "gpu_validate.sh $mode ($(ts)), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"

# ---- environment ----------------------------------------------------------------------------
setup_env() {
  if [ ! -f "$DEPS/env.sh" ]; then
    if [ ! -d "$BUNDLE" ]; then
      log "no MPI bundle: neither $DEPS/env.sh nor $BUNDLE (make it with ../shared/gpu-node/make-bundle.sh)"
      if ! command -v mpirun >/dev/null 2>&1; then
        note "no MPI: bundle missing"
        return 2
      fi
      log "using the mpirun on PATH: $(command -v mpirun)"
    else
      run_step install-bundle bash "$BUNDLE/install-bundle.sh" "$BUNDLE" "$DEPS" || return 2
    fi
  else
    log "bundle already installed in $DEPS"
  fi
  if [ -f "$DEPS/env.sh" ]; then
    # shellcheck disable=SC1091
    . "$DEPS/env.sh"
  fi
  # nvcc on PATH, run-as-root and oversubscription settings for mpirun
  # shellcheck disable=SC1091
  . "$ROOT/scripts/env.sh"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  return 0
}

machine_info() {
  {
    echo "== date: $(ts)   host: $(hostname)   cores: $(nproc)"
    echo "== commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo '?')"
    git -C "$ROOT" status --short 2>/dev/null | head -50 | sed 's/^/   /'
    echo "== nvidia-smi"
    if command -v nvidia-smi >/dev/null 2>&1; then
      nvidia-smi 2>&1
      nvidia-smi --query-gpu=index,name,memory.total,compute_mode,driver_version,mig.mode.current \
        --format=csv 2>&1
      nvidia-smi topo -m 2>&1 | head -20
    else
      echo "nvidia-smi: not found"
    fi
    echo "== MPS"
    if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
      echo "nvidia-cuda-mps-control: $(command -v nvidia-cuda-mps-control)"
      if ! command -v pgrep >/dev/null 2>&1; then
        echo "(no pgrep: cannot tell whether an MPS daemon is running)"
      elif pgrep -f nvidia-cuda-mps-control >/dev/null 2>&1; then
        echo "an MPS control daemon is running"
      else
        echo "no MPS control daemon running (ranks sharing a GPU are time-sliced)"
      fi
    else
      echo "nvidia-cuda-mps-control: not found"
    fi
    echo "== toolchain"
    command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -2 || echo "nvcc: not found"
    cmake --version 2>&1 | head -1
    c++ --version 2>&1 | head -1
    command -v mpirun >/dev/null 2>&1 && mpirun --version 2>&1 | head -1 || echo "mpirun: not found"
    command -v ucx_info >/dev/null 2>&1 && ucx_info -v 2>&1 | head -2
    echo "== device files: $(echo /dev/nvidia*)"
    echo "== python3: $(command -v python3 || echo 'not found (the gpu.stats and gpu.osu tests need it)')"
  } 2>&1 | tee "$OUTDIR/machine.txt"
  if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    note "nvidia-cuda-mps-control: present"
  else
    note "nvidia-cuda-mps-control: absent"
  fi
  if command -v nvidia-smi >/dev/null 2>&1; then
    note "gpus: $(nvidia-smi -L 2>&1 | tr '\n' ';')"
  fi
}

# ---- build -----------------------------------------------------------------------------------
do_build() {
  local mpiexec
  mpiexec=$(command -v mpiexec || command -v mpirun || true)
  run_step configure cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGCOLL_WITH_CUDA=ON \
    ${mpiexec:+-DMPIEXEC_EXECUTABLE="$mpiexec"} || return 2
  local targets=()
  if [ "${GCOLL_GPU_BUILD_ALL:-0}" != "1" ]; then
    targets=(--target gcoll gcoll_gpu_tests gcoll_cuda_kernels_check osu_allreduce osu_bcast osu_allgather)
  fi
  run_step build cmake --build "$BUILD" -j "$JOBS" "${targets[@]}" || return 2
  return 0
}

# ---- tests -----------------------------------------------------------------------------------
# ctest_step NAME ARGS...: one ctest run, its JUnit report in $OUTDIR/NAME.xml.
# shellcheck disable=SC2317  # (called through run_step)
ctest_step() {
  local name=$1
  shift
  (cd "$BUILD" && ctest --output-on-failure --output-junit "$OUTDIR/$name.xml" "$@")
}

do_test() {
  if [ ! -f "$BUILD/CTestTestfile.cmake" ]; then
    log "no build in $BUILD: run '$0 build' first"
    return 2
  fi
  local rc1=0 rc2=0
  if (cd "$BUILD" && ctest -N -R '^gpu\.kernels$' | grep -q 'gpu.kernels'); then
    run_step ctest-gpu-kernels ctest_step ctest-gpu-kernels -R '^gpu\.kernels$' "$@"
    rc1=$?
  else
    log "no gpu.kernels test in this build"
  fi
  run_step ctest-gpu ctest_step ctest-gpu -L gpu -E '^gpu\.kernels$' "$@"
  rc2=$?
  cp -f "$BUILD/Testing/Temporary/LastTest.log" "$OUTDIR/LastTest.log" 2>/dev/null || true
  local skipped
  skipped=$(cat "$OUTDIR/ctest-gpu-kernels.log" "$OUTDIR/ctest-gpu.log" 2>/dev/null | grep -c '\*\*\*Skipped' || true)
  grep -hE '^[0-9]+% tests passed|tests failed out of' "$OUTDIR/ctest-gpu-kernels.log" "$OUTDIR/ctest-gpu.log" \
    2>/dev/null | while read -r l; do note "  $l"; done
  if [ "$rc1" -ne 0 ] || [ "$rc2" -ne 0 ]; then
    log "FAILED: some gpu test failed (see $OUTDIR/ctest-gpu*.log and LastTest.log)"
    grep -hE '^\s+[0-9]+ - .*\((Failed|Timeout|Not Run|SEGFAULT|Subprocess aborted|Exception)' \
      "$OUTDIR/ctest-gpu-kernels.log" "$OUTDIR/ctest-gpu.log" 2>/dev/null | while read -r l; do note "  FAILED: $l"; done
    worse 1
  fi
  if [ "$skipped" -gt 0 ]; then
    log "WARNING: $skipped gpu test(s) were SKIPPED: no usable GPU on this machine, nothing validated there"
    note "  $skipped test(s) skipped (no usable GPU)"
    worse 3
  fi
  return 0
}

# ---- benchmarks ----------------------------------------------------------------------------------
do_bench() {
  if [ ! -x "$BUILD/bin/osu_allreduce" ] || [ ! -f "$BUILD/lib/libgcoll.so" ]; then
    log "no benchmarks in $BUILD yet: building"
    do_build || return 2
  fi
  local np=${BENCH_NP:-4} reps=${BENCH_REPS:-3} max=${BENCH_MAX:-268435456}
  local iters=${BENCH_ITERS:-20} warm=${BENCH_WARMUP:-5}
  local lat_iters=${BENCH_LAT_ITERS:-10000} lat_warm=${BENCH_LAT_WARMUP:-1000}
  local cmp="$ROOT/benchmarks/osu_style/compare.py"
  mkdir -p "$OUTDIR/bench"
  python3 "$cmp" --help >"$OUTDIR/bench/compare-help.txt" 2>&1
  # One GPU: every rank on device 0 (the benchmarks pick local_rank % device count).
  # Sweep: 4 B .. 256 MiB of MPI_FLOAT, few iterations per size (the large sizes dominate).
  run_step bench-allreduce-sweep python3 "$cmp" --bench osu_allreduce --np "$np" --device cuda \
    --build-dir "$BUILD" --reps "$reps" --timeout 1200 --out "$OUTDIR/bench/allreduce-cuda-np$np-sweep" \
    -- -m "4:$max" -T mpi_float -i "$iters" -x "$warm" -f || worse 2
  # Latency: 8 bytes (2 floats), many iterations.
  run_step bench-allreduce-8B python3 "$cmp" --bench osu_allreduce --np "$np" --device cuda \
    --build-dir "$BUILD" --reps "$reps" --timeout 600 --out "$OUTDIR/bench/allreduce-cuda-np$np-8B" \
    -- -m 8:8 -T mpi_float -i "$lat_iters" -x "$lat_warm" -f || worse 2
  log "benchmark tables, CSV and plots under $OUTDIR/bench"
  return 0
}

# ---- main ----------------------------------------------------------------------------------------
setup_env || { log "environment setup failed"; exit 2; }
machine_info
case "$mode" in
  all)
    if do_build; then do_test "$@"; else worse 2; fi
    ;;
  build) do_build || worse 2 ;;
  test) do_test "$@" || worse 2 ;;
  bench) do_bench || worse 2 ;;
esac
note "exit status: $status"
log "done: exit status $status (0 ok, 1 test failure, 2 step failure, 3 tests skipped); summary:"
tee -a "$LOG" <"$SUMMARY"
exit "$status"
