#!/usr/bin/env python3
"""The ratio table of several comparisons, from their compare.json files (compare.py).

    ratio_table.py DIR/compare.json... [--markdown] [--below 0.95]

One row per (benchmark, datatype, size): the MPI's median, gcoll's median, the ratio
(MPI / gcoll: above 1, gcoll is faster) and the path gcoll's calls took; then, per
benchmark, the sizes where the ratio is below --below. Only the Python standard library.
"""
import argparse
import json
import sys


def fmt_size(n):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--below", type=float, default=0.95)
    a = ap.parse_args(argv)
    rows, slow = [], {}
    for name in a.files:
        with open(name) as f:
            doc = json.load(f)
        if doc.get("schema") != "gcoll-compare/1":
            sys.stderr.write("%s: not a compare.json\n" % name)
            return 2
        bench = doc["meta"]["bench"]
        for r in doc["rows"]:
            rows.append((bench, r["datatype"], r["size"], r["baseline_us"], r["gcoll_us"], r["speedup"],
                         r.get("gcoll_path") or "-"))
            if r["speedup"] < a.below:
                slow.setdefault(bench, []).append(fmt_size(r["size"]))
    if a.markdown:
        print("| collective | size | MPI (us) | gcoll (us) | ratio | gcoll's path |")
        print("|---|---:|---:|---:|---:|---|")
        for b, _, size, mb, mg, ratio, path in rows:
            print("| %s | %s | %.2f | %.2f | %s%.2f%s | %s |" % (
                b[len("osu_"):], fmt_size(size), mb, mg, "**" if ratio < a.below else "", ratio,
                "**" if ratio < a.below else "", path))
    else:
        print("%-26s %8s %12s %12s %7s  %s" % ("benchmark", "size", "MPI(us)", "gcoll(us)", "ratio", "path"))
        for b, _, size, mb, mg, ratio, path in rows:
            print("%-26s %8s %12.2f %12.2f %7.2f  %s" % (b, fmt_size(size), mb, mg, ratio, path))
    for b, sizes in slow.items():
        print("%s%s below %.2f at: %s" % ("\n" if a.markdown else "", b, a.below, ", ".join(sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
