#!/usr/bin/env bash
# The compressed allreduce against uncompressed (issue 32 item 4; docs/compression.md):
# osu_allreduce on MPI_FLOAT, 1 to 64 MiB, on virtual nodes (GCOLL_RANKS_PER_NODE) with
# GCOLL_HOST_BUFFERS=engine and UCX over TCP between them, for GCOLL_ALLREDUCE_COMPRESS =
# off, bf16, fp16, fp8; prints per format the time per size (OMB's avg, us) and the bytes
# the ranks sent between nodes (the stats file: the allreduce line's inter_node_bytes, and
# the library's compressed_* counters). For a quiet machine: minutes.
#
#   scripts/compress_bench.sh [BUILD_DIR] [NP] [RANKS_PER_NODE] [ITERATIONS]
#   (defaults: build, 4, 2, 20; COMPRESS_BENCH_SIZES=MIN:MAX bytes, default 1M:64M)
set -euo pipefail
build=${1:-build}
np=${2:-4}
rpn=${3:-2}
iters=${4:-20}
sizes=${COMPRESS_BENCH_SIZES:-1048576:67108864}  # -m of osu_allreduce
bench="$build/bin/osu_allreduce"
[ -x "$bench" ] || bench="$build/benchmarks/osu_style/osu_allreduce"
[ -x "$bench" ] || { echo "compress_bench.sh: no osu_allreduce in $build" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for fmt in off bf16 fp16 fp8; do
  mpiexec --oversubscribe -np "$np" -x LD_PRELOAD="$build/lib/libgcoll.so" -x GCOLL_HOST_BUFFERS=engine \
    -x GCOLL_RANKS_PER_NODE="$rpn" -x GCOLL_ALLREDUCE_COMPRESS="$fmt" -x GCOLL_STATS_FILE="$tmp/$fmt.json" \
    -x UCX_TLS=tcp,self -x GCOLL_HOST_TUNE=off \
    "$bench" -T mpi_float -m "$sizes" -i "$iters" -x 5 > "$tmp/$fmt.txt"
done
python3 - "$tmp" <<'PY'
import json, sys, os
d = sys.argv[1]
fmts = ["off", "bf16", "fp16", "fp8"]
times = {}
for f in fmts:
    rows = {}
    for line in open(os.path.join(d, f + ".txt")):
        p = line.split()
        if len(p) >= 2 and p[0].isdigit():
            rows[int(p[0])] = float(p[1])
    times[f] = rows
print("size (B)   " + "".join(f"{f + ' us':>12}" for f in fmts) + "   speedup bf16/fp16/fp8")
for s in sorted(times["off"]):
    t = [times[f].get(s, float("nan")) for f in fmts]
    print(f"{s:<10} " + "".join(f"{x:12.1f}" for x in t) + "   " + " ".join(f"{t[0] / x:.2f}x" for x in t[1:]))
print()
print("format   inter_node_bytes (allreduce line, all ranks)   compressed / uncompressed bytes (library)")
for f in fmts:
    j = json.load(open(os.path.join(d, f + ".json")))
    lib = j.get("library", {})
    c, r = lib.get("compressed_inter_node_bytes", 0), lib.get("compressed_inter_node_bytes_uncompressed", 0)
    print(f"{f:<8} {j['allreduce']['inter_node_bytes']:>20}   {c} / {r}" + (f" ({c / r:.3f})" if r else ""))
PY
