#!/usr/bin/env python3
"""Unit test (no MPI) of compare.py's OMB-output parser and summary, on captured samples
in testdata/: our own output (-f -c --max-rank-time --busbw, two datatypes), an OMB 7.3
CUDA run that fails validation, an old OMB header without a Datatype line, our
nonblocking table (osu_iallreduce -f -c, two datatypes), one in OMB 7.3's format
(osu_ialltoall -d cuda -c, failing), and osu_allreduce_persistent measured and built
without a persistent allreduce."""

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
NBC_FULL_COLUMNS = ["Size", "Overall(us)", "Compute(us)", "Coll. Init(us)", "MPI_Test(us)",
                    "MPI_Wait(us)", "Pure Comm.(us)", "Min Comm.(us)", "Max Comm.(us)",
                    "Overlap(%)", "Validation"]


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

    def test_nonblocking_full_two_datatypes(self):
        p = compare.parse_omb_output(sample("osu_iallreduce_full.txt"))
        self.assertEqual(p["title"], "OSU MPI Non-blocking Allreduce Latency Test v7.3")
        self.assertEqual(p["name"], "Non-blocking Allreduce Latency")
        self.assertEqual(p["accel"], "host")
        self.assertEqual(p["comments"], ["# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait"])
        self.assertEqual([b["datatype"] for b in p["blocks"]], ["MPI_INT", "MPI_FLOAT"])
        for b in p["blocks"]:
            self.assertEqual(b["columns"], NBC_FULL_COLUMNS)
            self.assertEqual(compare.latency_column(b["columns"]), "Overall(us)")
            self.assertEqual([r["Size"] for r in b["rows"]], [4, 8, 16, 32, 64])
            for r in b["rows"]:
                self.assertIsInstance(r["Size"], int)
                self.assertEqual(r["Validation"], "Pass")
                self.assertIsInstance(r["Overlap(%)"], float)
                self.assertTrue(0.0 <= r["Overlap(%)"] <= 100.0)
                self.assertGreaterEqual(r["Overall(us)"], r["Compute(us)"])
                self.assertLessEqual(r["Min Comm.(us)"], r["Pure Comm.(us)"])
                self.assertLessEqual(r["Pure Comm.(us)"], r["Max Comm.(us)"])
        self.assertEqual(p["other"], [])

    def test_omb_nonblocking_sample_with_failure(self):
        p = compare.parse_omb_output(sample("omb_ialltoall_cuda_validation_fail.txt"))
        self.assertEqual(p["accel"], "cuda")
        self.assertEqual(p["name"], "Non-blocking All-to-All Personalized Exchange Latency")
        (b,) = p["blocks"]
        self.assertEqual(b["datatype"], "MPI_CHAR")
        self.assertEqual(b["columns"], ["Size", "Overall(us)", "Compute(us)", "Pure Comm.(us)",
                                        "Overlap(%)", "Validation"])
        self.assertEqual([r["Validation"] for r in b["rows"]], ["Pass", "Pass", "Pass", "Fail"])
        self.assertEqual(b["rows"][2]["Overlap(%)"], 16.98)
        self.assertEqual(b["rows"][0]["Pure Comm.(us)"], 27.40)
        self.assertEqual(len(p["other"]), 1)
        self.assertTrue(p["other"][0].startswith("DATA VALIDATION ERROR"))

    def test_persistent(self):
        p = compare.parse_omb_output(sample("osu_allreduce_persistent.txt"))
        self.assertEqual(p["title"], "OSU MPI Allreduce Persistent Latency Test v7.3")
        self.assertEqual(p["name"], "Allreduce Persistent Latency")
        (b,) = p["blocks"]
        self.assertEqual(b["columns"], ["Size", "Avg Latency(us)", "Validation"])
        self.assertEqual(compare.latency_column(b["columns"]), "Avg Latency(us)")
        self.assertEqual([r["Size"] for r in b["rows"]], [1, 2, 4, 8, 16, 32, 64])

    def test_persistent_unavailable(self):
        # built against an MPI without a persistent allreduce: the title, a reason, no table
        p = compare.parse_omb_output(sample("osu_allreduce_persistent_unavailable.txt"))
        self.assertEqual(p["title"], "OSU MPI Allreduce Persistent Latency Test v7.3")
        self.assertEqual(p["blocks"], [])
        self.assertEqual(len(p["comments"]), 1)
        self.assertTrue(p["comments"][0].startswith("# Not measured: "))

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
        # nonblocking and persistent: the blocking collective's conventions
        self.assertEqual(compare.collective("osu_iallreduce"), "osu_allreduce")
        self.assertEqual(compare.collective("osu_ireduce_scatter"), "osu_reduce_scatter")
        self.assertEqual(compare.collective("osu_allreduce_persistent"), "osu_allreduce")
        self.assertEqual(compare.collective("osu_reduce"), "osu_reduce")
        self.assertAlmostEqual(compare.bus_factor("osu_iallreduce", 4), 1.5)
        self.assertAlmostEqual(compare.bus_factor("osu_allreduce_persistent", 4), 1.5)
        self.assertAlmostEqual(compare.bus_factor("osu_ibcast", 4), 1.0)
        self.assertAlmostEqual(compare.busbw_gbs("osu_ialltoall", 1000, 4, 1.0), 4000 / 1e3 * 0.75)
        for b in compare.BENCHES:
            self.assertIn(compare.collective(b), compare.BENCHES)

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
        self.assertFalse(s[0]["nonblocking"])
        self.assertIn("busbw", compare.format_table(s, show_dtype=False).splitlines()[0])

    def test_enqueue_summary(self):
        # osu_allreduce_enqueue: both variants under gcoll with -d cuda; the baseline is
        # the blocking osu_allreduce
        cols = ["Size", "Avg Latency(us)", "Validation"]

        def run(lat):
            return {"blocks": [{"datatype": "MPI_FLOAT", "columns": cols,
                                "rows": [{"Size": 64, "Avg Latency(us)": lat,
                                          "Validation": "Pass"}]}]}
        runs = {"baseline": [run(20.0), run(30.0), run(10.0)],
                "gcoll": [run(5.0), run(4.0), run(6.0)]}
        (r,) = compare.summarize("osu_allreduce_enqueue", 2, runs)
        self.assertEqual((r["baseline_us"], r["gcoll_us"], r["speedup"]), (20.0, 5.0, 4.0))
        self.assertEqual(compare.collective("osu_allreduce_enqueue"), "osu_allreduce")
        args = compare.argparse.Namespace(
            bench="osu_allreduce_enqueue", bench_args=["-c"], device="cuda", np=2,
            mpirun="mpirun", mpirun_args=[], env=["GCOLL_CUDA=emulate"], baseline_env=[],
            lib="/lib/libgcoll.so", bin_dir="/bin")
        base = compare.mpirun_command(args, "baseline")
        gcoll = compare.mpirun_command(args, "gcoll")
        self.assertEqual(base[-4:], ["/bin/osu_allreduce", "-d", "cuda", "-c"])
        self.assertEqual(gcoll[-4:], ["/bin/osu_allreduce_enqueue", "-d", "cuda", "-c"])
        for cmd in (base, gcoll):
            self.assertIn("LD_PRELOAD=/lib/libgcoll.so", cmd)
            self.assertIn("GCOLL_CUDA=emulate", cmd)
        head = compare.format_table([r], show_dtype=False, names=("blocking", "enqueue"))
        self.assertIn("blocking(us)", head.splitlines()[0])
        self.assertIn("enqueue(us)", head.splitlines()[0])

    def test_nonblocking_summary(self):
        cols = ["Size", "Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)"]

        def run(overall, comm, overlap):
            return {"blocks": [{"datatype": "MPI_INT", "columns": cols,
                                "rows": [{"Size": 1024, "Overall(us)": overall,
                                          "Compute(us)": comm, "Pure Comm.(us)": comm,
                                          "Overlap(%)": overlap}]}]}
        runs = {"baseline": [run(20.0, 10.0, 0.0), run(22.0, 11.0, 5.0), run(30.0, 12.0, 1.0)],
                "gcoll": [run(12.0, 8.0, 50.0), run(10.0, 8.0, 60.0), run(11.0, 9.0, 40.0)]}
        (r,) = compare.summarize("osu_iallreduce", 2, runs)
        self.assertTrue(r["nonblocking"])
        self.assertEqual((r["baseline_us"], r["gcoll_us"]), (22.0, 11.0))  # Overall(us)
        self.assertEqual(r["speedup"], 2.0)
        self.assertEqual((r["baseline_comm_us"], r["gcoll_comm_us"]), (11.0, 8.0))
        self.assertEqual((r["baseline_overlap"], r["gcoll_overlap"]), (1.0, 50.0))
        # busbw from the pure communication latency
        self.assertAlmostEqual(r["gcoll_busbw"], compare.busbw_gbs("osu_iallreduce", 1024, 2, 8.0))
        table = compare.format_table([r], show_dtype=False).splitlines()
        self.assertIn("base ovlp(%)", table[0])
        self.assertIn("gcoll ovlp(%)", table[0])
        self.assertEqual(table[1].split(), ["1024", "22.00", "11.00", "2.00", "11.00", "8.00",
                                            "1.00", "50.00"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
