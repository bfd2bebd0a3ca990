#!/usr/bin/env python3
"""The -J results' schema and its checker (no MPI): testdata/results_sample.json (records
of osu_allreduce under gcoll and osu_iallreduce without it, as the benchmarks wrote them)
is valid, and each of a list of mutations, one at a time, makes it invalid. So a field the
benchmarks stop writing, or a wrong kind of value, fails check_json.py.
"""
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_json import validate  # noqa: E402


def main():
    with open(os.path.join(HERE, "results.schema.json")) as f:
        schema = json.load(f)
    with open(os.path.join(HERE, "testdata", "results_sample.json")) as f:
        sample = json.load(f)
    errs = validate(sample, schema)
    if errs:
        print("FAIL: the sample is invalid:\n  " + "\n  ".join(errs))
        return 1

    def drop(k):
        return lambda d: d["records"][0].pop(k)

    def put(k, v, i=0):
        return lambda d: d["records"][i].__setitem__(k, v)

    mutations = {
        "schema name": lambda d: d.__setitem__("schema", "gcoll-osu-results/0"),
        "no busbw": drop("busbw_GBps"),
        "no path": drop("path"),
        "no gcoll": drop("gcoll"),
        "unknown field": put("latency", 1.0),
        "bytes as text": put("bytes", "8"),
        "bytes zero": put("bytes", 0),
        "count float": put("count", 2.5),
        "path bogus": put("path", "fast"),
        "memory bogus": put("memory", "gpu"),
        "validation bogus": put("validation", "ok"),
        "time without max": lambda d: d["records"][0]["time_us"].pop("max"),
        "gcoll without commit": lambda d: d["records"][0]["gcoll"].pop("commit"),
        "setting not text": lambda d: d["records"][0]["gcoll"]["settings"].__setitem__("GCOLL_X", 1),
        "calls negative": lambda d: d["records"][0]["calls"].__setitem__("engine", -1),
        "algorithm zero": lambda d: d["records"][0]["calls"]["algorithms"].__setitem__("ring", 0),
        "overlap > 100": lambda d: d["records"][2]["nonblocking"].__setitem__("overlap_pct", 101.0),
        "date format": put("date", "yesterday"),
    }
    failed = 0
    for name, mutate in mutations.items():
        d = copy.deepcopy(sample)
        mutate(d)
        if not validate(d, schema):
            print("FAIL: mutation %r still validates" % name)
            failed += 1
    if validate({}, {"type": "object", "oneOf": []}) == []:
        print("FAIL: an unknown schema keyword was ignored")
        failed += 1
    if failed:
        return 1
    print("OK: the sample validates; %d mutations fail" % len(mutations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
