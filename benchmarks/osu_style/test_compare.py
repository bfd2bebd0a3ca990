#!/usr/bin/env python3
"""Smoke test of compare.py: a tiny comparison (np 2, 2 repetitions, small sizes) must
print its table and write the CSV and, when gnuplot is installed, a PNG.

    test_compare.py --bin-dir BIN --lib LIBGCOLL --out DIR
"""

import argparse
import csv
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    cmd = [sys.executable, os.path.join(HERE, "compare.py"), "--bench", "osu_allreduce",
           "--np", "2", "--reps", "2", "--bin-dir", a.bin_dir, "--lib", a.lib, "--out", a.out,
           "--mpirun", a.mpirun, "--env", "GCOLL_HOST_BUFFERS=engine",
           "--", "-m", "4:1024", "-i", "10", "-x", "2", "-T", "mpi_int", "-c"]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=600)
    print(p.stdout)
    if p.returncode != 0:
        print("FAIL: compare.py exit status %d" % p.returncode)
        return 1
    with open(os.path.join(a.out, "osu_allreduce.csv")) as f:
        rows = list(csv.DictReader(f))
    sizes = [int(r["size_bytes"]) for r in rows]
    if sizes != [4, 8, 16, 32, 64, 128, 256, 512, 1024]:
        print("FAIL: CSV sizes %r" % sizes)
        return 1
    for r in rows:
        if len(r["baseline_us_reps"].split(";")) != 2 or len(r["gcoll_us_reps"].split(";")) != 2:
            print("FAIL: expected 2 repetitions per variant: %r" % r)
            return 1
        if not float(r["speedup"]) > 0:
            print("FAIL: speedup %r" % r["speedup"])
            return 1
    for name in ("summary.txt", "meta.json", "osu_allreduce.gp", "raw/rep1_baseline.txt",
                 "raw/rep2_gcoll.txt"):
        if not os.path.exists(os.path.join(a.out, name)):
            print("FAIL: %s missing" % name)
            return 1
    with open(os.path.join(a.out, "raw", "rep1_gcoll.txt")) as f:
        first = f.readline()
    if "LD_PRELOAD=" not in first or "GCOLL_HOST_BUFFERS=engine" not in first:
        print("FAIL: gcoll run command lacks the preload or the setting: %s" % first)
        return 1
    with open(os.path.join(a.out, "raw", "rep1_baseline.txt")) as f:
        first = f.readline()
    if "LD_PRELOAD" in first or "GCOLL_" in first:
        print("FAIL: baseline run command has the preload or a setting: %s" % first)
        return 1
    png = os.path.join(a.out, "osu_allreduce.png")
    if shutil.which("gnuplot"):
        with open(png, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                print("FAIL: %s is not a PNG" % png)
                return 1
    else:
        print("note: gnuplot not installed; PNG not checked")
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
