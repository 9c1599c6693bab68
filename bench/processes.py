#!/usr/bin/env python3
"""The processes executor against the threads executor on W1 and W4 (issue 5),
under the protocol of bench/README.md.

    .venv/bin/python bench/processes.py [--workloads W1 W4] [--reps 5] [--prepared]
        [--bin build/release/bin] [--dir build/bench/processes]
        [--out bench/results/processes.json]
    .venv/bin/python bench/processes.py --smoke

W1 and W4 of bench/rechunk.py: `strata rechunk` of a float64 Zarr v2 array
(blosc lz4, written once by `strata random`) with 2 workers, once with
`--executor threads` and once with `--executor processes`, interleaved in
rotated order within each rep:
  W1  10000x10000, (10000,1000) -> (1000,10000), allowed_mem 400MB (800 MB)
  W4  20000x20000, (20000,500) -> (500,20000), allowed_mem 1GB (3.2 GB)
Both fit in RAM, so both executors exchange the data through memory (threads:
its heap; processes: the ShmStore, shared memory) and must write no
intermediate bytes to disk. Each run is a fresh process measured by the
protocol (wall time, CPU and peak RSS of the whole process tree: for
`processes` the coordinator and its workers; pages of the shared-memory store
count in every process that touched them, so the tree's sum overstates it —
each worker's own peak is in the history file as worker_rss). The source is
warmed before every run; --prepared adds pre-touched, cache-dropped variants.
Each run writes a --history file; its compute_end line gives the compute time,
the intermediate bytes written to disk and the peak of intermediates in RAM.
The first kept rep's outputs are compared chunk file by chunk file. Reports
medians with min-max and the per-rep ratio processes/threads; never pass/fail.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402
import rechunk as rb  # noqa: E402

EXECUTORS = ("threads", "processes")


def run_workload(b, args, name):
    shape, src_chunks, dst_chunks, allowed, seed = rb.workloads(args)[name]
    strata = os.path.join(args.bin, "strata")
    d = os.path.join(os.path.abspath(args.dir), name)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "src.zarr")
    stored = rb.make_source(strata, src, shape, src_chunks, seed)
    logical = 8 * shape[0] * shape[1]
    outputs = rb.Outputs(d)

    def argv(executor):
        return lambda dst, hist, work: [
            strata, "rechunk", src, dst, "--chunks", ",".join(map(str, dst_chunks)),
            "--allowed-mem", allowed, "--workers", "2", "--executor", executor, "--work-dir",
            work, "--history", hist, "--quiet"]

    contenders, dsts = [], {}
    for variant in rb.variants(args):
        for e in EXECUTORS:
            c, dst = rb.contender(e, variant, argv(e), src, outputs, logical,
                                  lambda run, done, hist: rb.add_history(run, hist))
            contenders.append(c)
            dsts[c.name] = dst
    describe = {"workload": name, "shape": shape, "source_chunks": src_chunks,
                "target_chunks": dst_chunks, "allowed_mem": allowed, "workers": 2,
                "logical_bytes": logical, "source_stored_bytes": stored}
    case = rb.executor_case(b, args, name, contenders, dsts, strata, src, outputs, "processes",
                            describe)
    case["plan"] = rb.strata_plan(strata, src, dst_chunks, ["--allowed-mem", allowed, "--workers",
                                                            "2"])
    shutil.rmtree(d, ignore_errors=True)


def main():
    args = rb.executor_bench_args("build/bench/processes")
    with P.Bench("processes", args, scratch=os.path.abspath(args.dir),
                 description="the processes executor against threads, 2 workers (issue 5)") as b:
        for w in args.workloads:
            run_workload(b, args, w)


if __name__ == "__main__":
    main()
