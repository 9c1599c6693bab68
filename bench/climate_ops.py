#!/usr/bin/env python3
"""Climate operations: Strata against Dask on the same Zarr inputs, under the
protocol of bench/README.md.

    .venv/bin/python bench/climate_ops.py [--ops nanmean groupby cumsum points diff]
        [--layouts map series] [--bin build/release/bench] [--dir build/bench/climate_ops]
        [--reps 5] [--prepared] [--out bench/results/climate_ops.json]
    .venv/bin/python bench/climate_ops.py --smoke

The input is a (time, lat, lon) float64 array of daily values, 10% NaN
(uniform values times 300 elsewhere), (481, 721, 1440) = 4.0 GB, written once
by `climate_ops make` (blosc lz4, zarr-python's default codec) in two layouts:
  map     chunks (24, 721, 1440), 200 MB: whole maps, 24 days each (ERA5's);
  series  the transposed layout, for time series: chunks (481, 120, 240),
          111 MB (the whole time axis, lat/lon tiles).
Operations, each along time:
  nanmean  mean over time skipping NaN, to memory   Dask: da.nanmean(x, axis=0)
  groupby  mean per month (12 labels, 365-day calendar) skipping NaN, to
           memory; Dask: da.stack of da.nanmean over x[labels == m]
  cumsum   cumulative sum over time, to Zarr         Dask: da.cumsum(x, axis=0)
  points   the series at 5,000 random (lat, lon) grid points, to memory;
           Dask: x.vindex[:, lat, lon]
  diff     difference of consecutive days, to Zarr   Dask: da.diff(x, axis=0),
           rechunked to regular chunks (its to_zarr refuses irregular ones)
Strata is bench/climate_ops.cc over the public C++ API (allowed_mem 2GB,
workers = the available cores); Dask is the lock's (2026.8) as its users run it
(threaded scheduler, default worker count). Inputs are warm for both (read once
before each run). After the first kept rep the two results are compared: the
checksum of the non-NaN values for results in memory, the Zarr outputs with
numpy (NaN equal to NaN) for cumsum and diff. --smoke: (48, 91, 180), chunks
(12, 91, 180) and (48, 30, 60), 1 rep.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402

DASK = r'''
import json, sys
import dask.array as da, numpy as np
op, path, out, points = sys.argv[1:5]
x = da.from_zarr(path)
r = None
if op == "nanmean":
    r = da.nanmean(x, axis=0).compute()
elif op == "groupby":
    days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    labels = np.repeat(np.arange(12), days)[np.arange(x.shape[0]) % 365]
    r = da.stack([da.nanmean(x[labels == m], axis=0) for m in range(12)]).compute()
elif op == "cumsum":
    da.cumsum(x, axis=0).to_zarr(out, overwrite=True)
elif op == "diff":
    # diff's first block along time is one element shorter; Dask's to_zarr
    # refuses irregular chunks and says to rechunk, as a user then does.
    y = da.diff(x, axis=0)
    y.rechunk(y.chunksize).to_zarr(out, overwrite=True)
elif op == "points":
    p = np.loadtxt(points, dtype=np.int64).reshape(-1, 2)
    r = x.vindex[:, p[:, 0], p[:, 1]].compute()
print(json.dumps({"op": op, "checksum": float(np.nansum(r)) if r is not None else 0.0}))
'''

# Compares two Zarr outputs chunk by chunk of the first (NaN equal to NaN), so
# that each chunk is decoded once and the check costs about one read of each output. (Reading 8
# days at a time decoded every (481, 120, 240) chunk of the series layout ~60
# times and took most of a full run.)
CHECK = r'''
import itertools, sys, numpy as np, zarr
a, b = zarr.open(sys.argv[1], mode="r"), zarr.open(sys.argv[2], mode="r")
ok, err = a.shape == b.shape, 0.0
# One of a's chunks at a time (b's region of it: the same chunks when both
# outputs have the same chunking, as here).
starts = [range(0, n, c) for n, c in zip(a.shape, a.chunks)]
for s in itertools.product(*starts) if ok else []:
    sel = tuple(slice(o, min(o + c, n)) for o, c, n in zip(s, a.chunks, a.shape))
    x, y = a[sel], b[sel]
    ok = ok and np.allclose(x, y, rtol=1e-9, atol=1e-6, equal_nan=True)
    fin = np.isfinite(x) & np.isfinite(y)
    if fin.any():
        err = max(err, float(np.max(np.abs(x[fin] - y[fin]))))
print(("equal" if ok else "DIFFER") + f" (max abs difference {err:.3g})")
'''

SIZES = {
    "full": {"shape": (481, 721, 1440), "map": (24, 721, 1440), "series": (481, 120, 240)},
    "smoke": {"shape": (48, 91, 180), "map": (12, 91, 180), "series": (48, 30, 60)},
}
IN_MEMORY = {"nanmean", "groupby", "points"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", nargs="+", default=["nanmean", "groupby", "cumsum", "points", "diff"])
    ap.add_argument("--layouts", nargs="+", default=["map", "series"])
    ap.add_argument("--bin", default="build/release/bench")
    ap.add_argument("--dir", default="build/bench/climate_ops")
    ap.add_argument("--points", type=int, default=5000)
    ap.add_argument("--allowed-mem", default=None, help="default 2GB (smoke: 64MB)")
    P.add_arguments(ap)
    args = ap.parse_args()
    size = SIZES["smoke" if args.smoke else "full"]
    shape = size["shape"]
    allowed = args.allowed_mem or ("64MB" if args.smoke else "2GB")
    tool = os.path.abspath(os.path.join(args.bin, "climate_ops"))
    if not os.path.exists(tool):
        sys.exit(f"climate_ops.py: error: {tool} not found "
                 "(cmake --build --preset release --target climate_ops)")
    d = os.path.abspath(args.dir)
    with P.Bench("climate_ops", args, scratch=d,
                 description="nanmean, groupby mean, cumsum, pointwise selection and diff "
                             "along time, Strata against Dask") as b:
        b.doc["dask_script"] = DASK.strip()
        b.doc["dask_defaults"] = P.dask_defaults()
        rng = np.random.default_rng(0)
        points = os.path.join(d, f"points-{args.points}.txt")
        np.savetxt(points, np.stack([rng.integers(0, shape[1], args.points),
                                     rng.integers(0, shape[2], args.points)], axis=1), fmt="%d")
        for layout in args.layouts:
            src = os.path.join(d, f"{layout}.zarr")
            if not os.path.exists(os.path.join(src, ".zarray")):
                subprocess.run([tool, "make", src, "--shape", ",".join(map(str, shape)),
                                "--chunks", ",".join(map(str, size[layout])), "--nan", "0.1",
                                "--allowed-mem", allowed], check=True, stdout=subprocess.DEVNULL)
            stored = P.tree_bytes(src)
            for op in args.ops:
                contenders, outs = [], {}
                for variant in ["user"] + (["prepared"] if args.prepared else []):
                    for name in ("strata", "dask"):
                        cname = name if variant == "user" else f"{name} ({variant})"
                        slug = cname.replace(" ", "_").replace("(", "").replace(")", "")
                        out = os.path.join(d, f"out_{slug}.zarr")
                        argv = ([tool, "run", op, src, "--out", out, "--points", points,
                                 "--allowed-mem", allowed] if name == "strata"
                                else [sys.executable, "-c", DASK, op, src, out, points])

                        def setup(out=out, variant=variant):
                            shutil.rmtree(out, ignore_errors=True)
                            if variant == "prepared":
                                P.drop_caches()
                            P.warm(src)
                            if variant == "prepared":
                                P.pretouch(8 * shape[0] * shape[1] * shape[2] // 4)

                        def finish(run, done):
                            lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
                            if lines:
                                info = json.loads(lines[-1])
                                run["extra"]["checksum"] = info.get("checksum", 0.0)
                                for k in ("max_measured_task_mem", "max_projected_task_mem",
                                          "chunk_buffers_peak", "buffers_held_peak", "tasks"):
                                    if k in info:
                                        run["extra"][k] = info[k]

                        contenders.append(P.Contender(cname, argv, setup=setup, finish=finish,
                                                      variant=variant, label=name))
                        outs[cname] = out
                state = {"checked": False}
                checks = {}

                def after_rep(slot, rep, outs=outs, op=op, state=state, checks=checks):
                    if state["checked"]:
                        return
                    state["checked"] = True
                    if op in IN_MEMORY:
                        sums = {n: r["extra"].get("checksum") for n, r in rep["runs"].items()}
                        ref = sums.get("dask")
                        for n, v in sums.items():
                            same = ref is not None and v is not None and abs(v - ref) <= 1e-9 * max(1.0, abs(ref))
                            checks[n] = f"checksum {v:.12g} ({'equal to' if same else 'DIFFERS from'} dask's)"
                    else:
                        r = subprocess.run([sys.executable, "-c", CHECK, outs["strata"],
                                            outs["dask"]], capture_output=True, text=True)
                        checks["strata vs dask"] = (r.stdout.strip() if r.returncode == 0
                                                    else f"FAILED: {r.stderr.strip()[-300:]}")
                    P.log(f"  checks: {checks}")
                    for out in outs.values():
                        shutil.rmtree(out, ignore_errors=True)

                ratios = [("dask", "strata")]
                if args.prepared:
                    ratios.append(("dask (prepared)", "strata (prepared)"))
                case = b.case(f"{layout} {op}", contenders, ratios=ratios,
                              ratio_keys=("wall_s", "peak_rss_bytes"), after_rep=after_rep,
                              describe={"op": op, "layout": layout, "shape": list(shape),
                                        "chunks": list(size[layout]), "nan_share": 0.1,
                                        "allowed_mem": allowed, "points": args.points,
                                        "input_bytes_decoded": 8 * shape[0] * shape[1] * shape[2],
                                        "input_bytes_stored": stored})
                case["checks"] = checks
                for out in outs.values():
                    shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(src, ignore_errors=True)


if __name__ == "__main__":
    main()
