#!/usr/bin/python3
"""strata copy of the 800 MB seed array, against baselines measured in the same run.

    /usr/bin/python3 bench/copy_bench.py [--strata build/release/bin/strata] [--dir build/bench]
                                         [--reps 3] > copy_bench.json

Workloads: `strata copy` keeping the codec (bytes moved and checked, not
re-encoded), re-encoding to zstd level 1, and decompressing to raw. Baselines:
`cp -r` of the same directory (the file system's own copy), writing the same
number of raw bytes with dd (the write bound), and a numpy memcpy of 800 MB in
memory. Before every timed run the page cache is dropped when we may (root),
because on this VM writing into a page cache full of old pages is 3-4x slower
than into free memory; the JSON says whether it was dropped. Reports medians
and ratios, never a pass/fail.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rechunk import drop_caches  # noqa: E402


def timed(cmd, reps, before=None):
    times = []
    dropped = True
    for _ in range(reps):
        if before:
            before()
        dropped = drop_caches() and dropped
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times, dropped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default="build/release/bin/strata")
    ap.add_argument("--dir", default="build/bench")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    src = os.path.join(args.dir, "seed.zarr")
    dst = os.path.join(args.dir, "copy.zarr")
    subprocess.run([args.strata, "random", src, "--shape", "10000,10000", "--chunks", "10000,1000",
                    "--seed", "1", "--overwrite"], check=True)
    logical = 10000 * 10000 * 8
    stored = sum(os.path.getsize(os.path.join(src, f)) for f in os.listdir(src))

    def clear():
        shutil.rmtree(dst, ignore_errors=True)

    rows = []

    def record(name, cmd, nbytes):
        times, dropped = timed(cmd, args.reps, clear)
        med = statistics.median(times)
        rows.append({"workload": name, "command": " ".join(cmd), "median_s": round(med, 3),
                     "times_s": [round(t, 3) for t in times], "MBps": round(nbytes / med / 1e6, 1),
                     "page_cache_dropped": dropped})

    record("strata copy (same codec: moved + checked)", [args.strata, "copy", src, dst], logical)
    record("strata copy --codec zstd:level=1", [args.strata, "copy", src, dst, "--codec",
                                                "zstd:level=1"], logical)
    record("strata copy --codec none (decompress)", [args.strata, "copy", src, dst, "--codec",
                                                     "none"], logical)
    record("baseline: cp -r (same stored bytes)", ["cp", "-r", src, dst], logical)
    os.makedirs(dst, exist_ok=True)
    record("baseline: dd 800 MB of zeros (write bound)",
           ["dd", "if=/dev/zero", f"of={dst}.dd", "bs=8M", f"count={logical // (8 << 20)}"],
           logical)
    os.remove(f"{dst}.dd")
    a = np.ones(logical // 8)
    b = np.empty_like(a)
    np.copyto(b, a)
    mt = []
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(b, a)
        mt.append(time.perf_counter() - t0)
    memcpy = statistics.median(mt)
    rows.append({"workload": "baseline: memcpy of 800 MB in memory", "median_s": round(memcpy, 4),
                 "MBps": round(logical / memcpy / 1e6, 1)})
    cp = next(r for r in rows if r["workload"].startswith("baseline: cp"))
    for r in rows:
        r["time_vs_cp"] = round(r["median_s"] / cp["median_s"], 2)
    shutil.rmtree(dst, ignore_errors=True)
    json.dump({"array": {"shape": [10000, 10000], "chunks": [10000, 1000], "dtype": "float64",
                         "codec": "blosc lz4 clevel 5 byte shuffle", "logical_bytes": logical,
                         "stored_bytes": stored},
               "MB": 1000000, "cores": os.cpu_count(), "results": rows}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
