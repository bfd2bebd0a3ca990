#!/usr/bin/env python3
"""Settings that must be equal on every rank, set differently on different ranks (Open MPI's
MPMD launch: `mpirun -np 1 -x A=1 prog : -np 2 -x A=2 prog`, as a user would): the job must
neither hang nor crash nor return a wrong result, and exactly one line must name the setting
(base/uniform_settings.h: agreed at each communicator's first call, warned once per
job, from rank 0 of MPI_COMM_WORLD).

    mixed_settings.py --mpiexec MPIEXEC --bin BUILD/bin CASE

Checks, per case: the test program (a GoogleTest program comparing every result with
PMPI_* on copies) exits 0; "GCOLL_X differs between the ranks" appears exactly once in
the job's output; where the case says so, gcoll's stats (GCOLL_STATS_FILE) show no call
of the named collectives through the engine (the agreed outcome "the MPI's collectives").
Before the agreement: GCOLL_HOST_BUFFERS hung, GCOLL_DEVICE_CHUNK_SIZE returned wrong
results, and settings the engine checked warned once per communicator and rank.
GCOLL_ENABLE=0 on one rank (case enable) cannot be agreed (that rank runs no gcoll): the
job must stop within the timeout, and a rank that is on must say why; before, it returned
wrong results and crashed.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# name: (setting, value of the first rank, value of the others, common environment,
#        program, arguments, collectives that must not take the engine)
GPU = {"GCOLL_CUDA": "emulate", "GCOLL_EMU_DELAY": "20"}
ENGINE = {"GCOLL_HOST_BUFFERS": "engine"}
CASES = {
    "host_buffers": ("GCOLL_HOST_BUFFERS", "engine", "mpi", {}, "gcoll_mpi_bcast",
                     ["--gtest_filter=BcastMatrix.AllTypesCountsRoots/*"], ["bcast"]),
    # (every kind of communicator: one line however many differ; a split whose ranks
    # agree may take the engine, so no stats check)
    "chunk_size": ("GCOLL_CHUNK_SIZE", "4K", "1M", ENGINE, "gcoll_mpi_bcast",
                   ["--gtest_filter=BcastMatrix.AllTypesCountsRoots/*"], []),
    "chunk_size_world": ("GCOLL_CHUNK_SIZE", "1M", "64K", ENGINE, "gcoll_mpi_allreduce",
                         ["--gtest_filter=AllreduceMatrix.*/World_Floating"], ["allreduce"]),
    "tune": ("GCOLL_TUNE", "bcast:0-inf:@binomial", "", ENGINE, "gcoll_mpi_bcast",
             ["--gtest_filter=BcastMatrix.AllTypesCountsRoots/World"], ["bcast"]),
    # (neither value sends a bcast to the MPI by itself: only the agreement does)
    "host_tune": ("GCOLL_HOST_TUNE", "off", "allgather:0-inf:@mpi", ENGINE, "gcoll_mpi_bcast",
                  ["--gtest_filter=BcastMatrix.AllTypesCountsRoots/World"], ["bcast"]),
    # (one rank asks for bf16: agreed off, so the float sums stay exact, as PMPI's)
    "allreduce_compress": ("GCOLL_ALLREDUCE_COMPRESS", "bf16", "off", dict(ENGINE, GCOLL_RANKS_PER_NODE="1"),
                           "gcoll_mpi_allreduce", ["--gtest_filter=AllreduceMatrix.*/World_Floating"], []),
    "ranks_per_node": ("GCOLL_RANKS_PER_NODE", "1", "2", ENGINE, "gcoll_mpi_allgather",
                       ["--gtest_filter=AllgatherMatrix.AllTypesCounts/World"], ["allgather"]),
    "timeout": ("GCOLL_TIMEOUT", "0", "60", ENGINE, "gcoll_mpi_bcast",
                ["--gtest_filter=BcastMatrix.AllTypesCountsRoots/World"], []),
    "memory_agree_interval": ("GCOLL_MEMORY_AGREE_INTERVAL", "1", "1024", GPU, "gcoll_gpu_mpi_test",
                              ["--gtest_filter=GpuMixed.*"], []),
    "device_chunk_size": ("GCOLL_DEVICE_CHUNK_SIZE", "64K", "1M", GPU, "gcoll_gpu_mpi_test",
                          ["--gtest_filter=GpuAllreduceLarge.*:GpuBcastLarge.*"], ["allreduce", "bcast"]),
    "device_buffers": ("GCOLL_DEVICE_BUFFERS", "engine", "staged", GPU, "gcoll_gpu_mpi_test",
                       ["--gtest_filter=GpuBcast.*"], ["bcast"]),
    "uniform_memory": ("GCOLL_UNIFORM_MEMORY", "1", "0", GPU, "gcoll_gpu_mpi_test",
                       ["--gtest_filter=GpuMixed.*"], []),
    "device_fused": ("GCOLL_DEVICE_FUSED", "off", "auto", GPU, "gcoll_gpu_mpi_test",
                     ["--gtest_filter=GpuBackToBack.*"], []),
    "device_net_chunk": ("GCOLL_DEVICE_NET_CHUNK", "64K", "1M", dict(GPU, GCOLL_RANKS_PER_NODE="2"),
                         "gcoll_gpu_mpi_test", ["--gtest_filter=GpuAllreduceLarge.*"], ["allreduce"]),
    # Off on the first rank: that rank cannot agree on anything (it runs no gcoll), so the
    # job must stop with an error (the default handler, MPI_ERRORS_ARE_FATAL) and the ranks
    # that are on must say why; before: wrong results, then a crash. A plain MPI program,
    # with libgcoll.so preloaded on every rank (EXPECT_FAILURE below), whose first
    # collective is an MPI_Allreduce. (Where the rank that is off makes another kind of
    # collective call first, osu_allreduce's MPI_Barrier, the MPI itself hangs: not
    # detectable; the README says GCOLL_ENABLE must be equal on every rank.)
    "enable": ("GCOLL_ENABLE", "0", "1", {}, "gcoll_preload_c", [], []),
}
# Cases whose right outcome is a job that stops with this line from a rank that is on.
EXPECT_FAILURE = {"enable": "some rank of this communicator does not run gcoll"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--mpiexec-flags", default="")
    ap.add_argument("--bin", required=True, help="directory of the test programs")
    ap.add_argument("--np", type=int, default=3, help="ranks: 1 with the first value, the rest with the other")
    ap.add_argument("--timeout", type=float, default=150)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    setting, first, other, common, prog, args, no_engine = CASES[a.case]
    exe = os.path.join(a.bin, prog)
    flags = a.mpiexec_flags.split()
    with tempfile.TemporaryDirectory(prefix="gcoll-mixed-") as tmp:
        stats = os.path.join(tmp, "stats.json")
        env = dict(common, GCOLL_ENABLE="1", GCOLL_STATS_FILE=stats, GCOLLTEST_TIMEOUT=str(int(a.timeout) - 20))
        if a.case in EXPECT_FAILURE:  # a plain MPI program: the library preloaded
            env["LD_PRELOAD"] = os.path.join(os.path.dirname(os.path.abspath(a.bin)), "lib", "libgcoll.so")
        cmd = [a.mpiexec] + flags
        for i, (n, value) in enumerate(((1, first), (a.np - 1, other))):
            if i:
                cmd.append(":")
            cmd += ["-np", str(n)]
            for k, v in sorted(dict(env, **{setting: value}).items()):
                cmd += ["-x", "%s=%s" % (k, v)]
            cmd += [exe] + args
        print("mixed_settings: " + " ".join(cmd), flush=True)
        penv = dict(os.environ)
        for k in list(penv):
            if k.startswith("GCOLL_"):
                del penv[k]
        try:
            p = subprocess.run(cmd, env=penv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=a.timeout)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            if isinstance(out, bytes):
                out = out.decode(errors="replace")
            rc = "timeout"
        problems = []
        if a.case in EXPECT_FAILURE:
            said = [l for l in out.splitlines() if EXPECT_FAILURE[a.case] in l]
            if rc == "timeout":
                problems.append("the job hung (no end within %s s)" % a.timeout)
            elif rc == 0:
                problems.append("the job succeeded: its ranks' collective calls cannot have paired up")
            if not said:
                problems.append("no rank said: %s" % EXPECT_FAILURE[a.case])
            if problems:
                sys.stdout.write(out[-6000:])
                for pr in problems:
                    print("mixed_settings: FAIL: " + pr)
                return 1
            print("mixed_settings: stopped as it must (exit %s): %s" % (rc, said[0].strip()[:160]))
            print("mixed_settings: %s: passed" % a.case)
            return 0
        if rc != 0:
            problems.append("the program exited with %s (a failed comparison, a crash or a hang)" % rc)
        said = [l for l in out.splitlines() if re.search(re.escape(setting) + r" differs between the ranks", l)]
        if len(said) != 1:
            problems.append("%d lines name %s as differing, expected exactly 1" % (len(said), setting))
        else:
            print("mixed_settings: warned: " + said[0].strip())
        if no_engine and rc == 0:
            try:
                with open(stats) as f:
                    s = json.load(f)
                for c in no_engine:
                    if s[c]["engine"] != 0 or s[c]["calls"] == 0:
                        problems.append("stats %s: %d of %d calls through the engine, expected none (the MPI's "
                                        "collectives or staging)" % (c, s[c]["engine"], s[c]["calls"]))
            except (OSError, ValueError, KeyError) as e:
                problems.append("no stats: %s" % e)
        if problems:
            sys.stdout.write(out[-6000:])
            for pr in problems:
                print("mixed_settings: FAIL: " + pr)
            return 1
        print("mixed_settings: %s: passed" % a.case)
        return 0


if __name__ == "__main__":
    sys.exit(main())
