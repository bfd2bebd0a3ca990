#!/usr/bin/env bash
# CTest launcher of the `gpu` MPI tests:
#
#   gpu_or_skip.sh PROBE -- COMMAND [ARGS...]
#
# Chooses the GPU the test runs on, then execs COMMAND (the mpirun line), whose exit
# status becomes the test's:
#   - GCOLL_CUDA=emulate already set (any case): the emulated GPU, without probing
#     (to run the emulation on a GPU machine too);
#   - else PROBE (gcoll_gpu_probe: the CUDA device count, a context on device 0)
#     succeeds: the real GPU, as before; the devices are printed;
#   - else (no usable GPU, a build without CUDA, whose probe always fails with "built
#     without CUDA: ...", or PROBE cannot run and nvidia-smi lists none): gcoll's
#     emulated GPU: GCOLL_CUDA=emulate is exported, so that mpirun passes it to every
#     local rank (and gpu_stats_check.py passes it on with -x), and one line says why:
#       gpu_or_skip.sh: no GPU (<why>): running on the emulated GPU (GCOLL_CUDA=emulate)
#
# GCOLLTEST_GPU_EMULATE=0 restores the skip without a GPU: "SKIPPED: no GPU (<why>)"
# and exit 77 (the tests' SKIP_RETURN_CODE) without starting COMMAND (the MPI is not
# CUDA-aware and must never see a device pointer it cannot handle). With it,
# GCOLL_GPU_TESTS_FORCE=1 runs COMMAND anyway (to see how the programs themselves
# behave without a GPU: they print "SKIPPED: no GPU" and exit 77).
set -u
if [ $# -lt 3 ] || [ "$2" != "--" ]; then
  echo "usage: gpu_or_skip.sh PROBE -- COMMAND [ARGS...]" >&2
  exit 2
fi
probe=$1
shift 2

if [ "$(printf '%s' "${GCOLL_CUDA:-}" | tr '[:upper:]' '[:lower:]')" = "emulate" ]; then
  echo "gpu_or_skip.sh: GCOLL_CUDA=${GCOLL_CUDA} set: running on the emulated GPU"
  echo "gpu_or_skip.sh: running: $*"
  exec "$@"
fi

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
  if [ "${GCOLLTEST_GPU_EMULATE:-1}" != "0" ]; then
    export GCOLL_CUDA=emulate
    echo "gpu_or_skip.sh: no GPU ($why): running on the emulated GPU (GCOLL_CUDA=emulate)"
  elif [ "${GCOLL_GPU_TESTS_FORCE:-0}" = "1" ]; then
    echo "gpu_or_skip.sh: no GPU ($why); GCOLL_GPU_TESTS_FORCE=1: running anyway"
  else
    echo "SKIPPED: no GPU ($why)"
    exit 77
  fi
fi
echo "gpu_or_skip.sh: running: $*"
exec "$@"
