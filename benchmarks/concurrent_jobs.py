#!/usr/bin/env python3
"""Several MPI jobs at once on one machine, with and without gcoll (issue 12).

K jobs of NP ranks each run an OSU-style benchmark at the same time; then the same K
jobs run with the library (LD_PRELOAD, the engine on host buffers); the two batches
alternate --reps times (the order flips every repetition). Per batch the slowest job
counts. Prints one markdown table (medians over the repetitions) and writes it to
<out>/concurrent_jobs.md:

    benchmarks/concurrent_jobs.py --build-dir build --np 4            # 4 ranks per core
    benchmarks/concurrent_jobs.py --build-dir build --jobs 8 --np 8 \\
        --env GCOLL_RANKS_PER_NODE=4 -- -m 8:65536 -T mpi_float -i 200

Columns: job wall time (mpirun start to end, start-up included) and the benchmark's
own time (its "Avg Latency" summed over the sizes, x iterations: time inside the
collectives), for Open MPI alone and with gcoll, and their ratio (gcoll / MPI; the
issue's target: at most 2 at 4 ranks per core).

--jobs defaults to 4 ranks per core: ceil(4 x cores / NP). --mpi-yield 1 sets Open MPI's
mpi_yield_when_idle for both batches (Open MPI sets it itself only when ONE job has more
ranks than cores; several jobs that each fit do not, and then its waits spin).
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "osu_style"))
from compare import parse_omb_output  # noqa: E402


def child_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GCOLL_") and k != "LD_PRELOAD"}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.update(extra)
    return env


def command(args, variant):
    cmd = [args.mpirun, "-np", str(args.np), "--bind-to", "none"]
    if args.np > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    cmd += args.mpirun_args
    if args.mpi_yield is not None:
        cmd += ["--mca", "mpi_yield_when_idle", args.mpi_yield]
    if variant == "gcoll":
        for kv in ["GCOLL_HOST_BUFFERS=engine"] + args.env:
            cmd += ["-x", kv]
        cmd += ["-x", "LD_PRELOAD=" + args.lib]
    return cmd + [os.path.join(args.bin_dir, args.bench)] + args.bench_args


def bench_time_s(text):
    """Time inside the collectives: sum over sizes of Avg Latency x Iterations."""
    parsed = parse_omb_output(text)
    total = 0.0
    for b in parsed["blocks"]:
        for r in b["rows"]:
            total += r["Avg Latency(us)"] * r.get("Iterations", 1) * 1e-6
    return total


def batch(args, variant, rep, log_dir):
    """Runs K jobs at once; returns (slowest job's wall s, slowest job's benchmark s)."""
    cmd = command(args, variant)
    results = [None] * args.jobs

    def one(i):
        t0 = time.time()
        try:
            p = subprocess.run(cmd, env=child_env({}), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True,
                               timeout=args.timeout)
            rc, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, out = "timeout", (e.stdout or b"").decode(errors="replace") \
                if isinstance(e.stdout, bytes) else (e.stdout or "")
        results[i] = (rc, time.time() - t0, out)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(args.jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    walls, benches = [], []
    for i, (rc, wall, out) in enumerate(results):
        path = os.path.join(log_dir, "rep%d_%s_job%d.txt" % (rep + 1, variant, i))
        with open(path, "w") as f:
            f.write("$ " + " ".join(cmd) + "\n" + out)
        if rc != 0:
            sys.stderr.write("concurrent_jobs: %s job %d of rep %d failed (exit %s); see %s\n"
                             % (variant, i, rep + 1, rc, path))
            sys.exit(2)
        walls.append(wall)
        benches.append(bench_time_s(out))
    sys.stderr.write("[concurrent_jobs] rep %d %-5s jobs: %s s\n"
                     % (rep + 1, variant, " ".join("%.2f" % w for w in walls)))
    return max(walls), max(benches)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    bench_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, bench_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--bench", default="osu_allreduce",
                    choices=("osu_allreduce", "osu_bcast", "osu_allgather"))
    ap.add_argument("--np", type=int, default=4, help="ranks per job (default 4)")
    ap.add_argument("--jobs", type=int, help="jobs at once (default: 4 ranks per core)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                    help="setting for the gcoll jobs (GCOLL_HOST_BUFFERS=engine is set)")
    ap.add_argument("--mpi-yield", choices=("0", "1"),
                    help="Open MPI's mpi_yield_when_idle for every job (default: Open MPI's own)")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--mpirun-arg", dest="mpirun_args", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per job")
    ap.add_argument("--out", help="output directory (default <build-dir>/concurrent_jobs)")
    args = ap.parse_args(argv)
    args.bench_args = bench_args or ["-m", "8:65536", "-T", "mpi_float", "-i", "200", "-x", "20"]
    if "-f" not in args.bench_args:
        args.bench_args.append("-f")  # the Iterations column
    cores = os.cpu_count() or 1
    if args.jobs is None:
        args.jobs = max(2, math.ceil(4 * cores / args.np))
    args.bin_dir = os.path.join(os.path.abspath(args.build_dir), "bin")
    args.lib = os.path.join(os.path.abspath(args.build_dir), "lib", "libgcoll.so")
    for p in (os.path.join(args.bin_dir, args.bench), args.lib):
        if not os.path.exists(p):
            ap.error("missing %s (build targets gcoll and %s)" % (p, args.bench))
    out = os.path.abspath(args.out or os.path.join(args.build_dir, "concurrent_jobs"))
    log_dir = os.path.join(out, "raw")
    os.makedirs(log_dir, exist_ok=True)

    res = {"mpi": [], "gcoll": []}
    for rep in range(args.reps):
        for v in (("mpi", "gcoll") if rep % 2 == 0 else ("gcoll", "mpi")):
            res[v].append(batch(args, v, rep, log_dir))
    med = {v: (statistics.median(w for w, _ in r), statistics.median(b for _, b in r))
           for v, r in res.items()}
    ranks = args.jobs * args.np
    lines = [
        "%d jobs x %d ranks at once on %d cores (%.1f ranks per core), %s %s; "
        "Open MPI mpi_yield_when_idle: %s; gcoll: GCOLL_HOST_BUFFERS=engine %s; "
        "slowest job per batch, median of %d alternating batches"
        % (args.jobs, args.np, cores, ranks / cores, args.bench, " ".join(args.bench_args),
           args.mpi_yield if args.mpi_yield is not None else "Open MPI's default",
           " ".join(args.env), args.reps),
        "",
        "| measure | Open MPI | gcoll | gcoll / MPI |",
        "|---|---|---|---|",
        "| job wall time (s) | %.2f | %.2f | %.2f |"
        % (med["mpi"][0], med["gcoll"][0], med["gcoll"][0] / med["mpi"][0]),
        "| time in the collectives (s) | %.3f | %.3f | %.2f |"
        % (med["mpi"][1], med["gcoll"][1],
           med["gcoll"][1] / med["mpi"][1] if med["mpi"][1] > 0 else float("nan")),
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(out, "concurrent_jobs.md"), "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
