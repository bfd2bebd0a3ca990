#!/usr/bin/env python3
"""A soak of the engine (issue 15): many mixed calls, every result checked, resources flat.

Runs gcoll_soak (mpi_tests/soak/soak.c) under mpirun with libgcoll.so preloaded and the
engine on host buffers (GCOLL_HOST_BUFFERS=engine): MPI_Allreduce, MPI_Bcast and
MPI_Allgather, 0 to 4 MiB (most calls small), in place or not, on MPI_COMM_WORLD and on
communicators created and freed along the way, on host buffers and (--emulated-gpu, or
a real GPU with a CUDA build) device buffers, after a warm-up sweep of every kind of call
at the largest sizes. The program checks every result and samples each rank's resident
set, open descriptors, mapped node segments and the communicators gcoll holds, and the
job's /dev/shm entries; it fails on a wrong element, host resident-set growth over 5%
after the warm-up (and over 2 MiB), or descriptors, segments, communicators or /dev/shm
entries above their level after the warm-up. Prints a markdown table and writes it to
<build-dir>/soak.md (--out; the program's output goes to soak.log beside it):

    benchmarks/soak.py --build-dir build --calls 200000 --np 4 --ranks-per-node 2
    benchmarks/soak.py --build-dir build --calls 20000 --np 4 --ranks-per-node 2 --emulated-gpu
    benchmarks/soak.py --build-dir build --calls 3000 -- --comm-every 100   # program options

--ranks-per-node k cuts the machine into virtual nodes (GCOLL_RANKS_PER_NODE=k: UCX
between them). --emulated-gpu sets GCOLL_CUDA=emulate (device buffers on gcoll's
emulated GPU; needs a CUDA build; the emulated device memory lives in shared memory and
is counted apart from the host resident set). --malloc fixed (the default) gives the
ranks MALLOC_MMAP_THRESHOLD_=131072: glibc otherwise raises its mmap threshold to the
largest block freed and serves later large blocks from the heap, which then creeps up
by fragmentation (allocator behaviour, not a leak: on the emulated GPU, whose every
host-to-device copy stages through a new buffer of its size, the host resident set went
up and down in 4 MiB steps, +8.9% after 20,000 calls; flat with the fixed threshold;
host buffers alone stay flat either way); --malloc glibc measures without it. The stats file (GCOLL_STATS_FILE)
says how many calls the engine took. Arguments after -- go to gcoll_soak (see the
comment at its top). The exit status is gcoll_soak's (0: PASS).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def child_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GCOLL_") and k != "LD_PRELOAD"}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def kv_line(line):
    return dict(re.findall(r"(\w+)=(\S+)", line))


def commit():
    try:
        out = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                               timeout=10).stdout.strip()
        return out + (" + local changes" if dirty else "") if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def stats_totals(path):
    try:
        with open(path) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return None
    tot = {k: 0 for k in ("calls", "engine", "staged", "passthrough", "errors")}
    for coll in ("allreduce", "bcast", "allgather"):
        for k in tot:
            tot[k] += int(st.get(coll, {}).get(k, 0))
    return tot


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    prog_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, prog_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--calls", type=int, default=200000, help="calls per rank (default 200000)")
    ap.add_argument("--np", type=int, default=4, help="ranks (default 4)")
    ap.add_argument("--ranks-per-node", type=int, default=0,
                    help="virtual nodes of this many ranks (GCOLL_RANKS_PER_NODE; default 0: the machine)")
    ap.add_argument("--emulated-gpu", action="store_true",
                    help="GCOLL_CUDA=emulate: device buffers on gcoll's emulated GPU (CUDA builds)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--malloc", choices=("fixed", "glibc"), default="fixed",
                    help="fixed (default): MALLOC_MMAP_THRESHOLD_=131072 on the ranks, so that glibc's "
                         "sliding mmap threshold does not grow the heap by fragmentation; glibc: as it comes")
    ap.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                    help="more settings for the ranks (GCOLL_HOST_BUFFERS=engine is set)")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--mpirun-arg", dest="mpirun_args", action="append", default=[])
    ap.add_argument("--timeout", type=float, help="seconds for the whole run (default: 600 + 20 ms per call)")
    ap.add_argument("--out", help="output directory (default <build-dir>)")
    args = ap.parse_args(argv)

    build = os.path.abspath(args.build_dir)
    exe = os.path.join(build, "bin", "gcoll_soak")
    lib = os.path.join(build, "lib", "libgcoll.so")
    for p in (exe, lib):
        if not os.path.exists(p):
            ap.error("missing %s (build targets gcoll and gcoll_soak)" % p)
    out = os.path.abspath(args.out or build)
    os.makedirs(out, exist_ok=True)
    stats = os.path.join(out, "soak_stats.json")
    log = os.path.join(out, "soak.log")
    if os.path.exists(stats):
        os.remove(stats)
    timeout = args.timeout or 600.0 + 0.02 * args.calls

    settings = ["GCOLL_HOST_BUFFERS=engine", "GCOLL_HOST_TUNE=off"]  # the engine at every size
    if args.ranks_per_node:
        settings.append("GCOLL_RANKS_PER_NODE=%d" % args.ranks_per_node)
    if args.emulated_gpu:
        settings.append("GCOLL_CUDA=emulate")
    if args.malloc == "fixed":
        settings.append("MALLOC_MMAP_THRESHOLD_=131072")
    settings += args.env
    cmd = [args.mpirun, "-np", str(args.np), "--bind-to", "none"]
    if args.np > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    cmd += args.mpirun_args
    for kv in settings + ["GCOLL_STATS_FILE=" + stats, "LD_PRELOAD=" + lib]:
        cmd += ["-x", kv]
    cmd += [exe, "--calls", str(args.calls), "--seed", str(args.seed),
            "--timeout", str(int(timeout) - 10)] + prog_args

    sys.stderr.write("[soak] %s\n" % " ".join(cmd))
    t0 = time.time()
    samples, summary, verdict, lines = [], {}, None, []
    with open(log, "w") as lf:
        lf.write("$ " + " ".join(cmd) + "\n")
        p = subprocess.Popen(cmd, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, bufsize=1)
        try:
            for line in p.stdout:
                lf.write(line)
                lf.flush()
                lines.append(line)
                if line.startswith("soak: sample "):
                    samples.append(kv_line(line))
                    sys.stderr.write("[soak] " + line)
                elif line.startswith("soak: summary "):
                    summary = kv_line(line)
                elif line.startswith("soak: PASS") or line.startswith("soak: FAIL"):
                    verdict = line[len("soak: "):].strip()
                elif "WRONG" in line or "watchdog" in line or "returned" in line:
                    sys.stderr.write("[soak] " + line)
            rc = p.wait(timeout=max(1.0, timeout - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "timeout"
    wall = time.time() - t0
    if not summary or verdict is None:
        sys.stderr.write("soak: no summary from gcoll_soak (exit %s); the last lines (all in %s):\n%s"
                         % (rc, log, "".join(lines[-20:])))
        return 2

    s = summary
    tot = stats_totals(stats)
    where = "%d ranks" % args.np
    if args.ranks_per_node:
        nodes = -(-args.np // args.ranks_per_node)
        where += " as %d virtual nodes of %d (UCX between them)" % (nodes, args.ranks_per_node)
    else:
        where += " on one node"
    device = {"yes": "host and device buffers (%s)" % ("emulated GPU" if args.emulated_gpu else "GPU"),
              "no": "host buffers only"}.get(s.get("device_buffers"), "?")
    head = ("gcoll soak: %s, %d cores, GCOLL_HOST_BUFFERS=engine, %s; seed %d; %s; commit %s; %s"
            % (where, os.cpu_count() or 1, device, args.seed,
               " ".join(settings[1:] + prog_args) or "default settings", commit(), time.strftime("%Y-%m-%d")))
    f = float
    rows = [
        ("calls per rank", "%s (allreduce %s, bcast %s, allgather %s; in place %s)"
         % (s["calls"], s["allreduce"], s["bcast"], s["allgather"], s["in_place"])),
        ("warm-up sweep before the mix (calls per rank, checked too)", s["sweep_calls"]),
        ("memory of the calls", "host %s, device %s, mixed %s" % (s["host"], s["device"], s["mixed"])),
        ("wrong elements (calls returning an error)", "%s (%s)" % (s["wrong"], s["errors"])),
        ("calls also checked against PMPI_* per rank", s["pmpi_checked"]),
        ("communicators created and freed", s["comms_created"]),
        ("buffers freed and reallocated", s["buffer_renewals"]),
        ("RSS at start / after warm-up (%s calls) / end, max over ranks" % s["warm_calls"],
         "%.1f / %.1f / %.1f MiB" % (f(s["rss_start_mib"]), f(s["rss_warm_mib"]), f(s["rss_end_mib"]))),
        ("host RSS (RSS less emulated device memory) start / after warm-up / end",
         "%.1f / %.1f / %.1f MiB" % (f(s["host_rss_start_mib"]), f(s["host_rss_warm_mib"]),
                                     f(s["host_rss_end_mib"]))),
        ("host RSS growth after warm-up, worst rank", "%+.2f%% (%+.2f MiB, rank %s)"
         % (f(s["host_rss_growth_pct"]), f(s["host_rss_growth_mib"]), s["host_rss_growth_rank"])),
        ("virtual memory after warm-up / end, max over ranks",
         "%.1f / %.1f MiB" % (f(s["vm_warm_mib"]), f(s["vm_end_mib"]))),
        ("open descriptors start / after warm-up / end, max over ranks",
         "%s / %s / %s" % (s["fds_start"], s["fds_warm"], s["fds_end"])),
        ("node segments mapped start / after warm-up / end, max over ranks",
         "%s / %s / %s" % (s["segs_start"], s["segs_warm"], s["segs_end"])),
        ("this job's /dev/shm entries after warm-up / end", "%s / %s" % (s["shm_warm"], s["shm_end"])),
        ("communicators gcoll holds state for after warm-up / end, max over ranks",
         "%s / %s" % (s["states_warm"], s["states_end"])),
    ]
    if s.get("device_buffers") == "yes" and args.emulated_gpu:
        rows += [
            ("emulated device memory held after warm-up / end, max over ranks",
             "%.1f / %.1f MiB" % (f(s["dev_warm_mib"]), f(s["dev_end_mib"]))),
            ("peers' emulated device allocations mapped (IPC) after warm-up / end",
             "%s (%.1f MiB) / %s (%.1f MiB)" % (s["peer_maps_warm"], f(s["peer_warm_mib"]),
                                                s["peer_maps_end"], f(s["peer_end_mib"]))),
        ]
    rows += [
        ("time in the calls loop / whole job", "%.1f s / %.1f s" % (f(s["time_s"]), wall)),
    ]
    if tot:
        rows.append(("calls of all ranks: engine / staged / passthrough / errors (stats)",
                     "%d / %d / %d / %d of %d" % (tot["engine"], tot["staged"], tot["passthrough"],
                                                  tot["errors"], tot["calls"])))
    rows.append(("verdict", verdict))
    text = [head, "", "| measure | value |", "|---|---|"]
    text += ["| %s | %s |" % r for r in rows]
    emu = s.get("device_buffers") == "yes" and args.emulated_gpu
    text += ["", "Samples (maxima over ranks; after each sample's communicators were freed):", "",
             "| calls | s | RSS MiB | host RSS MiB | VM MiB | fds | segments | gcoll comms | /dev/shm |"
             + (" device MiB | peer maps |" if emu else "") + " wrong |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if emu else "") + "---:|"]
    for p_ in samples:
        text.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                    % (p_["calls"], p_["t"], p_["rss_mib"], p_["host_rss_mib"], p_["vm_mib"], p_["fds"],
                       p_["segs"], p_["states"], p_["shm"])
                    + (" %s | %s |" % (p_["dev_mib"], p_["peer_maps"]) if emu else "")
                    + " %s |" % p_["wrong"])
    md = "\n".join(text) + "\n"
    print(md, end="")
    with open(os.path.join(out, "soak.md"), "w") as fo:
        fo.write(md)
    if rc != 0:
        sys.stderr.write("soak: gcoll_soak exited with %s (log: %s)\n" % (rc, log))
        return rc if isinstance(rc, int) and rc > 0 else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
