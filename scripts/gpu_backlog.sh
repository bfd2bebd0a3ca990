#!/usr/bin/env bash
# The GPU validation backlog (docs/gpu-validation.md, "First thing on the next GPU") in
# ONE device call, for sessions whose whole device time is about 15 minutes. Run on the
# GPU machine from the repository root, carrying .gpu-bundle (and .ucx-cuda for step C):
#
#   bash scripts/gpu_backlog.sh          # everything below within GCOLL_BACKLOG_BUDGET s
#
# Steps, in order of what they decide; each gets what is left of the budget, capped:
#   build  scripts/gpu_validate.sh build, sm_90 only (GCOLL_GPU_CMAKE_ARGS)
#   A      without MPS (time-sliced GPU): gpu.kernels, the default suite at np 4, the
#          issue 23 algorithms (gpu.colls.*: one node and 2 x 2 virtual nodes pipelined),
#          stats; the process with and without gcoll where the real driver and NVML are
#          loaded (invisible.*: host buffers; issue 28); the nonblocking and persistent
#          forms on device buffers (gpu.nonblocking.*: completed through every completion
#          call, threads; issue 29); the stream-ordered calls, proxy thread and
#          host-synchronous (gpu.stream.*: issue 30)
#   K      without MPS: the compressed allreduce's CUDA kernels (issue 32 item 4):
#          gpu.compress_kernels (bit for bit against the host functions), then
#          osu_allreduce -d cuda on 2 x 2 virtual nodes pipelined with
#          GCOLL_ALLREDUCE_COMPRESS=bf16 / fp16 (-c: exact on OSU's small integers) and fp8
#          (lossy: no -c), the stats' compressed calls and bytes; then
#          gpu.mpi.compress.pipelined.np4 (mpi_tests/compress_test.cc on real device
#          buffers, 2 x 2 virtual nodes: every format within the bound, the same bits on
#          every rank, the stats' compressed bytes, exact where not compressed); step C:
#          bf16 direct and gpu.mpi.compress.{direct,pipelined}.np4 with MPS
#   B      with MPS (the script's own daemon): the fused one-shot's protocol (gpu.fused.*),
#          the default suite (GCOLL_DEVICE_FUSED=auto: fused under MPS) at np 2, 4, 8,
#          chunk64k, virtual nodes pipelined, traffic, stats, osu -c, then the rest
#   C      with MPS and the UCX wheel (GCOLL_VALIDATE_UCX=cuda's LD_LIBRARY_PATH): the
#          direct way across virtual nodes (gpu.mpi.vnodes2.direct.np4, gpu.traffic.*direct*)
#   T      the node topology: nvidia-smi topo -m and -q, lstopo, gcoll_info --topology, a
#          device job's GCOLL_TOPO_DUMP_FILE, stats and GCOLL_DEBUG=INFO lines
#   F      (with MPS) compare.py --device cuda, np 4, against the staged MPI: the issue 23
#          collectives (osu_reduce, osu_reduce_scatter, osu_alltoall, osu_allgatherv) on one
#          node, and issue 29's osu_iallreduce (overlap at 1 MiB) and the persistent 8-byte
#          allreduce (osu_allreduce_persistent: MPI_Start against the blocking call), issue
#          30's stream-ordered allreduce (osu_allreduce_enqueue: 100 calls back to back, one
#          stream synchronization, against osu_allreduce -d cuda; the proxy, then the device
#          path GCOLL_STREAM_DEVICE=on, then the device path inside a CUDA graph)
#   S      (with MPS) shared cores: osu_allreduce -d cuda with a CPU-bound loop on every core,
#          gcoll (with GCOLL_WAIT_SLICE and without) against the staged MPI
#   E      (with MPS) the issue 13 benchmark: 64 MiB allreduce, np 4, on 2 x 2 virtual nodes
#          direct (UCX wheel) and pipelined, on one node, and the staged MPI alone
#   D      benchmarks/small_calls.py build-gpu --mps on (host row + device row under MPS,
#          GCOLL_DEVICE_FUSED=auto)
#   A2     without MPS: the rest of the gpu suite, while time is left
# Every ctest run stops starting tests at its step's deadline (--stop-time). Logs go to a
# work directory and come back as ONE archive, $OUT/gpu-backlog.tgz, plus $OUT/summary.md
# (step, exit status, seconds, ctest's pass/fail lines and small_calls' table).
#
# Settings (environment): GCOLL_BACKLOG_BUDGET (seconds for the whole script, default
# 540: leave the call's timeout_s some 30 s above it); GCOLL_BACKLOG_PLAN=recheck: after
# the build, only the tests matching GCOLL_RECHECK_NOMPS without MPS, then those matching
# GCOLL_RECHECK_MPS with MPS (ctest regular expressions; empty: none), each for at most
# GCOLL_RECHECK_CAP seconds (default 120); GCOLL_RECHECK_TOPO=1 runs step T first;
# GCOLL_RECHECK_MPS_UCX: tests with MPS and the UCX wheel, and again with the variables
# of GCOLL_RECHECK_MPS_UCX_ENV exported (e.g. to show a fix's test failing without it);
# GCOLL_RECHECK_BENCH=1: then the nonblocking path's benchmarks with MPS (compare.py).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
BUDGET=${GCOLL_BACKLOG_BUDGET:-540}
PLAN=${GCOLL_BACKLOG_PLAN:-all}
# (the script's own settings, not gcoll's: the ranks would report them as unknown)
export -n GCOLL_BACKLOG_BUDGET GCOLL_BACKLOG_PLAN GCOLL_RECHECK_BENCH GCOLL_RECHECK_NOMPS GCOLL_RECHECK_MPS GCOLL_RECHECK_CAP GCOLL_RECHECK_TOPO GCOLL_RECHECK_MPS_UCX GCOLL_RECHECK_MPS_UCX_ENV 2>/dev/null
T0=$(date +%s)
OUTROOT=${OUT:-$ROOT/gpu-out}
W=/tmp/gcoll-backlog
rm -rf "$W"
mkdir -p "$W" "$OUTROOT"
SUM=$W/summary.md
BUILD=$ROOT/build-gpu
MPS_PIPE=/tmp/gcoll-backlog-mps
MPS_LOG=$W/mps-log

left() { echo $((T0 + BUDGET - $(date +%s))); }
say() { printf '[%4ds] %s\n' "$(($(date +%s) - T0))" "$*" | tee -a "$SUM"; }

mps_on() {
  command -v nvidia-cuda-mps-control >/dev/null 2>&1 || { say "no nvidia-cuda-mps-control"; return 1; }
  mkdir -p "$MPS_PIPE" "$MPS_LOG"
  export CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOG
  if nvidia-cuda-mps-control -d; then
    sleep 1
    say "MPS daemon started"
    return 0
  fi
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  say "MPS daemon did not start"
  return 1
}
mps_off() {
  if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
    echo quit | timeout 30 nvidia-cuda-mps-control
    sleep 1
    pkill -x nvidia-cuda-mps-control 2>/dev/null
    pkill -x nvidia-cuda-mps-server 2>/dev/null
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    say "MPS daemon stopped"
  fi
}

finish() {
  mps_off
  say "done after $(($(date +%s) - T0)) s"
  cp -f "$BUILD/Testing/Temporary/LastTest.log" "$W/LastTest-final.log" 2>/dev/null
  tar czf "$OUTROOT/gpu-backlog.tgz" -C "$W" . 2>/dev/null
  cp -f "$SUM" "$OUTROOT/summary.md"
}
trap finish EXIT

# ctest_group NAME CAP REGEX: the tests matching REGEX, in CTest's order, for at most
# min(CAP, what is left - 15 s) seconds; console log and JUnit report in $W/NAME.*
ctest_group() {
  local name=$1 cap=$2 re=$3 l
  l=$(left)
  l=$((l - 15))
  [ "$l" -gt "$cap" ] && l=$cap
  if [ "$l" -lt 20 ]; then
    say "$name: not run (no time left)"
    return 0
  fi
  local stop
  stop=$(date -u -d "@$(($(date +%s) + l))" +%H:%M:%S)
  say "$name: up to $l s: $re"
  (cd "$BUILD" && TZ=UTC0 timeout -k 5 $((l + 60)) ctest --output-on-failure \
    --output-junit "$W/$name.xml" --stop-time "$stop" -R "$re") >"$W/$name.log" 2>&1
  say "$name: exit $?"
  grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed|tests failed|Not Run|stop time' "$W/$name.log" |
    sed 's/^/    /' | tee -a "$SUM" >/dev/null
  cp -f "$BUILD/Testing/Temporary/LastTest.log" "$W/$name.LastTest.log" 2>/dev/null
}

say "gpu_backlog.sh: commit $(git rev-parse --short HEAD 2>/dev/null) $(git status --short | wc -l) changed files; budget $BUDGET s"

# ---- build -------------------------------------------------------------------------------------
OUT=$W/build GCOLL_GPU_CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90-real \
  bash scripts/gpu_validate.sh build >"$W/build.log" 2>&1
rc=$?
say "build: exit $rc"
if [ "$rc" -ne 0 ] || [ ! -f "$BUILD/lib/libgcoll.so" ]; then
  tail -40 "$W/build.log"
  exit 2
fi
# shellcheck disable=SC1091
. /opt/gcoll-deps/env.sh
# shellcheck disable=SC1091
. scripts/env.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export GCOLLTEST_GPU_EMULATE=0
unset GCOLL_CUDA
nvidia-smi -q -d COMPUTE,CLOCK >"$W/nvidia-smi-q.txt" 2>&1
(cd "$BUILD" && ctest -N -L gpu) >"$W/gpu-tests.txt" 2>&1

# ---- T: the node topology as detected on this machine (issue 22), against nvidia-smi ----------
topo_step() {
  say "T: topology (nvidia-smi topo -m, gcoll_info --topology, the dump of a device job)"
  timeout 20 nvidia-smi topo -m >"$W/T-nvidia-smi-topo-m.txt" 2>&1
  timeout 20 nvidia-smi -q >"$W/T-nvidia-smi-q-full.txt" 2>&1
  command -v lstopo-no-graphics >/dev/null &&
    timeout 20 lstopo-no-graphics --whole-io -v >"$W/T-lstopo.txt" 2>&1
  timeout 30 "$BUILD/bin/gcoll_info" --topology >"$W/T-gcoll_info-topology.txt" 2>&1
  say "T: gcoll_info --topology: exit $?"
  timeout 30 "$BUILD/bin/gcoll_info" --topology --ranks-per-gpu 4 >"$W/T-gcoll_info-topology-rpg4.txt" 2>&1
  timeout -k 5 60 mpirun -np 4 -x GCOLL_DEBUG=INFO -x GCOLL_TOPO_DUMP_FILE="$W/T-dump-%h-%p.xml" \
    -x GCOLL_STATS_FILE="$W/T-stats.json" -x LD_PRELOAD="$BUILD/lib/libgcoll.so" \
    "$BUILD/bin/osu_allreduce" -d cuda -c -m 8:1048576 -T mpi_float -i 10 -x 2 >"$W/T-osu-info.txt" 2>&1
  say "T: osu_allreduce -c with the dump: exit $?"
  {
    echo '    nvidia-smi topo -m:'
    sed 's/^/      /' "$W/T-nvidia-smi-topo-m.txt" | head -20
    echo '    gcoll_info --topology:'
    sed 's/^/      /' "$W/T-gcoll_info-topology.txt" | head -40
    echo '    nvidia-smi -q (ids):'
    grep -m8 -E 'Bus Id|GPU UUID|NUMA|Serial|Product Name' "$W/T-nvidia-smi-q-full.txt" | sed 's/^/      /'
    echo '    the device job:'
    grep -m12 -iE 'topolog|p2p|island|one-gpu|source' "$W/T-osu-info.txt" | sed 's/^/      /'
    grep -o '"device_topology_[a-z_]*": *[0-9]*\|"p2p_probe_failures": *[0-9]*' "$W/T-stats.json" 2>/dev/null | sort | uniq -c | sed 's/^/      /'
    ls "$W"/T-dump-*.xml 2>/dev/null | head -2 | sed 's/^/      dump: /'
  } >>"$SUM"
  local d
  d=$(ls "$W"/T-dump-*.xml 2>/dev/null | head -1)
  [ -n "$d" ] && sed 's/^/      /' "$d" | head -40 >>"$SUM"
}

# compare_step NAME CAP COMPARE-ARGS...: benchmarks/osu_style/compare.py against the staged MPI,
# for at most CAP seconds; its table goes to the summary
compare_step() {
  local name=$1 cap=$2
  shift 2
  [ "$(left)" -lt $((cap + 20)) ] && { say "$name: not run (no time left)"; return 0; }
  timeout -k 5 "$cap" python3 benchmarks/osu_style/compare.py --build-dir "$BUILD" --out "$W/$name" \
    --timeout "$cap" "$@" >"$W/$name.txt" 2>&1
  say "$name: exit $?"
  sed 's/^/    /' "$W/$name.txt" | tail -30 >>"$SUM"
}

# bench64 NAME MPIRUN-ARGS...: osu_allreduce -d cuda, 64 MiB floats, np 4, under the preload
bench64() {
  local name=$1
  shift
  [ "$(left)" -lt 40 ] && { say "$name: not run (no time left)"; return 0; }
  timeout -k 5 60 mpirun -np 4 "$@" -x LD_PRELOAD="$BUILD/lib/libgcoll.so" "$BUILD/bin/osu_allreduce" \
    -d cuda -m 67108864:67108864 -T mpi_float -i 20 -x 5 >"$W/$name.txt" 2>&1
  say "$name (64 MiB allreduce, np 4 $*): exit $? $(grep -E '^ *67108864 ' "$W/$name.txt" | tr -s ' ')"
}

# compress_osu NAME FORMAT NET OSU-ARGS...: osu_allreduce -d cuda, np 4 on 2 x 2 virtual nodes,
# GCOLL_ALLREDUCE_COMPRESS=FORMAT, GCOLL_DEVICE_NET=NET, under the preload; the stats' compressed
# calls and bytes (0 calls: the device compression path was not taken)
compress_osu() {
  local name=$1 fmt=$2 net=$3
  shift 3
  [ "$(left)" -lt 40 ] && { say "$name: not run (no time left)"; return 0; }
  timeout -k 5 40 mpirun -np 4 -x GCOLL_RANKS_PER_NODE=2 -x GCOLL_ALLREDUCE_COMPRESS="$fmt" \
    -x GCOLL_DEVICE_NET="$net" -x GCOLL_STATS_FILE="$W/$name-stats.json" -x LD_PRELOAD="$BUILD/lib/libgcoll.so" \
    "$BUILD/bin/osu_allreduce" -d cuda -m 4:4194304 -i 10 -x 2 "$@" >"$W/$name.txt" 2>&1
  say "$name (osu_allreduce -d cuda $* $fmt $net): exit $? $(grep -o '"compressed_[a-z_]*": *[0-9]*' "$W/$name-stats.json" 2>/dev/null | tr -d '"' | tr '\n' ' ')"
}

# ---- GCOLL_BACKLOG_PLAN=recheck: a short rerun of chosen tests, without then with MPS ----------
if [ "$PLAN" = recheck ]; then
  [ "${GCOLL_RECHECK_TOPO:-0}" = 1 ] && topo_step
  mps_off
  re=${GCOLL_RECHECK_NOMPS-^gpu\.(fused_kernels|ipc_probe\.np2)$}
  [ -n "$re" ] && ctest_group R1-nomps "${GCOLL_RECHECK_CAP:-120}" "$re"
  if mps_on; then
    re=${GCOLL_RECHECK_MPS-^gpu\.(ipc_probe\.np2)$}
    [ -n "$re" ] && ctest_group R2-mps "${GCOLL_RECHECK_CAP:-120}" "$re"
    # GCOLL_RECHECK_MPS_UCX: tests under MPS with the UCX wheel (.ucx-cuda), as step C;
    # GCOLL_RECHECK_MPS_UCX_ENV: "VAR=value ..." exported for that group only
    if [ -n "${GCOLL_RECHECK_MPS_UCX:-}" ] && [ -f .ucx-cuda/libucx/lib/libucp.so.0 ]; then
      (
        export LD_LIBRARY_PATH=$ROOT/.ucx-cuda/libucx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        ctest_group R3-mps-ucx "${GCOLL_RECHECK_CAP:-120}" "$GCOLL_RECHECK_MPS_UCX"
        if [ -n "${GCOLL_RECHECK_MPS_UCX_ENV:-}" ]; then
          # shellcheck disable=SC2086
          export ${GCOLL_RECHECK_MPS_UCX_ENV}
          say "R4: with ${GCOLL_RECHECK_MPS_UCX_ENV}"
          ctest_group R4-mps-ucx-env "${GCOLL_RECHECK_CAP:-120}" "$GCOLL_RECHECK_MPS_UCX"
        fi
      )
    fi
    # GCOLL_RECHECK_BENCH=1: the benchmarks of the nonblocking path (issue 29) with MPS:
    # osu_iallreduce on device buffers (the engine on the progress thread) and on host
    # buffers through the engine, osu_reduce / osu_reduce_scatter on floats
    if [ "${GCOLL_RECHECK_BENCH:-0}" = 1 ]; then
      compare_step R5-osu_iallreduce-cuda 45 --bench osu_iallreduce --env GCOLL_PROGRESS_THREAD=on --device cuda --np 4 --reps 2 -- -m 8:4194304 -i 50 -x 5 -T mpi_float
      compare_step R5-osu_iallreduce-host-engine 45 --bench osu_iallreduce --np 4 --reps 2 --env GCOLL_PROGRESS_THREAD=on --env GCOLL_HOST_BUFFERS=engine -- -m 8:4194304 -i 50 -x 5 -T mpi_float
      compare_step R5-osu_reduce-cuda 30 --bench osu_reduce --device cuda --np 4 --reps 2 -- -m 8:4194304 -i 50 -x 5 -T mpi_float
      compare_step R5-osu_reduce_scatter-cuda 30 --bench osu_reduce_scatter --device cuda --np 4 --reps 2 -- -m 8:4194304 -i 50 -x 5 -T mpi_float
    fi
    mps_off
  fi
  exit 0
fi

topo_step

# ---- A: without MPS, the essentials ------------------------------------------------------------
mps_off
ctest_group A-nomps 150 '^(gpu\.(kernels|colls\.np[34]|colls\.vnodes2\.pipelined\.np4|nonblocking\.(default|engine|engine_vnodes2)\.np4|nonblocking\.threads\.np3|stream\.(sync|proxy)\.np4|mpi\.default\.np4|stats\.engine\.np4)|invisible\.(mpi|engine|vnodes2)\.np4)$'

# ---- K: the compressed allreduce on the GPU (issue 32 item 4), without MPS -------------------
ctest_group K-compress-kernels 60 '^gpu\.compress_kernels$'
grep -E '^(device:|FAIL|info|PASSED|FAILED|SKIPPED)' "$W/K-compress-kernels.LastTest.log" 2>/dev/null | head -24 |
  cut -c1-300 | sed 's/^/    /' >>"$SUM"
compress_osu K-osu-bf16 bf16 pipelined -c -T mpi_float
compress_osu K-osu-fp16-double fp16 pipelined -c -T mpi_double
compress_osu K-osu-fp8 fp8 pipelined -T mpi_float
ctest_group K-compress-mpi 75 '^gpu\.mpi\.compress\.pipelined\.np4$'
# (gtest colours its lines under mpirun: the escapes go first)
sed 's/\x1b\[[0-9;]*m//g' "$W/K-compress-mpi.LastTest.log" 2>/dev/null |
  grep -E '^(compress test:|bf16|fp16|fp8|\[rank|\[ *(FAILED|PASSED) *\]|SKIPPED)' | head -24 |
  cut -c1-300 | sed 's/^/    /' >>"$SUM"

# ---- B: with MPS -------------------------------------------------------------------------------
if mps_on; then
  # which path the calls take under MPS (the log says whether the fused one-shot is on)
  timeout -k 5 40 mpirun -np 4 -x GCOLL_DEVICE_FUSED=auto -x GCOLL_DEBUG=INFO \
    -x LD_PRELOAD="$BUILD/lib/libgcoll.so" "$BUILD/bin/osu_allreduce" -d cuda -c -m 8:1048576 \
    -T mpi_float -i 20 -x 5 >"$W/B0-info.txt" 2>&1
  say "B0 (osu_allreduce -c, GCOLL_DEBUG=INFO): exit $?"
  grep -m4 -E 'device engine|fused' "$W/B0-info.txt" | sed 's/^/    /' >>"$SUM"
  ctest_group B0-mps 70 '^gpu\.(colls\..*|nonblocking\..*|fused\.np4)$'
  # issue 30 with MPS, in its own group (a hang of one must not eat the steps after it):
  # the proxy (since 2026-11-29 its staged calls take buffers reserved at the enqueue) and
  # the device path (GCOLL_STREAM_DEVICE=on)
  ctest_group B0s-mps 75 '^gpu\.(stream\..*|osu\.allreduce_enqueue.*)$'
  # ---- F: the issue 23 collectives and issue 29's nonblocking/persistent benchmarks --------------
  for b in osu_reduce osu_reduce_scatter osu_alltoall osu_allgatherv; do
    compare_step "F-$b" 40 --bench "$b" --device cuda --np 4 --reps 2 -- -m 8:4194304 -i 50 -x 5 -T mpi_float
  done
  compare_step F-osu_iallreduce 40 --bench osu_iallreduce --env GCOLL_PROGRESS_THREAD=on --device cuda --np 4 --reps 2 -- -m 8:1048576 -i 50 -x 5 -T mpi_float
  compare_step F-osu_iallreduce-vnodes2 40 --bench osu_iallreduce --env GCOLL_PROGRESS_THREAD=on --env GCOLL_RANKS_PER_NODE=2 --env OMPI_MPI_THREAD_LEVEL=3 --baseline-env OMPI_MPI_THREAD_LEVEL=3 --device cuda --np 4 --reps 2 -- -m 8:1048576 -i 50 -x 5 -T mpi_float
  compare_step F-osu_allreduce_persistent 30 --bench osu_allreduce_persistent --env GCOLL_PROGRESS_THREAD=on --device cuda --np 4 --reps 2 -- -m 8:1048576 -i 200 -x 20 -T mpi_float
  compare_step F-osu_allreduce_persistent-host-engine 30 --bench osu_allreduce_persistent --np 4 --reps 2 --env GCOLL_PROGRESS_THREAD=on --env GCOLL_HOST_BUFFERS=engine -- -m 8:1048576 -i 200 -x 20 -T mpi_float
  compare_step F-osu_allreduce_enqueue 40 --bench osu_allreduce_enqueue --device cuda --np 4 --reps 2 -- -m 8:1048576 -i 100 -x 10 -T mpi_float
  # issue 30's device path (GCOLL_STREAM_DEVICE=on: kernels on the stream) and its targets,
  # 4 ranks under MPS: 8 B <= 6 us per call in 100 back to back, <= 4 us inside a graph,
  # 1 MiB <= 12 us, never slower than the blocking call
  compare_step F-osu_allreduce_enqueue-device 40 --bench osu_allreduce_enqueue --env GCOLL_STREAM_DEVICE=on --device cuda --np 4 --reps 2 -- -m 8:1048576 -i 100 -x 10 -T mpi_float
  compare_step F-osu_allreduce_enqueue-device-graph 40 --bench osu_allreduce_enqueue --env GCOLL_STREAM_DEVICE=on --gcoll-arg=--graph --gcoll-arg=100 --device cuda --np 4 --reps 2 -- -m 8:1048576 -i 100 -x 10 -T mpi_float
  compare_step F-osu_allreduce-host-engine 30 --bench osu_allreduce --np 4 --reps 2 --env GCOLL_HOST_BUFFERS=engine -- -m 8:1048576 -i 200 -x 20 -T mpi_float
  # ---- S: shared cores (issue 32 item 2, GCOLL_WAIT_SLICE): device allreduce with one CPU-bound
  # loop pinned on every core of the machine, gcoll against the staged MPI, with the slice
  # (default) and without it (GCOLL_WAIT_SLICE=0)
  nc=$(nproc)
  compare_step S-busy-osu_allreduce-cuda 45 --bench osu_allreduce --busy "$nc" --device cuda --np 4 --reps 2 -- -m 8:1048576 -i 20 -x 2 -T mpi_float
  compare_step S-busy-osu_allreduce-cuda-noslice 45 --bench osu_allreduce --busy "$nc" --env GCOLL_WAIT_SLICE=0 --device cuda --np 4 --reps 2 -- -m 8:1048576 -i 20 -x 2 -T mpi_float
  # ---- C: the direct way, UCX with CUDA support (the wheel) --------------------------------------
  if [ -f .ucx-cuda/libucx/lib/libucp.so.0 ]; then
    (
      export LD_LIBRARY_PATH=$ROOT/.ucx-cuda/libucx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      .ucx-cuda/libucx/bin/ucx_info -d 2>&1 | grep -E 'Memory domain|Transport|memory types' >"$W/C-ucx_info.txt"
      ctest_group C-direct-mps 90 '^gpu\.(colls\.vnodes3\.direct\.np5|mpi\.vnodes[0-9_rpn]*\.direct|traffic\..*\.direct)'
      compress_osu C-osu-bf16-direct bf16 direct -c -T mpi_float
      ctest_group C-compress-mpi-mps 75 '^gpu\.mpi\.compress\.(direct|pipelined)\.np4$'
      # E: the issue 13 benchmark, 64 MiB allreduce on 2 x 2 virtual nodes: direct (this UCX)
      bench64 E-direct -x GCOLL_RANKS_PER_NODE=2 -x GCOLL_DEVICE_NET=direct
    )
  else
    say "C: no .ucx-cuda carried"
  fi
  # the rest under MPS, while time is left
  ctest_group B1-mps 60 '^gpu\.fused\.np2$'
  ctest_group B2-mps 110 '^gpu\.(mpi\.default\.np[248]|mpi\.chunk64k\.np4)$'
  ctest_group B3-mps 60 '^gpu\.(mpi\.vnodes2\.pipelined\.np4|traffic\.(large|small)\.pipelined\.n2xl2|stats\..*|osu\..*)$'
  # the rest of the suite under MPS (gpu.topo.* run on the emulated GPU whatever the machine)
  ctest_group B4-mps 150 '^gpu\.(mpi\.(vnodes3|vnodes4|vnodes2_rpn4)\.pipelined|mpi\.(staged|managed|nofused)|memkind|limits|threads|soak|traffic\.(large|small)\.pipelined\.n[34]|ipc_probe)'
  bench64 E-pipelined -x GCOLL_RANKS_PER_NODE=2 -x GCOLL_DEVICE_NET=pipelined
  bench64 E-onenode
  if [ "$(left)" -ge 40 ]; then
    timeout -k 5 60 mpirun -np 4 "$BUILD/bin/osu_allreduce" -d cuda --staged -m 67108864:67108864 \
      -T mpi_float -i 10 -x 2 >"$W/E-staged-mpi.txt" 2>&1
    say "E-staged-mpi (the MPI alone, -d cuda --staged): exit $? $(grep -E '^ *67108864 ' "$W/E-staged-mpi.txt" | tr -s ' ')"
  fi
  mps_off
fi

# ---- D: small calls ----------------------------------------------------------------------------
l=$(($(left) - 20))
[ "$l" -gt 100 ] && l=100
if [ "$l" -ge 40 ]; then
  say "D: small_calls.py (up to $l s)"
  timeout -k 5 "$l" python3 benchmarks/small_calls.py "$BUILD" --mps on --emulated off --reps 2 \
    -m 8:1048576 -i 100 -x 10 --show 8,64,512,4K,32K,256K,1M --env GCOLL_DEVICE_FUSED=auto \
    --out "$W/small_calls.md" >"$W/D-small_calls.out" 2>"$W/D-small_calls.err"
  say "D: exit $?"
  cat "$W/small_calls.md" >>"$SUM" 2>/dev/null
fi
# ---- A2: without MPS, the rest -----------------------------------------------------------------
ctest_group A2-nomps 200 '^gpu\.(fused\.np2|mpi\.default\.np[28]|mpi\.staged\.np4|mpi\.managed\.np4|stats\..*|osu\..*|memkind\..*|mpi\.nofused\.np4|mpi\.(vnodes3|vnodes4|vnodes2_rpn4)\.pipelined|limits|threads|soak|traffic\..*pipelined|ipc_probe)'
exit 0
