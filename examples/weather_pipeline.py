#!/usr/bin/env python3
"""The weather-features pipeline of issue 37 as its users write it in
xarray, on Strata: the only change from xarray + Dask is naming the chunk
manager and a Spec.

    PYTHONPATH=build/release/python .venv/bin/python examples/weather_pipeline.py \\
        [--size 20MB] [--points 500] [--work-dir /tmp/weather_pipeline] [--check]

1. A small synthetic forecast archive (init_time x valid_time x lat x lon;
   u10, v10, t2m float32, one field per chunk), made by Strata and written
   by xarray's own Dataset.to_zarr through Strata's chunk manager.
2. The pipeline, verbatim:
       ds = xr.open_zarr(store, chunked_array_type="strata",
                         from_array_kwargs={"spec": spec})
       pts = ds.sel(lat=lats, lon=lons, method="nearest")  # DataArrays along "point"
       pts = pts.assign_coords(country=country)             # a label per point
       features = wind speed np.hypot(u10, v10), t2m in degC
       means = features.groupby("country").mean(["point"])
   written to Zarr (means.to_zarr) and to Parquet (means.strata.to_parquet),
   each one strata compute within allowed_mem.
3. The memory contract, as Strata reports it: the Parquet write is observed
   by a strata.diagnostics.HistoryCallback (callbacks= of to_parquet, or of
   the accessor's means.strata.to_zarr; xarray's own to_zarr passes none),
   and the report gives its tasks' largest measured and projected memory
   beside allowed_mem, and this process's peak RSS.
4. --check: the same code on xarray + Dask (threads), and both outputs must
   agree with it (rtol 1e-5, atol 1e-4: float32 inputs; a mean in degC near 0
   carries the absolute error of Kelvin values near 300); and every task of
   the observed write measured <= projected <= allowed_mem.

bench/weather_pipeline.py imports this module (generate, run_strata,
run_dask) and runs it at 8 GB and more against xarray + Dask.
"""
import argparse
import json
import os
import resource
import shutil
import sys
import time

import numpy as np
import pandas as pd
import xarray as xr

COUNTRIES = 60
VARIABLES = ("u10", "v10", "t2m")


def parse_size(text):
    """Bytes of "20MB", "8GB", "0.5GB" or a plain number."""
    units = {"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "b": 1}
    t = str(text).strip().lower()
    for u, f in units.items():
        if t.endswith(u):
            return int(float(t[:-len(u)]) * f)
    return int(float(t))


def grid_for(size_bytes):
    """(n_init, n_valid, n_lat, n_lon): a 0.25-degree grid (721 x 1440) from
    a GB up, coarser below, with as many forecasts as the size asks for."""
    for res, nlat, nlon in ((0.25, 721, 1440), (0.5, 361, 720), (1.0, 181, 360),
                            (2.0, 91, 180)):
        field = nlat * nlon * 4 * len(VARIABLES)
        if size_bytes >= 16 * field or res == 2.0:
            break
    n_valid = 8
    n_init = max(1, int(round(size_bytes / (field * n_valid))))
    return n_init, n_valid, nlat, nlon


def generate(path, size_bytes, spec, seed=0):
    """Writes the synthetic archive (Zarr v2, consolidated) to path: random
    fields made by Strata, written by xarray's to_zarr in one strata compute
    (never the whole archive in memory)."""
    import strata
    n_init, n_valid, nlat, nlon = grid_for(size_bytes)
    shape = (n_init, n_valid, nlat, nlon)
    chunks = (1, 1, nlat, nlon)
    dims = ("init_time", "valid_time", "lat", "lon")
    coords = {"init_time": pd.date_range("2024-01-01", periods=n_init, freq="12h"),
              "valid_time": pd.to_timedelta(np.arange(n_valid) * 6, unit="h"),
              "lat": np.linspace(90.0, -90.0, nlat),
              "lon": np.linspace(0.0, 360.0, nlon, endpoint=False)}

    def field(k, lo, hi):
        r = strata.random.random(shape, chunks=chunks, spec=spec, seed=seed + k)
        return (r * (hi - lo) + lo).astype("float32")
    ds = xr.Dataset({"u10": (dims, field(1, -20.0, 20.0), {"units": "m s-1"}),
                     "v10": (dims, field(2, -20.0, 20.0), {"units": "m s-1"}),
                     "t2m": (dims, field(3, 230.0, 310.0), {"units": "K"})},
                    coords=coords, attrs={"title": "synthetic IFS-like forecasts"})
    ds.to_zarr(path, mode="w", zarr_format=2)


def stations(n, seed=0):
    """n points (lats, lons: DataArrays along "point") and a country label
    for each."""
    rng = np.random.default_rng(seed)
    lats = xr.DataArray(rng.uniform(-60.0, 70.0, n), dims="point")
    lons = xr.DataArray(rng.uniform(0.0, 359.0, n), dims="point")
    country = np.array([f"C{int(i):02d}" for i in rng.integers(0, COUNTRIES, n)])
    return lats, lons, xr.DataArray(country, dims="point")


def pipeline(ds, n_points):
    """The pipeline from an opened archive to the lazy per-country means."""
    lats, lons, country = stations(n_points)
    pts = ds.sel(lat=lats, lon=lons, method="nearest")
    pts = pts.assign_coords(country=country)
    features = xr.Dataset({"wind_speed": np.hypot(pts.u10, pts.v10),
                           "t2m_celsius": pts.t2m - 273.15})
    # With flox installed, xarray hands every chunked array's group-by to flox,
    # which knows Dask and Cubed arrays only (it would compute a strata array
    # whole, so strata refuses it); on Strata, xarray's own group-by runs
    # instead, which strata plans as ONE grouped reduction per variable
    # (docs/xarray.md, "Group-by").
    on_strata = type(features.wind_speed.data).__module__.startswith("strata")
    with xr.set_options(use_flox=not on_strata):
        return features.groupby("country").mean(["point"])


def run_strata(store, out, n_points, spec, output="zarr", callbacks=None):
    """The pipeline on Strata, written to out (Zarr or Parquet). callbacks
    (strata.Callback objects) observe the Parquet write's compute; xarray's
    to_zarr takes none."""
    import strata.xarray  # noqa: F401  (the .strata accessor)
    ds = xr.open_zarr(store, chunked_array_type="strata", from_array_kwargs={"spec": spec})
    means = pipeline(ds, n_points)
    if output == "zarr":
        means.to_zarr(out, mode="w", zarr_format=2)
    else:
        means.strata.to_parquet(out, mode="w", callbacks=callbacks)


def memory_contract(history, allowed_mem):
    """What a HistoryCallback saw of the memory contract: every task's
    measured peak (its memory pool's) within its projection, and every
    projection within allowed_mem."""
    tasks = history.tasks
    return {"tasks": len(tasks),
            "max_measured_task_mem": max((t["measured_peak_mem"] for t in tasks), default=0),
            "max_projected_task_mem": max((t["projected_mem"] for t in tasks), default=0),
            "allowed_mem": allowed_mem,
            "held": bool(history.ok) and all(
                t["measured_peak_mem"] <= t["projected_mem"] <= allowed_mem for t in tasks)}


def run_dask(store, out, n_points, output="zarr", scheduler="threads", workers=None):
    """The pipeline on xarray + Dask: scheduler "threads" (workers=None is
    Dask's default count) or a distributed.Client's (scheduler=client)."""
    import dask
    ds = xr.open_zarr(store)
    means = pipeline(ds, n_points)
    settings = {"scheduler": scheduler}
    if workers is not None and scheduler == "threads":
        settings["num_workers"] = workers
    with dask.config.set(**settings):
        if output == "zarr":
            means.to_zarr(out, mode="w", zarr_format=2)
        else:
            means.to_dask_dataframe(dim_order=list(means.dims)).to_parquet(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="20MB", help="archive size (default 20MB)")
    p.add_argument("--points", type=int, default=500)
    p.add_argument("--work-dir", default="/tmp/weather_pipeline")
    p.add_argument("--allowed-mem", default="500MB")
    p.add_argument("--check", action="store_true",
                   help="run the same code on xarray + Dask and compare")
    args = p.parse_args(argv)
    if args.points < 1:
        p.error("--points must be at least 1")
    import strata
    from strata.diagnostics import HistoryCallback
    os.makedirs(args.work_dir, exist_ok=True)
    spec = strata.Spec(work_dir=os.path.join(args.work_dir, "strata-work"),
                       allowed_mem=args.allowed_mem)
    src = os.path.join(args.work_dir, "ifs.zarr")
    zarr_out = os.path.join(args.work_dir, "means.zarr")
    parquet_out = os.path.join(args.work_dir, "means.parquet")
    report = {}
    try:
        t = time.perf_counter()
        generate(src, parse_size(args.size), spec)
        report["archive"] = {k: int(v) for k, v in xr.open_zarr(src).sizes.items()}
        report["generate_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        run_strata(src, zarr_out, args.points, spec, output="zarr")
        report["to_zarr_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        history = HistoryCallback()
        run_strata(src, parquet_out, args.points, spec, output="parquet", callbacks=[history])
        report["to_parquet_s"] = round(time.perf_counter() - t, 3)
        import strata.xarray  # noqa: F401  (the .strata accessor)
        lazy = pipeline(xr.open_zarr(src, chunked_array_type="strata",
                                     from_array_kwargs={"spec": spec}), args.points)
        kinds = [op["op"] for op in strata.plan(*[v.data for v in lazy.data_vars.values()])
                 .to_dict()["ops"]]
        report["grouped_reductions"] = sum(k.startswith("groupby") and k.endswith("partial")
                                           for k in kinds)
        report["memory_contract"] = memory_contract(history, spec.allowed_mem)
        report["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        means = xr.open_zarr(zarr_out).compute()
        frame = pd.read_parquet(parquet_out)
        report["countries"] = int(means.sizes["country"])
        report["parquet_rows"] = len(frame)
        if args.check:
            import dask
            with dask.config.set(scheduler="threads"):
                ref = pipeline(xr.open_zarr(src), args.points).compute()
            xr.testing.assert_allclose(means.transpose(*ref.dims), ref, rtol=1e-5, atol=1e-4)
            pd.testing.assert_frame_equal(frame.sort_index(), ref.to_dataframe().sort_index(),
                                          rtol=1e-5, atol=1e-4)
            report["agrees_with_dask"] = True
            # One grouped reduction per variable, whatever the number of
            # countries: not a selection and a reduction per country.
            assert report["grouped_reductions"] == len(lazy.data_vars), kinds
            contract = report["memory_contract"]
            if not (contract["tasks"] and contract["held"]):
                raise RuntimeError(f"--check: the Parquet write did not hold the memory "
                                   f"contract (or ran no task): {contract}")
    finally:
        shutil.rmtree(spec.work_dir, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
