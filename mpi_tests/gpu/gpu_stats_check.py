#!/usr/bin/env python3
"""Run gcoll_gpu_stats under mpirun with libgcoll.so preloaded and check gcoll's stats.

Usage:
  gpu_stats_check.py --mpiexec MPIRUN [--mpiexec-flags="--oversubscribe ..."]
      --np N --lib /path/libgcoll.so --device-path {engine,staged}
      [--env VAR=VALUE]... [--timeout S] [--keep] -- PROGRAM [ARGS...]

The program (gpu_stats.c) makes device-buffer, derived-datatype and host-buffer calls
of MPI_Allreduce / MPI_Bcast / MPI_Allgather (and device and host calls of the other
collectives), checks its own results, and prints on
rank 0 (totals over ranks):
  GCOLL_EXPECT np=<N>
  GCOLL_EXPECT <coll> calls_per_rank=<n> calls=<total> bytes=<total>
  GCOLL_EXPECT_KINDS <coll> device_predefined=<n> device_derived=<n> host=<n>
  gpu_stats: PASS | FAIL ...
It runs as  mpirun -np N -x LD_PRELOAD=<lib> -x GCOLL_STATS_FILE=<fresh path>
[-x VAR=VALUE ...] PROGRAM  (GCOLL_* and LD_PRELOAD of the caller are dropped, except
GCOLL_CUDA=emulate and the GCOLL_EMU_* settings, which choose gcoll's emulated GPU
(gpu_or_skip.sh exports GCOLL_CUDA=emulate on machines without a GPU) and are passed
on with -x).

Checks, for allreduce, bcast, allgather, allgatherv, reduce, reduce_scatter and alltoall, on the stats
file gcoll writes at
MPI_Finalize:
  * mpirun exit status 0, PASS printed and no FAIL;
  * calls == the program's calls; bytes == the program's bytes;
    calls == engine + staged + passthrough + errors; errors == 0;
  * passthrough == host calls (host buffers go to the MPI by default);
    engine + staged == device calls; allreduce: staged >= device calls with a
    user-defined op (never the engine; bcast, allgather and allgatherv with derived datatypes may
    take the engine: they go by type signature, coll/pack.h);
  * --device-path engine (default settings, one node or several virtual nodes):
    engine > 0 for every collective (device calls with predefined types use gcoll's
    engine; the program makes one call of each above the sizes that are staged on a GPU
    shared without MPS, coll/tune.cc kTimeSlicedTune, so this holds there too);
    --device-path staged (GCOLL_DEVICE_BUFFERS=staged): engine == 0 and staged ==
    device calls.
  * the collectives whose engine algorithms run on one node only (none at present): as above, with
    engine > 0 under --device-path engine --nodes one, else engine == 0 and staged ==
    device calls;
  * gather, scatter, gatherv, scatterv (no engine algorithm), in every mode:
    calls, bytes and passthrough as above, engine == 0 and staged == device calls (the
    proof that no device buffer reached the MPI unstaged).
When the program says "SKIPPED: no GPU" and exits 77, so does this script.
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

COLLS = ("allreduce", "bcast", "allgather", "allgatherv", "reduce", "reduce_scatter", "alltoall")
# The collectives whose engine algorithms run on one node only (device buffers, zero-copy):
# none since reduce, reduce_scatter and alltoall have @hier across nodes.
ONE_NODE_COLLS = ()
# The collectives without an engine algorithm: every device call staged, whatever the mode.
STAGED_COLLS = ("gather", "scatter", "gatherv", "scatterv")
BUCKETS = ("engine", "staged", "passthrough", "errors")
EXPECT_NP_RE = re.compile(r"^GCOLL_EXPECT np=(\d+)\s*$")
EXPECT_RE = re.compile(r"^GCOLL_EXPECT (\w+) calls_per_rank=(\d+) calls=(\d+) bytes=(\d+)\s*$")
KINDS_RE = re.compile(
    r"^GCOLL_EXPECT_KINDS (\w+) device_predefined=(\d+) device_derived=(\d+) host=(\d+)\s*$")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--mpiexec-flags", default="",
                   help="extra mpirun flags, one shell-quoted string")
    p.add_argument("--np", type=int, required=True)
    p.add_argument("--lib", required=True, help="libgcoll.so to preload")
    p.add_argument("--device-path", choices=("engine", "staged"), required=True,
                   help="where device calls with predefined types must go")
    p.add_argument("--nodes", choices=("one", "several"), default="one",
                   help="several: virtual nodes (the one-node algorithms do not run)")
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                   help="exported to the ranks with -x (repeatable)")
    p.add_argument("--timeout", type=float, default=240.0)
    p.add_argument("--keep", action="store_true", help="keep the stats directory")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    a = p.parse_args(argv)
    if a.command and a.command[0] == "--":
        a.command = a.command[1:]
    if not a.command:
        p.error("no program given (put it after --)")
    return a


def run(cmd, env, timeout):
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
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
                return proc.returncode, out or "", err or "", True
            except subprocess.TimeoutExpired:
                continue
        return proc.returncode, "", "", True


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def main(argv):
    a = parse_args(argv)
    failures = []
    fail = failures.append

    if not os.path.isfile(a.lib):
        print("gpu_stats_check: library not found: %s" % a.lib)
        return 1
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("GCOLL_")}
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")

    # The emulated GPU is the device the test runs on, not a library setting under
    # test: it must reach the ranks (they get no GCOLL_* from this environment).
    device_env = []
    if os.environ.get("GCOLL_CUDA", "").lower() == "emulate":
        device_env = sorted("%s=%s" % (k, v) for k, v in os.environ.items()
                            if k == "GCOLL_CUDA" or k.startswith("GCOLL_EMU_"))

    tmpdir = tempfile.mkdtemp(prefix="gcoll-gpu-stats-")
    stats_path = os.path.join(tmpdir, "stats.json")
    xenv = (["LD_PRELOAD=" + os.path.abspath(a.lib), "GCOLL_STATS_FILE=" + stats_path]
            + device_env + a.env)
    cmd = [a.mpiexec] + shlex.split(a.mpiexec_flags) + ["-np", str(a.np)]
    for kv in xenv:
        cmd += ["-x", kv]
    cmd += a.command

    print("gpu_stats_check: np=%d device-path=%s" % (a.np, a.device_path))
    print("gpu_stats_check: running: %s" % " ".join(shlex.quote(c) for c in cmd))
    sys.stdout.flush()
    rc, out, err, timed_out = run(cmd, env, a.timeout)
    print("---- stdout ----")
    print(out.rstrip("\n"))
    print("---- stderr ----")
    print(err.rstrip("\n"))
    print("----------------")

    if rc == 77 and "SKIPPED: no GPU" in out:
        shutil.rmtree(tmpdir, ignore_errors=True)
        print("SKIPPED: no GPU")
        return 77
    if timed_out:
        fail("mpirun did not finish within %.0f s and was killed" % a.timeout)
    elif rc != 0:
        fail("mpirun exit status %s (expected 0)" % rc)
    lines = out.splitlines()
    if not any(re.search(r"gpu_stats: PASS\s*$", ln) for ln in lines):
        fail("the program did not print PASS")
    if any(re.search(r": FAIL\b", ln) for ln in lines + err.splitlines()):
        fail("the program reported FAIL")

    got_np, expect, kinds = None, {}, {}
    for ln in lines:
        m = EXPECT_NP_RE.match(ln)
        if m:
            got_np = int(m.group(1))
        m = EXPECT_RE.match(ln)
        if m:
            expect[m.group(1)] = dict(per_rank=int(m.group(2)), calls=int(m.group(3)),
                                      bytes=int(m.group(4)))
        m = KINDS_RE.match(ln)
        if m:
            kinds[m.group(1)] = dict(dev=int(m.group(2)), der=int(m.group(3)),
                                     host=int(m.group(4)))
    if got_np is None:
        fail("no 'GCOLL_EXPECT np=' line in the program's output")
    elif got_np != a.np:
        fail("program ran on %d ranks, expected %d" % (got_np, a.np))
    for c in COLLS + ONE_NODE_COLLS + STAGED_COLLS:
        if c not in expect or c not in kinds:
            fail("no GCOLL_EXPECT / GCOLL_EXPECT_KINDS line for %s" % c)
        elif sum(kinds[c].values()) != expect[c]["calls"]:
            fail("%s: the program's kinds do not add up to its calls" % c)

    stats = None
    if not failures or os.path.isfile(stats_path):
        if not os.path.isfile(stats_path):
            fail("stats file %s was not written (GCOLL_STATS_FILE set)" % stats_path)
        else:
            with open(stats_path, "r", encoding="utf-8", errors="replace") as f:
                text = f.read()
            print("gpu_stats_check: stats file:")
            print(text.rstrip("\n"))
            try:
                stats = json.loads(text)
            except ValueError as ex:
                fail("stats file is not valid JSON: %s" % ex)
            if stats is not None and not isinstance(stats, dict):
                fail("stats file is JSON but not an object")
                stats = None

    if stats is not None:
        for c in COLLS + ONE_NODE_COLLS:
            s = stats.get(c)
            if not isinstance(s, dict):
                fail("stats: no object for %r" % c)
                continue
            bad = [k for k in ("calls", "bytes") + BUCKETS if not is_int(s.get(k))]
            if bad:
                fail("stats %s: missing or non-integer field(s) %s" % (c, ", ".join(bad)))
                continue
            total = sum(s[k] for k in BUCKETS)
            if total != s["calls"]:
                fail("stats %s: engine+staged+passthrough+errors = %d != calls = %d"
                     % (c, total, s["calls"]))
            if s["errors"] != 0:
                fail("stats %s: errors=%d in a run where every call succeeded" % (c, s["errors"]))
            e, k = expect.get(c), kinds.get(c)
            if e is None or k is None:
                continue
            if s["calls"] != e["calls"]:
                fail("stats %s: calls=%d, expected %d (every call counted once)"
                     % (c, s["calls"], e["calls"]))
            if s["bytes"] != e["bytes"]:
                fail("stats %s: bytes=%d, expected %d" % (c, s["bytes"], e["bytes"]))
            device = k["dev"] + k["der"]
            if s["passthrough"] != k["host"]:
                fail("stats %s: passthrough=%d, expected %d (the host-buffer calls)"
                     % (c, s["passthrough"], k["host"]))
            if s["engine"] + s["staged"] != device:
                fail("stats %s: engine+staged = %d, expected %d (the device-buffer calls)"
                     % (c, s["engine"] + s["staged"], device))
            # A user-defined op is never the engine's (the program's derived allreduces all
            # have one); bcast, allgather and allgatherv go by type signature, and a derived datatype
            # is packed into the engine's call (coll/pack.h), or staged with the others.
            if c == "allreduce" and s["staged"] < k["der"]:
                fail("stats %s: staged=%d < %d device calls with a user-defined op"
                     % (c, s["staged"], k["der"]))
            if a.device_path == "engine" and (c in COLLS or a.nodes == "one"):
                if s["engine"] <= 0:
                    fail("stats %s: engine=0: no device call with a predefined type went to "
                         "gcoll's engine (one node, default settings)" % c)
            else:
                if s["engine"] != 0:
                    fail("stats %s: engine=%d, expected 0 (device calls staged here)"
                         % (c, s["engine"]))
                if s["staged"] != device:
                    fail("stats %s: staged=%d, expected %d (every device call)"
                         % (c, s["staged"], device))

    if stats is not None:
        for c in STAGED_COLLS:
            s, e, k = stats.get(c), expect.get(c), kinds.get(c)
            if not isinstance(s, dict):
                fail("stats: no object for %r" % c)
                continue
            if e is None or k is None:
                continue
            for field, want in (("calls", e["calls"]), ("bytes", e["bytes"]), ("engine", 0),
                                ("staged", k["dev"] + k["der"]), ("passthrough", k["host"]),
                                ("errors", 0)):
                if s.get(field) != want:
                    fail("stats %s: %s=%r, expected %d (no engine algorithm: device calls "
                         "staged, host calls to the MPI)" % (c, field, s.get(field), want))

    if failures:
        print("gpu_stats_check: FAILED (%d problem(s)):" % len(failures))
        for m in failures:
            print("  - " + m)
        print("gpu_stats_check: stats directory kept: %s" % tmpdir)
        return 1
    if a.keep:
        print("gpu_stats_check: stats directory kept: %s" % tmpdir)
    else:
        shutil.rmtree(tmpdir, ignore_errors=True)
    print("gpu_stats_check: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
