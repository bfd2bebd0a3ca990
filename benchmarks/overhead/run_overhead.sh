#!/usr/bin/env bash
# run_overhead.sh: what does preloading libgcoll.so cost on a tiny MPI_Allreduce?
#
# Runs gcoll_allreduce_overhead (8-byte MPI_Allreduce, 100,000 timed calls) on NP
# ranks without the library ("base") and with it preloaded ("gcoll",
# GCOLL_ENABLE=1), alternating the two PAIRS times (the order within a pair flips
# every pair, ABBA..., so slow drift hits both sides alike), then prints the
# median ns/call of each side and the overhead in percent. Target: within 3%.
#
# Each run times REPS repetitions of the 100,000-call loop and reports the fastest
# (interference from other processes only ever adds time). It also times the same
# loop calling PMPI_Allreduce directly, interleaved in the same process: under the
# preload that bypasses the wrapper, so "in-process wrapper cost" below compares
# two figures taken under the same noise (for base runs it is the noise floor:
# both loops call the same function).
#
# Usage: run_overhead.sh [BUILD_DIR]        (default: ./build)
# Environment (all optional):
#   GCOLL_LIB   libgcoll.so to preload      (default: BUILD_DIR/lib/libgcoll.so)
#   BENCH       benchmark executable        (default: BUILD_DIR/bin/gcoll_allreduce_overhead)
#   MPIRUN      mpirun                      (default: mpirun)
#   NP          ranks                       (default: 2)
#   PAIRS       base/gcoll pairs            (default: 7)
#   ITERS       timed calls per loop        (default: 100000)
#   WARMUP      warm-up calls per run       (default: 1000)
#   REPS        timed loops per run, fastest kept (default: 5; 1 = a single loop)
#   BIND        binding/mapping flags       (default: "--bind-to core --map-by core";
#               set BIND="--bind-to none" when ranks outnumber cores)
#   MPIRUN_FLAGS extra mpirun flags         (default: none)
#   THRESHOLD   percent for the verdict line (default: 3)
# Exit status: 0 when every run succeeded (whatever the overhead), 1 otherwise.
# A timing is never a test: this script is not registered with CTest.
set -euo pipefail

BUILD_DIR=${1:-build}
GCOLL_LIB=${GCOLL_LIB:-$BUILD_DIR/lib/libgcoll.so}
BENCH=${BENCH:-$BUILD_DIR/bin/gcoll_allreduce_overhead}
MPIRUN=${MPIRUN:-mpirun}
NP=${NP:-2}
PAIRS=${PAIRS:-7}
ITERS=${ITERS:-100000}
WARMUP=${WARMUP:-1000}
REPS=${REPS:-5}
BIND=${BIND:---bind-to core --map-by core}
MPIRUN_FLAGS=${MPIRUN_FLAGS:-}
THRESHOLD=${THRESHOLD:-3}

for f in "$GCOLL_LIB" "$BENCH"; do
  if [[ ! -f $f ]]; then
    echo "run_overhead.sh: not found: $f (build the gcoll and gcoll_allreduce_overhead targets)" >&2
    exit 1
  fi
done
GCOLL_LIB=$(readlink -f "$GCOLL_LIB")
BENCH=$(readlink -f "$BENCH")

# mpirun refuses root unless told; harmless otherwise. Nothing gcoll-related may
# leak from this shell into the "base" runs.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset LD_PRELOAD GCOLL_ENABLE GCOLL_STATS_FILE GCOLL_DEBUG

# shellcheck disable=SC2086  # BIND and MPIRUN_FLAGS are word lists on purpose
run_one() { # $1 = base|gcoll ; prints "<ns_per_call> <pmpi_ns_per_call>"
  local extra=()
  if [[ $1 == gcoll ]]; then
    extra=(-x "LD_PRELOAD=$GCOLL_LIB" -x GCOLL_ENABLE=1)
  fi
  local out
  if ! out=$("$MPIRUN" -np "$NP" $BIND $MPIRUN_FLAGS "${extra[@]}" "$BENCH" "$ITERS" "$WARMUP" "$REPS" 2>&1); then
    echo "run_overhead.sh: $1 run failed:" >&2
    echo "$out" >&2
    return 1
  fi
  local ns
  ns=$(sed -n 's/.* ns_per_call=\([0-9.]*\) pmpi_ns_per_call=\([0-9.]*\).*/\1 \2/p' <<<"$out" | head -n1)
  if [[ -z $ns ]]; then
    echo "run_overhead.sh: $1 run printed no ns_per_call:" >&2
    echo "$out" >&2
    return 1
  fi
  echo "$ns"
}

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "# gcoll overhead: 8-byte MPI_Allreduce(MPI_DOUBLE, count 1), np=$NP, iters=$ITERS x reps=$REPS (fastest kept), warmup=$WARMUP"
echo "# bench:  $BENCH"
echo "# lib:    $GCOLL_LIB (GCOLL_ENABLE=1)"
echo "# mpirun: $MPIRUN -np $NP $BIND $MPIRUN_FLAGS"
base=() lib=() base_in=() lib_in=()
for ((p = 1; p <= PAIRS; p++)); do
  if ((p % 2)); then order=(base gcoll); else order=(gcoll base); fi
  for side in "${order[@]}"; do
    read -r ns pns < <(run_one "$side" || echo "FAILED")
    if [[ $ns == FAILED || -z ${pns:-} ]]; then exit 1; fi
    # in-process: MPI_Allreduce loop vs PMPI_Allreduce loop of the same run, percent
    inproc=$(awk -v a="$ns" -v b="$pns" 'BEGIN {printf "%.2f", (a - b) / b * 100.0}')
    if [[ $side == base ]]; then base+=("$ns"); base_in+=("$inproc"); else lib+=("$ns"); lib_in+=("$inproc"); fi
    printf 'pair %2d  %-5s  %10s ns/call   (PMPI loop %10s ns/call, %+6.2f %%)\n' "$p" "$side" "$ns" "$pns" "$inproc"
  done
done

mb=$(printf '%s\n' "${base[@]}" | median)
ml=$(printf '%s\n' "${lib[@]}" | median)
nb=$(printf '%s\n' "${base[@]}" | sort -g | head -n1)
nl=$(printf '%s\n' "${lib[@]}" | sort -g | head -n1)
ib=$(printf '%s\n' "${base_in[@]}" | median)
il=$(printf '%s\n' "${lib_in[@]}" | median)
awk -v b="$mb" -v l="$ml" -v nb="$nb" -v nl="$nl" -v ib="$ib" -v il="$il" -v t="$THRESHOLD" 'BEGIN {
  o = (l - b) / b * 100.0
  printf "median base  (no preload):     %.2f ns/call   (min %.2f)\n", b, nb
  printf "median gcoll (LD_PRELOAD):     %.2f ns/call   (min %.2f)\n", l, nl
  printf "overhead of the minimums:      %+.2f %%\n", (nl - nb) / nb * 100.0
  printf "in-process wrapper cost:       %+.2f %% median in gcoll runs (noise floor, base runs: %+.2f %%)\n", il, ib
  printf "overhead (medians):            %+.2f %%  (target <= %s %%): %s\n", o, t, (o <= t ? "WITHIN TARGET" : "ABOVE TARGET")
}'
