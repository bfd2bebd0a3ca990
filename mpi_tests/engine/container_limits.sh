#!/usr/bin/env bash
# The limits of the containers jobs run in (issue 15), tried in a namespace of their own:
#   shm MPIRUN LIB PROGRAM      /dev/shm of 4 MiB (a tmpfs mounted in a private mount
#                               namespace): the engine's node segment of 4 ranks (8 MiB)
#                               does not fit. Expected: one warning naming /dev/shm and
#                               GCOLL_CHUNK_SIZE, every call on the MPI's collectives
#                               (stats: engine 0, passthrough = calls), right results,
#                               exit 0. (Before: the segment mapped fine and the first
#                               touch beyond 4 MiB killed the rank with SIGBUS.)
#   memlock MPIRUN PROGRAM      RLIMIT_MEMLOCK of 64 KiB in a user namespace (where root has
#                               no CAP_IPC_LOCK, as in a container): pinned memory cannot be
#                               had on the emulated GPU (its pinned memory is mlock'ed, as
#                               cudaHostAlloc's is). Expected: one warning per rank naming the
#                               memlock limit, device calls staged through pageable memory,
#                               right results (PROGRAM: gcoll_gpu_mpi_test, staged path).
# Exit 77 (skipped) when the namespace cannot be had here (no unshare, no permission).
set -uo pipefail
mode=${1:?shm or memlock}
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

case "$mode" in
  shm)
    mpirun=$1 lib=$2 prog=$3
    if [ "$(id -u)" -eq 0 ]; then ns=(unshare -m); else ns=(unshare -rm); fi
    if ! "${ns[@]}" true 2>/dev/null; then echo "SKIPPED: cannot create a mount namespace here"; exit 77; fi
    cat >"$tmp/inner.sh" <<INNER
mount -t tmpfs -o size=4m gcoll-test /dev/shm || { echo "SKIPPED: cannot mount a tmpfs on /dev/shm"; exit 77; }
echo "/dev/shm: \$(df -h /dev/shm | tail -1)"
# Open MPI's own shared memory (vader) goes to /tmp: only gcoll's segment meets the limit.
export OMPI_MCA_btl_vader_backing_directory=$tmp
exec timeout -k 5 120 "$mpirun" -np 4 -x LD_PRELOAD="$lib" -x GCOLL_HOST_BUFFERS=engine -x GCOLL_CHUNK_SIZE=1M \
  -x GCOLL_STATS_FILE="$tmp/stats.json" "$prog" 100000
INNER
    "${ns[@]}" bash "$tmp/inner.sh" >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 77 ] && exit 77
    [ $rc -eq 0 ] || { echo "FAIL: the job failed ($rc)"; exit 1; }
    grep -q "^PASS" "$tmp/out" || { echo "FAIL: no PASS line"; exit 1; }
    n=$(grep -c "cannot be had in /dev/shm.*GCOLL_CHUNK_SIZE" "$tmp/out")
    [ "$n" -eq 1 ] || { echo "FAIL: $n warnings about /dev/shm, expected 1"; exit 1; }
    python3 - "$tmp/stats.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
for c in ("allreduce", "bcast", "allgather"):
    s = d[c]
    if s["engine"] != 0 or s["passthrough"] != s["calls"] or s["calls"] != 4:
        sys.exit("FAIL: %s: %s (expected 4 calls, all passthrough)" % (c, s))
print("stats: every call on the MPI's collectives")
PY
    ;;
  memlock)
    mpirun=$1 prog=$2
    if ! unshare -r true 2>/dev/null; then echo "SKIPPED: cannot create a user namespace here"; exit 77; fi
    cat >"$tmp/inner.sh" <<INNER
ulimit -l 64 || { echo "SKIPPED: cannot lower RLIMIT_MEMLOCK"; exit 77; }
echo "memlock: \$(ulimit -l) KiB"
exec timeout -k 5 150 "$mpirun" -np 2 -x GCOLL_CUDA=emulate -x GCOLL_DEVICE_BUFFERS=staged -x GCOLLTEST_TIMEOUT=120 \
  "$prog" --gtest_filter='GpuAllreduce*:GpuBcast*:GpuAllgather*'
INNER
    unshare -r bash "$tmp/inner.sh" >"$tmp/out" 2>&1
    rc=$?
    sed 's/\x1b\[[0-9;]*m//g' "$tmp/out" | grep -E "memlock:|WARN|PASSED|FAILED|tests ran"
    [ $rc -eq 77 ] && exit 77
    [ $rc -eq 0 ] || { echo "FAIL: the job failed ($rc)"; exit 1; }
    n=$(grep -c "pinned host memory .* cannot be had .*RLIMIT_MEMLOCK" "$tmp/out")
    [ "$n" -eq 2 ] || { echo "FAIL: $n warnings about pinned memory, expected 2 (one per rank)"; exit 1; }
    ;;
  *) echo "usage: $0 shm MPIRUN LIB PROGRAM | memlock MPIRUN PROGRAM" >&2; exit 64 ;;
esac
echo PASS
