#!/usr/bin/env bash
# GPU validation, run ON the GPU machine from the repository root, with the MPI bundle
# (../shared/gpu-node/make-bundle.sh) carried along as .gpu-bundle/:
#
#   scripts/gpu_validate.sh [all]          build, then the `gpu` tests twice, without and
#                                          with MPS (default)
#   scripts/gpu_validate.sh build          install the bundle, configure and build only
#   scripts/gpu_validate.sh test [ARGS]    the `gpu` tests only, twice (build-gpu must exist);
#                                          ARGS go to ctest (e.g. -R gpu.mpi.default.np2)
#   scripts/gpu_validate.sh bench          performance: 4 ranks on one GPU, osu_allreduce
#                                          -d cuda -T mpi_float up to 256 MiB, gcoll
#                                          (LD_PRELOAD) vs the staged baseline (osu's
#                                          --staged on plain MPI), plus the 8-byte latency
#   scripts/gpu_validate.sh table [D1 [D2]]  no GPU needed: the table again, from earlier
#                                          outputs: without MPS from D1/no-mps, with MPS
#                                          from D2/mps (default D1 = $OUT or ./gpu-out,
#                                          D2 = D1); printed only
#
# Steps: install the bundle into /opt/gcoll-deps (GCOLL_DEPS) unless already there and
# source its env.sh; print the machine (nvidia-smi, MPS, toolchain, commit); configure
# build-gpu (GCOLL_GPU_BUILD) as Release with GCOLL_WITH_CUDA=ON and build with -j16
# (GCOLL_GPU_JOBS); run `gpu.kernels` first, then every other test labelled `gpu`.
#
# Two runs of the tests (test, all). Ranks that share a GPU without MPS are time-sliced
# by the driver; with MPS their work runs concurrently, and results and timings differ.
# So the suite runs
#   1. without MPS: an MPS control daemon already running (any pipe directory) is
#      stopped first (echo quit | nvidia-cuda-mps-control, with its own
#      CUDA_MPS_PIPE_DIRECTORY) and started again at exit with the same pipe and log
#      directories (also when only the MPS run is asked for: two daemons would collide);
#   2. with MPS: the script starts its own daemon (nvidia-cuda-mps-control -d) with
#      CUDA_MPS_PIPE_DIRECTORY=$OUT/mps/mps-pipe (a mktemp directory under /tmp when that
#      path is too long for a socket name) and CUDA_MPS_LOG_DIRECTORY=$OUT/mps/mps-log,
#      both exported to the tests as well, and stops it afterwards (echo quit, same
#      environment; killed by its pid if it does not go), also after a failure, an
#      interruption (INT, TERM) or the time limit. No nvidia-cuda-mps-control, or a
#      daemon that does not start: the MPS column reads "n/a (why)" and the exit status
#      is at least 2 (the MPS run was not validated).
# Each run logs to its own directory, $OUT/no-mps and $OUT/mps: ctest-gpu-kernels.log
# and ctest-gpu.log (ctest's console output), their JUnit reports ctest-gpu-kernels.xml
# and ctest-gpu.xml, LastTest.log, tests.txt (the tests ctest -N lists) and, for a run
# that could not be done, na (the reason). At the end one table, a row per test:
#   | test | without MPS | with MPS |    cells: pass, FAIL, skip or n/a, then the
#                                       duration in seconds ("pass 12s", "FAIL 240s")
# built from the JUnit reports (from the console logs when a report is missing; a test
# started but never finished reads "FAIL cut off"; n/a: not run, or not reached before
# the time limit) is printed and written to $OUT/mps-table.md and $OUT/summary.txt.
# Logs (one file per step, plus validate.log with timestamps and summary.txt) go to
# "$OUT" if set, else ./gpu-out.
#
# Exit status (the worst of all steps and of every run that was done): 0 when every
# step passed and every test passed in each run; 1 when a test failed (in either run);
# 2 when a step (install, configure, build, benchmark run) failed, or a run could not be
# validated: MPS asked for but nvidia-cuda-mps-control missing or its daemon not
# starting, a running daemon that would not stop for the no-MPS run, or tests left
# unrun by GCOLL_VALIDATE_TIMEOUT, or an interruption (INT, TERM: the table of what ran
# is still written); 3 when tests were skipped (no usable GPU: nothing was validated
# there).
#
# Settings (environment): GCOLL_DEPS, GCOLL_BUNDLE (default .gpu-bundle), GCOLL_GPU_BUILD,
# GCOLL_GPU_JOBS, GCOLL_GPU_CMAKE_ARGS (more configure arguments, e.g.
# -DCMAKE_CUDA_ARCHITECTURES=90-real), GCOLL_GPU_BUILD_ALL=1 (build every target, not only what the gpu tests
# run), BENCH_REPS (default 3), BENCH_ITERS / BENCH_WARMUP (sweep, default 20 / 5),
# BENCH_LAT_ITERS / BENCH_LAT_WARMUP (8-byte latency, default 10000 / 1000),
# BENCH_MAX (largest size in bytes, default 268435456 = 256 MiB), BENCH_NP (default 4),
# GCOLL_VALIDATE_MPS=both (default: the two runs) | off (only without MPS) | on (only
#   with MPS); the column of a run not done reads "n/a (not run: ...)",
# GCOLL_VALIDATE_TIMEOUT=SECONDS: time limit of each run (default 0: none). ctest gets
#   --stop-time: it starts no test after the limit and cuts off the one running (that
#   one reads FAIL; those not reached, n/a); a hard `timeout` ends ctest 120 s later.
# GCOLL_VALIDATE_UCX=cuda (opt-in; default: Debian's UCX 1.13 from the bundle, no CUDA
#   transports): the UCX 1.22 with CUDA transports of NVIDIA's wheel libucx-cu13, unpacked
#   into .ucx-cuda/ (GCOLL_UCX_CUDA_DIR) by scripts/ucx_cuda.sh on a machine with PyPI and
#   carried along with the bundle (docs/ucx-cuda.md). Its libucx/lib goes first in
#   LD_LIBRARY_PATH for every step (same sonames: libgcoll.so and Open MPI load it instead
#   of Debian's; UCX finds its modules next to libucs.so.0, no UCX_MODULE_DIR needed), and
#   $OUT/ucx.txt records which UCX is loaded: ucx_info -v and -d of it (cuda_copy and
#   cuda_ipc with a GPU), the same through mpirun (what the ranks see), and what libgcoll.so
#   resolves (ldd); summary.txt gets one line. No .ucx-cuda/: nothing runs (exit 2); a GPU
#   that this UCX does not see (no cuda_copy: libcuda.so.1 or libnvidia-ml.so.1 missing):
#   exit status at least 2.
#
# bench runs once, with whatever MPS state the caller set up (the script neither starts
# nor stops a daemon) unless GCOLL_VALIDATE_MPS is set explicitly: on = its own daemon
# around the benchmarks, as above; off = a running daemon stopped for them and started
# again at exit; both = left as it is.
#
# Device calls are limited to 10 minutes (the machine keeps build-gpu between calls
# while it stays warm). Split the work, giving each run a limit that fits the call:
#   call 1: scripts/gpu_validate.sh build
#   call 2: GCOLL_VALIDATE_TIMEOUT=270 scripts/gpu_validate.sh test     (both runs), or
#   call 2: GCOLL_VALIDATE_MPS=off GCOLL_VALIDATE_TIMEOUT=540 scripts/gpu_validate.sh test
#   call 3: GCOLL_VALIDATE_MPS=on  GCOLL_VALIDATE_TIMEOUT=540 scripts/gpu_validate.sh test
#   then, here: scripts/gpu_validate.sh table OUT_OF_CALL_2 OUT_OF_CALL_3
# (a run of the whole suite took about 150 s on an H100 in Nov 2026; bench in its own
# call(s), with BENCH_* settings that fit).
set -uo pipefail

mode=${1:-all}
[ $# -gt 0 ] && shift
case "$mode" in
  all|build|test|bench|table) ;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0 [all|build|test [ctest args]|bench|table [DIR_NO_MPS [DIR_MPS]]]" >&2; exit 64 ;;
esac
MPS_MODE=${GCOLL_VALIDATE_MPS:-both}
case "$MPS_MODE" in
  both|off|on) ;;
  *) echo "GCOLL_VALIDATE_MPS must be both, off or on (not '$MPS_MODE')" >&2; exit 64 ;;
esac
VALIDATE_TIMEOUT=${GCOLL_VALIDATE_TIMEOUT:-0}
UCX_MODE=${GCOLL_VALIDATE_UCX:-debian}
case "$UCX_MODE" in
  debian|cuda) ;;
  *) echo "GCOLL_VALIDATE_UCX must be cuda or debian (not '$UCX_MODE')" >&2; exit 64 ;;
esac
case "$VALIDATE_TIMEOUT" in
  '' | *[!0-9]*) echo "GCOLL_VALIDATE_TIMEOUT must be a number of seconds (not '$VALIDATE_TIMEOUT')" >&2; exit 64 ;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
OUTDIR=${OUT:-$ROOT/gpu-out}
if [ "$mode" != table ]; then # (table only reads)
  mkdir -p "$OUTDIR" || exit 2
  OUTDIR=$(cd "$OUTDIR" && pwd)
fi
DEPS=${GCOLL_DEPS:-/opt/gcoll-deps}
BUNDLE=${GCOLL_BUNDLE:-$ROOT/.gpu-bundle}
BUILD=${GCOLL_GPU_BUILD:-$ROOT/build-gpu}
UCX_CUDA_DIR=${GCOLL_UCX_CUDA_DIR:-$ROOT/.ucx-cuda}
# (the script's own settings, not gcoll's: the ranks would report them as unknown)
export -n GCOLL_VALIDATE_UCX GCOLL_UCX_CUDA_DIR 2>/dev/null
JOBS=${GCOLL_GPU_JOBS:-16}
LOG=$OUTDIR/validate.log
SUMMARY=$OUTDIR/summary.txt
status=0   # worst outcome so far (see the exit codes above)

ts() { date -u +%Y-%m-%dT%H:%M:%SZ; }
log() { printf '[%s] %s\n' "$(ts)" "$*" | tee -a "$LOG"; }
note() { printf '%s\n' "$*" >>"$SUMMARY"; }
worse() { [ "$1" -gt "$status" ] && status=$1; return 0; }

# ---- results and the table (no GPU needed) ----------------------------------------------------
# junit_results FILE.xml: one line per <testcase> of a ctest JUnit report,
# NAME<TAB>RESULT<TAB>DURATION, RESULT pass, FAIL or skip, DURATION like 12s. Reads the
# file tag by tag (RS="<": the text in the report is escaped, so every record is one
# tag), whatever the line breaks and the order of the attributes. ctest's statuses: run
# (pass), fail, notrun with <skipped message="SKIP_RETURN_CODE=77"> or "Disabled" (skip)
# or another message such as "Unable to find executable" (ctest counts that as failed).
junit_results() {
  awk '
    function attr(tag, a,   re) {
      re = " " a "=\"[^\"]*\""
      if (match(tag, re)) return substr(tag, RSTART + length(a) + 3, RLENGTH - length(a) - 4)
      return ""
    }
    function unesc(x) {
      gsub(/&lt;/, "<", x); gsub(/&gt;/, ">", x); gsub(/&quot;/, "\"", x)
      gsub(/&apos;/, "\047", x); gsub(/&amp;/, "\\&", x)
      return x
    }
    function emit(   r, d) {
      if (st == "run") r = "pass"
      else if (st == "fail") r = "FAIL"
      else if (st == "disabled") r = "skip"
      else if (st == "notrun") r = (skipmsg ~ /SKIP|[Dd]isabled/) ? "skip" : "FAIL"
      else r = failed ? "FAIL" : (skipped ? "skip" : "pass")
      d = (tm ~ /^[0-9.eE+-]+$/) ? sprintf("%ds", tm + 0.5) : "?s"
      printf "%s\t%s\t%s\n", unesc(name), r, d
      open = 0
    }
    BEGIN { RS = "<" }
    {
      j = index($0, ">")
      if (j == 0) next
      tag = substr($0, 1, j - 1)
      gsub(/[\t\r\n]+/, " ", tag)
      if (tag ~ /^testcase( |\/|$)/) {
        if (open) emit()
        open = 1; failed = 0; skipped = 0; skipmsg = ""
        name = attr(tag, "name"); tm = attr(tag, "time"); st = attr(tag, "status")
        if (tag ~ /\/ *$/) emit()
      } else if (open && tag ~ /^(failure|error)( |\/|$)/) {
        failed = 1
      } else if (open && tag ~ /^skipped( |\/|$)/) {
        skipped = 1; skipmsg = attr(tag, "message")
      } else if (open && tag ~ /^\/testcase/) {
        emit()
      }
    }
    END { if (open) emit() }
  ' "$1"
}

# log_results FILE.log: the same from ctest's console output, for a run without a
# JUnit report (ctest killed): "N/M Test #K: NAME ....   Passed   1.00 sec" lines; a
# test with a "Start K: NAME" line and no result reads "FAIL cut off".
log_results() {
  awk '
    /^ *Start +[0-9]+: / {
      s = $0; sub(/^ *Start +[0-9]+: +/, "", s); sub(/[ \t\r]+$/, "", s)
      if (!(s in seen)) { seen[s] = 1; order[++n] = s }
      next
    }
    /^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / {
      s = $0; sub(/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: +/, "", s)
      nm = s; sub(/ .*/, "", nm)
      rest = substr(s, length(nm) + 1); sub(/^[ .]*/, "", rest)
      if (rest ~ /^Passed/) r = "pass"
      else if (rest ~ /Skipped|Disabled/) r = "skip"
      else r = "FAIL"
      d = "?s"
      if (match(rest, /[0-9.]+ sec/)) d = sprintf("%ds", substr(rest, RSTART, RLENGTH - 4) + 0.5)
      if (!(nm in seen)) { seen[nm] = 1; order[++n] = nm }
      res[nm] = r " " d
    }
    END {
      for (i = 1; i <= n; i++) {
        nm = order[i]
        if (nm in res) { split(res[nm], a, " "); printf "%s\t%s\t%s\n", nm, a[1], a[2] }
        else printf "%s\tFAIL\tcut off\n", nm
      }
    }
  ' "$1"
}

# half_results DIR: the results of one run (gpu.kernels first, then the rest).
half_results() {
  local f
  for f in "$1/ctest-gpu-kernels" "$1/ctest-gpu"; do
    if [ -s "$f.xml" ] && grep -q '<testcase' "$f.xml"; then
      junit_results "$f.xml"
    elif [ -f "$f.log" ]; then
      log_results "$f.log"
    fi
  done
}

# mps_table DIR_NO_MPS DIR_MPS [WHY_NO_MPS [WHY_MPS]]: the table (markdown), a row per
# test: test | without MPS | with MPS. A run with a WHY, or whose directory holds `na`
# (why it could not be done), or without a directory has "n/a (why)" in every cell; a
# test missing from a run that was done reads "n/a" (not reached).
mps_table() {
  local i=0 d why
  {
    for d in "$1" "$2"; do
      i=$((i + 1))
      why=${3:-}
      [ "$i" = 2 ] && why=${4:-}
      if [ -f "$d/tests.txt" ]; then awk '{ print "N\t" $0 }' "$d/tests.txt"; fi
      if [ -n "$why" ]; then
        printf 'R\t%s\t%s\n' "$i" "$why"
      elif [ -f "$d/na" ]; then
        printf 'R\t%s\t%s\n' "$i" "$(head -1 "$d/na")"
      elif [ ! -d "$d" ]; then
        printf 'R\t%s\t%s\n' "$i" "no results in $d"
      fi
      half_results "$d" | awk -v p="T\t$i\t" '{ print p $0 }'
    done
  } | awk -F '\t' '
    function add(nm) { if (nm != "" && !(nm in seen)) { seen[nm] = 1; order[++n] = nm } }
    $1 == "N" { listed[++nl] = $2; next }
    $1 == "R" { why[$2] = $3; next }
    $1 == "T" { add($3); cell[$2, $3] = $4 " " $5; next }
    END {
      for (i = 1; i <= nl; i++) add(listed[i])
      w0 = length("test"); w1 = length("without MPS"); w2 = length("with MPS")
      for (i = 1; i <= n; i++) {
        nm = order[i]
        for (h = 1; h <= 2; h++) {
          if (h in why) c = "n/a (" why[h] ")"
          else if ((h, nm) in cell) c = cell[h, nm]
          else c = "n/a"
          out[i, h] = c
        }
        if (length(nm) > w0) w0 = length(nm)
        if (length(out[i, 1]) > w1) w1 = length(out[i, 1])
        if (length(out[i, 2]) > w2) w2 = length(out[i, 2])
      }
      fmt = "| %-" w0 "s | %-" w1 "s | %-" w2 "s |\n"
      printf fmt, "test", "without MPS", "with MPS"
      d0 = d1 = d2 = ""
      for (k = 0; k < w0; k++) d0 = d0 "-"
      for (k = 0; k < w1; k++) d1 = d1 "-"
      for (k = 0; k < w2; k++) d2 = d2 "-"
      printf fmt, d0, d1, d2
      if (n == 0) printf fmt, "(no results)", (1 in why) ? "n/a (" why[1] ")" : "n/a", (2 in why) ? "n/a (" why[2] ")" : "n/a"
      for (i = 1; i <= n; i++) printf fmt, order[i], out[i, 1], out[i, 2]
    }
  '
}

if [ "$mode" = table ]; then
  src1=${1:-$OUTDIR}
  src2=${2:-$src1}
  mps_table "$src1/no-mps" "$src2/mps"
  exit 0
fi

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
  # This script validates a real GPU: without one the tests must skip (exit 3), not fall
  # back to the emulated GPU as they do in CI (mpi_tests/gpu/gpu_or_skip.sh).
  export GCOLLTEST_GPU_EMULATE=0
  unset GCOLL_CUDA
  if [ "$UCX_MODE" = cuda ]; then
    ucx_cuda_env || return 2
  fi
  return 0
}

# ---- UCX with CUDA transports (GCOLL_VALIDATE_UCX=cuda) ---------------------------------------
# ucx_cuda_env: the wheel's UCX first in LD_LIBRARY_PATH. False when .ucx-cuda/ is missing.
ucx_cuda_env() {
  if [ ! -f "$UCX_CUDA_DIR/libucx/lib/libucp.so.0" ]; then
    log "GCOLL_VALIDATE_UCX=cuda but no UCX in $UCX_CUDA_DIR (make it with scripts/ucx_cuda.sh on a machine with PyPI and carry it along)"
    note "ucx: GCOLL_VALIDATE_UCX=cuda but $UCX_CUDA_DIR is missing: nothing run"
    return 2
  fi
  export LD_LIBRARY_PATH=$UCX_CUDA_DIR/libucx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  log "GCOLL_VALIDATE_UCX=cuda: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  return 0
}

# ucx_evidence: which UCX this run loads, into $OUTDIR/ucx.txt and one line of the summary.
ucx_evidence() {
  local info=$UCX_CUDA_DIR/libucx/bin/ucx_info ver tls cuda=no f
  {
    echo "== $(ts) GCOLL_VALIDATE_UCX=cuda: $UCX_CUDA_DIR/libucx/lib first in LD_LIBRARY_PATH"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    [ -f "$UCX_CUDA_DIR/MANIFEST" ] && sed -n '1,3p' "$UCX_CUDA_DIR/MANIFEST"
    echo "== ucx_info -v"
    "$info" -v 2>&1 | head -5
    echo "== ucx_info -d: memory domains, transports, memory types"
    "$info" -d 2>&1 | grep -E '^# *(Memory domain|Transport|Device):|memory types' | sed 's/^# *//'
    echo "== CUDA modules: what they need (ldd)"
    for f in "$UCX_CUDA_DIR"/libucx/lib/ucx/libuct_cuda.so.0 "$UCX_CUDA_DIR"/libucx/lib/ucx/libucm_cuda.so.0; do
      ldd "$f" 2>&1 | grep -E 'libcuda\.so|libnvidia-ml|libcudart|not found' | sed "s|^|${f##*/}: |"
    done
    echo "== the same ucx_info -v through mpirun (the ranks' environment)"
    if command -v mpirun >/dev/null 2>&1; then
      timeout -k 5 60 mpirun -np 1 "$info" -v 2>&1 | head -3
    else
      echo "mpirun: not found"
    fi
    echo "== what libgcoll.so and Open MPI's pml ucx resolve"
    if [ -f "$BUILD/lib/libgcoll.so" ]; then
      ldd "$BUILD/lib/libgcoll.so" 2>&1 | grep -E 'libuc[ptsm]\.so' | sed 's/^[[:space:]]*/libgcoll.so: /'
    else
      echo "libgcoll.so: not built yet ($BUILD/lib/libgcoll.so)"
    fi
    for f in $(find "${OPAL_PREFIX:-/usr}"/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 -name mca_pml_ucx.so 2>/dev/null | head -1); do
      ldd "$f" 2>&1 | grep -E 'libucp\.so' | sed 's/^[[:space:]]*/mca_pml_ucx.so: /'
    done
    echo "== UCX_LOG_LEVEL=debug ucx_info -d: cuda lines (why a CUDA transport is missing)"
    UCX_LOG_LEVEL=debug "$info" -d 2>&1 | grep -E "lib(uct|ucm)_cuda|'cuda'|cuda_(md|copy|ipc)|cuInit|cuDevice|nvml" | head -20
  } >"$OUTDIR/ucx.txt" 2>&1
  ver=$("$info" -v 2>/dev/null | sed -n 's/^# Library version: //p')
  tls=$("$info" -d 2>/dev/null | sed -n 's/^# *Transport: //p' | sort -u | tr '\n' ' ')
  case " $tls " in *" cuda_copy "*) cuda=yes ;; esac
  log "UCX ${ver:-?} from $UCX_CUDA_DIR; transports: ${tls:-none}; CUDA memory: $cuda (details: $OUTDIR/ucx.txt)"
  note "ucx: ${ver:-?} from $UCX_CUDA_DIR (GCOLL_VALIDATE_UCX=cuda), transports: ${tls% }; cuda_copy: $cuda"
  if [ "$cuda" != yes ]; then
    log "WARNING: the UCX in $UCX_CUDA_DIR sees no GPU (see the debug lines in $OUTDIR/ucx.txt)"
    # A GPU that the wheel's UCX cannot use: what GCOLL_VALIDATE_UCX=cuda asks for is not validated.
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
      note "ucx: a GPU is present but the UCX of $UCX_CUDA_DIR has no cuda_copy: not validated"
      worse 2
    fi
  fi
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
    else
      echo "nvidia-cuda-mps-control: not found"
    fi
    local daemons
    daemons=$(mps_daemons)
    if [ -n "$daemons" ]; then
      printf '%s\n' "$daemons" | while IFS=$'\t' read -r pid pipe logd; do
        echo "an MPS control daemon is running: pid $pid, pipe directory $pipe, log directory $logd"
      done
    else
      echo "no MPS control daemon running (ranks sharing a GPU are time-sliced)"
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
  local extra=()
  # GCOLL_GPU_CMAKE_ARGS: more configure arguments, e.g. -DCMAKE_CUDA_ARCHITECTURES=90-real
  # (one architecture instead of three: a shorter build when device time is short)
  read -r -a extra <<<"${GCOLL_GPU_CMAKE_ARGS:-}"
  run_step configure cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGCOLL_WITH_CUDA=ON \
    ${mpiexec:+-DMPIEXEC_EXECUTABLE="$mpiexec"} "${extra[@]}" || return 2
  local targets=()
  if [ "${GCOLL_GPU_BUILD_ALL:-0}" != "1" ]; then
    targets=(--target gcoll gcoll_info gcoll_gpu_tests gcoll_cuda_kernels_check osu_benchmarks gcoll_invisible gcoll_mpi_nonblocking gcoll_nb_threads)
  fi
  run_step build cmake --build "$BUILD" -j "$JOBS" "${targets[@]}" || return 2
  if [ "$UCX_MODE" = cuda ]; then
    log "libgcoll.so resolves: $(ldd "$BUILD/lib/libgcoll.so" 2>&1 | grep -E 'libucp\.so' | sed 's/^[[:space:]]*//')"
  fi
  return 0
}

# ---- MPS -------------------------------------------------------------------------------------
MPS_STARTED=0   # 1 while the script's own daemon may be running (cleanup stops it)
MPS_PID=""      # its pid, when found
MPS_PIPE=""     # its pipe and log directories
MPS_LOGDIR=""
MPS_WHY=""      # why mps_start failed
MPS_RESTORE=()  # "PIPE<TAB>LOG" of each daemon the script stopped: started again at exit

# mps_daemons: one line per running MPS control daemon (a process whose argv[0] is
# nvidia-cuda-mps-control, with -d or -f): PID<TAB>PIPE_DIR<TAB>LOG_DIR, the directories
# from its environment (the defaults when not set or not readable).
mps_daemons() {
  local p a d e pipe logd
  local -a args
  for p in /proc/[0-9]*; do
    args=()
    mapfile -d '' -t args 2>/dev/null <"$p/cmdline" || continue
    if [ "${#args[@]}" -lt 2 ] || [ "${args[0]##*/}" != nvidia-cuda-mps-control ]; then
      continue
    fi
    d=0
    for a in "${args[@]:1}"; do
      case "$a" in -d | -f) d=1 ;; esac
    done
    [ "$d" = 1 ] || continue
    pipe=/tmp/nvidia-mps logd=/var/log/nvidia-mps
    while IFS= read -r -d '' e; do
      case "$e" in
        CUDA_MPS_PIPE_DIRECTORY=?*) pipe=${e#*=} ;;
        CUDA_MPS_LOG_DIRECTORY=?*) logd=${e#*=} ;;
      esac
    done 2>/dev/null <"$p/environ"
    printf '%s\t%s\t%s\n' "${p#/proc/}" "$pipe" "$logd"
  done
}

# alive PID: the process exists and is not a zombie.
alive() {
  [ -d "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# gone PID SECONDS: waits until the process is gone; false when it is still there.
gone() {
  local i
  for ((i = 0; i < $2 * 2; i++)); do
    alive "$1" || return 0
    sleep 0.5
  done
  ! alive "$1"
}

# mps_ctl PIPE LOG COMMAND: one command for the daemon on PIPE (at most 60 s).
mps_ctl() {
  local guard=()
  command -v timeout >/dev/null 2>&1 && guard=(timeout -k 5 60)
  printf '%s\n' "$3" | CUDA_MPS_PIPE_DIRECTORY=$1 CUDA_MPS_LOG_DIRECTORY=$2 "${guard[@]}" nvidia-cuda-mps-control
}

# mps_stop_others: stops every MPS control daemon that runs (the script's own daemons
# left by an earlier, killed run are stopped for good; the others are started again at
# exit). False when one would not stop.
mps_stop_others() {
  local pid pipe logd ok=0
  while IFS=$'\t' read -r pid pipe logd; do
    [ -n "$pid" ] || continue
    log "an MPS control daemon is running (pid $pid, pipe directory $pipe): stopping it (echo quit | nvidia-cuda-mps-control)"
    if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
      log "cannot stop it: nvidia-cuda-mps-control is not on PATH"
      note "MPS daemon running (pid $pid, pipe $pipe): could not be stopped"
      ok=1
      continue
    fi
    mps_ctl "$pipe" "$logd" quit >>"$LOG" 2>&1
    if ! gone "$pid" 30; then
      log "the MPS daemon (pid $pid) did not stop"
      note "MPS daemon running (pid $pid, pipe $pipe): did not stop"
      ok=1
    else
      case "$pipe" in
        "$OUTDIR"/mps/* | /tmp/gcoll-mps-pipe.*)
          note "MPS daemon left by an earlier run of this script (pid $pid, pipe $pipe): stopped" ;;
        *)
          note "MPS daemon running (pid $pid, pipe $pipe): stopped, started again at exit"
          MPS_RESTORE+=("$pipe"$'\t'"$logd") ;;
      esac
    fi
  done < <(mps_daemons)
  return "$ok"
}

# mps_restore: starts again the daemons mps_stop_others stopped (same pipe and log
# directories; the rest of their environment is this script's).
mps_restore() {
  local e pipe logd
  for e in "${MPS_RESTORE[@]}"; do
    pipe=${e%%$'\t'*}
    logd=${e#*$'\t'}
    if CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$logd nvidia-cuda-mps-control -d \
      </dev/null >>"$LOG" 2>&1; then
      log "MPS control daemon started again (pipe directory $pipe, log directory $logd)"
    else
      log "WARNING: could not start the MPS control daemon again (pipe directory $pipe)"
    fi
  done
  MPS_RESTORE=()
}

# mps_start: starts the script's own daemon, its pipe and log directories private and
# exported for the tests. False, with the reason in MPS_WHY, when it cannot.
mps_start() {
  local rc i pid
  MPS_WHY=""
  MPS_PID=""
  if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    MPS_WHY="nvidia-cuda-mps-control not found"
    return 1
  fi
  MPS_LOGDIR=$OUTDIR/mps/mps-log
  MPS_PIPE=$OUTDIR/mps/mps-pipe
  if [ "${#MPS_PIPE}" -gt 80 ]; then # socket names are limited to 107 bytes
    if ! MPS_PIPE=$(mktemp -d /tmp/gcoll-mps-pipe.XXXXXX); then
      MPS_PIPE=""
      MPS_WHY="no pipe directory (mktemp failed)"
      return 1
    fi
  fi
  rm -rf "$MPS_LOGDIR"
  if ! mkdir -p "$MPS_PIPE" "$MPS_LOGDIR"; then
    MPS_WHY="cannot create $MPS_PIPE or $MPS_LOGDIR"
    return 1
  fi
  export CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOGDIR
  log "starting an MPS control daemon: CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOGDIR nvidia-cuda-mps-control -d"
  MPS_STARTED=1
  nvidia-cuda-mps-control -d </dev/null >>"$LOG" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    MPS_WHY="nvidia-cuda-mps-control -d exited with status $rc"
    return 1
  fi
  for ((i = 0; i < 20; i++)); do
    pid=$(mps_daemons | awk -F '\t' -v p="$MPS_PIPE" '$2 == p { print $1; exit }')
    if [ -n "$pid" ]; then
      log "MPS control daemon running: pid $pid"
      MPS_PID=$pid
      return 0
    fi
    sleep 0.5
  done
  if mps_ctl "$MPS_PIPE" "$MPS_LOGDIR" get_server_list >>"$LOG" 2>&1; then
    log "MPS control daemon answers (pid not found)"
    return 0
  fi
  MPS_WHY="the MPS control daemon did not start (see $MPS_LOGDIR/control.log)"
  return 1
}

# mps_stop: stops the script's own daemon (echo quit; killed by its pid when it has not
# gone after 30 s) and removes its pipe directory. Does nothing when none was started.
mps_stop() {
  [ "$MPS_STARTED" = 1 ] || return 0
  MPS_STARTED=0
  local pid=$MPS_PID
  [ -n "$pid" ] || pid=$(mps_daemons | awk -F '\t' -v p="$MPS_PIPE" '$2 == p { print $1; exit }')
  if [ -n "$MPS_PID" ] && ! alive "$MPS_PID"; then
    log "the MPS control daemon (pid $MPS_PID) has already gone"
  else
    log "stopping the MPS control daemon${pid:+ (pid $pid)}: echo quit | nvidia-cuda-mps-control"
    mps_ctl "$MPS_PIPE" "$MPS_LOGDIR" quit >>"$LOG" 2>&1
  fi
  if [ -n "$pid" ] && ! gone "$pid" 30; then
    log "the MPS control daemon (pid $pid) did not quit: killing it"
    kill -TERM "$pid" 2>/dev/null
    gone "$pid" 5 || kill -KILL "$pid" 2>/dev/null
  fi
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  # Pipes and sockets only: they would not come back with $OUT anyway.
  [ -n "$MPS_PIPE" ] && rm -rf "$MPS_PIPE"
  return 0
}

# shellcheck disable=SC2317  # (the EXIT trap)
cleanup() {
  mps_stop
  mps_restore
}

# ---- tests -----------------------------------------------------------------------------------
# ctest_step NAME DEADLINE ARGS...: one ctest run, its JUnit report in $OUTDIR/NAME.xml.
# DEADLINE (epoch seconds, 0: none): ctest --stop-time (it starts no test after it and
# cuts off the one running), and a hard `timeout` 120 s later in case ctest hangs.
# shellcheck disable=SC2317  # (called through run_step)
ctest_step() {
  local name=$1 deadline=$2
  shift 2
  local stop=() guard=() tz=() left
  if [ "$deadline" -gt 0 ]; then
    left=$((deadline - $(date +%s)))
    if [ "$left" -lt 5 ]; then
      echo "gpu_validate.sh: time limit reached (GCOLL_VALIDATE_TIMEOUT=$VALIDATE_TIMEOUT s): ctest not started"
      return 124
    fi
    # ctest reads HH:MM:SS as local time, today (tomorrow when past): UTC for both.
    stop=(--stop-time "$(date -u -d "@$deadline" +%H:%M:%S)")
    tz=(env TZ=UTC0)
    if command -v timeout >/dev/null 2>&1; then
      guard=(timeout --foreground -k 10 $((left + 120)))
    fi
  fi
  (cd "$BUILD" && "${tz[@]}" "${guard[@]}" ctest --output-on-failure --output-junit "$OUTDIR/$name.xml" \
    "${stop[@]}" "$@")
}

# clear_half DIR: removes the results of an earlier run from $OUTDIR/DIR.
clear_half() {
  local d=$OUTDIR/$1
  rm -f "$d"/ctest-gpu-kernels.* "$d"/ctest-gpu.* "$d/LastTest.log" "$d/tests.txt" "$d/na"
}

# half_na DIR WHY: a run that could not be done (the table shows "n/a (WHY)").
half_na() {
  mkdir -p "$OUTDIR/$1"
  clear_half "$1"
  printf '%s\n' "$2" >"$OUTDIR/$1/na"
  log "run '$1' not done: $2"
  note "run '$1': n/a ($2)"
}

# run_half DIR ARGS...: the gpu tests once (gpu.kernels first, then every other test
# labelled gpu), logs and JUnit reports in $OUTDIR/DIR, within GCOLL_VALIDATE_TIMEOUT.
run_half() {
  local half=$1
  shift
  local dir=$OUTDIR/$half deadline=0 rc1=0 rc2=0 res nfail nskip l
  mkdir -p "$dir"
  clear_half "$half"
  (cd "$BUILD" && ctest -N -L gpu "$@" 2>/dev/null) | sed -n 's/^ *Test *#[0-9]*: *//p' >"$dir/tests.txt"
  if [ "$VALIDATE_TIMEOUT" -gt 0 ]; then
    deadline=$(($(date +%s) + VALIDATE_TIMEOUT))
    log "run '$half': time limit $VALIDATE_TIMEOUT s (until $(date -u -d "@$deadline" +%H:%M:%SZ))"
  fi
  note "run '$half':"
  # (grep reads all: with -q, ctest could die of SIGPIPE and pipefail report no match)
  if (cd "$BUILD" && ctest -N -R '^gpu\.kernels$' | grep 'gpu\.kernels' >/dev/null); then
    run_step "$half/ctest-gpu-kernels" ctest_step "$half/ctest-gpu-kernels" "$deadline" -R '^gpu\.kernels$' "$@"
    rc1=$?
  else
    log "no gpu.kernels test in this build"
  fi
  run_step "$half/ctest-gpu" ctest_step "$half/ctest-gpu" "$deadline" -L gpu -E '^gpu\.kernels$' "$@"
  rc2=$?
  cp -f "$BUILD/Testing/Temporary/LastTest.log" "$dir/LastTest.log" 2>/dev/null || true
  grep -hE '^[0-9]+% tests passed|tests failed out of' "$dir/ctest-gpu-kernels.log" "$dir/ctest-gpu.log" \
    2>/dev/null | while read -r l; do note "  $l"; done
  res=$(half_results "$dir")
  nfail=$(printf '%s\n' "$res" | awk -F '\t' '$2 == "FAIL" { n++ } END { print n + 0 }')
  nskip=$(printf '%s\n' "$res" | awk -F '\t' '$2 == "skip" { n++ } END { print n + 0 }')
  if [ "$rc1" -ne 0 ] || [ "$rc2" -ne 0 ] || [ "$nfail" -gt 0 ]; then
    log "FAILED ($half): some gpu test failed (see $dir/ctest-gpu*.log and LastTest.log)"
    printf '%s\n' "$res" | awk -F '\t' '$2 == "FAIL" { print $1 " (" $3 ")" }' |
      while read -r l; do note "  FAILED: $l"; done
    worse 1
  fi
  if [ "$nskip" -gt 0 ]; then
    log "WARNING ($half): $nskip gpu test(s) were SKIPPED: no usable GPU on this machine, nothing validated there"
    note "  $nskip test(s) skipped (no usable GPU)"
    worse 3
  fi
  if grep -qE 'The stop time has been passed|gpu_validate.sh: time limit reached' \
    "$dir/ctest-gpu-kernels.log" "$dir/ctest-gpu.log" 2>/dev/null ||
    [ "$rc1" -eq 124 ] || [ "$rc1" -eq 137 ] || [ "$rc2" -eq 124 ] || [ "$rc2" -eq 137 ]; then
    log "WARNING ($half): time limit (GCOLL_VALIDATE_TIMEOUT=$VALIDATE_TIMEOUT s) reached: tests cut off or not run"
    note "  time limit ($VALIDATE_TIMEOUT s) reached: tests cut off or not run"
    worse 2
  fi
  return 0
}

NA_NO_MPS=""     # why the table's columns are n/a (a run not asked for)
NA_MPS=""
TABLE_PENDING=0  # 1 while do_test runs: an interruption still writes the table

write_table() {
  TABLE_PENDING=0
  mps_table "$OUTDIR/no-mps" "$OUTDIR/mps" "$NA_NO_MPS" "$NA_MPS" >"$OUTDIR/mps-table.md"
  note ""
  note "gpu tests without and with MPS ($OUTDIR/mps-table.md):"
  cat "$OUTDIR/mps-table.md" >>"$SUMMARY"
}

# do_test ARGS...: the two runs (GCOLL_VALIDATE_MPS), then the table.
do_test() {
  if [ ! -f "$BUILD/CTestTestfile.cmake" ]; then
    log "no build in $BUILD: run '$0 build' first"
    return 2
  fi
  local want_no=1 want_mps=1 others_ok=1
  [ "$MPS_MODE" = on ] && want_no=0
  [ "$MPS_MODE" = off ] && want_mps=0
  [ "$want_no" = 1 ] && clear_half no-mps
  [ "$want_mps" = 1 ] && clear_half mps
  [ "$want_no" = 1 ] || NA_NO_MPS="not run: GCOLL_VALIDATE_MPS=$MPS_MODE"
  [ "$want_mps" = 1 ] || NA_MPS="not run: GCOLL_VALIDATE_MPS=$MPS_MODE"
  rm -f "$OUTDIR/mps-table.md"
  TABLE_PENDING=1
  mps_stop_others || others_ok=0
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  # 1. without MPS: ranks sharing the GPU are time-sliced
  if [ "$want_no" = 1 ]; then
    if [ "$others_ok" = 1 ]; then
      log "run 1: the gpu tests without MPS"
      run_half no-mps "$@"
    else
      half_na no-mps "an MPS daemon already running could not be stopped"
      worse 2
    fi
  fi
  # 2. with MPS: the script's own daemon, stopped right after
  if [ "$want_mps" = 1 ]; then
    if mps_start; then
      log "run 2: the gpu tests with MPS"
      run_half mps "$@"
      mps_stop
    else
      mps_stop
      half_na mps "$MPS_WHY"
      worse 2
    fi
  fi
  mps_restore
  write_table
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
  # Across nodes (issue 13): the same ranks as 2 x 2 virtual nodes (GCOLL_RANKS_PER_NODE=2),
  # 8 B .. 64 MiB, the pipelined way, and the direct one where this run's UCX supports CUDA
  # memory (GCOLL_VALIDATE_UCX=cuda). Targets: 64 MiB pipelined >= 10x the staged MPI,
  # direct within 2x of the one-node sweep above; no size slower than the staged MPI.
  local net nets=pipelined
  [ "$UCX_MODE" = cuda ] && nets="pipelined direct"
  for net in $nets; do
    run_step "bench-allreduce-vnodes2-$net" python3 "$cmp" --bench osu_allreduce --np "$np" --device cuda \
      --build-dir "$BUILD" --reps "$reps" --timeout 1200 --env GCOLL_RANKS_PER_NODE=2 --env "GCOLL_DEVICE_NET=$net" \
      --out "$OUTDIR/bench/allreduce-cuda-np$np-vnodes2-$net" \
      -- -m "8:67108864" -T mpi_float -i "$iters" -x "$warm" -f || worse 2
  done
  log "benchmark tables, CSV and plots under $OUTDIR/bench"
  return 0
}

# ---- main ----------------------------------------------------------------------------------------
# finish: the summary and the exit status (also after an interruption).
finish() {
  trap - INT TERM
  [ "$TABLE_PENDING" = 1 ] && write_table
  note "exit status: $status"
  log "done: exit status $status (0 ok, 1 test failure, 2 step failure or a run not validated, 3 tests skipped); summary:"
  tee -a "$LOG" <"$SUMMARY"
  exit "$status"
}

# shellcheck disable=SC2317  # (the INT and TERM traps)
on_signal() {
  log "interrupted (SIG$1): stopping"
  note "interrupted (SIG$1)"
  worse 2
  finish
}

trap cleanup EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
setup_env || { log "environment setup failed"; exit 2; }
machine_info
[ "$UCX_MODE" = cuda ] && ucx_evidence
case "$mode" in
  all)
    if do_build; then do_test "$@"; else worse 2; fi
    ;;
  build) do_build || worse 2 ;;
  test) do_test "$@" || worse 2 ;;
  bench)
    # The caller's MPS state, unless GCOLL_VALIDATE_MPS is set to on or off.
    case "${GCOLL_VALIDATE_MPS:-}" in
      on)
        mps_stop_others
        if mps_start; then
          do_bench || worse 2
        else
          log "bench with MPS not done: $MPS_WHY"
          note "bench with MPS: n/a ($MPS_WHY)"
          worse 2
        fi
        mps_stop
        ;;
      off)
        if mps_stop_others; then
          do_bench || worse 2
        else
          log "bench without MPS not done: an MPS daemon could not be stopped"
          worse 2
        fi
        ;;
      *) do_bench || worse 2 ;;
    esac
    mps_restore
    ;;
esac
finish
