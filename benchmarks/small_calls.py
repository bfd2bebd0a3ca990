#!/usr/bin/env python3
"""The latency of allreduce, bcast and allgather, 8 B to 4 MiB, with and without gcoll:
one markdown table (issue 12, "no tax on small calls").

    benchmarks/small_calls.py build                       # CPU machine: a few minutes
    benchmarks/small_calls.py build-gpu --reps 5          # GPU machine (source
                                                          # /opt/gcoll-deps/env.sh first)

Rows ("buffers"):
  host               host buffers, the library's default settings (the MPI's collectives
                     behind the library: what every call of an application that merely
                     preloads gcoll pays);
  host, emulated GPU the same with GCOLL_CUDA=emulate: the classification path runs as on
                     a GPU machine (CPU machines; the issue's "host-call overhead with
                     the emulated GPU active");
  device             (GPU and a CUDA build only) -d cuda: baseline = the MPI on device
                     buffers staged through pinned host memory by the benchmark itself
                     (--staged), gcoll = the library on the device pointers;
  device, MPS        the same with the MPS daemon running (started and stopped by this
                     script with nvidia-cuda-mps-control, where it is installed and MPS
                     was not already running);
  device, emulated   (--emulated-device, CUDA builds) -d cuda on the emulated GPU; the
                     baseline stages through the library with GCOLL_ENABLE=0. Timings of
                     the emulation mean nothing (its streams add random delays): a check
                     that the path runs, not a measurement.

Every (row, collective) runs the benchmark without and with the library, alternating,
--reps times (the order flips every repetition), and takes per size the median of each
side. gcoll / MPI > 1 is the library's cost. The table goes to stdout and to
<build>/small_calls.md (--out).
"""

import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "osu_style"))
from compare import parse_omb_output  # noqa: E402

COLLS = ("allreduce", "bcast", "allgather")


def fmt_size(n):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %sB" % (n // div, unit)
    return "%d B" % n


def parse_size(text):
    t = text.strip().upper().rstrip("B")
    mult = 1
    if t.endswith("K"):
        mult, t = 1 << 10, t[:-1]
    elif t.endswith("M"):
        mult, t = 1 << 20, t[:-1]
    return int(t) * mult


def have_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.startswith("GPU ") for line in out.splitlines())


def cuda_build(build_dir):
    """True when the benchmarks were built with CUDA (they then take -d cuda)."""
    cache = os.path.join(build_dir, "CMakeCache.txt")
    try:
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_CUDA_COMPILER:") and line.split("=", 1)[1].strip():
                    return True
    except OSError:
        pass
    return False


def mps_running():
    return subprocess.run(["pgrep", "-x", "nvidia-cuda-mps"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def mps_start():
    ctl = shutil.which("nvidia-cuda-mps-control")
    if not ctl:
        return False
    if subprocess.run([ctl, "-d"]).returncode != 0:
        return False
    time.sleep(1)
    return True


def mps_stop():
    ctl = shutil.which("nvidia-cuda-mps-control")
    if ctl:
        subprocess.run([ctl], input="quit\n", universal_newlines=True)
        time.sleep(1)


class Row:
    """One kind of buffers: how the baseline and the gcoll run are made."""

    def __init__(self, label, base_args=(), base_env=None, base_preload=False,
                 gcoll_args=(), gcoll_env=None, mps=False):
        self.label = label
        self.base_args, self.gcoll_args = list(base_args), list(gcoll_args)
        self.base_env, self.gcoll_env = dict(base_env or {}), dict(gcoll_env or {})
        self.base_preload = base_preload
        self.mps = mps


def child_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GCOLL_") and k != "LD_PRELOAD"}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def command(args, row, coll, variant):
    cmd = [args.mpirun, "-np", str(args.np)]
    if args.np > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    cmd += args.mpirun_args
    if variant == "gcoll":
        env, preload, extra = dict(row.gcoll_env), True, row.gcoll_args
        for kv in args.env:
            k, v = kv.split("=", 1)
            env[k] = v
    else:
        env, preload, extra = row.base_env, row.base_preload, row.base_args
    for k, v in env.items():
        cmd += ["-x", "%s=%s" % (k, v)]
    if preload:
        cmd += ["-x", "LD_PRELOAD=" + args.lib]
    bench = os.path.join(args.bin_dir, "osu_" + coll)
    return cmd + [bench] + extra + ["-m", args.sizes, "-T", "mpi_float",
                                    "-i", str(args.iters), "-x", str(args.warmup)]


def run_once(args, cmd, log):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=child_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True,
                           timeout=args.timeout)
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        rc, out = "timeout", ""
    log.write("$ %s\n%s\n" % (" ".join(cmd), out))
    log.flush()
    if rc != 0:
        sys.stderr.write("small_calls: exit %s: %s\n%s\n" % (rc, " ".join(cmd),
                         "\n".join(out.strip().splitlines()[-20:])))
        sys.exit(2)
    lat = {}
    for b in parse_omb_output(out)["blocks"]:
        for r in b["rows"]:
            lat[r["Size"]] = r["Avg Latency(us)"]
    if not lat:
        sys.stderr.write("small_calls: no result rows from: %s\n" % " ".join(cmd))
        sys.exit(2)
    sys.stderr.write("[small_calls] %5.1f s %s\n" % (time.time() - t0, " ".join(
        a for a in cmd if not a.startswith(("OMPI_", "LD_PRELOAD")))[-150:]))
    return lat


def measure(args, row, log):
    """{coll: {size: (mpi us, gcoll us)}} for one row, medians over the repetitions."""
    result = {}
    for coll in args.colls:
        runs = {"mpi": [], "gcoll": []}
        for rep in range(args.reps):
            for v in (("mpi", "gcoll") if rep % 2 == 0 else ("gcoll", "mpi")):
                runs[v].append(run_once(args, command(args, row, coll, v), log))
        sizes = sorted(set.intersection(*(set(r) for r in runs["mpi"] + runs["gcoll"])))
        result[coll] = {s: (statistics.median(r[s] for r in runs["mpi"]),
                            statistics.median(r[s] for r in runs["gcoll"])) for s in sizes}
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("build_dir", nargs="?", default=os.path.join(REPO, "build"),
                    help="build directory with bin/osu_* and lib/libgcoll.so (default: build)")
    ap.add_argument("--np", type=int, default=4, help="ranks (default 4)")
    ap.add_argument("--reps", type=int, default=3, help="alternating runs per side (default 3)")
    ap.add_argument("-m", dest="sizes", default="8:4194304", help="osu -m (default 8:4194304)")
    ap.add_argument("-i", dest="iters", type=int, default=200, help="osu -i (default 200)")
    ap.add_argument("-x", dest="warmup", type=int, default=20, help="osu -x (default 20)")
    ap.add_argument("--show", default="8,64,512,4K,32K,256K,1M,4M",
                    help="sizes in the table (default 8,64,512,4K,32K,256K,1M,4M; 'all')")
    ap.add_argument("--colls", default=",".join(COLLS))
    ap.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                    help="setting for the gcoll runs (all rows)")
    ap.add_argument("--device", choices=("auto", "on", "off"), default="auto",
                    help="device rows: auto = where a GPU and a CUDA build exist")
    ap.add_argument("--mps", choices=("both", "off", "on"), default="both",
                    help="device rows without and/or with MPS (default both)")
    ap.add_argument("--emulated", choices=("on", "off"), default="on",
                    help="the 'host, emulated GPU' row (default on)")
    ap.add_argument("--emulated-device", action="store_true",
                    help="also -d cuda on the emulated GPU (a check, not a measurement)")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--mpirun-arg", dest="mpirun_args", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    ap.add_argument("--out", help="table file (default <build>/small_calls.md)")
    args = ap.parse_args(argv)
    args.colls = [c for c in args.colls.split(",") if c]
    for c in args.colls:
        if c not in COLLS:
            ap.error("unknown collective %r" % c)
    build = os.path.abspath(args.build_dir)
    args.bin_dir, args.lib = os.path.join(build, "bin"), os.path.join(build, "lib", "libgcoll.so")
    for p in [args.lib] + [os.path.join(args.bin_dir, "osu_" + c) for c in args.colls]:
        if not os.path.exists(p):
            ap.error("missing %s (build targets gcoll osu_allreduce osu_bcast osu_allgather)" % p)
    for kv in args.env:
        if "=" not in kv:
            ap.error("--env wants VAR=VALUE, got %r" % kv)
    out = os.path.abspath(args.out or os.path.join(build, "small_calls.md"))
    log_path = os.path.splitext(out)[0] + ".log"

    cuda = cuda_build(build)
    gpu = have_gpu()
    device = {"auto": gpu and cuda, "on": True, "off": False}[args.device]
    notes = []
    rows = [Row("host")]
    if args.emulated == "on":
        rows.append(Row("host, emulated GPU", gcoll_env={"GCOLL_CUDA": "emulate"}))
    if device:
        if args.mps in ("both", "off"):
            rows.append(Row("device", base_args=["-d", "cuda", "--staged"], gcoll_args=["-d", "cuda"]))
        if args.mps in ("both", "on"):
            rows.append(Row("device, MPS", base_args=["-d", "cuda", "--staged"],
                            gcoll_args=["-d", "cuda"], mps=True))
    elif args.device == "auto":
        notes.append("no device rows: %s" % ("no GPU" if not gpu else "not a CUDA build"))
    if args.emulated_device:
        if not cuda:
            ap.error("--emulated-device needs a CUDA build (the benchmarks' -d cuda)")
        emu = {"GCOLL_CUDA": "emulate"}
        rows.append(Row("device, emulated", base_args=["-d", "cuda", "--staged"],
                        base_env=dict(emu, GCOLL_ENABLE="0"), base_preload=True,
                        gcoll_args=["-d", "cuda"], gcoll_env=emu))

    started = time.time()
    results = []
    with open(log_path, "w") as log:
        for row in rows:
            started_mps = False
            if row.mps:
                if mps_running():
                    notes.append("MPS was already running (left running)")
                elif mps_start():
                    started_mps = True
                else:
                    notes.append("device, MPS: could not start nvidia-cuda-mps-control -d; row left out")
                    continue
            elif device and row.label == "device" and mps_running():
                notes.append("device: MPS was running during the 'device' row")
            try:
                results.append((row, measure(args, row, log)))
            finally:
                if started_mps:
                    mps_stop()

    show = None if args.show == "all" else {parse_size(s) for s in args.show.split(",")}
    lines = [
        "gcoll small calls: %d ranks, osu_* -m %s -T mpi_float -i %d -x %d, median of %d "
        "alternating runs per side; %s; %s; %s cores; %s"
        % (args.np, args.sizes, args.iters, args.warmup, args.reps,
           "gcoll settings: " + (" ".join(args.env) or "defaults"),
           "GPU: " + ("yes" if gpu else "no") + (", CUDA build" if cuda else ""),
           os.cpu_count(), datetime.date.today().isoformat()),
    ]
    lines += ["note: " + n for n in notes]
    lines += ["", "| collective | buffers | size | MPI µs | gcoll µs | gcoll / MPI |",
              "|---|---|---|---:|---:|---:|"]
    for coll in args.colls:
        for row, res in results:
            for size, (m, g) in sorted(res[coll].items()):
                if show is not None and size not in show:
                    continue
                ratio = g / m if m > 0 else float("nan")
                lines.append("| %s | %s | %s | %.2f | %.2f | %.2f |"
                             % (coll, row.label, fmt_size(size), m, g, ratio))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(out, "w") as f:
        f.write(text)
    sys.stderr.write("[small_calls] %.0f s; table: %s; raw output: %s\n"
                     % (time.time() - started, out, log_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
