#!/usr/bin/env python3
"""Unit test (no MPI) of compare.py's OMB-output parser and summary, on captured samples
in testdata/: our own output (-f -c --max-rank-time --busbw, two datatypes), an OMB 7.3
CUDA run that fails validation, and an old OMB header without a Datatype line."""

import math
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402


def sample(name):
    with open(os.path.join(HERE, "testdata", name)) as f:
        return f.read()


FULL_COLUMNS = ["Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations",
                "Validation", "MaxRank Avg(us)", "AlgBW(GB/s)", "BusBW(GB/s)"]


class ParseTest(unittest.TestCase):
    def test_full_output_two_datatypes(self):
        p = compare.parse_omb_output(sample("osu_allreduce_full.txt"))
        self.assertEqual(p["title"], "OSU MPI Allreduce Latency Test v7.3")
        self.assertEqual(p["name"], "Allreduce Latency")
        self.assertEqual(p["accel"], "host")
        self.assertEqual(p["version"], "7.3")
        self.assertEqual([b["datatype"] for b in p["blocks"]], ["MPI_INT", "MPI_FLOAT"])
        for b in p["blocks"]:
            self.assertEqual(b["columns"], FULL_COLUMNS)
            self.assertEqual([r["Size"] for r in b["rows"]], [4, 8, 16, 32, 64])
            for r in b["rows"]:
                self.assertIsInstance(r["Size"], int)
                self.assertIsInstance(r["Iterations"], int)
                self.assertEqual(r["Iterations"], 10)
                self.assertEqual(r["Validation"], "Pass")
                self.assertIsInstance(r["Avg Latency(us)"], float)
                self.assertLessEqual(r["Min Latency(us)"], r["Max Latency(us)"])
        self.assertEqual(p["other"], [])

    def test_omb_cuda_sample_with_failure(self):
        p = compare.parse_omb_output(sample("omb_cuda_validation_fail.txt"))
        self.assertEqual(p["accel"], "cuda")
        self.assertEqual(p["title"], "OSU MPI-CUDA Allreduce Latency Test v7.3")
        (b,) = p["blocks"]
        self.assertEqual(b["datatype"], "MPI_FLOAT")
        self.assertEqual(b["columns"], FULL_COLUMNS[:6])
        self.assertEqual([r["Validation"] for r in b["rows"]], ["Pass", "Pass", "Fail"])
        self.assertEqual(b["rows"][0]["Avg Latency(us)"], 41.20)
        self.assertEqual(b["rows"][2]["Iterations"], 1000)
        self.assertEqual(len(p["other"]), 1)
        self.assertTrue(p["other"][0].startswith("DATA VALIDATION ERROR"))

    def test_header_without_datatype(self):
        p = compare.parse_omb_output(sample("omb_old_no_datatype.txt"))
        self.assertEqual(p["version"], "5.6.3")
        (b,) = p["blocks"]
        self.assertIsNone(b["datatype"])
        self.assertEqual(b["columns"], ["Size", "Avg Latency(us)"])
        self.assertEqual([(r["Size"], r["Avg Latency(us)"]) for r in b["rows"]],
                         [(1, 2.05), (2, 2.01), (4, 2.02)])

    def test_malformed_rows_raise(self):
        head = "# OSU MPI Allreduce Latency Test v7.3\n# Size       Avg Latency(us)\n"
        with self.assertRaises(ValueError):
            compare.parse_omb_output(head + "4    1.0    2.0\n")  # too many values
        with self.assertRaises(ValueError):
            compare.parse_omb_output(head + "4    abc\n")  # not a number
        with self.assertRaises(ValueError):
            compare.parse_omb_output("4    1.0\n")  # no header

    def test_noise_lines_are_kept_apart(self):
        text = ("Warning! Limiting max message size to: 1024.\n" + sample("osu_allreduce_full.txt"))
        p = compare.parse_omb_output(text)
        self.assertEqual(p["other"], ["Warning! Limiting max message size to: 1024."])
        self.assertEqual(len(p["blocks"]), 2)


class SummaryTest(unittest.TestCase):
    def test_bus_factors(self):
        self.assertAlmostEqual(compare.bus_factor("osu_allreduce", 4), 1.5)
        self.assertAlmostEqual(compare.bus_factor("osu_allgather", 4), 0.75)
        self.assertAlmostEqual(compare.bus_factor("osu_bcast", 4), 1.0)
        # allgather: algbw counts the gathered buffer (size * nprocs)
        self.assertAlmostEqual(compare.busbw_gbs("osu_allgather", 1000, 4, 1.0), 4000 / 1e3 * 0.75)
        self.assertAlmostEqual(compare.busbw_gbs("osu_allreduce", 1000000, 2, 1000.0), 1.0)

    def test_medians_and_speedup(self):
        def run(lat):
            return {"blocks": [{"datatype": "MPI_FLOAT", "columns": ["Size", "Avg Latency(us)"],
                                "rows": [{"Size": 8, "Avg Latency(us)": lat},
                                         {"Size": 16, "Avg Latency(us)": 2 * lat}]}]}
        runs = {"baseline": [run(10.0), run(30.0), run(20.0)],
                "gcoll": [run(5.0), run(4.0), run(100.0)]}
        s = compare.summarize("osu_allreduce", 2, runs)
        self.assertEqual([(r["datatype"], r["size"]) for r in s],
                         [("MPI_FLOAT", 8), ("MPI_FLOAT", 16)])
        self.assertEqual(s[0]["baseline_us"], 20.0)
        self.assertEqual(s[0]["gcoll_us"], 5.0)
        self.assertEqual(s[0]["speedup"], 4.0)
        self.assertEqual(s[1]["baseline_reps"], [20.0, 60.0, 40.0])
        self.assertAlmostEqual(s[0]["gcoll_busbw"], 8 / 5e-6 / 1e9)
        self.assertTrue(math.isfinite(s[1]["baseline_busbw"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
