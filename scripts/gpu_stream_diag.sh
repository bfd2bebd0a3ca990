#!/usr/bin/env bash
# A short device call that looks at one hang (docs/gpu-validation.md, 2026-11-29):
# `gpu.stream.proxy.np{3,4}` (issue 30's proxy thread) never end on a real GPU, with and
# without MPS, while `gpu.stream.proxy.np1` and the emulated GPU pass. Run on the GPU
# machine from the repository root, carrying .gpu-bundle:
#
#   bash scripts/gpu_stream_diag.sh     # logs: $OUT/stream-diag.tgz, $OUT/summary.md
#
# Steps: build (scripts/gpu_validate.sh build, sm_90 only); invisible.*.np4 (the checker's
# fix for the MPI's pid-tagged lines); gcoll_stream_test at np 3 without MPS and
# GCOLL_DEBUG=INFO: if it has not ended after GCOLL_DIAG_WAIT seconds (default 20), every
# rank's threads (name, kernel wait channel) and their backtraces (gdb, else cuda-gdb),
# then the job is killed; then, while GCOLL_DIAG_BUDGET (default 220 s) allows, the
# shared-cores comparison of gpu_backlog.sh step S without the wait slice (with MPS).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
BUDGET=${GCOLL_DIAG_BUDGET:-220}
WAIT=${GCOLL_DIAG_WAIT:-20}
export -n GCOLL_DIAG_BUDGET GCOLL_DIAG_WAIT 2>/dev/null
T0=$(date +%s)
OUTROOT=${OUT:-$ROOT/gpu-out}
W=/tmp/gcoll-stream-diag
rm -rf "$W"
mkdir -p "$W" "$OUTROOT"
SUM=$W/summary.md
BUILD=$ROOT/build-gpu
say() { printf '[%4ds] %s\n' "$(($(date +%s) - T0))" "$*" | tee -a "$SUM"; }
left() { echo $((T0 + BUDGET - $(date +%s))); }
finish() {
  if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
    echo quit | timeout 20 nvidia-cuda-mps-control
    pkill -x nvidia-cuda-mps-server 2>/dev/null
  fi
  say "done after $(($(date +%s) - T0)) s"
  tar czf "$OUTROOT/stream-diag.tgz" -C "$W" . 2>/dev/null
  cp -f "$SUM" "$OUTROOT/summary.md"
}
trap finish EXIT

say "gpu_stream_diag.sh: commit $(git rev-parse --short HEAD 2>/dev/null) $(git status --short | wc -l) changed files"
OUT=$W/build GCOLL_GPU_CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90-real \
  bash scripts/gpu_validate.sh build >"$W/build.log" 2>&1
rc=$?
say "build: exit $rc"
[ "$rc" -eq 0 ] && [ -f "$BUILD/lib/libgcoll.so" ] || { tail -30 "$W/build.log" >>"$SUM"; exit 2; }
# shellcheck disable=SC1091
. /opt/gcoll-deps/env.sh
# shellcheck disable=SC1091
. scripts/env.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export GCOLLTEST_GPU_EMULATE=0
unset GCOLL_CUDA

# ---- invisible.*.np4 without MPS --------------------------------------------------------------
(cd "$BUILD" && timeout -k 5 60 ctest --output-on-failure -R '^invisible\.(mpi|engine|vnodes2)\.np4$') >"$W/invisible.log" 2>&1
say "invisible.*.np4: exit $?"
grep -E 'Test +#|tests passed|FAIL|differs|left behind|stderr has' "$W/invisible.log" | head -20 | sed 's/^/    /' >>"$SUM"

# ---- the proxy's hang: np 3, without MPS -------------------------------------------------------
GDB=$(command -v gdb || command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null || true)
say "debugger: ${GDB:-none}"
hang() {
  local name=$1
  shift
  mpiexec -np 3 -x GCOLL_ENABLE=1 -x GCOLLTEST_THREAD_MULTIPLE=1 -x GCOLLTEST_TIMEOUT=90 -x GCOLL_DEBUG=INFO "$@" \
    "$BUILD/bin/gcoll_stream_test" >"$W/$name.log" 2>&1 &
  local mp=$! i
  for i in $(seq "$WAIT"); do
    sleep 1
    kill -0 "$mp" 2>/dev/null || break
  done
  if ! kill -0 "$mp" 2>/dev/null; then
    wait "$mp"
    say "$name: ended by itself, exit $? (no hang within $WAIT s)"
  else
    say "$name: still running after $WAIT s: threads and backtraces"
    local p t
    for p in $(pgrep -f "^$BUILD/bin/gcoll_stream_test"); do
      for t in /proc/"$p"/task/*; do
        echo "$p ${t##*/} $(cat "$t/comm" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
      done >>"$W/$name-tasks.txt"
      if [ -n "$GDB" ]; then
        timeout -k 5 60 "$GDB" -batch -ex 'set pagination off' -ex 'info threads' -ex 'thread apply all bt 40' \
          -p "$p" >"$W/$name-bt-$p.txt" 2>&1 &
      fi
    done
    wait $(jobs -p | grep -v "^$mp\$") 2>/dev/null
    kill -TERM "$mp" 2>/dev/null
    sleep 2
    pkill -KILL -f "^$BUILD/bin/gcoll_stream_test" 2>/dev/null
    kill -KILL "$mp" 2>/dev/null
    wait "$mp" 2>/dev/null
    sed 's/^/    /' "$W/$name-tasks.txt" >>"$SUM"
    # each rank's proxy thread and main thread, briefly: the frames naming gcoll or CUDA
    for f in "$W/$name"-bt-*.txt; do
      [ -f "$f" ] || continue
      echo "    == ${f##*/}" >>"$SUM"
      grep -E '^Thread|^#[0-9]+ ' "$f" | grep -vE ' in (__GI_|syscall|futex_wait|__futex)' | cut -c1-200 | head -60 |
        sed 's/^/      /' >>"$SUM"
    done
  fi
  sed 's/\x1b\[[0-9;]*m//g' "$W/$name.log" | grep -vE 'pmix|PMIx|pcompress|dlopen error|Perhaps a missing|^-+$|^$' | tail -25 |
    sed 's/^/    /' >>"$SUM"
}
hang proxy-np3-nomps

# ---- step S without the slice (with MPS), while time is left -----------------------------------
if [ "$(left)" -ge 60 ] && command -v nvidia-cuda-mps-control >/dev/null; then
  mkdir -p /tmp/gcoll-diag-mps "$W/mps-log"
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/gcoll-diag-mps CUDA_MPS_LOG_DIRECTORY=$W/mps-log
  nvidia-cuda-mps-control -d && sleep 1 && say "MPS daemon started"
  nc=$(nproc)
  l=$(($(left) - 10))
  [ "$l" -gt 45 ] && l=45
  timeout -k 5 "$l" python3 benchmarks/osu_style/compare.py --build-dir "$BUILD" --out "$W/S-noslice" --timeout "$l" \
    --bench osu_allreduce --busy "$nc" --env GCOLL_WAIT_SLICE=0 --device cuda --np 4 --reps 2 -- \
    -m 8:1048576 -i 20 -x 2 -T mpi_float >"$W/S-noslice.txt" 2>&1
  say "S-busy-osu_allreduce-cuda-noslice: exit $?"
  tail -26 "$W/S-noslice.txt" | sed 's/^/    /' >>"$SUM"
else
  say "S: not run (no time left)"
fi
exit 0
