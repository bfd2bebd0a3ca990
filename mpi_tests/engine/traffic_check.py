#!/usr/bin/env python3
"""Traffic of the engine's allreduce, read from gcoll's stats file (deterministic).

usage: traffic_check.py [--device] [--env VAR=VALUE]... [--timeout S]
                        MPIRUN TRAFFIC_EXE LIBGCOLL NODES LOCAL BYTES MODE [ALGORITHM]
  MODE large: inter-node bytes per rank <= 1.05 x 2(N-1)/N x S/L  (ring on S/L per rail)
  MODE small: inter-node steps of one call <= ceil(log2 N) + 2   (recursive doubling)
Runs NODES x LOCAL ranks as virtual nodes (GCOLL_RANKS_PER_NODE=LOCAL) of TRAFFIC_EXE
(traffic.c) with LIBGCOLL preloaded and GCOLL_STATS_FILE set; the caller's GCOLL_* and
LD_PRELOAD are dropped. ALGORITHM: the allreduce forced with
GCOLL_TUNE=allreduce:0-inf:@ALGORITHM, and checked to be the one the stats count (large:
rabenseifner sends as much as ring, 2(N-1)/N x S/L per rank on average, the fold of
non-powers of two included).

Host buffers (gcoll_engine_traffic, the default): GCOLL_HOST_BUFFERS=engine.
--device: TRAFFIC_EXE is gcoll_gpu_traffic (traffic.c built with GCOLL_TRAFFIC_DEVICE:
device buffers, which go to the engine by default, so GCOLL_HOST_BUFFERS is not set).
GCOLL_CUDA=emulate and the GCOLL_EMU_* settings (GCOLL_EMU_DELAY), when set in this
environment (gpu_or_skip.sh exports GCOLL_CUDA=emulate without a GPU), are passed on
with -x; when the program prints "SKIPPED" and exits 77, so does this script.
--env VAR=VALUE (repeatable, e.g. GCOLL_DEVICE_NET=pipelined): passed on with -x.

Checks, in both cases: the program exits 0 (it checks its own results); for allreduce,
bcast, allgather, reduce, reduce_scatter, alltoall and allgatherv, engine == calls ==
NODES x LOCAL (every call, host or device,
counted as an engine call, none staged or passed through); ALGORITHM if given; then
the MODE bound above on the allreduce, and on the reduce and the reduce_scatter
(large: inter-node bytes of all ranks <= (N-1) x S; small: steps <= ceil(log2 N) and
N - 1), the alltoall (large: P x (P-L) blocks; small: N - 1 steps) and the allgatherv
(large: (N-1) x the blocks' bytes; small: ceil(log2 N) steps). Prints each collective's counts and one line
with the bound, then PASS or FAIL.
"""
import argparse, json, math, os, re, shlex, signal, subprocess, sys, tempfile


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", action="store_true",
                   help="device buffers: TRAFFIC_EXE is gcoll_gpu_traffic")
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                   help="exported to the ranks with -x (repeatable)")
    p.add_argument("--timeout", type=float, default=240.0)
    p.add_argument("--expect-log", default=None, metavar="REGEX",
                   help="fail unless the program's output (stdout + stderr) matches REGEX "
                        "(e.g. a GCOLL_DEBUG=INFO line given with --env)")
    p.add_argument("mpirun")
    p.add_argument("exe")
    p.add_argument("lib")
    p.add_argument("nodes", type=int)
    p.add_argument("local", type=int)
    p.add_argument("nbytes", type=int)
    p.add_argument("mode", choices=("large", "small"))
    p.add_argument("algorithm", nargs="?", default=None)
    a = p.parse_args(argv)
    for kv in a.env:
        if "=" not in kv:
            p.error("--env %r: expected VAR=VALUE" % kv)
    return a


def run(cmd, env, timeout):
    """(returncode, stdout, stderr, timed_out); on timeout the whole job is killed."""
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


a = parse_args(sys.argv[1:])
N, L, S = a.nodes, a.local, a.nbytes
P = N * L
forced = a.algorithm
with tempfile.TemporaryDirectory() as d:
    stats = os.path.join(d, "stats.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GCOLL_") and k != "LD_PRELOAD"}
    cmd = [a.mpirun, "--oversubscribe", "-np", str(P), "-x", "LD_PRELOAD=" + a.lib]
    if a.device:
        # The emulated GPU is the device the test runs on, not a setting under test.
        if os.environ.get("GCOLL_CUDA", "").lower() == "emulate":
            for k in sorted(os.environ):
                if k == "GCOLL_CUDA" or k.startswith("GCOLL_EMU_"):
                    cmd += ["-x", "%s=%s" % (k, os.environ[k])]
    else:
        # the engine at every size (not the host crossovers' @mpi): its traffic is the test
        cmd += ["-x", "GCOLL_HOST_BUFFERS=engine", "-x", "GCOLL_HOST_TUNE=off"]
    cmd += ["-x", "GCOLL_RANKS_PER_NODE=%d" % L, "-x", "GCOLL_STATS_FILE=" + stats]
    for kv in a.env:
        cmd += ["-x", kv]
    if forced:
        cmd += ["-x", "GCOLL_TUNE=allreduce:0-inf:@" + forced]
    cmd += [a.exe, str(S // 4)]
    print("traffic_check: running: %s" % " ".join(shlex.quote(c) for c in cmd))
    sys.stdout.flush()
    rc, out, err, timed_out = run(cmd, env, a.timeout)
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.stdout.flush()
    sys.stderr.flush()
    if rc == 77 and any(ln.startswith("SKIPPED") for ln in out.splitlines()):
        print("SKIPPED")
        sys.exit(77)
    if timed_out:
        sys.exit("FAIL: the program did not finish within %.0f s and was killed" % a.timeout)
    if rc != 0:
        sys.exit("FAIL: the program failed (%d)" % rc)
    if a.expect_log and not re.search(a.expect_log, out + err):
        sys.exit("FAIL: no output line matches %r" % a.expect_log)
    everything = json.load(open(stats))
ar = everything["allreduce"]
bad = []
for coll in ("allreduce", "bcast", "allgather", "reduce", "reduce_scatter", "alltoall", "allgatherv"):
    c = everything[coll]
    print("%s: calls=%s engine=%s staged=%s passthrough=%s errors=%s" % (
        coll, c.get("calls"), c.get("engine"), c.get("staged"), c.get("passthrough"), c.get("errors")))
    if c["engine"] != P or c["calls"] != P:
        bad.append("expected %d engine %s calls, got calls=%s engine=%s staged=%s passthrough=%s" % (
            P, coll, c.get("calls"), c.get("engine"), c.get("staged"), c.get("passthrough")))
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
algo = [k for k, v in ar["algorithms"].items() if v]
if forced and ar["algorithms"].get(forced) != P:
    sys.exit("FAIL: expected %d allreduce calls counted under algorithms.%s, got %s" % (P, forced, ar["algorithms"]))
where = "device" if a.device else "host"
if a.mode == "large":
    per_rank = ar["inter_node_bytes"] / P
    bound = 1.05 * 2 * (N - 1) / N * S / L
    print("N=%d L=%d S=%d %s algorithm=%s: inter-node bytes per rank %.0f, bound 1.05 x 2(N-1)/N x S/L = %.0f"
          % (N, L, S, where, algo, per_rank, bound))
    ok = per_rank <= bound
    # reduce @hier: every rail rank of the N - 1 other nodes sends its part of each chunk
    # once (the parts of a chunk add up to it); reduce_scatter @hier: every rail rank sends
    # its parts of the other nodes' blocks once. Either way (N - 1) x S in all; the
    # reduce's S is the whole vector, the reduce-scatter's the sum of the blocks.
    for coll in ("reduce", "reduce_scatter"):
        got = everything[coll]["inter_node_bytes"]
        cb = (N - 1) * (S // 4) * 4
        print("N=%d L=%d S=%d %s %s: inter-node bytes in all %d, bound (N-1) x S = %d"
              % (N, L, S, where, coll, got, cb))
        ok = ok and got <= cb
    # alltoall @hier: every block to another node's rank crosses once: P x (P - L) blocks
    # of max(1, COUNT / P) floats. allgatherv @ring: every rail carries its pieces to the
    # N - 1 other nodes: (N - 1) x the blocks' bytes (traffic.c's uneven blocks).
    n = S // 4
    blk = max(1, n // P)
    shares = P * (P + 1) // 2
    counts = [n // shares * (r + 1) for r in range(P)]
    counts[-1] += n - sum(counts)
    agt = sum(max(1, c) for c in counts) * 4
    for coll, cb, what in (("alltoall", P * (P - L) * blk * 4, "P x (P-L) x block"),
                           ("allgatherv", (N - 1) * agt, "(N-1) x all blocks")):
        got = everything[coll]["inter_node_bytes"]
        print("N=%d L=%d S=%d %s %s: inter-node bytes in all %d, bound %s = %d" % (N, L, S, where, coll, got, what, cb))
        ok = ok and got <= cb
else:
    steps = ar["inter_node_steps_max"]
    bound = math.ceil(math.log2(N)) + 2 if N > 1 else 0
    print("N=%d L=%d S=%d %s algorithm=%s: inter-node steps %d, bound ceil(log2 N) + 2 = %d"
          % (N, L, S, where, algo, steps, bound))
    ok = steps <= bound
    # One chunk: a binomial reduce (ceil(log2 N) rounds at the root), a ring
    # reduce-scatter (N - 1 rounds).
    # alltoall: N - 1 pairwise steps; allgatherv (small: @bruck): ceil(log2 N).
    lg = math.ceil(math.log2(N)) if N > 1 else 0
    for coll, cb in (("reduce", lg), ("reduce_scatter", N - 1), ("alltoall", N - 1), ("allgatherv", lg)):
        got = everything[coll]["inter_node_steps_max"]
        print("N=%d L=%d S=%d %s %s: inter-node steps %d, bound %d" % (N, L, S, where, coll, got, cb))
        ok = ok and got <= cb
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
