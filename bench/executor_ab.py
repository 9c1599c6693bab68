#!/usr/bin/env python3
"""Two builds of `strata` side by side on one rechunk workload, on the threads
and the processes executors, interleaved in the same reps (the protocol of
bench/README.md): the A/B of an engine change, in counts as well as times.

    .venv/bin/python bench/executor_ab.py --before /tmp/strata-before/bin \
        [--after build/release/bin] [--workloads W4] [--executors threads processes]
        [--reps 5] [--threshold-cores 0.10] [--dir build/bench/executor_ab]
        [--out build/bench/executor_ab.json]

On a machine other people use, times move with their builds; what does not
move is what the run asks of the kernel. Every run records, beside wall time,
from wait4's rusage of the whole process tree: system time, minor page faults
(each a page the run touched for the first time, or touched again after the
allocator gave it back) and voluntary/involuntary context switches, and the
load before it. Ratios are per rep (after/before on each executor, and
threads/processes in each build). The workloads are bench/rechunk.py's (W1,
W4): the source is written once by the --after build and warmed before every
run; both builds write the same bytes (checked after the first kept rep).
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402
import rechunk as rb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="bin directory of the build before the change")
    ap.add_argument("--after", default="build/release/bin", help="bin directory of the build after")
    ap.add_argument("--workloads", nargs="+", default=["W4"], choices=sorted(rb.WORKLOADS))
    ap.add_argument("--executors", nargs="+", default=["threads", "processes"])
    ap.add_argument("--dir", default="build/bench/executor_ab")
    P.add_arguments(ap)
    args = ap.parse_args()
    if args.out is None and not args.smoke:
        args.out = os.path.join(os.path.abspath(args.dir), "executor_ab.json")
    builds = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    with P.Bench("executor_ab", args, scratch=os.path.abspath(args.dir),
                 description="one rechunk, two builds, threads and processes, in the same reps "
                             "(counts: minor faults, system time, context switches)") as b:
        for name in args.workloads:
            shape, src_chunks, dst_chunks, allowed, seed = rb.workloads(args)[name]
            d = os.path.join(os.path.abspath(args.dir), name)
            os.makedirs(d, exist_ok=True)
            src = os.path.join(d, "src.zarr")
            stored = rb.make_source(os.path.join(builds["after"], "strata"), src, shape,
                                    src_chunks, seed)
            logical = 8 * shape[0] * shape[1]
            outputs = rb.Outputs(d)

            def argv(strata, executor):
                return lambda dst, hist, work: [
                    strata, "rechunk", src, dst, "--chunks", ",".join(map(str, dst_chunks)),
                    "--allowed-mem", allowed, "--workers", "2", "--executor", executor,
                    "--work-dir", work, "--history", hist, "--quiet"]

            contenders, dsts = [], {}
            for build, bindir in builds.items():
                for e in args.executors:
                    c, dst = rb.contender(f"{e} {build}", "user",
                                          argv(os.path.join(bindir, "strata"), e), src, outputs,
                                          logical, lambda run, done, hist: rb.add_history(run, hist))
                    contenders.append(c)
                    dsts[c.name] = dst
            ratios = [(f"{e} after", f"{e} before") for e in args.executors]
            ratios += [(f"threads {bld}", f"processes {bld}") for bld in builds
                       if {"threads", "processes"} <= set(args.executors)]
            reference = contenders[0].name
            rb.checked_case(b, name, contenders, dsts, os.path.join(builds["after"], "strata"),
                            src, outputs, reference, ratios,
                            ("wall_s", "cpu_sys_s", "minor_faults", "peak_rss_bytes"),
                            {"workload": name, "shape": shape, "source_chunks": src_chunks,
                             "target_chunks": dst_chunks, "allowed_mem": allowed, "workers": 2,
                             "logical_bytes": logical, "source_stored_bytes": stored,
                             "builds": builds})
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
