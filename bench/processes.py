#!/usr/bin/python3
"""The processes executor against the threads executor on W1 and W4 (issue 5).

    /usr/bin/python3 bench/processes.py [--workloads W1 W4] [--reps 3]
        [--bin build/release/bin] [--dir build/bench/processes] [--no-pretouch]
        > bench/results/processes.json

W1 and W4 of bench/rechunk.py: `strata rechunk` of a float64 Zarr v2 array
(blosc lz4, written once by `strata random`) with 2 workers, once with
`--executor threads` and once with `--executor processes`, alternating within
each rep in a rotated order:
  W1  10000x10000, (10000,1000) -> (1000,10000), allowed_mem 400MB (800 MB)
  W4  20000x20000, (20000,500) -> (500,20000), allowed_mem 1GB (3.2 GB)
Both fit in RAM, so both executors exchange the data through memory (threads:
its heap; processes: the ShmStore, shared memory) and must write no
intermediate bytes to disk. Runs are timed like bench/rechunk.py's: a fresh
process, /usr/bin/time wall time and peak RSS of the whole command (so the
ShmStore's work to make its pages resident is inside the timing), page cache
dropped then the source warmed, work_dir polled every 50 ms, and (unless
--no-pretouch) memory pretouched by a child process that exits before the run
(see rechunk.pretouch: on this VM first writes to memory the host took back
cost ~0.55 s of system time per GB whichever process makes them; the child
frees its memory, so nothing is made resident for the run). Peak RSS is GNU
time's: the coordinator's for `processes` (each worker's own peak is in the
history file as worker_rss; pages of the shared-memory store count in every
process that touched them). Each run writes a --history file; its compute_end
line gives the intermediate bytes written to disk and the peak of
intermediates in RAM. The first rep's outputs are compared chunk file by chunk
file. Reports medians and the ratio processes/threads; never pass/fail.
"""
import datetime
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rechunk as rb  # noqa: E402  (timed_run, make_source, same_chunks, ...)


EXECUTORS = ("threads", "processes")


def last_compute_end(path):
    end = None
    workers_rss = 0
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            if j.get("event") == "compute_end":
                end = j
            if j.get("event") == "task":
                workers_rss = max(workers_rss, j.get("worker_rss", 0))
    return end, workers_rss


def run_workload(args, name, dropped):
    shape, src_chunks, dst_chunks, allowed, seed = rb.WORKLOADS[name]
    strata = os.path.join(args.bin, "strata")
    d = os.path.join(os.path.abspath(args.dir), name)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "src.zarr")
    work = os.path.join(d, "work")
    stored = rb.make_source(strata, src, shape, src_chunks, seed)
    logical = 8 * shape[0] * shape[1]
    touch = int(2.2 * logical) + (1 << 30) if args.pretouch else 0  # as bench/rechunk.py
    dsts = {e: os.path.join(d, f"out_{e}.zarr") for e in EXECUTORS}
    hist = {e: os.path.join(d, f"history_{e}.jsonl") for e in EXECUTORS}
    cmds = {e: [strata, "rechunk", src, dsts[e], "--chunks", ",".join(map(str, dst_chunks)),
                "--allowed-mem", allowed, "--workers", "2", "--executor", e, "--work-dir", work,
                "--history", hist[e], "--quiet"] for e in EXECUTORS}
    def annotate(r, history):
        end, workers_rss = last_compute_end(history)
        r["intermediate_bytes_written"] = end["intermediate_bytes_written"]
        r["peak_resident_intermediate_bytes"] = end["peak_resident_intermediate_bytes"]
        r["tasks"] = end["tasks"]
        r["max_worker_rss_bytes"] = workers_rss

    runs, check = rb.alternate(name, cmds, dsts, hist, src, work, dropped, touch, args.reps,
                               annotate)
    res = {}
    for e in EXECUTORS:
        s = rb.summarize(runs[e])
        s["intermediate_bytes_written"] = max(r["intermediate_bytes_written"] for r in runs[e])
        s["peak_resident_intermediate_bytes"] = max(
            r["peak_resident_intermediate_bytes"] for r in runs[e])
        s["max_worker_rss_bytes"] = max(r["max_worker_rss_bytes"] for r in runs[e])
        s["runs"] = runs[e]
        res[e] = s
    out = {
        "workload": name,
        "shape": shape, "source_chunks": src_chunks, "target_chunks": dst_chunks,
        "allowed_mem": allowed, "workers": 2, "logical_bytes": logical,
        "source_stored_bytes": stored,
        "commands": {e: " ".join(c) for e, c in cmds.items()},
        "plan": rb.strata_plan(strata, src, dst_chunks, ["--allowed-mem", allowed, "--workers",
                                                         "2", "--work-dir", work]),
        "output_check": check,
        "results": res,
        "ratio_processes_over_threads_time": round(
            res["processes"]["median_s"] / res["threads"]["median_s"], 3),
    }
    shutil.rmtree(d, ignore_errors=True)
    return out


def main():
    args = rb.executor_bench_args("build/bench/processes")
    dropped = []
    rows = [run_workload(args, w, dropped) for w in args.workloads]
    out = {
        "benchmark": "processes executor vs threads, " + " and ".join(args.workloads),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "page_cache_dropped": bool(dropped) and all(dropped),
        "memory_pretouched": args.pretouch and (
            "before every run a child process wrote and freed min(2.2 x array bytes + 1 GiB, "
            "MemAvailable - 3 GiB) of memory (as bench/rechunk.py): on this VM first writes to "
            "memory the host took back cost ~0.55 s sys per GB and otherwise land on whichever "
            "run comes first. The child exits before the run: nothing is resident for it."),
        "timing": "wall seconds and peak RSS from /usr/bin/time -f '%e %M' of a fresh process",
        "ratios_processes_over_threads_time": {
            r["workload"]: r["ratio_processes_over_threads_time"] for r in rows},
        "workloads": rows,
        "cores": os.cpu_count(),
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
