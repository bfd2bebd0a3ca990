#!/usr/bin/env bash
# Two engine jobs at once on one machine (issue 12): they must not interfere (shared
# memory segments and every other name are per job) and must not starve each other
# (ranks outnumber cores here; the waits give the CPU away, src/base/wait.h).
#
#   two_jobs.sh MPIEXEC TEST_PROGRAM [mpiexec flags...]
#
# Starts job A (one node of 4 ranks: shared memory only) and job B (4 ranks as 2 virtual
# nodes of 2: shared memory and UCX) together, each running allreduce correctness tests
# (every result checked against PMPI_Allreduce, and equal on all ranks). Passes when both
# pass, both ran their calls through the engine (stats: no silent fallback to the MPI,
# e.g. after a failed segment setup), and the two really overlapped in time.
set -u
mpiexec=$1
prog=$2
shift 2
flags=("$@")
filter=${GCOLL_TWO_JOBS_FILTER:-'AllreduceMatrix.AllTypesOpsCounts/World_*:AllreduceMatrix.AllTypesOpsCounts/SplitOddEven_*:AllreduceLarge.*'}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gcoll_two_jobs.XXXXXX")
trap 'rm -rf "$dir"' EXIT

run_job() {  # name extra-env...
  local name=$1
  shift
  local xs=()
  for kv in GCOLL_ENABLE=1 GCOLL_HOST_BUFFERS=engine "GCOLL_STATS_FILE=$dir/$name.json" GCOLLTEST_TIMEOUT=100 "$@"; do
    xs+=(-x "$kv")
  done
  date +%s.%N > "$dir/$name.start"
  "$mpiexec" "${flags[@]}" -np 4 "${xs[@]}" "$prog" --gtest_filter="$filter" > "$dir/$name.log" 2>&1
  local rc=$?
  date +%s.%N > "$dir/$name.end"
  return $rc
}

run_job A &
pid_a=$!
run_job B GCOLL_RANKS_PER_NODE=2 &
pid_b=$!
wait $pid_a
rc_a=$?
wait $pid_b
rc_b=$?

fail=0
for j in A B; do
  rc=$rc_a
  [ $j = B ] && rc=$rc_b
  t=$(awk '{ printf "%.1f", $1 - s } ' s="$(cat "$dir/$j.start")" "$dir/$j.end")
  engine=$(tr -d ' \n' < "$dir/$j.json" 2>/dev/null | sed -n 's/.*"allreduce":{[^}]*"engine":\([0-9]*\).*/\1/p')
  echo "job $j: exit $rc, ${t} s, allreduce calls through the engine: ${engine:-none}"
  if [ "$rc" -ne 0 ]; then
    echo "job $j FAILED; its output:"
    tail -n 40 "$dir/$j.log"
    fail=1
  elif [ -z "$engine" ] || [ "$engine" -eq 0 ]; then
    echo "job $j ran no call through the engine (fell back to the MPI?); its output:"
    tail -n 20 "$dir/$j.log"
    fail=1
  fi
done
# Overlap: each job started before the other ended.
overlap=$(awk -v sa="$(cat "$dir/A.start")" -v sb="$(cat "$dir/B.start")" \
  -v ea="$(cat "$dir/A.end")" -v eb="$(cat "$dir/B.end")" \
  'BEGIN { print (sa < eb && sb < ea) ? "yes" : "no" }')
echo "jobs overlapped: $overlap"
[ "$overlap" = yes ] || fail=1
[ $fail -eq 0 ] && echo "two jobs at once: PASS" || echo "two jobs at once: FAIL"
exit $fail
