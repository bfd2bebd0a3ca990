#!/usr/bin/env python3
"""Traffic of the engine's allreduce, read from gcoll's stats file (deterministic).

usage: traffic_check.py MPIRUN TRAFFIC_EXE LIBGCOLL NODES LOCAL BYTES MODE [ALGORITHM]
  MODE large: inter-node bytes per rank <= 1.05 x 2(N-1)/N x S/L  (ring on S/L per rail)
  MODE small: inter-node steps of one call <= ceil(log2 N) + 2   (recursive doubling)
Runs NODES x LOCAL ranks as virtual nodes (GCOLL_RANKS_PER_NODE=LOCAL). ALGORITHM: the
allreduce forced with GCOLL_TUNE=allreduce:0-inf:@ALGORITHM, and checked to be the one
the stats count (large: rabenseifner sends as much as ring, 2(N-1)/N x S/L per rank on
average, the fold of non-powers of two included).
"""
import json, math, os, subprocess, sys, tempfile

mpirun, exe, lib, nodes, local, nbytes, mode = sys.argv[1:8]
forced = sys.argv[8] if len(sys.argv) > 8 else None
N, L, S = int(nodes), int(local), int(nbytes)
P = N * L
with tempfile.TemporaryDirectory() as d:
    stats = os.path.join(d, "stats.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GCOLL_") and k != "LD_PRELOAD"}
    cmd = [mpirun, "--oversubscribe", "-np", str(P), "-x", "LD_PRELOAD=" + lib,
           "-x", "GCOLL_HOST_BUFFERS=engine", "-x", "GCOLL_RANKS_PER_NODE=%d" % L,
           "-x", "GCOLL_STATS_FILE=" + stats]
    if forced:
        cmd += ["-x", "GCOLL_TUNE=allreduce:0-inf:@" + forced]
    cmd += [exe, str(S // 4)]
    r = subprocess.run(cmd, env=env, timeout=240)
    if r.returncode != 0:
        sys.exit("FAIL: the program failed (%d)" % r.returncode)
    everything = json.load(open(stats))
ar = everything["allreduce"]
for coll in ("allreduce", "bcast", "allgather"):
    c = everything[coll]
    if c["engine"] != P or c["calls"] != P:
        sys.exit("FAIL: expected %d engine %s calls, got %s" % (P, coll, c))
algo = [k for k, v in ar["algorithms"].items() if v]
if forced and ar["algorithms"].get(forced) != P:
    sys.exit("FAIL: expected %d allreduce calls counted under algorithms.%s, got %s" % (P, forced, ar["algorithms"]))
if mode == "large":
    per_rank = ar["inter_node_bytes"] / P
    bound = 1.05 * 2 * (N - 1) / N * S / L
    print("N=%d L=%d S=%d algorithm=%s: inter-node bytes per rank %.0f, bound 1.05 x 2(N-1)/N x S/L = %.0f"
          % (N, L, S, algo, per_rank, bound))
    ok = per_rank <= bound
else:
    steps = ar["inter_node_steps_max"]
    bound = math.ceil(math.log2(N)) + 2 if N > 1 else 0
    print("N=%d L=%d S=%d algorithm=%s: inter-node steps %d, bound ceil(log2 N) + 2 = %d"
          % (N, L, S, algo, steps, bound))
    ok = steps <= bound
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
