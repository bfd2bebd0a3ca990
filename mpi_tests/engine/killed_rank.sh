#!/usr/bin/env bash
# usage: killed_rank.sh MPIRUN NP PROGRAM LIBGCOLL [VAR=VALUE...]
# Runs PROGRAM (which kills its last rank mid-loop) with gcoll's engine, and checks that
# the job ends by itself within the time limit, fails, and leaves no /dev/shm/gcoll.* behind.
set -u
mpirun=$1 np=$2 prog=$3 lib=$4
shift 4
xs=()
for kv in "$@"; do xs+=(-x "$kv"); done
before=$(ls /dev/shm | grep -c '^gcoll\.' || true)
timeout 120 "$mpirun" --oversubscribe -np "$np" -x LD_PRELOAD="$lib" -x GCOLL_HOST_BUFFERS=engine "${xs[@]}" "$prog"
rc=$?
after=$(ls /dev/shm | grep -c '^gcoll\.' || true)
echo "killed_rank: mpirun exit $rc; gcoll segments in /dev/shm before $before, after $after"
if [ "$rc" -eq 124 ]; then echo "FAIL: the job hung"; exit 1; fi
if [ "$rc" -eq 0 ]; then echo "FAIL: the job reported success although a rank died"; exit 1; fi
if [ "$after" -gt "$before" ]; then echo "FAIL: shared-memory segments left behind"; ls -l /dev/shm; exit 1; fi
echo "PASS"
