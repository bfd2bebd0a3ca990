#!/usr/bin/env bash
# CTest launcher of the `gpu` MPI tests:
#
#   gpu_or_skip.sh PROBE -- COMMAND [ARGS...]
#
# Runs PROBE (gcoll_gpu_probe: cudaGetDeviceCount, a context on device 0). When it
# fails, or cannot run, prints "SKIPPED: no GPU (<why>)" and exits 77 (the tests'
# SKIP_RETURN_CODE) without starting COMMAND (the mpirun line: the MPI is not
# CUDA-aware and must never see a device pointer it cannot handle). Otherwise it
# prints the devices and execs COMMAND, whose exit status becomes the test's.
#
# GCOLL_GPU_TESTS_FORCE=1 runs COMMAND even when the probe fails (to see how the
# programs themselves behave without a GPU: they print "SKIPPED: no GPU" and exit 77).
set -u
if [ $# -lt 3 ] || [ "$2" != "--" ]; then
  echo "usage: gpu_or_skip.sh PROBE -- COMMAND [ARGS...]" >&2
  exit 2
fi
probe=$1
shift 2

why=""
if [ -x "$probe" ]; then
  out=$("$probe" -v 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    why=$(printf '%s' "$out" | tail -n 1)
    [ -n "$why" ] || why="gcoll_gpu_probe exited with status $rc"
  else
    printf '%s\n' "$out"
  fi
elif command -v nvidia-smi >/dev/null 2>&1; then
  # No probe (not built): nvidia-smi lists the GPUs the driver sees.
  if ! out=$(nvidia-smi -L 2>&1) || ! printf '%s' "$out" | grep -q '^GPU '; then
    why="nvidia-smi -L lists no GPU"
  else
    printf '%s\n' "$out"
  fi
else
  why="no probe at $probe and no nvidia-smi"
fi

if [ -n "$why" ]; then
  if [ "${GCOLL_GPU_TESTS_FORCE:-0}" = "1" ]; then
    echo "gpu_or_skip.sh: no GPU ($why); GCOLL_GPU_TESTS_FORCE=1: running anyway"
  else
    echo "SKIPPED: no GPU ($why)"
    exit 77
  fi
fi
echo "gpu_or_skip.sh: running: $*"
exec "$@"
