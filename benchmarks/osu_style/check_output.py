#!/usr/bin/env python3
"""CTest wrapper: run a benchmark command (usually an mpirun line), parse its
standard output with compare.parse_omb_output (the runner's parser) and check it.

    check_output.py [checks] -- mpirun -np 2 ... osu_allreduce -c -f -m 1:4096

Checks on a successful run (exit status 0 required):
  --title REGEX       the title line ("OSU MPI Allreduce Latency Test v7.3") matches
  --datatype NAME     one block per --datatype, in order ("MPI_INT"); default: one block
  --columns A,B,...   exact column names ("Size,Avg Latency(us),Validation", or a
                      nonblocking table's "Size,Overall(us),Compute(us),...")
  --sizes MIN:MAX     rows are MIN, 2*MIN, ... up to MAX, in every block
  every number is finite and >= 0, Iterations > 0, every Validation is Pass; in a
  nonblocking table Overlap(%) is at most 100, Overall(us) at least Compute(us) and
  Pure Comm.(us) within Min Comm.(us) .. Max Comm.(us) when those are printed.
--expect-fail: the command must exit non-zero and print no data row;
--expect-output REGEX (repeatable): must appear in stdout or stderr.
--cuda-build yes|no: `-d cuda` runs. Without CUDA in the build, expect failure with
  "built without CUDA"; with CUDA but no GPU on this machine (no /dev/nvidia<N>),
  expect failure with "no usable CUDA device"; with a GPU, run the checks above.
"""

import argparse
import glob
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import COMM, OVERALL, OVERLAP, parse_omb_output  # noqa: E402


def fail(msg):
    print("check_output.py: FAIL: " + msg)
    sys.exit(1)


def have_gpu():
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def check_nonblocking_row(dtype, row):
    """OMB's overlap table: what its definitions imply (values rounded alike keep their
    order)."""
    if OVERALL not in row:
        return
    where = "%s size %d" % (dtype, row["Size"])
    if OVERLAP in row and row[OVERLAP] > 100.0:
        fail("%s: %s = %r above 100" % (where, OVERLAP, row[OVERLAP]))
    if "Compute(us)" in row and row[OVERALL] < row["Compute(us)"]:
        fail("%s: %s %r below Compute(us) %r" % (where, OVERALL, row[OVERALL], row["Compute(us)"]))
    lo, hi = row.get("Min Comm.(us)"), row.get("Max Comm.(us)")
    if COMM in row and lo is not None and hi is not None and not lo <= row[COMM] <= hi:
        fail("%s: %s %r outside Min/Max Comm. %r .. %r" % (where, COMM, row[COMM], lo, hi))


def check_success(args, out):
    try:
        parsed = parse_omb_output(out)
    except ValueError as e:
        fail("output does not parse: %s" % e)
    if not parsed["title"]:
        fail("no '# OSU MPI... Test' title line")
    if args.title and not re.search(args.title, parsed["title"]):
        fail("title %r does not match %r" % (parsed["title"], args.title))
    blocks = parsed["blocks"]
    want_dtypes = args.datatype or [None]
    if len(blocks) != len(want_dtypes):
        fail("%d datatype blocks, expected %d" % (len(blocks), len(want_dtypes)))
    columns = args.columns.split(",") if args.columns else None
    for block, dtype in zip(blocks, want_dtypes):
        if dtype and block["datatype"] != dtype:
            fail("datatype %r, expected %r" % (block["datatype"], dtype))
        if columns and block["columns"] != columns:
            fail("columns %r, expected %r" % (block["columns"], columns))
        if args.sizes:
            lo, hi = (int(v) for v in args.sizes.split(":"))
            want, s = [], lo
            while s <= hi:
                want.append(s)
                s *= 2
            got = [r["Size"] for r in block["rows"]]
            if got != want:
                fail("%s: sizes %r, expected %r" % (block["datatype"], got, want))
        if not block["rows"]:
            fail("%s: no rows" % block["datatype"])
        for row in block["rows"]:
            for col, v in row.items():
                if col == "Validation":
                    if v != "Pass":
                        fail("%s size %d: Validation %s" % (block["datatype"], row["Size"], v))
                elif isinstance(v, float) and (not math.isfinite(v) or v < 0):
                    fail("%s size %d: %s = %r" % (block["datatype"], row["Size"], col, v))
            if "Iterations" in row and row["Iterations"] <= 0:
                fail("size %d: Iterations %d" % (row["Size"], row["Iterations"]))
            check_nonblocking_row(block["datatype"], row)
    nrows = sum(len(b["rows"]) for b in blocks)
    print("check_output.py: OK: %r, %d block(s), %d row(s), columns %r"
          % (parsed["title"], len(blocks), nrows, blocks[0]["columns"]))


def check_failure(out, rc):
    if rc == 0:
        fail("the command succeeded; a failure was expected")
    try:
        parsed = parse_omb_output(out)
        rows = sum(len(b["rows"]) for b in parsed["blocks"])
    except ValueError:
        rows = 0
    if rows:
        fail("a failure was expected, but %d result rows were printed" % rows)


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        fail("usage: check_output.py [checks] -- command...")
    i = argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("--title")
    ap.add_argument("--datatype", action="append")
    ap.add_argument("--columns")
    ap.add_argument("--sizes")
    ap.add_argument("--expect-fail", action="store_true")
    ap.add_argument("--expect-output", action="append", default=[])
    ap.add_argument("--cuda-build", choices=("yes", "no"))
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv[:i])
    cmd = argv[i + 1:]

    if args.cuda_build == "no":
        args.expect_fail = True
        args.expect_output.append(r"built without CUDA")
    elif args.cuda_build == "yes" and not have_gpu():
        args.expect_fail = True
        args.expect_output.append(r"no usable CUDA device")
    elif args.cuda_build == "yes":
        print("check_output.py: a GPU is present: -d cuda must run and pass")

    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        fail("timed out after %g s" % args.timeout)
    sys.stdout.write(p.stdout)
    if p.stderr:
        sys.stdout.write("--- stderr ---\n" + p.stderr)
    print("--- exit status %d ---" % p.returncode, flush=True)

    for rx in args.expect_output:
        if not re.search(rx, p.stdout + "\n" + p.stderr):
            fail("expected output matching %r" % rx)
    if args.expect_fail:
        check_failure(p.stdout, p.returncode)
        print("check_output.py: OK: failed as expected (exit %d)" % p.returncode)
        return 0
    if p.returncode != 0:
        fail("exit status %d" % p.returncode)
    check_success(args, p.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
