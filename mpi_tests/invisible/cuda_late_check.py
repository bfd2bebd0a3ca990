#!/usr/bin/env python3
"""gcoll loads the CUDA driver only once the application has loaded libcuda.so.1 (issue 28,
src/cuda/driver_gate.h). Runs cuda_late.c under mpirun with the CUDA toolkit's stub driver
on LD_LIBRARY_PATH as libcuda.so.1 (its functions all fail: enough to see who loads it and
whether gcoll asks it), GCOLL_DEBUG=INFO and the loader's log (LD_DEBUG=files, one file per
process: the stub, refused by the runtime, is unloaded again at once, so only the loader
can tell that someone loaded it), and checks:

  never   the job passes its own checks (libcuda.so.1 not mapped after MPI_Init, after host
          collectives, after MPI_Finalize), the loader never loaded libcuda.so.1 in any rank,
          and no rank asked the driver (gcoll's probe lines: "no driver entry point",
          "driver loaded", "no device"); the repeated host collectives cost no per-call
          classification (each rank's pointer_queries at most a few, where its buffers are
          classified at all and UCX's memory hooks let answers be kept). First the same job
          without the library: where the MPI itself loads libcuda, there is nothing to tell
          (skipped, 77).
  late    libcuda.so.1 dlopened by the program after host collectives: every rank asked the
  early   driver (a probe line), and the job passes.

    cuda_late_check.py --mpiexec MPIEXEC [--mpiexec-flags "..."] [--env-style x|genv]
                       --np N --lib libgcoll.so --program cuda_late --stub-dir DIR
                       --mode never|late|early [--env VAR=VALUE ...] [--timeout S]
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# What gcoll's probe of the driver prints (src/cuda/driver_cuda.cc), whatever the driver.
PROBE = re.compile(r"CUDA: (no driver entry point|driver loaded|no device \()")
MOST_QUERIES = 16  # per rank for 600 calls on the same buffers: a handful of misses at most


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--mpiexec-flags", default="")
    p.add_argument("--env-style", choices=("x", "genv"), default="x")
    p.add_argument("--np", type=int, required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--program", required=True)
    p.add_argument("--stub-dir", required=True)
    p.add_argument("--mode", choices=("never", "late", "early"), required=True)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--timeout", type=float, default=60)
    return p.parse_args(argv)


def libcuda_loads(log_dir):
    """The loader's lines that load a libcuda.so* (LD_DEBUG=files), from every process."""
    lines = []
    for name in sorted(os.listdir(log_dir)):
        with open(os.path.join(log_dir, name), errors="replace") as f:
            lines += [l.strip() for l in f if re.search(r"file=libcuda\.so[^ ]* \[\d+\];\s+(dynamically loaded|needed)", l)]
    return lines


def run(a, with_lib):
    ld = a.stub_dir + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
    log_dir = tempfile.mkdtemp(prefix="cuda_late_ld.")
    env_pairs = ["LD_LIBRARY_PATH=" + ld, "GCOLL_DEBUG=INFO", "LD_DEBUG=files",
                 "LD_DEBUG_OUTPUT=" + os.path.join(log_dir, "ld")] + list(a.env)
    if with_lib:
        env_pairs.append("LD_PRELOAD=" + a.lib)
    cmd = [a.mpiexec] + shlex.split(a.mpiexec_flags) + ["-np", str(a.np)]
    for kv in env_pairs:
        var, value = kv.split("=", 1)
        cmd += ["-genv", var, value] if a.env_style == "genv" else ["-x", kv]
    cmd += [a.program, a.mode]
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=a.timeout)
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", (e.stdout or b"").decode(errors="replace"), (e.stderr or b"").decode(errors="replace")
    loads = libcuda_loads(log_dir)
    shutil.rmtree(log_dir, ignore_errors=True)
    return rc, out, err, loads


def main(argv):
    a = parse_args(argv)
    if not os.path.exists(os.path.join(a.stub_dir, "libcuda.so.1")):
        print("FAIL: no libcuda.so.1 in %s" % a.stub_dir)
        return 1
    if a.mode == "never":
        rc, out, err, loads = run(a, False)
        if rc != 0 or "cuda_late: ok" not in out or loads:
            print("SKIP: without gcoll the job fails or loads libcuda.so.1 itself (exit %s): nothing to tell\n%s%s%s"
                  % (rc, out, err, "\n".join(loads)))
            return 77
    rc, out, err, loads = run(a, True)
    problems = []
    if rc != 0 or "cuda_late: ok" not in out:
        problems.append("the job with gcoll exited with %s" % rc)
    probes = [l for l in err.splitlines() if PROBE.search(l)]
    if a.mode == "never" and loads:
        problems.append("libcuda.so.1 was loaded in a process that never loads it (the loader's log):\n  "
                        + "\n  ".join(loads))
    if a.mode == "never" and probes:
        problems.append("gcoll asked the CUDA driver in a process that never loaded it:\n  " + "\n  ".join(probes))
    if a.mode != "never" and len(probes) < a.np:
        problems.append("%d of %d ranks asked the CUDA driver after the program loaded libcuda.so.1 (want all)"
                        % (len(probes), a.np))
    hooks = "UCX memory hooks installed" in err
    for m in re.finditer(r"^counters (\d+) (\d+) (-?\d+) (-?\d+)$", out, re.M):
        rank, calls, queries, hits = (int(x) for x in m.groups())
        print("rank %d: %d calls, %d pointer queries, %d kind cache hits" % (rank, calls, queries, hits))
        if a.mode == "never" and (hooks or queries == 0) and queries > MOST_QUERIES:
            problems.append("rank %d: %d pointer queries for %d calls on the same host buffers (at most %d)"
                            % (rank, queries, calls, MOST_QUERIES))
    if problems:
        print("FAIL:\n" + "\n".join(problems) + "\n--- stdout\n" + out + "--- stderr\n" + err)
        return 1
    print("PASS: %s (%d probe lines; memory hooks %s)" % (a.mode, len(probes), "installed" if hooks else "not installed"))
    print("--- stderr (gcoll's CUDA lines)\n" + "\n".join(l for l in err.splitlines() if "CUDA" in l))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
