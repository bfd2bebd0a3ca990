#!/usr/bin/env python3
"""Run a plain MPI program under mpirun with libgcoll.so preloaded and check it.

Usage:
  gcoll_preload_check.py --mpiexec MPIRUN [--mpiexec-flags="--oversubscribe ..."]
      [--env-style {x,genv}]
      --np N --lib /path/libgcoll.so --mode {stats,disabled}
      [--expect-calls allreduce=17,bcast=5,allgather=5] [--timeout S] [--keep]
      -- PROGRAM [ARGS...]

The program (see preload_*.c / preload_*.f90) checks its own results, prints
"<name>: PASS" or "<name>: FAIL ..." and, on rank 0, lines
  GCOLL_EXPECT np=<N>
  GCOLL_EXPECT <coll> calls_per_rank=<n> calls=<total> bytes=<total>
with the calls it made and the result-buffer bytes of those calls summed over
all ranks (gcoll's definition of `bytes`).

The program runs as a user would run it:
  mpirun -np N -x LD_PRELOAD=<lib> -x GCOLL_STATS_FILE=<fresh path> [...] PROGRAM
(LD_PRELOAD goes to the ranks with -x, or -genv VAR VALUE under MPICH's hydra,
never into mpirun's own environment; any LD_PRELOAD or GCOLL_* in the caller's
environment is removed first).

Checks, mode stats (GCOLL_ENABLE left at its default, 1):
  * mpirun exit status 0, the program printed PASS and no FAIL;
  * the GCOLL_EXPECT lines are there, np matches, calls_per_rank matches
    --expect-calls (when given) and calls == calls_per_rank * N;
  * the stats file exists and is one JSON object; for every collective in COLLS
    (the four with engine algorithms and the eight without): calls == expected calls (all ranks), calls == engine + staged +
    passthrough + errors, bytes == expected bytes, errors == 0 (unless
    --allow-errors). Unknown keys are ignored.
Mode disabled (GCOLL_ENABLE=0 exported to the ranks):
  * exit status 0, PASS, GCOLL_EXPECT counts as above;
  * no stats file (nor anything else) was written in the fresh directory.

Exit status 0 when every check passed, 1 otherwise (all failures are listed).
Only the Python standard library is used.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

COLLS = ("allreduce", "bcast", "allgather", "reduce_scatter_block", "reduce", "gather", "gatherv",
         "scatter", "scatterv", "alltoall", "reduce_scatter", "allgatherv")
BUCKETS = ("engine", "staged", "passthrough", "errors")
EXPECT_NP_RE = re.compile(r"^GCOLL_EXPECT np=(\d+)\s*$")
EXPECT_RE = re.compile(
    r"^GCOLL_EXPECT (\w+) calls_per_rank=(\d+) calls=(\d+) bytes=(\d+)\s*$")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mpiexec", required=True, help="mpirun executable")
    p.add_argument("--mpiexec-flags", default="",
                   help="extra mpirun flags, one shell-quoted string "
                        "(write --mpiexec-flags=--oversubscribe)")
    p.add_argument("--env-style", choices=("x", "genv"), default="x",
                   help="how the launcher exports variables to the ranks: -x VAR=VALUE "
                        "(Open MPI, default) or -genv VAR VALUE (MPICH's hydra)")
    p.add_argument("--np", type=int, required=True, help="number of ranks")
    p.add_argument("--lib", required=True, help="path of libgcoll.so to preload")
    p.add_argument("--mode", choices=("stats", "disabled"), default="stats")
    p.add_argument("--expect-calls", default="",
                   help="per-rank call counts the program must report, "
                        "e.g. allreduce=17,bcast=5,allgather=5")
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                   help="extra variable exported to the ranks with -x (repeatable)")
    p.add_argument("--allow-errors", action="store_true",
                   help="do not require the stats 'errors' bucket to be 0")
    p.add_argument("--timeout", type=float, default=240.0,
                   help="seconds before mpirun is killed (default 240)")
    p.add_argument("--keep", action="store_true",
                   help="keep the temporary stats directory")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- PROGRAM [ARGS...]")
    a = p.parse_args(argv)
    if a.command and a.command[0] == "--":
        a.command = a.command[1:]
    if not a.command:
        p.error("no program given (put it after --)")
    a.expect_calls_map = {}
    if a.expect_calls:
        for item in a.expect_calls.split(","):
            k, sep, v = item.partition("=")
            if not sep or k not in COLLS or not v.isdigit():
                p.error("bad --expect-calls entry %r" % item)
            a.expect_calls_map[k] = int(v)
    return a


def run_mpirun(cmd, env, timeout):
    """Run cmd in its own process group; on timeout kill the whole group."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, err = proc.communicate(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            out, err = "", ""
        return proc.returncode, out or "", err or "", True


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def main(argv):
    a = parse_args(argv)
    failures = []

    def fail(msg):
        failures.append(msg)

    if not os.path.isfile(a.lib):
        print("gcoll_preload_check: library not found: %s" % a.lib)
        return 1

    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("GCOLL_")}
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")

    tmpdir = tempfile.mkdtemp(prefix="gcoll-preload-")
    stats_path = os.path.join(tmpdir, "stats.json")

    xenv = ["LD_PRELOAD=" + os.path.abspath(a.lib), "GCOLL_STATS_FILE=" + stats_path]
    if a.mode == "disabled":
        xenv.append("GCOLL_ENABLE=0")
    xenv += a.env
    cmd = [a.mpiexec] + shlex.split(a.mpiexec_flags) + ["-np", str(a.np)]
    for kv in xenv:
        if a.env_style == "genv":
            var, _, value = kv.partition("=")
            cmd += ["-genv", var, value]
        else:
            cmd += ["-x", kv]
    cmd += a.command

    print("gcoll_preload_check: mode=%s np=%d" % (a.mode, a.np))
    print("gcoll_preload_check: running: %s" % " ".join(shlex.quote(c) for c in cmd))
    sys.stdout.flush()
    rc, out, err, timed_out = run_mpirun(cmd, env, a.timeout)
    print("---- stdout ----")
    print(out.rstrip("\n"))
    print("---- stderr ----")
    print(err.rstrip("\n"))
    print("----------------")

    # ---- the program itself -------------------------------------------------
    if timed_out:
        fail("mpirun did not finish within %.0f s and was killed" % a.timeout)
    elif rc != 0:
        fail("mpirun exit status %s (expected 0)" % rc)
    lines = out.splitlines()
    if not any(re.search(r": PASS\s*$", ln) for ln in lines):
        fail("the program did not print PASS")
    if any(re.search(r": FAIL\b", ln) for ln in lines + err.splitlines()):
        fail("the program reported FAIL")

    got_np = None
    expect = {}
    for ln in lines:
        m = EXPECT_NP_RE.match(ln)
        if m:
            got_np = int(m.group(1))
        m = EXPECT_RE.match(ln)
        if m:
            expect[m.group(1)] = dict(per_rank=int(m.group(2)), calls=int(m.group(3)),
                                      bytes=int(m.group(4)))
    if got_np is None:
        fail("no 'GCOLL_EXPECT np=' line in the program's output")
    elif got_np != a.np:
        fail("program ran on %d ranks, expected %d" % (got_np, a.np))
    for c in COLLS:
        e = expect.get(c)
        if e is None:
            fail("no 'GCOLL_EXPECT %s ...' line in the program's output" % c)
            continue
        want_pr = a.expect_calls_map.get(c)
        if want_pr is not None and e["per_rank"] != want_pr:
            fail("%s: program made %d calls per rank, CMake expects %d "
                 "(keep the program and CMakeLists.txt in sync)" % (c, e["per_rank"], want_pr))
        if e["calls"] != e["per_rank"] * a.np:
            fail("%s: program's total calls %d != %d per rank x %d ranks"
                 % (c, e["calls"], e["per_rank"], a.np))

    # ---- the stats file -----------------------------------------------------
    if a.mode == "stats":
        if not os.path.isfile(stats_path):
            fail("stats file %s was not written (GCOLL_STATS_FILE set, GCOLL_ENABLE default)"
                 % stats_path)
        else:
            with open(stats_path, "r", encoding="utf-8", errors="replace") as f:
                text = f.read()
            print("gcoll_preload_check: stats file:")
            print(text.rstrip("\n"))
            try:
                stats = json.loads(text)
            except ValueError as ex:
                stats = None
                fail("stats file is not valid JSON: %s" % ex)
            if stats is not None and not isinstance(stats, dict):
                fail("stats file is JSON but not an object")
                stats = None
            if stats is not None:
                for c in COLLS:
                    s = stats.get(c)
                    if not isinstance(s, dict):
                        fail("stats: no object for %r" % c)
                        continue
                    bad = [k for k in ("calls", "bytes") + BUCKETS if not is_int(s.get(k))]
                    if bad:
                        fail("stats %s: missing or non-integer field(s) %s" % (c, ", ".join(bad)))
                        continue
                    e = expect.get(c)
                    if e is not None:
                        if s["calls"] != e["calls"]:
                            fail("stats %s: calls=%d, expected %d (%d per rank x %d ranks)"
                                 % (c, s["calls"], e["calls"], e["per_rank"], a.np))
                        if s["bytes"] != e["bytes"]:
                            fail("stats %s: bytes=%d, expected %d" % (c, s["bytes"], e["bytes"]))
                    total = sum(s[k] for k in BUCKETS)
                    if total != s["calls"]:
                        fail("stats %s: engine+staged+passthrough+errors = %d != calls = %d"
                             % (c, total, s["calls"]))
                    if s["errors"] != 0 and not a.allow_errors:
                        fail("stats %s: errors=%d in a run where every call succeeded"
                             % (c, s["errors"]))
    else:
        if os.path.exists(stats_path):
            fail("GCOLL_ENABLE=0 but the stats file %s was written" % stats_path)
        else:
            left = os.listdir(tmpdir)
            if left:
                fail("GCOLL_ENABLE=0 but files appeared in the stats directory: %s" % left)

    if failures:
        print("gcoll_preload_check: FAILED (%d problem(s)):" % len(failures))
        for m in failures:
            print("  - " + m)
        print("gcoll_preload_check: stats directory kept: %s" % tmpdir)
        return 1
    if a.keep:
        print("gcoll_preload_check: stats directory kept: %s" % tmpdir)
    else:
        shutil.rmtree(tmpdir, ignore_errors=True)
    print("gcoll_preload_check: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
