#!/usr/bin/env python3
"""The application's process with and without gcoll (issue 28): the same program
(invisible.c) run twice under mpirun, without the library and with it preloaded, in the
same mode (the environment given with --env goes to both runs: GCOLL_* variables are inert
without the library); every rank's fingerprint (signal handlers, the alternate signal
stack, strtok's position across collectives, FP modes, umask, locale, errno, stdout
buffering, the environment, fork and system(), the GPU driver's libraries mapped (libcuda,
libnvidia-*), and after MPI_Finalize the threads and file descriptors) must be the same line
for line, the job's stdout the same, its stderr
without a line the run without the library did not print, and /dev/shm and /tmp without
an entry the run without the library did not leave.

    invisible_check.py --mpiexec MPIEXEC [--mpiexec-flags "..."] [--env-style x|genv]
                       --np N --lib libgcoll.so --program invisible --work DIR
                       [--env VAR=VALUE ...] [--preload SHIM] [--timeout S]

--preload: a library preloaded in both runs (the yield shim of MPICH builds).
Exit 0 when everything matches, 1 with the differences listed otherwise.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--mpiexec-flags", default="")
    p.add_argument("--env-style", choices=("x", "genv"), default="x")
    p.add_argument("--np", type=int, required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--program", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--preload", action="append", default=[])
    p.add_argument("--timeout", type=float, default=120)
    return p.parse_args(argv)


def launcher(a, env_pairs, out_dir):
    cmd = [a.mpiexec] + shlex.split(a.mpiexec_flags) + ["-np", str(a.np)]
    for kv in env_pairs:
        var, value = kv.split("=", 1)
        cmd += ["-genv", var, value] if a.env_style == "genv" else ["-x", kv]
    return cmd + [a.program, out_dir]


def listing():
    """Entries of /dev/shm and /tmp, digits blanked (pids, job ids), and the System V
    shared memory segments (by count: they have no names)."""
    seen = set()
    for d in ("/dev/shm", "/tmp"):
        try:
            for name in os.listdir(d):
                seen.add(d + "/" + re.sub(r"[0-9]+", "#", name))
        except OSError:
            pass
    try:
        with open("/proc/sysvipc/shm") as f:
            for i, _ in enumerate(f.readlines()[1:]):
                seen.add("System V shared memory segment #%d" % (i + 1))
    except OSError:
        pass
    return seen


def run(a, with_lib):
    tag = "with" if with_lib else "without"
    out_dir = os.path.join(a.work, tag)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    preload = list(a.preload) + ([a.lib] if with_lib else [])
    env_pairs = list(a.env) + (["LD_PRELOAD=" + ":".join(preload)] if preload else [])
    cmd = launcher(a, env_pairs, out_dir)
    before = listing()
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=a.timeout)
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", (e.stdout or b"").decode(errors="replace"), (e.stderr or b"").decode(errors="replace")
    # Left behind: new after the job, and still there a moment later (what another process
    # on the machine creates and removes meanwhile, a compiler's temporary files, is not).
    left = listing() - before
    time.sleep(1.0)
    left &= listing()
    files = {}
    for r in range(a.np):
        path = os.path.join(out_dir, "fp.%d" % r)
        files[r] = open(path).read().splitlines() if os.path.exists(path) else None
    return {"rc": rc, "out": out, "err": err, "left": left, "files": files}


def main(argv):
    a = parse_args(argv)
    os.makedirs(a.work, exist_ok=True)
    without = run(a, False)
    with_ = run(a, True)
    problems = []
    for tag, r in (("without the library", without), ("with the library", with_)):
        if r["rc"] != 0:
            problems.append("the job %s exited with %s:\n%s%s" % (tag, r["rc"], r["out"], r["err"]))
    # The run without the library is the reference: it must have done what the program checks.
    for rank, lines in without["files"].items():
        if lines is None:
            problems.append("rank %d wrote no fingerprint without the library" % rank)
            continue
        for must in ("run strtok tokens 10", "run results ok", "run fork child exit 3", "run system exit 5"):
            if must not in lines:
                problems.append("rank %d without the library: no line %r (the program itself is broken)" % (rank, must))
    for rank in range(a.np):
        ref, got = without["files"][rank], with_["files"][rank]
        if ref is None:
            continue
        if got is None:
            problems.append("rank %d wrote no fingerprint with the library" % rank)
            continue
        if ref != got:
            import difflib
            diff = list(difflib.unified_diff(ref, got, "without gcoll", "with gcoll", lineterm="", n=0))
            problems.append("rank %d: the process differs with the library:\n  %s" % (rank, "\n  ".join(diff)))
    if without["out"] != with_["out"]:
        problems.append("stdout differs:\nwithout:\n%swith:\n%s" % (without["out"], with_["out"]))
    # The MPI's and PMIx's own messages start with "[host:pid]" (a pmix component that does
    # not load on the GPU machine's bundle prints one per process): the pids differ from run
    # to run, so they are blanked before the lines are compared.
    def err_lines(r):
        return [re.sub(r"^\[([^\]:\s]+):[0-9]+\]", r"[\1:#]", l) for l in r["err"].splitlines()]
    new_err = [l for l in err_lines(with_) if l not in set(err_lines(without))]
    if new_err:
        problems.append("stderr has lines the job without the library did not print:\n  " + "\n  ".join(new_err))
    left = sorted(with_["left"] - without["left"])
    if left:
        problems.append("left behind in /dev/shm or /tmp (digits blanked):\n  " + "\n  ".join(left))
    if problems:
        print("FAIL:\n" + "\n".join(problems))
        return 1
    print("PASS: %d ranks, every fingerprint the same with and without the library (%d lines each)"
          % (a.np, len(without["files"][0] or [])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
