#!/usr/bin/env python3
"""Each collective as the only call before MPI_Finalize (issue 28): a rank that has done
its part leaves the collective and finalizes at once, while a peer may still be receiving
what it sent. Before the fix gcoll's teardown destroyed the rank's UCX worker right away,
the peer's connection to it failed and its receive failed with it (MPI_ERR_OTHER, fatal
under the default error handler; 3 runs in 10 of a reduce on 2 + 2 + 1 virtual nodes, 16
in 20 with one rank per node). Now an engine with rails is retired until every rail peer
has let go of it (coll/engine.h: ~EngineSlot).

    finalize_race.py --mpiexec MPIEXEC [--mpiexec-flags "..."] --lib libgcoll.so
                     --program invisible [--reps N] [--timeout S] [--kinds host,device]

Every run must exit 0 (the program checks its one result and MPI_Finalize's return), and
within the timeout (a hang counts as a failure). The matrix: every collective the program
knows, on --nps ranks across virtual nodes (default 2, 4, 5: one rank per node at np 2 and
3, nodes of 2 at np 4 and 5: 2 + 2 + 1; np 3 left out of CI's run since 2026-11-30, its
three nodes of one rank covered by 2 + 2 + 1 and the reps below), host buffers through
the engine and the emulated GPU's device buffers; then the rooted reduce and bcast --reps
more times each on 5 ranks, one per node.
"""

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time

COLLS = ["allreduce", "bcast", "reduce", "allgather", "alltoall", "reduce_scatter_block", "reduce_scatter",
         "allgatherv", "gather", "scatter"]
KINDS = {
    "host": ["GCOLL_HOST_BUFFERS=engine"],
    "device": ["GCOLL_CUDA=emulate", "GCOLL_EMU_DELAY=20"],
}


def run(a, np, env, coll):
    cmd = [a.mpiexec] + shlex.split(a.mpiexec_flags) + ["-np", str(np)]
    for kv in env + ["LD_PRELOAD=" + a.lib]:
        cmd += ["-x", kv]
    cmd += [a.program, "--only", coll]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=a.timeout)
        return p.returncode, out.decode(errors="replace"), cmd
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return "hang (killed after %.0f s)" % a.timeout, out.decode(errors="replace"), cmd


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--mpiexec-flags", default="")
    p.add_argument("--lib", required=True)
    p.add_argument("--program", required=True)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--kinds", default="host,device")
    p.add_argument("--nps", default="2,4,5", help="rank counts of the matrix (2 to 5)")
    a = p.parse_args(argv)
    runs = []
    for kind in a.kinds.split(","):
        for np in (int(x) for x in a.nps.split(",")):
            rpn = "1" if np <= 3 else "2"
            for coll in COLLS:
                runs.append((np, KINDS[kind] + ["GCOLL_RANKS_PER_NODE=" + rpn], coll, kind))
        for coll in ("reduce", "bcast"):
            runs += [(5, KINDS[kind] + ["GCOLL_RANKS_PER_NODE=1"], coll, kind)] * a.reps
    failed = []
    t0 = time.time()
    for np, env, coll, kind in runs:
        rc, out, cmd = run(a, np, env, coll)
        if rc != 0:
            failed.append((np, env, coll, rc, out, cmd))
            print("FAILED: %s, np %d, %s: exit %s\n%s" % (coll, np, " ".join(env), rc, out), flush=True)
    print("%d runs in %.0f s, %d failed" % (len(runs), time.time() - t0, len(failed)))
    for np, env, coll, rc, out, cmd in failed:
        print("  %s np %d %s: %s" % (coll, np, " ".join(env), rc))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
