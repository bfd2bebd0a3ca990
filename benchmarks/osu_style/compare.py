#!/usr/bin/env python3
"""Run an OSU-style benchmark with and without libgcoll.so and compare.

One command: the benchmark runs under mpirun without the library (baseline) and
with it (`-x LD_PRELOAD=libgcoll.so`), alternating the two several times
(--reps, the order flips every repetition to cancel drift), then prints per size
the median latency of each, the speedup (baseline / gcoll) and the bus bandwidth,
and writes a CSV and a PNG (latency vs size on log-log axes; busbw vs size).
The nonblocking benchmarks (osu_i*) are compared on Overall(us) (communication
with the dummy computation, OMB's overlap run); the table shows the Pure Comm.
latency and the Overlap(%) of both variants instead of busbw, and the PNG's
second panel is the overlap vs size.

    compare.py --bench osu_allreduce --np 4 \\
        --env GCOLL_HOST_BUFFERS=engine --env GCOLL_RANKS_PER_NODE=2 \\
        -- -m 8:67108864 -T mpi_float

Arguments after `--` go to the benchmark. --env settings reach the gcoll runs
only; the baseline runs get no preload, no GCOLL_* variable (GCOLL_* and
LD_PRELOAD from this shell are dropped for both, so the runs are reproducible
from the command line alone) and whatever --baseline-env says.
--device cuda: baseline = the benchmark with `-d cuda --staged` (device buffers
copied through host memory around MPI), gcoll = `-d cuda` with the preload.

osu_allreduce_enqueue (MPIX_Allreduce_enqueue) has no MPI-alone baseline: the MPI alone
has no enqueue API under Open MPI. Both variants run under gcoll (--env, the preload),
always with `-d cuda`: the baseline is the blocking osu_allreduce -d cuda (a barrier
after every call), the other osu_allreduce_enqueue: "blocking(us)" vs "enqueue(us)",
speedup = blocking / enqueue (inside a CUDA graph: --gcoll-arg=--graph --gcoll-arg=100).
On a machine without a GPU add --env GCOLL_CUDA=emulate.

Needs Open MPI's mpirun (`-x VAR=VALUE`), python3 (standard library only) and,
for the PNG, gnuplot (Debian: gnuplot-nox). Without gnuplot the PNG is skipped
with a warning.

parse_omb_output() is the one parser of OMB-format output; check_output.py (the
CTest wrapper) uses it too.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BENCHES = ("osu_allreduce", "osu_bcast", "osu_allgather", "osu_reduce_scatter_block", "osu_reduce",
           "osu_reduce_scatter", "osu_alltoall", "osu_allgatherv", "osu_gather", "osu_scatter",
           "osu_iallreduce", "osu_ibcast", "osu_iallgather", "osu_ireduce_scatter", "osu_ialltoall",
           "osu_allreduce_persistent", "osu_allreduce_enqueue")
# OMB's nonblocking benchmarks: their table is Overall / Compute / Pure Comm. / Overlap
NONBLOCKING = ("osu_iallreduce", "osu_ibcast", "osu_iallgather", "osu_ireduce_scatter",
               "osu_ialltoall")
# stream-ordered (MPIX_*_enqueue): both variants under gcoll; the baseline runs the
# blocking collective (collective(bench)) with -d cuda
ENQUEUE = ("osu_allreduce_enqueue",)
LAT = "Avg Latency(us)"
PMPI_LAT = "PMPI Avg(us)"  # --paired: the MPI's own call (PMPI_*) in the same run
OVERALL = "Overall(us)"
COMM = "Pure Comm.(us)"
OVERLAP = "Overlap(%)"


# ---- the parser ------------------------------------------------------------------

_TITLE_RE = re.compile(r"^#\s*OSU\s+MPI(?:-(?P<accel>[A-Za-z]+))?\s+(?P<name>.*?)\s+Test"
                       r"(?:\s+v(?P<version>\S+))?\s*$")
_DTYPE_RE = re.compile(r"^#\s*Datatype:\s*(?P<dtype>\S+?)\.?\s*$")
_INT_COLUMNS = ("Size", "Iterations")
_TEXT_COLUMNS = ("Validation",)


def parse_omb_output(text):
    """Parse the standard output of an OMB 7.x-style collective benchmark.

    Header lines start with '#': the title ("# OSU MPI[-CUDA] <Name> Latency Test
    v7.3"), "# Datatype: MPI_INT." (one per datatype block) and the column header
    ("# Size       Avg Latency(us) ...", or for the nonblocking benchmarks "# Size
    Overall(us)  Compute(us) ..."; column names are separated by two or more
    spaces). Data rows are whitespace-separated numbers, one per column; the
    Validation column holds Pass or Fail. Other lines (blank, warnings, "DATA
    VALIDATION ERROR: ...") are kept in 'other'.

    Returns {'title', 'name', 'accel' ('cuda' or 'host'), 'version', 'comments',
    'other', 'blocks'}: every block is {'datatype', 'columns', 'rows'} and every row
    a dict column -> value (int for Size and Iterations, str for Validation, float
    otherwise). Raises ValueError on a data row that does not match its header.
    """
    result = {"title": None, "name": None, "accel": None, "version": None,
              "comments": [], "other": [], "blocks": []}
    block = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if line.startswith("#"):
            m = _TITLE_RE.match(line)
            if m:
                result["title"] = line.lstrip("#").strip()
                result["name"] = m.group("name")
                result["accel"] = (m.group("accel") or "host").lower()
                result["version"] = m.group("version")
                continue
            m = _DTYPE_RE.match(line)
            if m:
                block = {"datatype": m.group("dtype"), "columns": None, "rows": []}
                result["blocks"].append(block)
                continue
            body = line.lstrip("#").strip()
            if body.startswith("Size") and ("Latency" in body or "Overall" in body):
                columns = re.split(r"\s{2,}", body)
                if block is None or block["columns"] is not None:
                    block = {"datatype": None, "columns": None, "rows": []}
                    result["blocks"].append(block)
                block["columns"] = columns
                continue
            result["comments"].append(line)
            continue
        if line.lstrip()[:1].isdigit():
            if block is None or block["columns"] is None:
                raise ValueError("line %d: data row before a '# Size' header: %r" % (lineno, line))
            tokens = line.split()
            if len(tokens) != len(block["columns"]):
                raise ValueError("line %d: %d values for %d columns %s: %r"
                                 % (lineno, len(tokens), len(block["columns"]),
                                    block["columns"], line))
            row = {}
            for col, tok in zip(block["columns"], tokens):
                try:
                    if col in _INT_COLUMNS:
                        row[col] = int(tok)
                    elif col in _TEXT_COLUMNS:
                        row[col] = tok
                    else:
                        row[col] = float(tok)
                except ValueError:
                    raise ValueError("line %d: column %r: not a number: %r" % (lineno, col, tok))
            block["rows"].append(row)
            continue
        result["other"].append(line)
    return result


def latency_column(columns):
    """The column a comparison uses: Overall(us) in a nonblocking table, else Avg Latency(us)."""
    return OVERALL if columns and OVERALL in columns else LAT


# ---- measures ----------------------------------------------------------------------

def collective(bench):
    """The blocking benchmark of the same collective: osu_iallreduce,
    osu_allreduce_persistent and osu_allreduce_enqueue -> osu_allreduce."""
    if bench in NONBLOCKING:
        bench = "osu_" + bench[len("osu_i"):]
    for suffix in ("_persistent", "_enqueue"):
        if bench.endswith(suffix):
            bench = bench[:-len(suffix)]
    return bench


def alg_bytes(bench, size, nprocs):
    """Bytes per call for algbw (nccl-tests): the gathering and all-to-all benchmarks count
    the whole buffer (the size is one rank's part there), the others the message."""
    per_rank = ("osu_allgather", "osu_allgatherv", "osu_alltoall", "osu_gather", "osu_scatter")
    return size * nprocs if collective(bench) in per_rank else size


def bus_factor(bench, nprocs):
    """nccl-tests: allreduce 2(n-1)/n, allgather, reduce-scatter, all-to-all, gather and
    scatter (n-1)/n, broadcast and reduce 1."""
    bench = collective(bench)
    if bench == "osu_allreduce":
        return 2.0 * (nprocs - 1) / nprocs
    if bench in ("osu_allgather", "osu_reduce_scatter_block", "osu_reduce_scatter", "osu_alltoall",
                 "osu_allgatherv", "osu_gather", "osu_scatter"):
        return (nprocs - 1) / nprocs
    return 1.0


def busbw_gbs(bench, size, nprocs, lat_us):
    if not lat_us or lat_us <= 0:
        return float("nan")
    return alg_bytes(bench, size, nprocs) / (lat_us * 1e-6) / 1e9 * bus_factor(bench, nprocs)


def _median(values):
    return statistics.median(values) if values else float("nan")


def _paths_of(parsed_runs, dtype, size):
    """The path a variant's calls of (dtype, size) took, from the runs' -J records
    ("engine@oneshot", "staged", "mpi", ...; several, joined by " | ", where repetitions
    differ); "" without records."""
    seen = []
    for parsed in parsed_runs:
        for rec in parsed.get("records") or []:
            if rec.get("bytes") == size and (rec.get("type") == dtype or dtype.startswith("block")):
                if rec.get("path") not in seen:
                    seen.append(rec.get("path"))
    return " | ".join(p for p in seen if p)


def summarize(bench, nprocs, runs):
    """runs: {'baseline': [parsed, ...], 'gcoll': [parsed, ...]} (one per repetition).

    Returns one dict per (datatype, size) with the medians over repetitions, the
    speedup (baseline / gcoll) and the bus bandwidth of each median. The latency is
    Avg Latency(us), or Overall(us) in a nonblocking table; there every dict also has
    the medians of Pure Comm.(us) (baseline_comm_us, gcoll_comm_us: busbw comes from
    these) and of Overlap(%) (baseline_overlap, gcoll_overlap), and 'nonblocking'."""
    table = {}
    order = []
    nonblocking = False
    for variant in ("baseline", "gcoll"):
        for parsed in runs[variant]:
            for bi, block in enumerate(parsed["blocks"]):
                dtype = block["datatype"] or "block%d" % bi
                lat = latency_column(block["columns"])
                nonblocking = nonblocking or lat == OVERALL
                for row in block["rows"]:
                    key = (dtype, row["Size"])
                    if key not in table:
                        table[key] = {v + k: [] for v in ("baseline", "gcoll")
                                      for k in ("", "_comm", "_overlap")}
                        order.append(key)
                    table[key][variant].append(row[lat])
                    if lat == OVERALL:
                        table[key][variant + "_comm"].append(row[COMM])
                        table[key][variant + "_overlap"].append(row[OVERLAP])
    out = []
    for key in order:
        dtype, size = key
        t = table[key]
        base, gc = t["baseline"], t["gcoll"]
        mb, mg = _median(base), _median(gc)
        r = {
            "datatype": dtype, "size": size,
            "baseline_us": mb, "gcoll_us": mg,
            "speedup": mb / mg if base and gc and mg > 0 else float("nan"),
            "baseline_busbw": busbw_gbs(bench, size, nprocs, mb),
            "gcoll_busbw": busbw_gbs(bench, size, nprocs, mg),
            "baseline_reps": base, "gcoll_reps": gc,
            "nonblocking": nonblocking,
        }
        for variant in ("baseline", "gcoll"):
            r[variant + "_path"] = _paths_of(runs[variant], dtype, size)
        if nonblocking:
            r["baseline_comm_us"] = _median(t["baseline_comm"])
            r["gcoll_comm_us"] = _median(t["gcoll_comm"])
            r["baseline_overlap"] = _median(t["baseline_overlap"])
            r["gcoll_overlap"] = _median(t["gcoll_overlap"])
            r["baseline_busbw"] = busbw_gbs(bench, size, nprocs, r["baseline_comm_us"])
            r["gcoll_busbw"] = busbw_gbs(bench, size, nprocs, r["gcoll_comm_us"])
        out.append(r)
    return out


# ---- environment -----------------------------------------------------------------

def _first_line(cmd, cwd=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=60)
        for line in p.stdout.splitlines():
            if line.strip():
                return line.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def machine_info(mpirun):
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    commit = _first_line(["git", "rev-parse", "--short", "HEAD"], cwd=REPO)
    try:
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               universal_newlines=True, timeout=60).stdout.strip()
        if dirty and commit != "unknown":
            commit += "+dirty"
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "hostname": socket.gethostname(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "mpi": _first_line([mpirun, "--version"]),
        "commit": commit,
    }


def _kv(s):
    if "=" not in s or s.startswith("="):
        raise argparse.ArgumentTypeError("expected VAR=VALUE, got %r" % s)
    return s


# ---- running ---------------------------------------------------------------------

def mpirun_command(args, variant):
    bench_args = list(args.bench_args)
    # an ENQUEUE benchmark: the baseline is the blocking collective, under gcoll too
    under_gcoll = variant == "gcoll" or args.bench in ENQUEUE
    bench = args.bench if variant == "gcoll" else (collective(args.bench) if args.bench in ENQUEUE
                                                   else args.bench)
    if args.device == "cuda":
        bench_args = ["-d", "cuda"] + ([] if under_gcoll else ["--staged"]) + bench_args
    cmd = [args.mpirun, "-np", str(args.np)]
    extra = list(args.mpirun_args)
    if args.np > (os.cpu_count() or 1) and "--oversubscribe" not in extra:
        extra.append("--oversubscribe")
    cmd += extra
    envs = args.env if under_gcoll else args.baseline_env
    for kv in envs:
        cmd += ["-x", kv]
    if under_gcoll:
        cmd += ["-x", "LD_PRELOAD=" + args.lib]
    cmd.append(os.path.join(args.bin_dir, bench))
    return cmd + bench_args + (list(getattr(args, "gcoll_args", [])) if variant == "gcoll" else [])


def child_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GCOLL_") and k != "LD_PRELOAD"}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def paired_baseline(parsed):
    """--paired: the MPI's half of a paired run (its PMPI Avg(us) column) as a run of its
    own, so that the rest compares it like an alternating baseline run."""
    base = {k: v for k, v in parsed.items() if k not in ("blocks", "records")}
    base["records"] = []
    base["blocks"] = []
    for b in parsed["blocks"]:
        if PMPI_LAT not in (b["columns"] or []):
            raise ValueError("a --paired run printed no %r column" % PMPI_LAT)
        rows = [dict(r, **{LAT: r[PMPI_LAT]}) for r in b["rows"]]
        base["blocks"].append({"datatype": b["datatype"], "columns": b["columns"], "rows": rows})
    return base


def run_once(args, variant, rep, raw_dir):
    json_path = os.path.join(raw_dir, "rep%d_%s.json" % (rep + 1, variant))
    cmd = mpirun_command(args, variant) + ["-J", json_path] + (["--paired"] if args.paired else [])
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=args.timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or "", (e.stderr or "") + "\n[compare.py] timed out"
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        if isinstance(err, bytes):
            err = err.decode(errors="replace")
    took = time.time() - t0
    path = os.path.join(raw_dir, "rep%d_%s.txt" % (rep + 1, variant))
    with open(path, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + out)
        if err:
            f.write("\n--- stderr ---\n" + err)
    if rc != 0:
        sys.stderr.write("compare.py: %s run %d failed (exit %s): %s\n%s\n"
                         % (variant, rep + 1, rc, " ".join(cmd), "\n".join(
                             (out + "\n" + err).strip().splitlines()[-25:])))
        sys.exit(2)
    parsed = parse_omb_output(out)
    rows = sum(len(b["rows"]) for b in parsed["blocks"])
    if rows == 0:
        why = [c for c in parsed["comments"] if "Not measured" in c]
        sys.stderr.write("compare.py: %s run %d printed no result rows%s; see %s\n"
                         % (variant, rep + 1, (": " + why[0].lstrip("# ")) if why else "",
                            path))
        sys.exit(2)
    for b in parsed["blocks"]:
        for r in b["rows"]:
            if r.get("Validation", "Pass") != "Pass":
                sys.stderr.write("compare.py: %s run %d: validation failed at %d bytes; see %s\n"
                                 % (variant, rep + 1, r["Size"], path))
                sys.exit(2)
    try:
        with open(json_path) as f:
            parsed["records"] = json.load(f)["records"]
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write("compare.py: %s run %d: no -J results (%s); see %s\n" % (variant, rep + 1, e, path))
        sys.exit(2)
    sys.stderr.write("[compare.py] rep %d/%d %-8s %6.1f s  %s\n"
                     % (rep + 1, args.reps, variant, took, path))
    return parsed, cmd, took


# ---- output ------------------------------------------------------------------------

def fmt_size(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def format_table(summary, show_dtype, names=("baseline", "gcoll")):
    """Blocking: latency, speedup and busbw of both variants. Nonblocking: Overall(us)
    (baseline(us), gcoll(us)), its speedup, then Pure Comm.(us) and Overlap(%) of both.
    names: the two variants' names in the blocking table's header (an ENQUEUE benchmark:
    blocking, enqueue)."""
    nonblocking = bool(summary) and summary[0].get("nonblocking")
    dt_head = "%-14s" % "Datatype" if show_dtype else ""
    if nonblocking:
        lines = [dt_head + "%-10s%14s%14s%10s%16s%16s%14s%14s" % (
            "Size(B)", "baseline(us)", "gcoll(us)", "speedup", "base comm(us)",
            "gcoll comm(us)", "base ovlp(%)", "gcoll ovlp(%)")]
    else:
        base = "base" if names[0] == "baseline" else names[0]
        bw_heads = (base + " busbw(GB/s)", names[1] + " busbw(GB/s)")
        bw_w = max(18, max(len(h) for h in bw_heads) + 1)
        lines = [dt_head + "%-10s%14s%14s%10s%*s%*s" % (
            "Size(B)", names[0] + "(us)", names[1] + "(us)", "speedup", bw_w, bw_heads[0],
            bw_w, bw_heads[1])]
    with_path = any(r.get("gcoll_path") for r in summary)
    if with_path:
        lines[0] += "  %s" % (names[1] + " path")
    for r in summary:
        dt = "%-14s" % r["datatype"] if show_dtype else ""
        if nonblocking:
            lines.append(dt + "%-10d%14.2f%14.2f%10.2f%16.2f%16.2f%14.2f%14.2f" % (
                r["size"], r["baseline_us"], r["gcoll_us"], r["speedup"],
                r["baseline_comm_us"], r["gcoll_comm_us"], r["baseline_overlap"],
                r["gcoll_overlap"]))
        else:
            lines.append(dt + "%-10d%14.2f%14.2f%10.2f%*.3f%*.3f" % (
                r["size"], r["baseline_us"], r["gcoll_us"], r["speedup"],
                bw_w, r["baseline_busbw"], bw_w, r["gcoll_busbw"]))
        if with_path:
            lines[-1] += "  %s" % (r.get("gcoll_path") or "-")
    return "\n".join(lines)


def write_csv(path, bench, nprocs, summary):
    """One row per (datatype, size). Nonblocking: the *_us columns are Overall(us), busbw
    is from Pure Comm.(us), and four more columns hold the medians of Pure Comm.(us) and
    Overlap(%)."""
    nonblocking = bool(summary) and summary[0].get("nonblocking")
    extra = ["baseline_comm_us_median", "gcoll_comm_us_median", "baseline_overlap_pct_median",
             "gcoll_overlap_pct_median"] if nonblocking else []
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["bench", "np", "datatype", "size_bytes", "baseline_us_median",
                    "gcoll_us_median", "speedup", "baseline_busbw_GBps", "gcoll_busbw_GBps",
                    "baseline_us_reps", "gcoll_us_reps"] + extra)
        for r in summary:
            w.writerow([bench, nprocs, r["datatype"], r["size"],
                        "%.4f" % r["baseline_us"], "%.4f" % r["gcoll_us"],
                        "%.4f" % r["speedup"], "%.6f" % r["baseline_busbw"],
                        "%.6f" % r["gcoll_busbw"],
                        ";".join("%.2f" % v for v in r["baseline_reps"]),
                        ";".join("%.2f" % v for v in r["gcoll_reps"])] +
                       (["%.4f" % r["baseline_comm_us"], "%.4f" % r["gcoll_comm_us"],
                         "%.2f" % r["baseline_overlap"], "%.2f" % r["gcoll_overlap"]]
                        if nonblocking else []))


def _gp_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_plot(out_dir, bench, caption_lines, summary, baseline_label, gcoll_label):
    """Writes <bench>.dat and <bench>.gp; runs gnuplot for <bench>.png. Returns the
    PNG path, or None (with a warning) without gnuplot. Left: latency (Overall(us) for
    a nonblocking benchmark) vs size; right: busbw, or for a nonblocking benchmark the
    overlap (%), vs size."""
    nonblocking = bool(summary) and summary[0].get("nonblocking")
    dtypes = []
    for r in summary:
        if r["datatype"] not in dtypes:
            dtypes.append(r["datatype"])
    dat = os.path.join(out_dir, bench + ".dat")
    with open(dat, "w") as f:
        for i, dt in enumerate(dtypes):
            if i:
                f.write("\n\n")
            f.write("# %s: size baseline_us gcoll_us baseline_busbw gcoll_busbw speedup%s\n"
                    % (dt, " baseline_overlap gcoll_overlap" if nonblocking else ""))
            for r in summary:
                if r["datatype"] == dt:
                    f.write("%d %.6g %.6g %.6g %.6g %.6g" % (
                        r["size"], r["baseline_us"], r["gcoll_us"], r["baseline_busbw"],
                        r["gcoll_busbw"], r["speedup"]))
                    if nonblocking:
                        f.write(" %.6g %.6g" % (r["baseline_overlap"], r["gcoll_overlap"]))
                    f.write("\n")
    sizes = sorted({r["size"] for r in summary})
    tics = []
    if sizes:
        k = 0
        while (1 << k) < sizes[0]:
            k += 1
        step = 1 if len(sizes) <= 12 else 2
        while (1 << k) <= sizes[-1]:
            tics.append('"%s" %d' % (fmt_size(1 << k), 1 << k))
            k += step
    png = os.path.join(out_dir, bench + ".png")
    title = "\\n".join(s.replace("\\", "\\\\").replace('"', '\\"') for s in caption_lines)
    nlines = len(caption_lines)
    top = max(0.55, 1.0 - (22.0 * nlines + 40.0) / 900.0)
    xrange = "[%g:%g]" % (sizes[0] / 1.25, sizes[-1] * 1.25) if sizes else "[*:*]"
    plots_lat, plots_bw = [], []
    right = (7, 8) if nonblocking else (4, 5)
    for i, dt in enumerate(dtypes):
        suffix = (" " + dt) if len(dtypes) > 1 else ""
        plots_lat.append("'%s' index %d using 1:2 with linespoints ls %d title %s"
                         % (dat, i, 1 + 2 * i, _gp_str(baseline_label + suffix)))
        plots_lat.append("'%s' index %d using 1:3 with linespoints ls %d title %s"
                         % (dat, i, 2 + 2 * i, _gp_str(gcoll_label + suffix)))
        plots_bw.append("'%s' index %d using 1:%d with linespoints ls %d title %s"
                        % (dat, i, right[0], 1 + 2 * i, _gp_str(baseline_label + suffix)))
        plots_bw.append("'%s' index %d using 1:%d with linespoints ls %d title %s"
                        % (dat, i, right[1], 2 + 2 * i, _gp_str(gcoll_label + suffix)))
    if nonblocking:
        lat_label = "overall latency (us): communication + computation, median"
        lat_title = "overall (overlap run) vs size (log-log)"
        right_range, right_label, right_title = "[0:100]", "overlap (%), median", \
            "overlap vs size"
    else:
        lat_label = "latency (us), median over repetitions"
        lat_title = "latency vs size (log-log)"
        right_range, right_label, right_title = "[0:*]", "bus bandwidth (GB/s)", \
            "busbw vs size"
    gp = os.path.join(out_dir, bench + ".gp")
    with open(gp, "w") as f:
        f.write("""set terminal pngcairo noenhanced size 1600,900 font "sans,11"
set output %(png)s
set style line 1 lc rgb "#1f77b4" lw 2 pt 7 ps 1.0
set style line 2 lc rgb "#d62728" lw 2 pt 5 ps 1.0
set style line 3 lc rgb "#2ca02c" lw 2 pt 9 ps 1.0
set style line 4 lc rgb "#ff7f0e" lw 2 pt 11 ps 1.0
set style line 5 lc rgb "#9467bd" lw 2 pt 13 ps 1.0
set style line 6 lc rgb "#8c564b" lw 2 pt 15 ps 1.0
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key top left box opaque
set logscale x 2
set xtics (%(tics)s) rotate by -45
set xrange %(xrange)s
set xlabel "message size (bytes)"
set multiplot title "%(title)s" font "sans,12"
set size 0.5,%(top).3f
set origin 0.0,0.0
set logscale y 10
set format y "%%g"
set ylabel %(lat_label)s
set title %(lat_title)s
plot %(lat)s
set origin 0.5,0.0
unset logscale y
set yrange %(right_range)s
set key top left
set ylabel %(right_label)s
set title %(right_title)s
plot %(bw)s
unset multiplot
""" % {"png": _gp_str(png), "tics": ", ".join(tics), "title": title, "top": top, "xrange": xrange,
       "lat": ", \\\n     ".join(plots_lat), "bw": ", \\\n     ".join(plots_bw),
       "lat_label": _gp_str(lat_label), "lat_title": _gp_str(lat_title),
       "right_range": right_range, "right_label": _gp_str(right_label),
       "right_title": _gp_str(right_title)})
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        sys.stderr.write("compare.py: warning: gnuplot not found (Debian: apt-get install "
                         "gnuplot-nox); no PNG. The plot script is %s\n" % gp)
        return None
    p = subprocess.run([gnuplot, gp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode != 0 or not os.path.exists(png):
        sys.stderr.write("compare.py: warning: gnuplot failed:\n%s\n" % p.stdout)
        return None
    return png


# ---- main --------------------------------------------------------------------------

def parse_args(argv):
    if "--" in argv:
        i = argv.index("--")
        argv, bench_args = argv[:i], argv[i + 1:]
    else:
        bench_args = []
    ap = argparse.ArgumentParser(
        description="Run an OSU-style benchmark with and without libgcoll.so (LD_PRELOAD), "
                    "alternating, and compare. Benchmark arguments go after `--`.",
        epilog="example: compare.py --bench osu_allreduce --np 4 --env GCOLL_HOST_BUFFERS=engine "
               "--env GCOLL_RANKS_PER_NODE=2 -- -m 8:67108864 -T mpi_float")
    ap.add_argument("--bench", default="osu_allreduce", choices=BENCHES)
    ap.add_argument("--np", type=int, default=4, help="ranks (default 4)")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                    help="CMake build directory (default: <repo>/build)")
    ap.add_argument("--bin-dir", help="where the benchmarks are (default: <build-dir>/bin)")
    ap.add_argument("--lib", help="libgcoll.so (default: <build-dir>/lib/libgcoll.so)")
    ap.add_argument("--env", action="append", default=[], type=_kv, metavar="VAR=VALUE",
                    help="setting for the gcoll runs only (repeatable), e.g. "
                         "GCOLL_HOST_BUFFERS=engine")
    ap.add_argument("--baseline-env", action="append", default=[], type=_kv, metavar="VAR=VALUE",
                    help="setting for the baseline runs only (repeatable)")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions of each variant, alternating (default 3)")
    ap.add_argument("--device", choices=("host", "cuda"), default="host",
                    help="cuda: baseline `-d cuda --staged`, gcoll `-d cuda` (default host)")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--mpirun-arg", dest="mpirun_args", action="append", default=[],
                    metavar="ARG", help="extra mpirun argument (repeatable), e.g. "
                                        "--mpirun-arg=--bind-to --mpirun-arg=core")
    ap.add_argument("--gcoll-arg", dest="gcoll_args", action="append", default=[], metavar="ARG",
                    help="benchmark argument for the gcoll runs only (repeatable), e.g. "
                         "--gcoll-arg=--graph --gcoll-arg=100 (osu_allreduce_enqueue: calls "
                         "inside a CUDA graph, against the blocking call)")
    ap.add_argument("--paired", action="store_true",
                    help="one run per repetition, under gcoll, with the benchmark's --paired: "
                         "the baseline is the MPI's own call (PMPI_*) in alternating blocks of "
                         "the same run (host buffers; blocking benchmarks of the eight engine "
                         "collectives, gather, scatter). Cancels the run-to-run spread of an "
                         "oversubscribed machine")
    ap.add_argument("--busy", type=int, default=0, metavar="N",
                    help="N CPU-bound processes (`while :; do :; done`) running through every "
                         "run of both variants: a shared machine (issue 32 item 2; default 0)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--out", help="output directory (default: <build-dir>/osu_compare/"
                                  "<bench>-np<N>-<time>)")
    ap.add_argument("--replot", metavar="COMPARE_JSON",
                    help="run nothing: print the table and write the CSV and PNG again from a "
                         "compare.json this script wrote (into --out, default its directory)")
    args = ap.parse_args(argv)
    args.bench_args = bench_args
    if args.replot:
        return args
    args.bin_dir = os.path.abspath(args.bin_dir or os.path.join(args.build_dir, "bin"))
    args.lib = os.path.abspath(args.lib or os.path.join(args.build_dir, "lib", "libgcoll.so"))
    if args.bench in ENQUEUE:
        # device buffers only, both variants under gcoll (no MPI-alone baseline: see the
        # docstring)
        if args.baseline_env:
            ap.error("%s has no baseline run: --baseline-env does not apply" % args.bench)
        args.device = "cuda"
    if args.np < 2:
        ap.error("--np must be at least 2")
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    if args.busy < 0:
        ap.error("--busy must be 0 or more")
    if args.paired and (args.device != "host" or args.bench in NONBLOCKING + ENQUEUE or
                        args.bench == "osu_allreduce_persistent" or args.baseline_env):
        ap.error("--paired: host buffers, blocking benchmarks (not persistent), no --baseline-env")
    if args.device == "cuda" and any(a in ("-d", "--accelerator", "--staged") or
                                     a.startswith("--accelerator=") for a in bench_args):
        ap.error("--device cuda sets -d/--staged itself; leave them out of the benchmark "
                 "arguments")
    exe = os.path.join(args.bin_dir, args.bench)
    if not os.access(exe, os.X_OK):
        ap.error("no benchmark at %s (build it: cmake --build <build> --target %s, or give "
                 "--bin-dir)" % (exe, args.bench))
    if not os.path.exists(args.lib):
        ap.error("no library at %s (build target gcoll, or give --lib)" % args.lib)
    return args


COMPARE_SCHEMA = "gcoll-compare/1"


def write_outputs(out_dir, bench, nprocs, summary, caption, labels, names):
    """The table (printed, summary.txt), the CSV and the PNG of one comparison."""
    dtypes = {r["datatype"] for r in summary}
    table = format_table(summary, show_dtype=len(dtypes) > 1, names=names)
    text = "\n".join("# " + c for c in caption) + "\n" + table + "\n"
    print(text, end="")
    csv_path = os.path.join(out_dir, bench + ".csv")
    write_csv(csv_path, bench, nprocs, summary)
    with open(os.path.join(out_dir, "summary.txt"), "w") as f:
        f.write(text)
    png = write_plot(out_dir, bench, caption, summary, labels[0], labels[1])
    return csv_path, png


def replot(args):
    with open(args.replot) as f:
        doc = json.load(f)
    if doc.get("schema") != COMPARE_SCHEMA:
        sys.stderr.write("compare.py: %s is not a %s file\n" % (args.replot, COMPARE_SCHEMA))
        return 2
    out_dir = os.path.abspath(args.out or os.path.dirname(os.path.abspath(args.replot)))
    os.makedirs(out_dir, exist_ok=True)
    m = doc["meta"]
    csv_path, png = write_outputs(out_dir, m["bench"], m["np"], doc["rows"], doc["caption"],
                                  doc["labels"], tuple(doc["names"]))
    sys.stderr.write("[compare.py] csv: %s\n[compare.py] png: %s\n" % (csv_path, png or "(none)"))
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.replot:
        return replot(args)
    stray = sorted(k for k in os.environ if k.startswith("GCOLL_"))
    if stray:
        sys.stderr.write("compare.py: note: ignoring %s from this shell; pass settings with "
                         "--env so that they are recorded\n" % ", ".join(stray))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = os.path.abspath(args.out or os.path.join(
        args.build_dir, "osu_compare", "%s-np%d-%s" % (args.bench, args.np, stamp)))
    raw_dir = os.path.join(out_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)

    info = machine_info(args.mpirun)
    runs = {"baseline": [], "gcoll": []}
    commands = {"baseline": None, "gcoll": None}
    started = time.time()
    # The load of a shared machine: the same for every run of both variants. Loop i is
    # pinned to CPU i (of this process's CPUs, round robin), so that every run meets the
    # same load on each core (unpinned, the scheduler's placement of the loops changed a
    # run's times by 2-5x from one run to the next on the 2-core VM). They stay in this
    # session, as loops started from the user's shell would: in a session of their own,
    # Linux's autogroup scheduling (kernel.sched_autogroup_enabled) shares the CPU between
    # sessions, not threads, and the loops barely slow the MPI's ranks at all.
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

    def pin(i):
        return (lambda: os.sched_setaffinity(0, {cpus[i % len(cpus)]})) if cpus else None

    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"], preexec_fn=pin(i))
            for i in range(args.busy)]
    try:
        for rep in range(args.reps):
            if args.paired:
                parsed, cmd, _ = run_once(args, "gcoll", rep, raw_dir)
                try:
                    runs["baseline"].append(paired_baseline(parsed))
                except ValueError as e:
                    sys.stderr.write("compare.py: %s\n" % e)
                    sys.exit(2)
                runs["gcoll"].append(parsed)
                commands["gcoll"] = cmd
                continue
            order = ("baseline", "gcoll") if rep % 2 == 0 else ("gcoll", "baseline")
            for variant in order:
                parsed, cmd, _ = run_once(args, variant, rep, raw_dir)
                runs[variant].append(parsed)
                commands[variant] = cmd
    finally:
        for b in busy:
            b.kill()
            b.wait()
    elapsed = time.time() - started

    summary = summarize(args.bench, args.np, runs)
    title = runs["gcoll"][0]["title"] or args.bench
    base_label = "baseline (MPI%s)" % (", -d cuda --staged" if args.device == "cuda" else "")
    gcoll_label = "gcoll (LD_PRELOAD%s)" % (", -d cuda" if args.device == "cuda" else "")
    names = ("baseline", "gcoll")
    runs_said = "median of %d alternating runs each" % args.reps
    if args.paired:
        base_label = "baseline (the MPI's own call, PMPI_*, paired in the same runs)"
        runs_said = "median of %d runs, each timing both in alternating blocks (--paired)" % args.reps
    if args.busy:
        runs_said += ", %d CPU-bound processes alongside" % args.busy
    if args.bench in ENQUEUE:
        base_label = "blocking %s (gcoll, LD_PRELOAD, -d cuda)" % collective(args.bench)
        gcoll_label = "MPIX_Allreduce_enqueue (gcoll, LD_PRELOAD, -d cuda)"
        names = ("blocking", "enqueue")
    settings = " ".join(args.env) if args.env else "(defaults)"
    caption = [
        "%s: %s vs %s, %d ranks, %s"
        % (title, gcoll_label, base_label, args.np, runs_said),
        "machine: %s, %s, %s cores | MPI: %s"
        % (info["hostname"], info["cpu"], info["cores"], info["mpi"]),
        "gcoll settings: %s%s | gcoll commit %s"
        % (settings, (" | baseline env: " + " ".join(args.baseline_env))
           if args.baseline_env else "", info["commit"]),
        "benchmark arguments: %s" % (" ".join(args.bench_args) or "(none)"),
    ]
    csv_path, png = write_outputs(out_dir, args.bench, args.np, summary, caption,
                                  (base_label, gcoll_label), names)
    meta = dict(info)
    meta.update({"bench": args.bench, "np": args.np, "reps": args.reps, "busy": args.busy,
                 "paired": args.paired,
                 "device": args.device,
                 "env": args.env, "baseline_env": args.baseline_env,
                 "bench_args": args.bench_args, "lib": args.lib, "bin_dir": args.bin_dir,
                 "commands": {k: " ".join(v) for k, v in commands.items() if v},
                 "elapsed_s": round(elapsed, 1), "title": title,
                 "date": datetime.datetime.now().isoformat(timespec="seconds")})
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    # Everything above as data (README.md of the benchmarks, "Results as JSON"): the rows
    # with each variant's path, the caption, and every run's -J records.
    with open(os.path.join(out_dir, "compare.json"), "w") as f:
        json.dump({"schema": COMPARE_SCHEMA, "meta": meta, "caption": caption,
                   "labels": [base_label, gcoll_label], "names": list(names), "rows": summary,
                   "runs": {v: [p.get("records", []) for p in runs[v]] for v in runs}}, f, indent=1)
    sys.stderr.write("[compare.py] %.0f s; csv: %s\n[compare.py] png: %s\n"
                     % (elapsed, csv_path, png or "(none)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
