#!/usr/bin/env python3
"""Tests of scripts/tune_host.py without MPI: the benchmark's sizes as the selection's
bytes, the ranges where the MPI goes, and the rules file from compare.json files (--from)."""

import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tune_host  # noqa: E402


def compare_json(path, nprocs, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"schema": "gcoll-compare/1", "meta": {"np": nprocs},
                   "rows": [{"size": s, "speedup": r, "gcoll_path": "engine@x"} for s, r in rows]}, f)


class TuneHost(unittest.TestCase):
    def test_selection_bytes(self):
        self.assertEqual(tune_host.selection_bytes("allreduce", 4096, 4, 4), 4096)
        self.assertEqual(tune_host.selection_bytes("allgatherv", 1024, 4, 1), 4096)  # the total
        self.assertEqual(tune_host.selection_bytes("reduce_scatter_block", 4096, 4, 4), 1024)  # the block
        self.assertEqual(tune_host.selection_bytes("reduce_scatter_block", 8, 4, 4), 0)
        self.assertEqual(tune_host.selection_bytes("alltoall", 64, 4, 1), 64)

    def test_ranges(self):
        r = tune_host.mpi_ranges
        self.assertEqual(r([(8, 0.5), (16, 0.9), (32, 1.2)], 1.0), [(0, 32)])
        self.assertEqual(r([(8, 1.5), (16, 0.9), (32, 1.2), (64, 0.5)], 1.0), [(16, 32), (64, None)])
        self.assertEqual(r([(8, 1.0), (16, 1.1)], 1.0), [])  # as fast: the engine
        self.assertEqual(r([(8, 0.99), (16, 0.96)], 0.95), [])  # --threshold
        self.assertEqual(r([(8, math.nan), (16, 2.0)], 1.0), [(0, 16)])  # no number: the MPI
        self.assertEqual(r([(0, 0.5), (0, 2.0), (4, 2.0)], 1.0), [(0, 4)])  # same bytes: the MPI if any
        self.assertEqual(tune_host.rules_of("bcast", [(0, 4096), (1 << 20, None), (100, 300)]),
                         ["bcast:0-4K:@mpi", "bcast:1M-inf:@mpi", "bcast:100-300:@mpi"])

    def test_from_directory(self):
        with tempfile.TemporaryDirectory() as d:
            compare_json(os.path.join(d, "osu_allreduce", "compare.json"), 4,
                         [(8, 0.4), (4096, 1.1), (8192, 1.4), (262144, 0.8)])
            compare_json(os.path.join(d, "osu_reduce_scatter_block", "compare.json"), 4,
                         [(8, 0.1), (65536, 0.7), (131072, 1.9)])
            out = os.path.join(d, "rules.txt")
            self.assertEqual(tune_host.main(["--from", d, "--colls", "allreduce,reduce_scatter_block",
                                             "--output", out]), 0)
            with open(out) as f:
                self.assertEqual(f.read().strip(), "allreduce:0-4K:@mpi,allreduce:256K-inf:@mpi,"
                                                   "reduce_scatter_block:0-32K:@mpi")
            # The engine everywhere: "off", never an empty value (which means the built-in rules).
            compare_json(os.path.join(d, "osu_bcast", "compare.json"), 4, [(8, 1.5), (16, 1.2)])
            self.assertEqual(tune_host.main(["--from", d, "--colls", "bcast", "--output", out]), 0)
            with open(out) as f:
                self.assertEqual(f.read().strip(), "off")


if __name__ == "__main__":
    unittest.main()
