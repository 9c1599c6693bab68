#!/usr/bin/env python3
"""The weather-features pipeline of issue 19, end to end through xarray, on
Strata and on xarray + Dask in the same run, with a check that they agree.

    PYTHONPATH=build/release/python .venv/bin/python examples/weather_features.py \\
        --size 0.2GB --points 5000 --work-dir /tmp/wf

1. generate: a synthetic IFS-like forecast dataset (init_time x valid_time x
   lat x lon; u, v at 10 m and 2 m temperature, float32), chunked as
   forecasts are stored (one field per chunk), written to Zarr by Strata
   through the .strata accessor (xarray-compatible: xr.open_zarr reads it);
2. the pipeline, as a user writes it in xarray:
       ds = open(path)
       pts = ds.sel(lat=lats, lon=lons, method="nearest")   # >= 5000 points
       features = wind speed from u/v, temperature in degC
       means = features.groupby("country").mean(["point"])
       means.to_zarr(out)
   run on Strata (strata.xarray.open_zarr, .strata.groupby, .strata.to_zarr)
   and on xarray + Dask (xr.open_zarr(chunks={}), Dask's threaded scheduler
   with the same number of workers);
3. the two outputs, read back with xr.open_zarr, must agree (rtol 1e-5 and
   atol 1e-4: the inputs are float32, and a mean in degC near 0 carries the
   absolute error of Kelvin values near 300, whose float32 spacing is 3e-5).

Wall times are printed for orientation only; the benchmark (interleaved reps,
peak RSS, the memory contract) is bench/'s job. The pointwise selection needs
Strata's pointwise indexing (issue 16's vindex); where it is not there yet,
the Strata side selects the same points through a stacked (lat, lon) axis
and says so.
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

import strata
import strata.xarray as sx

COUNTRIES = 60


def parse_size(text):
    units = {"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "b": 1}
    t = text.strip().lower()
    for u, f in units.items():
        if t.endswith(u):
            return int(float(t[:-len(u)]) * f)
    return int(float(t))


def grid_for(size_bytes, variables=3):
    """(n_init, n_valid, n_lat, n_lon): a 0.25-degree grid (721 x 1440) for
    sizes of a GB and up, coarser below, with as many forecasts as the size
    asks for (at least one)."""
    for res, nlat, nlon in ((0.25, 721, 1440), (0.5, 361, 720), (1.0, 181, 360),
                            (2.0, 91, 180)):
        field = nlat * nlon * 4 * variables
        if size_bytes >= 16 * field or res == 2.0:
            break
    n_valid = 8
    n_init = max(1, int(round(size_bytes / (field * n_valid))))
    return n_init, n_valid, nlat, nlon


def generate(path, size_bytes, spec, seed=0):
    n_init, n_valid, nlat, nlon = grid_for(size_bytes)
    shape = (n_init, n_valid, nlat, nlon)
    chunks = (1, 1, nlat, nlon)
    dims = ("init_time", "valid_time", "lat", "lon")
    coords = {
        "init_time": pd.date_range("2024-01-01", periods=n_init, freq="12h"),
        "valid_time": pd.to_timedelta(np.arange(n_valid) * 6, unit="h"),
        "lat": np.linspace(90.0, -90.0, nlat),
        "lon": np.linspace(0.0, 360.0, nlon, endpoint=False),
    }

    def field(k, lo, hi):
        r = strata.random.random(shape, chunks=chunks, spec=spec, seed=seed + k)
        return (r * (hi - lo) + lo).astype("float32")
    ds = xr.Dataset({"u10": (dims, field(1, -20.0, 20.0), {"units": "m s-1"}),
                     "v10": (dims, field(2, -20.0, 20.0), {"units": "m s-1"}),
                     "t2m": (dims, field(3, 230.0, 310.0), {"units": "K"})},
                    coords=coords, attrs={"title": "synthetic IFS-like forecasts"})
    ds.strata.to_zarr(path, mode="w")
    return ds


def stations(ds, n, seed=0):
    """n points (lat, lon) with a country label each."""
    rng = np.random.default_rng(seed)
    lat = rng.uniform(-60.0, 70.0, n)
    lon = rng.uniform(0.0, 359.0, n)
    country = np.array([f"C{int(i):02d}" for i in rng.integers(0, COUNTRIES, n)])
    return (xr.DataArray(lat, dims="point"), xr.DataArray(lon, dims="point"),
            xr.DataArray(country, dims="point", name="country"))


def has_pointwise_indexing():
    x = strata.asarray(np.zeros((2, 2)))
    try:
        x[np.array([0, 1]), np.array([1, 0])]
    except IndexError:
        return False
    return True


def features(pts):
    return xr.Dataset({"wind_speed": np.sqrt(pts.u10 ** 2 + pts.v10 ** 2),
                       "t2m_celsius": pts.t2m - 273.15})


def run_strata(path, out, n_points, spec, callbacks=None):
    """The pipeline on Strata; callbacks (strata.Callback objects, e.g. a
    strata.diagnostics.HistoryCallback) observe its compute (the to_zarr:
    selection, features, group mean and write in one plan)."""
    ds = sx.open_zarr(path, spec=spec)
    lat, lon, country = stations(ds, n_points)
    if has_pointwise_indexing():
        pts = ds.sel(lat=lat, lon=lon, method="nearest")
        how = "sel(lat=, lon=, method='nearest') (pointwise)"
    else:
        # The same nearest points through one stacked (lat, lon) axis: one
        # integer array on one axis, which main's strata indexes lazily.
        ilat = ds.indexes["lat"].get_indexer(lat.values, method="nearest")
        ilon = ds.indexes["lon"].get_indexer(lon.values, method="nearest")
        flat = xr.DataArray(ilat * ds.sizes["lon"] + ilon, dims="point")
        stacked = ds.stack(cell=("lat", "lon"))
        pts = stacked.isel(cell=flat).drop_vars(["cell", "lat", "lon"])
        pts = pts.assign_coords(lat=("point", ds.lat.values[ilat]),
                                lon=("point", ds.lon.values[ilon]))
        how = "stack(cell=(lat, lon)).isel(cell=...) (no pointwise indexing in this build)"
    pts = pts.assign_coords(country=country)
    means = features(pts).strata.groupby("country").mean(["point"])
    means.strata.to_zarr(out, mode="w", callbacks=callbacks)
    return how


def run_dask(path, out, n_points, workers=None):
    """The pipeline on xarray + Dask's threaded scheduler; workers=None keeps
    Dask's default worker count (what a Dask user gets)."""
    import dask
    ds = xr.open_zarr(path, chunks={})
    lat, lon, country = stations(ds, n_points)
    pts = ds.sel(lat=lat, lon=lon, method="nearest").assign_coords(country=country)
    means = features(pts).groupby("country").mean(["point"])
    settings = {"scheduler": "threads"}
    if workers is not None:
        settings["num_workers"] = workers
    with dask.config.set(**settings):
        # Zarr v2 as the Strata side writes (and the coordinates keep the
        # source's v2 compressors in their encoding).
        means.to_zarr(out, mode="w", zarr_format=2)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="8GB", help="dataset size (default 8GB; e.g. 0.2GB)")
    p.add_argument("--points", type=int, default=5000)
    p.add_argument("--work-dir", default="/tmp/weather_features")
    p.add_argument("--allowed-mem", default="2GB")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    p.add_argument("--only", choices=["strata", "dask"], help="run one contender only")
    p.add_argument("--skip-generate", action="store_true",
                   help="reuse the dataset already in --work-dir")
    args = p.parse_args(argv)
    size = parse_size(args.size)
    os.makedirs(args.work_dir, exist_ok=True)
    spec = strata.Spec(work_dir=os.path.join(args.work_dir, "strata-work"),
                       allowed_mem=args.allowed_mem, workers=args.workers)
    src = os.path.join(args.work_dir, "ifs.zarr")
    report = {"size_bytes": size, "points": args.points, "workers": args.workers}
    if not args.skip_generate:
        t = time.perf_counter()
        generate(src, size, spec)
        report["generate_s"] = time.perf_counter() - t
    ds = xr.open_zarr(src)
    report["dataset"] = {k: int(v) for k, v in ds.sizes.items()}
    report["dataset_bytes"] = int(sum(v.nbytes for v in ds.data_vars.values()))
    outs = {}
    for name in (["strata", "dask"] if args.only is None else [args.only]):
        out = os.path.join(args.work_dir, f"features-{name}.zarr")
        t = time.perf_counter()
        if name == "strata":
            report["strata_selection"] = run_strata(src, out, args.points, spec)
        else:
            run_dask(src, out, args.points, args.workers)
        report[f"{name}_s"] = time.perf_counter() - t
        outs[name] = out
    report["peak_rss_bytes_this_process"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss \
        * 1024
    if len(outs) == 2:
        a = xr.open_zarr(outs["strata"]).compute()
        b = xr.open_zarr(outs["dask"]).compute()
        xr.testing.assert_allclose(a.transpose(*b.dims), b, rtol=1e-5, atol=1e-4)
        report["agree"] = True
        report["countries"] = int(a.sizes["country"])
    print(json.dumps(report, indent=2))
    shutil.rmtree(spec.work_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
