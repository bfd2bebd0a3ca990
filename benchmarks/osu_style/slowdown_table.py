#!/usr/bin/env python3
"""How much each side slows down on a busy machine: a quiet and a busy comparison of the
same benchmark (compare.py, the busy one with --busy N), side by side.

    slowdown_table.py QUIET/compare.json BUSY/compare.json [QUIET2 BUSY2 ...] [--markdown]

One row per (benchmark, size): the MPI's median quiet and busy and its slowdown factor
(busy / quiet), the same for gcoll, the busy ratio (MPI / gcoll: above 1, gcoll is faster
on the busy machine) and the path gcoll's busy calls took. Issue 32 item 2 asks for
gcoll's factor to be no worse than the MPI's at every size; the rows where it is worse by
more than --tolerance (default 1.05) are listed per benchmark. Only the Python standard
library.
"""
import argparse
import json
import sys


def fmt_size(n):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def load(name):
    with open(name) as f:
        doc = json.load(f)
    if doc.get("schema") != "gcoll-compare/1":
        raise SystemExit("%s: not a compare.json" % name)
    return doc


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="pairs: quiet compare.json, busy compare.json")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--tolerance", type=float, default=1.05)
    a = ap.parse_args(argv)
    if len(a.files) % 2:
        ap.error("give the files in pairs (quiet, busy)")
    rows, worse = [], {}
    for i in range(0, len(a.files), 2):
        quiet, busy = load(a.files[i]), load(a.files[i + 1])
        bench = quiet["meta"]["bench"]
        if busy["meta"]["bench"] != bench:
            ap.error("%s and %s are not the same benchmark" % (a.files[i], a.files[i + 1]))
        if not busy["meta"].get("busy"):
            sys.stderr.write("note: %s was not run with --busy\n" % a.files[i + 1])
        q = {(r["datatype"], r["size"]): r for r in quiet["rows"]}
        for r in busy["rows"]:
            k = (r["datatype"], r["size"])
            if k not in q:
                continue
            mq, gq = q[k]["baseline_us"], q[k]["gcoll_us"]
            mb, gb = r["baseline_us"], r["gcoll_us"]
            fm, fg = mb / mq if mq else float("nan"), gb / gq if gq else float("nan")
            rows.append((bench, r["size"], mq, mb, fm, gq, gb, fg, mb / gb if gb else float("nan"),
                         r.get("gcoll_path") or "-"))
            if fg > fm * a.tolerance:
                worse.setdefault(bench, []).append(fmt_size(r["size"]))
    if a.markdown:
        print("| collective | size | MPI quiet (us) | MPI busy (us) | MPI factor | gcoll quiet (us) | "
              "gcoll busy (us) | gcoll factor | busy ratio | gcoll's busy path |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for b, size, mq, mb, fm, gq, gb, fg, ratio, path in rows:
            mark = "**" if fg > fm * a.tolerance else ""
            print("| %s | %s | %.2f | %.2f | %.1f | %.2f | %.2f | %s%.1f%s | %.2f | %s |" % (
                b[len("osu_"):], fmt_size(size), mq, mb, fm, gq, gb, mark, fg, mark, ratio, path))
    else:
        print("%-26s %8s %10s %10s %7s %10s %10s %7s %7s  %s" % (
            "benchmark", "size", "MPI q", "MPI b", "factor", "gcoll q", "gcoll b", "factor", "ratio", "path"))
        for b, size, mq, mb, fm, gq, gb, fg, ratio, path in rows:
            print("%-26s %8s %10.2f %10.2f %7.1f %10.2f %10.2f %7.1f %7.2f  %s" % (
                b, fmt_size(size), mq, mb, fm, gq, gb, fg, ratio, path))
    for b, sizes in worse.items():
        print("%s%s: gcoll's factor above the MPI's x %.2f at: %s" % ("\n" if a.markdown else "", b, a.tolerance,
                                                                     ", ".join(sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
