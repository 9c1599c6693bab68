#!/usr/bin/env python3
"""The coordinator's cost and memory per block at 10^5, 10^6 and 10^7 blocks
(issue 39), under the protocol of bench/README.md.

    .venv/bin/python bench/coordinator_scale.py [--blocks 100000 1000000 10000000]
        [--executors threads processes] [--dask-max-blocks 100000]
        [--bin build/release/bench] [--reps 5] [--dir build/bench/coordinator_scale]
        [--out bench/results/coordinator_scale.json]
    .venv/bin/python bench/coordinator_scale.py --smoke

The workload is sum(ones((N,), chunks=(1,))): N blocks of one element, so
the work per block is nothing and what is measured is the engine's own cost
(planning, scheduling, dispatch, bookkeeping). Contenders, each a fresh
process:
  strata <executor>: build/release/bench/coordinator_scale --blocks N
          --executor <executor> --workers 2 (bench/coordinator_scale.cc, the
          public C++ API: plan, then compute);
  dask:   Dask's own threaded scheduler, as its users run it,
          dask.array.ones(N, chunks=1).sum().compute(), at N <= --dask-max-blocks
          (its graph has a task per chunk and takes ~170 us per chunk).
Strata fuses the source into the reduction's first round, so its plan has few
tasks; the unit here is the block (the chunk), which is what grows. Each run
records wall time and the peak RSS of its process tree (protocol), and, from
the contender's own JSON line, plan and compute seconds, microseconds per
block and RSS bytes per block of the coordinator (peak RSS less the RSS
before planning, over N). Reports medians with min-max; never pass/fail.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402

DASK = r'''
import json, resource, sys, time
import dask.array as da
n = int(sys.argv[1])
t0 = time.perf_counter()
x = da.ones(n, chunks=1).sum()
t1 = time.perf_counter()
value = float(x.compute())
t2 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"blocks": n, "sum": value, "plan_s": t1 - t0, "compute_s": t2 - t1,
                  "us_per_block": 1e6 * (t2 - t1) / n, "peak_rss_bytes": peak}))
sys.exit(0 if value == n else 1)
'''


def record(run, completed):
    """The contender's own figures (its last stdout line) into run["extra"]."""
    line = json.loads(completed.stdout.strip().splitlines()[-1])
    run["extra"].update({k: v for k, v in line.items() if isinstance(v, (int, float))})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", nargs="+", type=int, default=[10**5, 10**6, 10**7])
    ap.add_argument("--executors", nargs="+", default=["threads", "processes"])
    ap.add_argument("--dask-max-blocks", type=int, default=10**5)
    ap.add_argument("--bin", default="build/release/bench")
    ap.add_argument("--dir", default="build/bench/coordinator_scale")
    P.add_arguments(ap)
    args = ap.parse_args()
    blocks = [1000, 10000] if args.smoke else args.blocks
    exe = os.path.abspath(os.path.join(args.bin, "coordinator_scale"))
    with P.Bench("coordinator_scale", args, scratch=os.path.abspath(args.dir),
                 description="the coordinator's cost and memory per block: "
                             "sum(ones((N,), chunks=(1,))) (issue 39)") as b:
        for n in blocks:
            contenders = [P.Contender(f"strata {e}", [exe, "--blocks", str(n), "--executor", e,
                                                      "--workers", "2"], finish=record)
                          for e in args.executors]
            if n <= args.dask_max_blocks:
                contenders.append(P.Contender("dask", [sys.executable, "-c", DASK, str(n)],
                                              finish=record))
            ratios = [("dask", c.name) for c in contenders if c.name != "dask"
                      and n <= args.dask_max_blocks]
            b.case(f"{n} blocks", contenders, ratios=ratios,
                   ratio_keys=("wall_s", "peak_rss_bytes"),
                   describe={"blocks": n, "workload": "sum(ones((N,), chunks=(1,)))",
                             "workers": 2})


if __name__ == "__main__":
    main()
