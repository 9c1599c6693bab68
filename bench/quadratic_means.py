#!/usr/bin/python3
"""Quadratic means (Cubed's standard benchmark): Strata against Dask, same inputs.

    /usr/bin/python3 bench/quadratic_means.py [--t 50 200] [--reps 3]
        [--bin build/release/bin] [--dir build/bench] > bench/results/quadratic_means.json

u, v float64 of shape (t, 987, 1920), chunks (10, 987, 1920) (~150 MB), written
once by `strata random` (blosc lz4, zarr-python's default codec). Each run
computes mean over axis 0 of u*u, v*v and u*v, stacked into a (3, 987, 1920)
Zarr array, with allowed_mem 2GB:
  strata: examples/quadratic_means (threads, 2 workers);
  dask:   Debian's python3-dask, threaded scheduler, da.from_zarr ... to_zarr.
Each run is a fresh process timed from outside (wall time, peak RSS from
/usr/bin/time, bytes written under the work dir). The page cache is left warm
(inputs were read once before timing) so that both read from memory. Reports
medians and the Dask/Strata ratio of the same run; never pass/fail.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

DASK = r'''
import sys, dask, dask.array as da
dask.config.set(scheduler="threads", num_workers=int(sys.argv[4]))
u = da.from_zarr(sys.argv[1]); v = da.from_zarr(sys.argv[2])
m = da.stack([(u * u).mean(axis=0), (v * v).mean(axis=0), (u * v).mean(axis=0)])
m.to_zarr(sys.argv[3], overwrite=True)
'''


def run(cmd, env=None):
    """Wall seconds and peak RSS (bytes) of one process."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True,
                         env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {out.stderr}")
    wall, rss_kb = out.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss_kb) * 1024


def tree_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--dir", default="build/bench")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    results = []
    for t in args.t:
        u = os.path.join(args.dir, f"u{t}.zarr")
        v = os.path.join(args.dir, f"v{t}.zarr")
        for path, seed in [(u, 1), (v, 2)]:
            if not os.path.exists(os.path.join(path, ".zarray")):
                subprocess.run([os.path.join(args.bin, "strata"), "random", path, "--shape",
                                f"{t},987,1920", "--chunks", "10,987,1920", "--seed", str(seed),
                                "--overwrite"], check=True)
            subprocess.run(["cat"] + [os.path.join(path, f) for f in os.listdir(path)],
                           stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        work = tempfile.mkdtemp(dir=args.dir, prefix="work-")
        out = os.path.join(args.dir, f"out{t}.zarr")
        row = {"t": t, "input_bytes_decoded": 2 * t * 987 * 1920 * 8}
        for name, cmd in [
            ("strata", [os.path.join(args.bin, "quadratic_means"), u, v, out, "--allowed-mem", "2GB",
                        "--workers", str(args.workers), "--work-dir", work]),
            ("dask", ["/usr/bin/python3", "-c", DASK, u, v, out, str(args.workers)]),
        ]:
            walls, rsss = [], []
            for _ in range(args.reps):
                shutil.rmtree(out, ignore_errors=True)
                wall, rss = run(cmd)
                walls.append(wall)
                rsss.append(rss)
            row[name] = {"median_s": statistics.median(walls), "times_s": walls,
                         "peak_rss_bytes": max(rsss), "work_dir_bytes_after": tree_bytes(work)}
        row["dask_over_strata_time"] = round(row["dask"]["median_s"] / row["strata"]["median_s"], 2)
        row["dask_over_strata_rss"] = round(
            row["dask"]["peak_rss_bytes"] / row["strata"]["peak_rss_bytes"], 2)
        shutil.rmtree(work, ignore_errors=True)
        results.append(row)
    json.dump({"workload": "quadratic means", "chunks": [10, 987, 1920], "allowed_mem": "2GB",
               "workers": args.workers, "results": results}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
