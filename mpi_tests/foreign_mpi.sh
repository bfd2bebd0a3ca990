#!/usr/bin/env bash
# The load check under another MPI (issue 14): a plain MPI C program (preload/preload_c.c)
# built for a *foreign* MPI, run by that MPI's launcher with this build's libgcoll.so
# preloaded. gcoll must print exactly one line naming both MPIs, stay out of the way
# (every call to the program's MPI unchanged), and write no stats; the program must pass.
#   foreign_mpi.sh <libgcoll.so> <program source> <foreign mpicc> <foreign launcher> <x|genv> <work dir>
set -euo pipefail
lib="$1" src="$2" cc="$3" launcher="$4" style="$5" work="$6"
mkdir -p "$work"
prog="$work/preload_c_foreign"
"$cc" -O1 -o "$prog" "$src" -lm
stats="$work/stats.txt"
rm -f "$stats" "$work/out.txt" "$work/err.txt"
envs=(LD_PRELOAD="$lib" GCOLL_STATS_FILE="$stats")
args=()
for kv in "${envs[@]}"; do
  if [ "$style" = genv ]; then args+=(-genv "${kv%%=*}" "${kv#*=}"); else args+=(-x "$kv"); fi
done
flags=()
[ "$style" = x ] && flags+=(--oversubscribe)
rc=0
timeout -k 5 120 "$launcher" "${flags[@]}" -np 2 "${args[@]}" "$prog" >"$work/out.txt" 2>"$work/err.txt" </dev/null || rc=$?
cat "$work/out.txt"
cat "$work/err.txt" >&2
fail() { echo "foreign_mpi: FAIL: $*" >&2; exit 1; }
[ "$rc" -eq 0 ] || fail "the job exited with $rc"
grep -q 'preload_c: PASS' "$work/out.txt" || fail "the program did not pass"
n=$(grep -c 'gcoll: this libgcoll.so was built for' "$work/err.txt" || true)
[ "$n" -eq 1 ] || fail "expected one line from gcoll's load check, got $n"
grep -q 'stays out of the way' "$work/err.txt" || fail "gcoll did not say it stays out of the way"
[ ! -e "$stats" ] || fail "gcoll wrote a stats file under a foreign MPI ($stats)"
echo "foreign_mpi: PASS ($(grep 'gcoll: this libgcoll.so' "$work/err.txt"))"
