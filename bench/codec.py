#!/usr/bin/env python3
"""build/release/bench/codec_bench under the protocol of bench/README.md.

    .venv/bin/python bench/codec.py [--reps 5] [--codec-bench build/release/bench/codec_bench]
        [--dir build/bench/codec] [--out bench/results/codec_bench.json] [-- CODEC_BENCH_ARGS]
    .venv/bin/python bench/codec.py --smoke

codec_bench (bench/codec_bench.cc) times encode and decode of every codec on
one 80 MB float64 chunk in one process (median of >= 5 runs of each, Strata's
blosc decode alternated with libblosc's own). CPU-bound figures like these
are the first to suffer from other people's work on the machine, so this
runs that whole process as the one contender of a case, --reps times, each
run checked for disturbance like any other (the 1-minute load average and the
machine's other CPU recorded, a disturbed run redone). Each run's JSON is kept
whole; the summary gives, for every codec and figure, the median over the
runs of codec_bench's own median with min-max over the runs. Reports never a
pass/fail. --smoke: a 1000 x 100 chunk, 1 rep, no disturbance check.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402


def flatten(doc):
    """codec_bench's JSON as flat numeric figures: '<codec>|<figure>' -> value."""
    out = {"memcpy|MBps": doc["memcpy"]["median_MBps"]}
    for c in doc["codecs"]:
        name = c["codec"]
        out[f"{name}|compression_ratio"] = c["compression_ratio"]
        out[f"{name}|encode_MBps"] = c["encode"]["median_MBps"]
        out[f"{name}|decode_MBps"] = c["decode_into_destination"]["median_MBps"]
        if "blosc_native_decode" in c:
            out[f"{name}|blosc_native_decode_MBps"] = c["blosc_native_decode"]["median_MBps"]
            out[f"{name}|decode_vs_blosc_native"] = c["decode_vs_blosc_native"]["median"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--codec-bench", default="build/release/bench/codec_bench")
    ap.add_argument("--dir", default="build/bench/codec")
    P.add_arguments(ap)
    ap.add_argument("rest", nargs="*", help="arguments for codec_bench (after --)")
    args = ap.parse_args()
    extra = args.rest or (["--rows", "1000", "--cols", "100", "--reps", "1", "--min-seconds",
                           "0.01"] if args.smoke else [])
    with P.Bench("codec_bench", args, scratch=os.path.abspath(args.dir),
                 description="chunk codec throughput on one float64 chunk (codec_bench)") as b:
        def finish(run, done):
            doc = json.loads(done.stdout)
            run["output"] = doc
            run["extra"].update(flatten(doc))

        case = b.case("codec_bench", [P.Contender("codec_bench", [args.codec_bench, *extra],
                                                  finish=finish)],
                      describe={"arguments": extra})
        runs = [rep["runs"]["codec_bench"] for rep in case["reps"]]
        case["context"] = runs[0]["output"]["context"] if runs else None
        case["codecs"] = [c["codec"] for c in runs[0]["output"]["codecs"]] if runs else []


if __name__ == "__main__":
    main()
