#!/usr/bin/env python3
"""Measure the host crossovers of this machine: where the MPI's own collective beats
gcoll's engine on host buffers, as GCOLL_HOST_TUNE rules.

For each of the engine's eight collectives, benchmarks/osu_style/compare.py runs the OSU
benchmark with the MPI alone and with gcoll (GCOLL_HOST_BUFFERS=engine,
GCOLL_HOST_TUNE=off: the engine at every size), alternating, and writes compare.json. From
the medians this script writes one line of rules, `coll:lo-hi:@mpi` for every size range
where the engine was not at least as fast as the MPI (ratio MPI / gcoll below
--threshold), in the selection's bytes (src/coll/tune.h: allreduce, reduce, bcast the
message; allgather, alltoall the block; allgatherv and reduce_scatter the total;
reduce_scatter_block the block). A size between two measured sizes goes as the smaller
one did; the largest measured size decides everything above it.

    scripts/tune_host.py --np 4 --env GCOLL_RANKS_PER_NODE=2 --reps 3 --out DIR
    export GCOLL_HOST_TUNE=$(cat DIR/host_tune.txt)      # then GCOLL_HOST_BUFFERS=engine

--paired times the MPI's own call in the same runs (compare.py --paired), for a machine
whose ranks share cores. --from DIR reads the compare.json files of an earlier run (DIR/osu_<coll>/compare.json)
and runs nothing. Measure on a quiet machine, with the job's shape (ranks, ranks per
node): the rules hold for the shape they were measured on.
"""

import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
COMPARE = os.path.join(REPO, "benchmarks", "osu_style", "compare.py")

# collective -> (benchmark, datatype argument, element bytes)
COLLS = {
    "allreduce": ("osu_allreduce", "mpi_float", 4),
    "bcast": ("osu_bcast", "mpi_char", 1),
    "allgather": ("osu_allgather", "mpi_char", 1),
    "allgatherv": ("osu_allgatherv", "mpi_char", 1),
    "alltoall": ("osu_alltoall", "mpi_char", 1),
    "reduce": ("osu_reduce", "mpi_float", 4),
    "reduce_scatter": ("osu_reduce_scatter", "mpi_float", 4),
    "reduce_scatter_block": ("osu_reduce_scatter_block", "mpi_float", 4),
}


def selection_bytes(coll, size, nprocs, elem):
    """The bytes gcoll's selection sees for the benchmark's `size` (its Size column)."""
    count = size // elem
    if coll == "allgatherv":  # every rank sends `size`: the total
        return size * nprocs
    if coll == "reduce_scatter_block":  # the send buffer is `size`: the block is 1/nprocs
        return (count // nprocs) * elem
    return count * elem


def size_text(v):
    if v is None:
        return "inf"
    for unit, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= m and v % m == 0:
            return "%d%s" % (v // m, unit)
    return str(v)


def mpi_ranges(points, threshold):
    """points: [(selection bytes, ratio MPI/gcoll)] -> [(lo, hi or None)] where the MPI
    goes. Each measured size owns [its bytes, the next measured size's); the smallest also
    everything below, the largest everything above."""
    by_bytes = {}
    for b, r in sorted(points):
        # Two benchmark sizes with the same selection bytes: the MPI if either says so.
        slower = not (r >= threshold)  # NaN: the MPI
        by_bytes[b] = by_bytes.get(b, False) or slower
    sizes = sorted(by_bytes)
    ranges = []
    for i, b in enumerate(sizes):
        if not by_bytes[b]:
            continue
        lo = 0 if i == 0 else b
        hi = sizes[i + 1] if i + 1 < len(sizes) else None
        if ranges and ranges[-1][1] == lo:
            ranges[-1] = (ranges[-1][0], hi)
        else:
            ranges.append((lo, hi))
    return ranges


def rules_of(coll, ranges):
    return ["%s:%s-%s:@mpi" % (coll, size_text(lo), size_text(hi)) for lo, hi in ranges]


def points_of(compare_json, coll):
    with open(compare_json) as f:
        doc = json.load(f)
    nprocs = doc["meta"]["np"]
    elem = COLLS[coll][2]
    pts = []
    for row in doc["rows"]:
        ratio = row.get("speedup")
        ratio = float("nan") if ratio is None else float(ratio)
        pts.append((selection_bytes(coll, int(row["size"]), nprocs, elem), ratio, int(row["size"]),
                    row.get("gcoll_path") or ""))
    return pts


def run_compare(args, coll, out_dir):
    bench, dtype, _ = COLLS[coll]
    cmd = [sys.executable, COMPARE, "--bench", bench, "--np", str(args.np), "--reps", str(args.reps),
           "--build-dir", args.build_dir, "--out", out_dir,
           "--env", "GCOLL_HOST_BUFFERS=engine", "--env", "GCOLL_HOST_TUNE=off"]
    for kv in args.env:
        cmd += ["--env", kv]
    for a in args.mpirun_args:
        cmd.append("--mpirun-arg=" + a)
    if args.paired:
        cmd.append("--paired")
    cmd += ["--", "-m", args.sizes, "-T", dtype, "-i", str(args.iterations), "-x", str(args.warmup)]
    sys.stderr.write("[tune_host] %s\n" % " ".join(cmd))
    subprocess.run(cmd, check=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=4, help="ranks (default 4)")
    ap.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                    help="setting for the gcoll runs (repeatable), e.g. GCOLL_RANKS_PER_NODE=2")
    ap.add_argument("--mpirun-arg", dest="mpirun_args", action="append", default=[], metavar="ARG",
                    help="extra mpirun argument (repeatable)")
    ap.add_argument("--reps", type=int, default=3, help="alternating repetitions (default 3)")
    ap.add_argument("--paired", action="store_true",
                    help="compare.py --paired: the MPI's own call (PMPI_*) timed in the same runs, "
                         "alternating blocks (benchmarks/osu_style/README.md, \"Paired measurement\"); "
                         "for machines whose ranks share cores, where separate runs differ more than 5%%")
    ap.add_argument("--sizes", default="8:16777216", help="the benchmarks' -m (default 8:16777216)")
    ap.add_argument("--iterations", type=int, default=100, help="the benchmarks' -i (default 100)")
    ap.add_argument("--warmup", type=int, default=10, help="the benchmarks' -x (default 10)")
    ap.add_argument("--colls", default=",".join(COLLS), help="collectives, comma-separated (default all eight)")
    ap.add_argument("--threshold", type=float, default=1.0,
                    help="the engine keeps a size where MPI/gcoll >= this (default 1.0: at least as fast)")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--out", help="directory for the comparisons and host_tune.txt (default <build-dir>/host_tune)")
    ap.add_argument("--from", dest="from_dir", metavar="DIR",
                    help="run nothing: read DIR/osu_<coll>/compare.json of an earlier run")
    ap.add_argument("--output", help="the rules file (default <out>/host_tune.txt)")
    args = ap.parse_args(argv)
    colls = [c for c in args.colls.split(",") if c]
    for c in colls:
        if c not in COLLS:
            ap.error("unknown collective %s (known: %s)" % (c, ", ".join(COLLS)))
    args.build_dir = os.path.abspath(args.build_dir)
    out = os.path.abspath(args.from_dir or args.out or os.path.join(args.build_dir, "host_tune"))
    os.makedirs(out, exist_ok=True)
    rules = []
    report = []
    for coll in colls:
        cdir = os.path.join(out, COLLS[coll][0])
        if not args.from_dir:
            run_compare(args, coll, cdir)
        path = os.path.join(cdir, "compare.json")
        if not os.path.exists(path):
            sys.stderr.write("tune_host: no %s: %s left out\n" % (path, coll))
            continue
        pts = points_of(path, coll)
        ranges = mpi_ranges([(b, r) for b, r, _, _ in pts], args.threshold)
        rules += rules_of(coll, ranges)
        for b, r, size, gpath in pts:
            mpi = any(lo <= b and (hi is None or b < hi) for lo, hi in ranges)
            report.append("%-21s %10d %12d %7s  %-6s %s" % (coll, size, b, "nan" if math.isnan(r) else "%.2f" % r,
                                                            "mpi" if mpi else "engine", gpath))
    text = ",".join(rules) or "off"  # no @mpi anywhere: the engine at every size
    output = args.output or os.path.join(out, "host_tune.txt")
    with open(output, "w") as f:
        f.write(text + "\n")
    print("%-21s %10s %12s %7s  %-6s %s" % ("collective", "size", "selection", "ratio", "takes", "engine's path"))
    print("\n".join(report))
    print("GCOLL_HOST_TUNE=%s" % text)
    sys.stderr.write("[tune_host] rules: %s\n" % output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
