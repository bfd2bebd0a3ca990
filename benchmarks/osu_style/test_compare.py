#!/usr/bin/env python3
"""Smoke test of compare.py: tiny comparisons (np 2, 2 repetitions, small sizes) of
osu_allreduce and of the nonblocking osu_iallreduce must print their tables and write
the CSV and, when gnuplot is installed, a PNG; every run's -J results must be valid
against results.schema.json (check_json.py) and say the path taken (gcoll's engine for
osu_allreduce under GCOLL_HOST_BUFFERS=engine, "mpi" for the runs without the library),
compare.json must hold the rows, and --replot must print the same table from it. With
--paired (osu_allreduce), one run per repetition under the library, whose PMPI Avg(us)
column is the baseline.

    test_compare.py --bin-dir BIN --lib LIBGCOLL --out DIR
"""

import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_json import validate  # noqa: E402
SIZES = [4, 8, 16, 32, 64, 128, 256, 512, 1024]


def compare(a, bench, out, extra=()):
    """Runs compare.py for bench into out; returns (exit status, its output)."""
    if os.path.isdir(out):
        shutil.rmtree(out)
    cmd = [sys.executable, os.path.join(HERE, "compare.py"), "--bench", bench] + list(extra) + [
           "--np", "2", "--reps", "2", "--bin-dir", a.bin_dir, "--lib", a.lib, "--out", out,
           "--mpirun", a.mpirun, "--env", "GCOLL_HOST_BUFFERS=engine", "--env", "GCOLL_HOST_TUNE=off",
           "--", "-m", "4:1024", "-i", "10", "-x", "2", "-T", "mpi_int", "-c"]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=600)
    print(p.stdout)
    return p.returncode, p.stdout


def check(bench, out, stdout, nonblocking):
    """Returns an error message, or None."""
    with open(os.path.join(out, bench + ".csv")) as f:
        rows = list(csv.DictReader(f))
    sizes = [int(r["size_bytes"]) for r in rows]
    if sizes != SIZES:
        return "%s: CSV sizes %r" % (bench, sizes)
    for r in rows:
        if len(r["baseline_us_reps"].split(";")) != 2 or len(r["gcoll_us_reps"].split(";")) != 2:
            return "%s: expected 2 repetitions per variant: %r" % (bench, r)
        if not float(r["speedup"]) > 0:
            return "%s: speedup %r" % (bench, r["speedup"])
        if nonblocking:
            for k in ("baseline_overlap_pct_median", "gcoll_overlap_pct_median"):
                if not 0.0 <= float(r[k]) <= 100.0:
                    return "%s: %s %r" % (bench, k, r.get(k))
            for k in ("baseline_comm_us_median", "gcoll_comm_us_median"):
                if not float(r[k]) > 0:
                    return "%s: %s %r" % (bench, k, r.get(k))
    head = "base ovlp(%)" if nonblocking else "base busbw(GB/s)"
    if head not in stdout:
        return "%s: no %r column in the table" % (bench, head)
    for name in ("summary.txt", "meta.json", bench + ".gp", "raw/rep1_baseline.txt",
                 "raw/rep2_gcoll.txt"):
        if not os.path.exists(os.path.join(out, name)):
            return "%s: %s missing" % (bench, name)
    with open(os.path.join(out, "raw", "rep1_gcoll.txt")) as f:
        first = f.readline()
    if "LD_PRELOAD=" not in first or "GCOLL_HOST_BUFFERS=engine" not in first:
        return "%s: gcoll run command lacks the preload or the setting: %s" % (bench, first)
    with open(os.path.join(out, "raw", "rep1_baseline.txt")) as f:
        first = f.readline()
    if "LD_PRELOAD" in first or "GCOLL_" in first:
        return "%s: baseline run command has the preload or a setting: %s" % (bench, first)
    err = check_json_results(bench, out, stdout, nonblocking)
    if err:
        return err
    png = os.path.join(out, bench + ".png")
    if shutil.which("gnuplot"):
        with open(png, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                return "%s is not a PNG" % png
    else:
        print("note: gnuplot not installed; PNG not checked")
    return None


def check_json_results(bench, out, stdout, nonblocking):
    """The -J records of every run, compare.json and --replot."""
    with open(os.path.join(HERE, "results.schema.json")) as f:
        schema = json.load(f)
    files = sorted(glob.glob(os.path.join(out, "raw", "rep*_*.json")))
    if len(files) != 4:
        return "%s: %d -J result files, expected 4" % (bench, len(files))
    for name in files:
        with open(name) as f:
            doc = json.load(f)
        errs = validate(doc, schema)
        if errs:
            return "%s: %s invalid: %s" % (bench, name, "; ".join(errs[:5]))
        sizes = [r["bytes"] for r in doc["records"]]
        if sizes != SIZES:
            return "%s: %s sizes %r" % (bench, name, sizes)
        gcoll_run = name.endswith("_gcoll.json")
        for r in doc["records"]:
            if (r["gcoll"] is None) == gcoll_run:
                return "%s: %s: gcoll %r in a %s run" % (bench, name, r["gcoll"], "gcoll" if gcoll_run else "baseline")
            if not gcoll_run and r["path"] != "mpi":
                return "%s: %s: baseline path %r" % (bench, name, r["path"])
            # Blocking calls of 4 B - 1 KiB with GCOLL_HOST_BUFFERS=engine: the engine's,
            # every call (warmup and timed) counted; nonblocking ones the MPI's (the
            # progress thread is off by default).
            want = "passthrough" if nonblocking else "engine@"
            if gcoll_run and not r["path"].startswith(want):
                return "%s: %s: gcoll path %r at %d bytes, expected %s..." % (bench, name, r["path"], r["bytes"], want)
            if gcoll_run and not nonblocking and r["calls"]["engine"] != r["iterations"] + 2:
                return "%s: %s: %d engine calls counted, expected %d" % (
                    bench, name, r["calls"]["engine"], r["iterations"] + 2)
            if r["validation"] != "pass":
                return "%s: %s: validation %r" % (bench, name, r["validation"])
    with open(os.path.join(out, "compare.json")) as f:
        cmp = json.load(f)
    if cmp.get("schema") != "gcoll-compare/1" or [r["size"] for r in cmp["rows"]] != SIZES:
        return "%s: compare.json: schema %r, sizes %r" % (bench, cmp.get("schema"), [r["size"] for r in cmp["rows"]])
    again = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--replot",
                            os.path.join(out, "compare.json"), "--out", os.path.join(out, "replot")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    table = [l for l in stdout.splitlines() if l[:1].isdigit() or l.startswith("Size")]
    if again.returncode != 0 or [l for l in again.stdout.splitlines() if l[:1].isdigit() or l.startswith("Size")] != table:
        return "%s: --replot printed another table (exit %d):\n%s" % (bench, again.returncode, again.stdout)
    table = subprocess.run([sys.executable, os.path.join(HERE, "ratio_table.py"), "--markdown",
                            os.path.join(out, "compare.json")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    lines = [l for l in table.stdout.splitlines() if l.startswith("| " + bench[len("osu_"):] + " |")]
    if table.returncode != 0 or len(lines) != len(SIZES):
        return "%s: ratio_table.py: exit %d, %d rows:\n%s" % (bench, table.returncode, len(lines), table.stdout)
    return None


def check_paired(out, stdout):
    """compare.py --paired: one run per repetition, with the benchmark's --paired, under
    the library; the baseline column is the runs' PMPI Avg(us), the gcoll column their
    Avg Latency(us) (medians)."""
    from compare import parse_omb_output  # noqa: E402
    raws = sorted(glob.glob(os.path.join(out, "raw", "rep*.txt")))
    if [os.path.basename(r) for r in raws] != ["rep1_gcoll.txt", "rep2_gcoll.txt"]:
        return "--paired: raw runs %r, expected rep1_gcoll.txt and rep2_gcoll.txt" % raws
    pmpi, mine = {}, {}
    for r in raws:
        with open(r) as f:
            first = f.readline()
            text = f.read().split("\n--- stderr ---")[0]
        if "--paired" not in first or "LD_PRELOAD=" not in first:
            return "--paired: run command %s" % first
        for b in parse_omb_output(text)["blocks"]:
            for row in b["rows"]:
                pmpi.setdefault(row["Size"], []).append(row["PMPI Avg(us)"])
                mine.setdefault(row["Size"], []).append(row["Avg Latency(us)"])
    with open(os.path.join(out, "osu_allreduce.csv")) as f:
        rows = list(csv.DictReader(f))
    if [int(r["size_bytes"]) for r in rows] != SIZES:
        return "--paired: CSV sizes %r" % [int(r["size_bytes"]) for r in rows]
    for r in rows:
        size = int(r["size_bytes"])
        want_b = sum(pmpi[size]) / 2.0
        want_g = sum(mine[size]) / 2.0
        if abs(float(r["baseline_us_median"]) - want_b) > 1e-3 or abs(float(r["gcoll_us_median"]) - want_g) > 1e-3:
            return "--paired: %d bytes: CSV %s / %s, the runs' columns give %.4f / %.4f" % (
                size, r["baseline_us_median"], r["gcoll_us_median"], want_b, want_g)
    if "paired" not in stdout:
        return "--paired: the caption does not say the baseline is paired"
    # gcoll counted its half only (warmup and timed calls of MPI_Allreduce: the engine's
    # here): the PMPI_* half went around the library.
    for name in sorted(glob.glob(os.path.join(out, "raw", "rep*_gcoll.json"))):
        with open(name) as f:
            for r in json.load(f)["records"]:
                if r["calls"]["engine"] != r["iterations"] + 2:
                    return "--paired: %s: %d engine calls at %d bytes, expected %d (gcoll's half only)" % (
                        name, r["calls"]["engine"], r["bytes"], r["iterations"] + 2)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    for bench, nonblocking in (("osu_allreduce", False), ("osu_iallreduce", True)):
        out = a.out if bench == "osu_allreduce" else os.path.join(a.out, bench)
        rc, stdout = compare(a, bench, out)
        if rc != 0:
            print("FAIL: compare.py --bench %s: exit status %d" % (bench, rc))
            return 1
        err = check(bench, out, stdout, nonblocking)
        if err:
            print("FAIL: " + err)
            return 1
    out = os.path.join(a.out, "paired")
    rc, stdout = compare(a, "osu_allreduce", out, ["--paired"])
    if rc != 0:
        print("FAIL: compare.py --paired: exit status %d" % rc)
        return 1
    err = check_paired(out, stdout)
    if err:
        print("FAIL: " + err)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
