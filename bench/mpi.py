#!/usr/bin/python3
"""The mpi executor against the threads executor on W1 and W4 (issue 7).

    /usr/bin/python3 bench/mpi.py [--workloads W1 W4] [--reps 3]
        [--bin build/release/bin] [--dir build/bench/mpi] [--no-pretouch]
        > bench/results/mpi.json

W1 and W4 of bench/rechunk.py, `strata rechunk` with 2 workers: once with
`--executor threads --workers 2`, once as `mpirun -np 2 --mca pml ob1 strata
rechunk ... --executor mpi` (two ranks, one task at a time each; on this one
machine MPI moves blocks through shared memory: Open MPI's ob1 with the vader
transport and CMA single copy. `--mca pml ob1` skips probing for UCX, which
costs ~0.3 s of start-up here and is meant for real interconnects). Both fit in RAM, so both exchange the data in memory and write
no intermediate bytes. Timed like bench/rechunk.py (fresh processes,
/usr/bin/time wall time including mpirun's start-up, page cache dropped then
the source warmed, memory pretouched by a child that exits first). Peak RSS
is GNU time's: for mpi the largest single process (a rank); the history's
compute_end gives each rank's pool peak and the bytes that moved between
ranks. The first rep's outputs are compared chunk file by chunk file.
Reports medians and the ratio mpi/threads of wall time, and of compute time
(compute_end's seconds in the history: from Execute's start to its end, so
without process and MPI start-up); the median wall time of `mpirun -np 2
/bin/true` (the launcher's own cost) is measured in the same run. Never
pass/fail.
"""
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rechunk as rb  # noqa: E402


EXECUTORS = ("threads", "mpi")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def compute_end(path):
    with open(path) as f:
        ends = [json.loads(line) for line in f if '"compute_end"' in line]
    return ends[-1]


def run_workload(args, name, dropped):
    shape, src_chunks, dst_chunks, allowed, seed = rb.WORKLOADS[name]
    strata = os.path.join(args.bin, "strata")
    d = os.path.join(os.path.abspath(args.dir), name)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "src.zarr")
    work = os.path.join(d, "work")
    stored = rb.make_source(strata, src, shape, src_chunks, seed)
    logical = 8 * shape[0] * shape[1]
    touch = int(2.2 * logical) + (1 << 30) if args.pretouch else 0
    dsts = {e: os.path.join(d, f"out_{e}.zarr") for e in EXECUTORS}
    hist = {e: os.path.join(d, f"history_{e}.jsonl") for e in EXECUTORS}
    common = ["--chunks", ",".join(map(str, dst_chunks)), "--allowed-mem", allowed,
              "--work-dir", work, "--quiet"]
    cmds = {
        "threads": [strata, "rechunk", src, dsts["threads"], *common, "--workers", "2",
                    "--executor", "threads", "--history", hist["threads"]],
        "mpi": ["mpirun", "-np", "2", "--oversubscribe", "--mca", "pml", "ob1", strata,
                "rechunk", src, dsts["mpi"],
                *common, "--executor", "mpi", "--history", hist["mpi"]],
    }
    def annotate(r, history):
        end = compute_end(history)
        r["compute_s"] = end["seconds"]
        for k in ("intermediate_bytes_written", "peak_resident_intermediate_bytes", "tasks",
                  "rank_peak_pool_bytes", "bytes_between_ranks"):
            if k in end:
                r[k] = end[k]

    runs, check = rb.alternate(name, cmds, dsts, hist, src, work, dropped, touch, args.reps,
                               annotate)
    res = {}
    for e in EXECUTORS:
        s = rb.summarize(runs[e])
        s["intermediate_bytes_written"] = max(r["intermediate_bytes_written"] for r in runs[e])
        s["median_compute_s"] = statistics.median(r["compute_s"] for r in runs[e])
        s["runs"] = runs[e]
        res[e] = s
    out = {
        "workload": name,
        "shape": shape, "source_chunks": src_chunks, "target_chunks": dst_chunks,
        "allowed_mem": allowed, "workers": 2, "logical_bytes": logical,
        "source_stored_bytes": stored,
        "commands": {e: " ".join(c) for e, c in cmds.items()},
        "output_check": check,
        "results": res,
        "ratio_mpi_over_threads_time": round(res["mpi"]["median_s"] / res["threads"]["median_s"],
                                             3),
        "ratio_mpi_over_threads_compute_time": round(
            res["mpi"]["median_compute_s"] / res["threads"]["median_compute_s"], 3),
    }
    shutil.rmtree(d, ignore_errors=True)
    return out


def main():
    args = rb.executor_bench_args("build/bench/mpi")
    os.environ.update(MPI_ENV)
    dropped = []
    launcher = []
    for _ in range(5):
        t0 = time.monotonic()
        subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "--mca", "pml", "ob1",
                        "/bin/true"], check=True)
        launcher.append(time.monotonic() - t0)
    rows = [run_workload(args, w, dropped) for w in args.workloads]
    out = {
        "benchmark": "mpi executor (2 ranks) vs threads (2 workers), " + " and ".join(
            args.workloads),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "reps": args.reps,
        "page_cache_dropped": all(dropped),
        "mpirun_true_median_s": round(statistics.median(launcher), 3),
        "workloads": rows,
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
