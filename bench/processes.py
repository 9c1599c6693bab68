#!/usr/bin/python3
"""The processes executor against the threads executor on W1 (issue 5).

    /usr/bin/python3 bench/processes.py [--reps 3] [--bin build/release/bin]
        [--dir build/bench/processes] > bench/results/processes.json

W1 of bench/rechunk.py: `strata rechunk` of a 10000x10000 float64 Zarr v2
array (blosc lz4, written once by `strata random`), (10000,1000) ->
(1000,10000), allowed_mem 400MB, 2 workers, once with `--executor threads` and
once with `--executor processes`, alternating within each rep. Runs are timed
like bench/rechunk.py's (fresh process, /usr/bin/time wall time and peak RSS,
page cache dropped then the source warmed, work_dir polled every 50 ms).
Peak RSS is GNU time's: the coordinator's for `processes` (each worker's own
peak is in the history file as worker_rss; pages of the shared-memory store
count in every process that touched them). Each run writes a --history file;
its compute_end line gives the intermediate bytes written to disk (which must
be 0 when the stage fits in RAM) and the peak of intermediates in RAM. The
first rep's outputs are compared chunk file by chunk file. Reports medians and
the ratio processes/threads; never pass/fail.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rechunk as rb  # noqa: E402  (timed_run, make_source, same_chunks, ...)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--dir", default="build/bench/processes")
    args = ap.parse_args()
    strata = os.path.join(args.bin, "strata")
    d = os.path.abspath(args.dir)
    os.makedirs(d, exist_ok=True)
    shape, src_chunks, dst_chunks, allowed = [10000, 10000], [10000, 1000], [1000, 10000], "400MB"
    src = os.path.join(d, "src.zarr")
    work = os.path.join(d, "work")
    stored = rb.make_source(strata, src, shape, src_chunks, 1)
    executors = ("threads", "processes")
    dsts = {e: os.path.join(d, f"out_{e}.zarr") for e in executors}
    hist = {e: os.path.join(d, f"history_{e}.jsonl") for e in executors}
    cmds = {e: [strata, "rechunk", src, dsts[e], "--chunks", ",".join(map(str, dst_chunks)),
                "--allowed-mem", allowed, "--workers", "2", "--executor", e, "--work-dir", work,
                "--history", hist[e], "--quiet"] for e in executors}
    runs = {e: [] for e in executors}
    dropped = []
    check = None
    for rep in range(args.reps):
        for e in executors:
            shutil.rmtree(dsts[e], ignore_errors=True)
            if os.path.exists(hist[e]):
                os.remove(hist[e])
            rb.log(f"W1 rep {rep + 1}/{args.reps}: {e}")
            r = rb.timed_run(cmds[e], src, work, dropped)
            end, workers_rss = last_compute_end(hist[e])
            r.pop("stdout")
            r.pop("stderr")
            r["intermediate_bytes_written"] = end["intermediate_bytes_written"]
            r["peak_resident_intermediate_bytes"] = end["peak_resident_intermediate_bytes"]
            r["tasks"] = end["tasks"]
            r["max_worker_rss_bytes"] = workers_rss
            runs[e].append(r)
            rb.log(f"  {r['wall_s']:.2f} s, rss {r['rss_bytes'] / 1e6:.0f} MB, intermediates "
                   f"on disk {r['intermediate_bytes_written']} B, work peak "
                   f"{r['work_peak_bytes'] / 1e6:.0f} MB, load {r['load_1min']}")
        if rep == 0:
            check = ("chunk files identical" if rb.same_chunks(dsts["threads"], dsts["processes"])
                     else "OUTPUTS DIFFER")
            rb.log(f"  check: {check}")
    res = {}
    for e in executors:
        s = rb.summarize(runs[e])
        s["intermediate_bytes_written"] = max(r["intermediate_bytes_written"] for r in runs[e])
        s["peak_resident_intermediate_bytes"] = max(
            r["peak_resident_intermediate_bytes"] for r in runs[e])
        s["max_worker_rss_bytes"] = max(r["max_worker_rss_bytes"] for r in runs[e])
        s["runs"] = runs[e]
        res[e] = s
    out = {
        "benchmark": "processes executor vs threads, W1",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "workload": {"shape": shape, "source_chunks": src_chunks, "target_chunks": dst_chunks,
                     "allowed_mem": allowed, "workers": 2, "logical_bytes": 8 * shape[0] * shape[1],
                     "source_stored_bytes": stored},
        "commands": {e: " ".join(c) for e, c in cmds.items()},
        "plan": rb.strata_plan(strata, src, dst_chunks, ["--allowed-mem", allowed, "--workers",
                                                         "2", "--work-dir", work]),
        "page_cache_dropped": all(dropped),
        "output_check": check,
        "results": res,
        "ratio_processes_over_threads_time": round(
            res["processes"]["median_s"] / res["threads"]["median_s"], 3),
        "cores": os.cpu_count(),
    }
    json.dump(out, sys.stdout, indent=1)
    print()
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
