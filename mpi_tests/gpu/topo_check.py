#!/usr/bin/env python3
"""Run a device-buffer test program on an emulated multi-GPU node and check the path.

Usage:
  topo_check.py --mpiexec MPIRUN [--mpiexec-flags="..."] --np N --topo FILE.xml
      [--expect-class CLASS] [--expect-algo COLL=A|B]... [--expect-probe-failures N]
      [--expect-ring | --expect-ring-hier] [--expect-no-staged [--allow-staged COLL]...] [--env VAR=VALUE]...
      [--timeout S] -- PROGRAM [ARGS...]

The program (gcoll_gpu_mpi_test with a filter: the collectives' correctness suites,
results compared with PMPI_* on host copies) runs as
  mpirun -np N -x GCOLL_CUDA=emulate -x GCOLL_TOPO_FILE=FILE -x GCOLL_STATS_FILE=<fresh>
         -x GCOLLTEST_NO_DENIED_IPC=1 [-x VAR=VALUE ...] PROGRAM
so that the emulated GPU is the file's machine (each rank on device local_rank % GPUs,
IPC opens between GPUs the file says cannot P2P fail as CUDA's do, a pair marked broken
maps a private copy) and the program itself fails if any IPC open was attempted across a
denied pair (GpuTopology.NoIpcOpenAcrossDeniedPairs, gpu_test.cc).

Checks on the stats file gcoll writes at MPI_Finalize (summed over ranks):
  * mpirun exit status 0;
  * --expect-class: library.device_topology_<CLASS> >= N: every rank's node, on
    MPI_COMM_WORLD, has the topology class expected (one-gpu, nvlink, pcie, islands,
    no-p2p; none given: not checked); the suites' split
    communicators may count other classes (odd ranks on GPUs without P2P between them);
  * library.p2p_probe_failures: 0 for N = 0 (default), else at least N: the GPU pairs the
    data probe caught (per node and communicator);
  * --expect-ring: library.device_nvlink_rings >= N: every rank of MPI_COMM_WORLD set up
    the device engine along its node's NVLink ring, and each of the engine's eight
    collectives (allreduce, bcast, allgather, reduce_scatter_block, reduce,
    reduce_scatter, alltoall, allgatherv) that the program called on device buffers (engine
    or staged) ran calls with @nvring;
  * --expect-ring-hier: the same across nodes whose every node has its NVLink ring
    (GCOLL_RANKS_PER_NODE): every rank set up the device engine along its node's ring, and
    each of the eight collectives the program called ran calls with @nvring_hier (the
    ring inside each node, the rails between nodes);
  * --expect-no-staged: none of the eight collectives was staged (staged == 0), and each
    one the program called ran on the engine (engine > 0): for a program (filter) whose
    calls are all device buffers of predefined types and ops (GpuEngineEvery.*); but for
    each --allow-staged COLL, whose calls may be staged (a known gap, named where used);
  * --expect-algo COLL=A|B: the engine ran COLL's calls with A or B only (> 0 calls in all,
    none with any other algorithm but "staged"), and COLL has engine calls.
And on the dumps (GCOLL_TOPO_DUMP_FILE=<fresh>/dump-%p.xml, always set): one per rank
(every process discovered its node at its first device call, one GPU shared included),
each in the dialect (XML) with as many <gpu> elements as FILE.
Only the Python standard library is used.
"""
import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

# The runner with its timeout (the process group killed), shared with the stats check.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_stats_check import run  # noqa: E402

CLASSES = ("one_gpu", "nvlink", "pcie", "islands", "no_p2p")
# The collectives with engine algorithms (registry.cc).
ENGINE_COLLS = ("allreduce", "bcast", "allgather", "reduce_scatter_block", "reduce", "reduce_scatter", "alltoall",
                "allgatherv")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--mpiexec-flags", default="")
    p.add_argument("--np", type=int, required=True)
    p.add_argument("--topo", required=True)
    p.add_argument("--expect-class", choices=[c.replace("_", "-") for c in CLASSES])
    p.add_argument("--expect-algo", action="append", default=[], metavar="COLL=A|B")
    p.add_argument("--expect-probe-failures", type=int, default=0)
    p.add_argument("--expect-ring", action="store_true")
    p.add_argument("--expect-ring-hier", action="store_true")
    p.add_argument("--expect-no-staged", action="store_true")
    p.add_argument("--allow-staged", action="append", default=[], metavar="COLL")
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE")
    p.add_argument("--timeout", type=float, default=240.0)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.expect_ring and a.expect_ring_hier:
        p.error("--expect-ring and --expect-ring-hier exclude each other")
    if a.command and a.command[0] == "--":
        a.command = a.command[1:]
    if not a.command:
        p.error("no program given (put it after --)")
    return a


def gpus_in(path):
    return sum(1 for e in ET.parse(path).iter() if e.tag == "gpu")


def check_dumps(tmpdir, topo, np):
    """One GCOLL_TOPO_DUMP_FILE per rank, each with the topology file's GPUs."""
    dumps = sorted(f for f in os.listdir(tmpdir) if f.startswith("dump-") and f.endswith(".xml"))
    if len(dumps) != np:
        return ["%d topology dumps (GCOLL_TOPO_DUMP_FILE), expected one per rank (%d)" % (len(dumps), np)]
    want = gpus_in(topo)
    for d in dumps:
        try:
            got = gpus_in(os.path.join(tmpdir, d))
        except (OSError, ET.ParseError) as e:
            return ["topology dump %s unreadable: %s" % (d, e)]
        if got != want:
            return ["topology dump %s has %d GPUs, the file %d" % (d, got, want)]
    print("topo_check: %d topology dumps, %d GPUs each" % (len(dumps), want))
    return []


def main(argv):
    a = parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("GCOLL_")}
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    tmpdir = tempfile.mkdtemp(prefix="gcoll-topo-")
    stats_path = os.path.join(tmpdir, "stats.json")
    xenv = ["GCOLL_ENABLE=1", "GCOLL_CUDA=emulate", "GCOLL_TOPO_FILE=" + os.path.abspath(a.topo),
            "GCOLL_STATS_FILE=" + stats_path, "GCOLLTEST_NO_DENIED_IPC=1",
            "GCOLL_TOPO_DUMP_FILE=" + os.path.join(tmpdir, "dump-%p.xml")] + a.env
    xenv += sorted("%s=%s" % (k, v) for k, v in os.environ.items() if k.startswith("GCOLL_EMU_"))
    cmd = [a.mpiexec] + shlex.split(a.mpiexec_flags) + ["-np", str(a.np)]
    for kv in xenv:
        cmd += ["-x", kv]
    cmd += a.command
    print("topo_check: %s, np %d, expecting %s" % (os.path.basename(a.topo), a.np, a.expect_class or "any class"))
    print("topo_check: running: %s" % " ".join(shlex.quote(c) for c in cmd))
    sys.stdout.flush()
    rc, out, err, timed_out = run(cmd, env, a.timeout)
    print(out.rstrip("\n"))
    print(err.rstrip("\n"))
    failures = []
    if timed_out:
        failures.append("timed out after %.0f s" % a.timeout)
    elif rc != 0:
        failures.append("mpirun exit status %d" % rc)
    stats = None
    if not failures:
        try:
            with open(stats_path) as f:
                stats = json.load(f)
        except (OSError, ValueError) as e:
            failures.append("no stats file: %s" % e)
    if stats is not None:
        lib = stats.get("library", {})
        want = (a.expect_class or "").replace("-", "_")
        # Every rank of MPI_COMM_WORLD counts its node's class once; the suites' split
        # communicators (odd and even ranks, ...) may find other classes on fewer GPUs.
        n = lib.get("device_topology_" + want, 0)
        if want and n < a.np:
            failures.append("device_topology_%s = %d, expected at least %d (every rank of MPI_COMM_WORLD)"
                            % (want, n, a.np))
        rings = lib.get("device_nvlink_rings", 0)
        ring_algo = "nvring_hier" if a.expect_ring_hier else "nvring"
        expect_ring = a.expect_ring or a.expect_ring_hier
        if expect_ring and rings < a.np:
            failures.append("device_nvlink_rings = %d, expected at least %d (every rank of MPI_COMM_WORLD)"
                            % (rings, a.np))
        for coll in ENGINE_COLLS:
            e = stats.get(coll, {})
            # (a collective the ring never took, staged on every call, fails too)
            device_calls = e.get("engine", 0) + e.get("staged", 0)
            if expect_ring and device_calls > 0 and e.get("algorithms", {}).get(ring_algo, 0) <= 0:
                failures.append("%s: no calls along the NVLink ring (@%s)" % (coll, ring_algo))
            if a.expect_no_staged and e.get("staged", 0) > 0 and coll not in a.allow_staged:
                failures.append("%s: %d calls staged, expected none" % (coll, e["staged"]))
            if a.expect_no_staged and e.get("calls", 0) > 0 and e.get("engine", 0) <= 0:
                failures.append("%s: %d calls, none on the engine" % (coll, e["calls"]))
        if not expect_ring and rings:
            failures.append("device_nvlink_rings = %d, expected 0" % rings)
        # Counted once per node and communicator that probed the pair (world, and the
        # suites' split communicators that hold both of its ranks).
        pf = lib.get("p2p_probe_failures", 0)
        if a.expect_probe_failures == 0 and pf != 0:
            failures.append("p2p_probe_failures = %d, expected 0" % pf)
        if a.expect_probe_failures > 0 and pf < a.expect_probe_failures:
            failures.append("p2p_probe_failures = %d, expected at least %d" % (pf, a.expect_probe_failures))
        for spec in a.expect_algo:
            coll, _, names = spec.partition("=")
            allowed = set(names.split("|"))
            entry = stats.get(coll, {})
            algos = entry.get("algorithms", {})
            used = {k: v for k, v in algos.items() if v > 0 and k != "staged"}
            if entry.get("engine", 0) <= 0:
                failures.append("%s: no engine calls" % coll)
            if not used or not set(used) <= allowed:
                failures.append("%s: algorithms used %s, expected only %s" % (coll, used, sorted(allowed)))
        print("topo_check: stats: library %s" % json.dumps(lib))
        for coll in ENGINE_COLLS:
            if coll in stats:
                e = stats[coll]
                print("topo_check: %s: engine %d staged %d algorithms %s" % (
                    coll, e.get("engine", 0), e.get("staged", 0),
                    json.dumps({k: v for k, v in e.get("algorithms", {}).items() if v})))
    if not failures:
        failures += check_dumps(tmpdir, a.topo, a.np)
    for f in failures:
        print("topo_check: FAIL: " + f)
    if failures:
        print("topo_check: stats and topology dumps kept in " + tmpdir)
    else:
        print("topo_check: PASS")
        shutil.rmtree(tmpdir, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
