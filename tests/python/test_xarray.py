"""xarray on Strata (issue 19): strata.Array as the data of xarray 2026.9's
variables (an Array API array, with strata as its chunk manager),
strata.xarray.open_zarr, and the .strata accessor.

Every xarray operation below is checked twice: it stays lazy (the counter of
strata computes stays 0 until .strata.compute()) and it equals the same
operation on numpy-backed xarray (values, NaNs, dtypes, coordinates and
attributes). Operations whose strata function arrives with issue 16 are
checked to raise NotImplementedError naming the numpy function until that
function is bound, and to be lazy and equal once it is."""
import json
import os
import uuid
import warnings

import numpy as np
import pandas as pd
import pytest

import strata
import strata.xarray as sx

xr = pytest.importorskip("xarray")

warnings.filterwarnings("ignore", category=RuntimeWarning)


def sample(rng, spec=None):
    """A numpy-backed DataArray with NaNs (one all-NaN column) and the same
    over a chunked strata array."""
    data = rng.normal(280.0, 5.0, size=(8, 5, 6))
    data[rng.random(data.shape) < 0.1] = np.nan
    data[:, 2, 3] = np.nan
    coords = {"time": pd.date_range("2001-01-01", periods=8, freq="MS"),
              "lat": np.linspace(-40.0, 40.0, 5), "lon": np.arange(6) * 60.0,
              "country": ("lon", np.array(["fr", "de", "fr", "it", "de", "fr"]))}
    attrs = {"units": "K"}
    npda = xr.DataArray(data, dims=("time", "lat", "lon"), coords=coords, name="t", attrs=attrs)
    sda = xr.DataArray(strata.asarray(data, chunks=(3, 2, 4), spec=spec), dims=npda.dims,
                       coords=coords, name="t", attrs=attrs)
    return npda, sda


def weights(d):
    return xr.DataArray(np.cos(np.deg2rad(d.lat.values)), dims="lat", coords={"lat": d.lat})


def assert_lazy(obj):
    if isinstance(obj, xr.Dataset):
        for v in obj.data_vars.values():
            assert isinstance(v.data, strata.Array), v
    else:
        assert isinstance(obj.data, strata.Array), type(obj.data)


def assert_same(actual, expected, computes):
    """actual (strata-backed) computed in one compute equals expected."""
    computes.reset()
    got = actual.strata.compute()
    assert computes.n == 1
    assert not isinstance(got.data if isinstance(got, xr.DataArray) else
                          next(iter(got.data_vars.values())).data, strata.Array)
    xr.testing.assert_allclose(got, expected, rtol=1e-10)
    assert got.dtype == expected.dtype if isinstance(got, xr.DataArray) else True
    xr.testing.assert_identical(got.coords.to_dataset(), expected.coords.to_dataset())
    assert got.attrs == expected.attrs


# Operations that are lazy and equal with the strata functions on main.
LAZY = {
    "isel slices": lambda d: d.isel(time=slice(1, 6, 2), lat=0),
    "isel list": lambda d: d.isel(lon=[0, 2, 5]),
    "isel negative step": lambda d: d.isel(lat=slice(None, None, -1)),
    "sel labels": lambda d: d.sel(lat=slice(-20, 20), time="2001-03"),
    "sel nearest": lambda d: d.sel(lat=3.1, lon=130, method="nearest"),
    "sel nearest list": lambda d: d.sel(lat=[3.1, -39, 21], method="nearest"),
    "arithmetic": lambda d: (d * 2 + 1) / 3 - d ** 2 + 1.5 // d,
    "numpy ufuncs": lambda d: np.sqrt(np.abs(d)) + np.exp(-d / 300) + np.maximum(d, 280.0),
    "numpy on ndarray and Array": lambda d: np.ones(6) * d,
    "comparison": lambda d: (d > 280) & (d <= 285) | ~(d != d),
    # xarray hands chunked arrays to a function only when dask= says how.
    "apply_ufunc allowed": lambda d: xr.apply_ufunc(np.sin, d, dask="allowed"),
    "apply_ufunc parallelized": lambda d: xr.apply_ufunc(np.sin, d, dask="parallelized",
                                                         output_dtypes=[d.dtype]),
    "where": lambda d: d.where(d > 280),
    "where other": lambda d: d.where(d > 280, -1.0),
    "xr.where": lambda d: xr.where(d > 280, d, 0.0),
    "fillna": lambda d: d.fillna(0.0),
    "isnull": lambda d: d.isnull(),
    "notnull": lambda d: d.notnull(),
    "astype": lambda d: d.astype("float32"),
    "clip": lambda d: d.clip(275, 285),
    "round": lambda d: d.round(1),
    "mean": lambda d: d.mean("time"),
    "mean all": lambda d: d.mean(),
    "mean skipna=False": lambda d: d.mean("lat", skipna=False),
    "sum": lambda d: d.sum(["lat", "lon"]),
    "sum min_count": lambda d: d.sum("time", min_count=7),
    "max": lambda d: d.max("lat"),
    "min": lambda d: d.min(["time", "lon"]),
    "std": lambda d: d.std("time"),
    "std ddof": lambda d: d.std("time", ddof=1),
    "var": lambda d: d.var("lon"),
    "prod": lambda d: (d / 280).prod("lat"),
    "count": lambda d: d.count("time"),
    "anomaly": lambda d: d - d.mean("time"),
    "groupby anomaly": lambda d: d.groupby("time.season") - d.groupby("time.season").mean(),
    "groupby mean (xarray's, op per group)": lambda d: d.groupby("time.season").mean(),
    "resample": lambda d: d.resample(time="3MS").mean(),
    "coarsen": lambda d: d.coarsen(time=2).mean(),
    "rolling": lambda d: d.rolling(time=3).mean(),
    "rolling center": lambda d: d.rolling(time=3, center=True, min_periods=1).sum(),
    "diff": lambda d: d.diff("time"),
    "shift": lambda d: d.shift(time=2),
    "roll": lambda d: d.roll(lon=2, roll_coords=False),
    "pad": lambda d: d.pad(time=(1, 2)),
    "weighted mean": lambda d: d.weighted(weights(d)).mean("lat"),
    "weighted sum": lambda d: d.weighted(weights(d)).sum(["lat", "lon"]),
    "concat": lambda d: xr.concat([d, d * 2], dim="time"),
    "concat new dim": lambda d: xr.concat([d, d + 1], dim="run"),
    "dot": lambda d: xr.dot(d, d, dim="lon"),
    "dot weights": lambda d: xr.dot(d.fillna(0), weights(d)),
    "transpose": lambda d: d.transpose("lon", "time", "lat"),
    "stack": lambda d: d.stack(z=("lat", "lon")),
    "reindex": lambda d: d.reindex(lat=[-40.0, 0.0, 99.0]),
    "broadcast": lambda d: xr.broadcast(d.isel(time=0), d.isel(lat=0))[0],
    "expand_dims": lambda d: d.expand_dims(run=2),
    "squeeze": lambda d: d.isel(lat=[1]).squeeze("lat"),
    "dataset": lambda d: xr.Dataset({"t": d, "u": d * 2}).mean("time"),
    "dataset arithmetic": lambda d: xr.Dataset({"t": d}) - xr.Dataset({"t": d}).mean(),
}

def has_pointwise_indexing():
    """Whether strata.Array takes numpy's advanced indexing with integer
    arrays on several axes (issue 16)."""
    x = strata.asarray(np.zeros((2, 2)))
    try:
        x[np.array([0, 1]), np.array([1, 0])]
    except IndexError:
        return False
    return True


# Operations whose strata function is issue 16's: (operation, the strata
# functions they need, the numpy function the error names). Not here:
# idxmax/idxmin, which index a pandas coordinate with the argmax result and
# so compute it in xarray itself.
NEEDS_ISSUE_16 = {
    "isel two lists": (lambda d: d.isel(lat=[0, 2, 4], lon=[1, 3]), has_pointwise_indexing,
                       None),
    "sel pointwise": (lambda d: d.sel(lat=xr.DataArray([3.1, -39.0], dims="p"),
                                      lon=xr.DataArray([130.0, 10.0], dims="p"),
                                      method="nearest"), has_pointwise_indexing, None),
    "median": (lambda d: d.median("time"), ("nanmedian",), "numpy.nanmedian"),
    "quantile": (lambda d: d.quantile(0.5, dim="time"), ("nanquantile",), "numpy.nanquantile"),
    "quantiles two dims": (lambda d: d.quantile([0.1, 0.9], dim=["lat", "lon"],
                                                method="nearest"),
                           ("nanquantile",), "numpy.nanquantile"),
    "median two dims": (lambda d: d.median(["time", "lon"]), ("nanmedian",), "numpy.nanmedian"),
    "argmax": (lambda d: d.argmax("lat"), ("nanargmax",), "numpy.nanargmax"),
    "cumsum": (lambda d: d.cumsum("time"), ("cumulative_sum",), "numpy.nancumsum"),
}


@pytest.mark.parametrize("name", list(LAZY))
def test_lazy_and_equal(name, rng, computes):
    npda, sda = sample(rng)
    op = LAZY[name]
    # xarray's own group-by and resample: with flox installed xarray hands
    # chunked arrays to flox, which knows Dask and Cubed only
    # (docs/xarray.md; test_xarray_parity.py checks that path).
    with xr.set_options(use_flox=False):
        computes.reset()
        actual = op(sda)
        assert computes.n == 0, f"{name} computed {computes.n} times"
        assert_lazy(actual)
        assert_same(actual, op(npda), computes)


@pytest.mark.parametrize("name", list(NEEDS_ISSUE_16))
def test_needs_issue_16(name, rng, computes):
    op, needed, numpy_name = NEEDS_ISSUE_16[name]
    npda, sda = sample(rng)
    available = needed() if callable(needed) else all(hasattr(strata, f) for f in needed)
    computes.reset()
    if not available:
        with pytest.raises((NotImplementedError, IndexError)) as e:
            op(sda)
        if numpy_name:
            assert numpy_name in str(e.value)
        assert computes.n == 0
        return
    actual = op(sda)
    assert computes.n == 0
    assert_lazy(actual)
    assert_same(actual, op(npda), computes)


def test_apply_ufunc_without_dask_is_refused_as_for_dask(rng, computes):
    _, sda = sample(rng)
    with pytest.raises(ValueError, match="apply_ufunc encountered a chunked array"):
        xr.apply_ufunc(np.sin, sda)
    assert computes.n == 0


def test_repr_is_lazy(rng, computes):
    _, sda = sample(rng)
    text = repr(sda) + repr(xr.Dataset({"t": sda})) + sda._repr_html_()
    assert "strata.Array" in text
    assert computes.n == 0


def test_values_and_xarray_compute(rng, computes):
    npda, sda = sample(rng)
    # xarray's compute() runs strata (the chunk manager): one compute, a
    # numpy-backed copy; the original stays lazy.
    got = sda.compute()
    assert computes.n == 1
    assert isinstance(got.data, np.ndarray) and isinstance(sda.data, strata.Array)
    xr.testing.assert_identical(got, npda)
    # A Dataset's compute() is one strata compute for every variable.
    computes.reset()
    ds = xr.Dataset({"a": sda * 2, "b": sda.mean("time")}).compute()
    assert computes.n == 1
    xr.testing.assert_allclose(ds, xr.Dataset({"a": npda * 2, "b": npda.mean("time")}))
    # .values computes that one array; load() computes in place.
    computes.reset()
    np.testing.assert_array_equal(sda.values, npda.values)
    assert computes.n == 1
    loaded = sda.copy()
    loaded.load()
    assert computes.n == 2 and isinstance(loaded.data, np.ndarray)


# ---------------------------------------------------------------- numpy protocols

def test_numpy_functions_build_lazy_arrays(rng, computes):
    a = rng.normal(size=(6, 4))
    a[1, 2] = np.nan
    x = strata.asarray(a, chunks=(4, 3))
    cases = {
        "nanmean": (np.nanmean(x, axis=0), np.nanmean(a, axis=0)),
        "nansum": (np.nansum(x, axis=(0, 1)), np.nansum(a, axis=(0, 1))),
        "nanmax": (np.nanmax(x, axis=1), np.nanmax(a, axis=1)),
        "nanmin": (np.nanmin(x), np.nanmin(a)),
        "nanstd": (np.nanstd(x, axis=0, ddof=1), np.nanstd(a, axis=0, ddof=1)),
        "nanvar": (np.nanvar(x, axis=1, keepdims=True), np.nanvar(a, axis=1, keepdims=True)),
        "mean": (np.mean(x, axis=1), np.mean(a, axis=1)),
        "sum": (np.sum(x, axis=0, keepdims=True), np.sum(a, axis=0, keepdims=True)),
        "add.reduce": (np.add.reduce(x), np.add.reduce(a)),
        "maximum.reduce": (np.maximum.reduce(x, axis=1), np.maximum.reduce(a, axis=1)),
        "moveaxis": (np.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1)),
        "transpose": (np.transpose(x), np.transpose(a)),
        "reshape": (np.reshape(x, (4, 6)), np.reshape(a, (4, 6))),
        "concatenate": (np.concatenate([x, x], axis=1), np.concatenate([a, a], axis=1)),
        "stack": (np.stack([x, x]), np.stack([a, a])),
        "where": (np.where(np.isnan(x), 0.0, x), np.where(np.isnan(a), 0.0, a)),
        "zeros_like": (np.zeros_like(x, dtype=bool), np.zeros_like(a, dtype=bool)),
        "einsum": (np.einsum("ij,j->i", x, np.ones(4)), np.einsum("ij,j->i", a, np.ones(4))),
        "einsum batch": (np.einsum("...ij,...ij->...i", x, x),
                         np.einsum("...ij,...ij->...i", a, a)),
        "pad": (np.pad(x, [(1, 0), (0, 2)], mode="constant", constant_values=np.nan),
                np.pad(a, [(1, 0), (0, 2)], mode="constant", constant_values=np.nan)),
        "sliding_window_view": (
            np.lib.stride_tricks.sliding_window_view(x, 3, axis=0),
            np.lib.stride_tricks.sliding_window_view(a, 3, axis=0)),
        "invert": (np.invert(np.isnan(x)), np.invert(np.isnan(a))),
        "float32 and a numpy scalar": (np.multiply(x.astype("float32"), np.float64(2.0)),
                                       np.multiply(a.astype("float32"), np.float64(2.0))),
        "ndarray + Array": (np.arange(4.0) + x, np.arange(4.0) + a),
        "isclose": (np.isclose(x, x + 1e-9), np.isclose(a, a + 1e-9)),
        "diff": (np.diff(x, axis=0), np.diff(a, axis=0)),
        "round": (np.around(x, 2), np.around(a, 2)),
    }
    for name, (lazy, _) in cases.items():
        assert isinstance(lazy, strata.Array), name
    assert computes.n == 0
    for name, (lazy, expected) in cases.items():
        got = lazy.compute()
        assert got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
        np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True, err_msg=name)
    assert np.result_type(x, 1.0) == np.float64
    # numpy 2's promotion (NEP 50): a 0-d float64 array is not weak.
    assert np.result_type(x.astype("float32"), strata.asarray(np.float64(np.nan))) == \
        np.result_type(a.astype("float32"), np.asarray(np.float64(np.nan)))


def test_numpy_refusals_are_clear(rng, computes):
    x = strata.asarray(rng.normal(size=(4, 4)), chunks=2)
    with pytest.raises(TypeError, match="out= is not supported"):
        np.add(x, 1, out=np.empty((4, 4)))
    with pytest.raises(TypeError, match="out= is not supported"):
        np.sum(x, out=np.empty(()))
    with pytest.raises(NotImplementedError, match="numpy.linalg.svd"):
        np.linalg.svd(x)
    with pytest.raises(NotImplementedError, match="numpy.fft.fft"):
        np.fft.fft(x)
    with pytest.raises(NotImplementedError, match="numpy.add.outer"):
        np.add.outer(x, x)
    if hasattr(strata, "pad"):  # a mode numpy does not know: numpy's ValueError, named
        with pytest.raises(ValueError, match="unknown mode 'bogus'"):
            np.pad(x, 1, mode="bogus")
    else:
        with pytest.raises(NotImplementedError, match="numpy.pad"):
            np.pad(x, 1, mode="reflect")
    assert computes.n == 0


# ---------------------------------------------------------------- open_zarr

def xarray_dataset(rng):
    t = rng.normal(280, 5, size=(6, 5, 8))
    t[rng.random(t.shape) < 0.1] = np.nan
    return xr.Dataset(
        {"t": (("time", "lat", "lon"), t, {"units": "K", "long_name": "temperature"}),
         "packed": (("time", "lat", "lon"), np.where(np.isnan(t), np.nan, t * 10)),
         "q": (("time", "lat", "lon"), rng.integers(0, 100, size=t.shape).astype("int16")),
         "f32": (("lat", "lon"), rng.normal(size=(5, 8)).astype("float32")),
         "land": (("lat", "lon"), rng.random((5, 8)) > 0.5)},
        coords={"time": pd.date_range("2020-01-01", periods=6, freq="6h"),
                "lat": np.linspace(-50, 50, 5), "lon": np.arange(8) * 45.0,
                "station": ("lon", np.arange(8) * 3), "height": 2.0},
        attrs={"title": "test", "n": 3, "history": ["a", "b"]})


@pytest.mark.parametrize("consolidated", [True, False])
def test_open_zarr_of_xarray_written_dataset(tmp_path, rng, computes, consolidated):
    ds = xarray_dataset(rng)
    ds.packed.encoding = {"dtype": "int16", "scale_factor": 0.1, "add_offset": 2800.0,
                          "_FillValue": -32768}
    ds.t.encoding = {"chunks": (2, 5, 4)}
    path = str(tmp_path / "ds.zarr")
    ds.to_zarr(path, consolidated=consolidated)
    if not consolidated:
        assert not os.path.exists(os.path.join(path, ".zmetadata"))
    computes.reset()
    ours = sx.open_zarr(path)
    n_coords = computes.n
    assert n_coords == 5, "the coordinates are read eagerly, one compute each"
    for name in ("t", "packed", "q", "f32", "land"):
        assert isinstance(ours[name].data, strata.Array), name
    assert ours.t.data.chunksize == (2, 5, 4)
    assert ours.t.encoding["chunks"] == (2, 5, 4)
    assert ours.t.encoding["preferred_chunks"] == {"time": 2, "lat": 5, "lon": 4}
    assert ours.packed.encoding["scale_factor"] == 0.1
    assert ours.packed.encoding["dtype"] == np.dtype("int16")
    theirs = xr.open_zarr(path, consolidated=consolidated)
    for name in theirs.variables:
        assert ours[name].dtype == theirs[name].dtype, name
        assert set(ours[name].encoding) == set(theirs[name].encoding), name
    computes.reset()
    got = ours.strata.compute()
    assert computes.n == 1
    xr.testing.assert_identical(got, theirs.compute())


def test_open_zarr_chunks_and_spec(tmp_path, rng, spec):
    ds = xarray_dataset(rng)
    path = str(tmp_path / "ds.zarr")
    ds.to_zarr(path)
    ours = sx.open_zarr(path, chunks={"time": 4, "lon": -1}, spec=spec)
    assert ours.t.data.chunksize[0] == 4 and ours.t.data.chunksize[2] == 8
    assert ours.t.data.spec.allowed_mem == spec.allowed_mem
    xr.testing.assert_identical(ours.strata.compute(), xr.open_zarr(path).compute())
    ours = sx.open_zarr(path, drop_variables=["q", "land"], decode_cf=False)
    assert "q" not in ours and "land" not in ours
    xr.testing.assert_identical(ours.strata.compute(),
                                xr.open_zarr(path, decode_cf=False,
                                             drop_variables=["q", "land"]).compute())


def test_open_zarr_bad_input(tmp_path, rng):
    with pytest.raises(FileNotFoundError, match="no Zarr group"):
        sx.open_zarr(str(tmp_path / "missing.zarr"))
    (tmp_path / "plain").mkdir()
    with pytest.raises(ValueError, match="not a Zarr group"):
        sx.open_zarr(str(tmp_path / "plain"))
    with pytest.raises(TypeError, match="path"):
        sx.open_zarr(42)
    with pytest.raises(ValueError, match="unsupported URL scheme"):
        sx.open_zarr("gs://bucket/ifs.zarr")   # s3:// works: test_xarray_s3.py
    path = str(tmp_path / "nodims.zarr")
    xarray_dataset(rng).to_zarr(path, consolidated=False, zarr_format=2)
    with pytest.raises(ValueError, match="no consolidated metadata"):
        sx.open_zarr(path, consolidated=True)
    attrs = os.path.join(path, "t", ".zattrs")
    with open(attrs) as f:
        a = json.load(f)
    del a["_ARRAY_DIMENSIONS"]
    with open(attrs, "w") as f:
        json.dump(a, f)
    with pytest.raises(ValueError, match="'t' has no dimension names"):
        sx.open_zarr(path)
    with pytest.raises(TypeError, match="strata.Spec"):
        sx.open_zarr(path, spec="2GB")


# ---------------------------------------------------------------- the accessor

def test_accessor_to_zarr_reads_back_with_xarray(tmp_path, place, rng, computes):
    ds = xarray_dataset(rng).assign_coords(country=("lon", np.array(list("abcdabcd"))))
    path = str(tmp_path / "in.zarr")
    ds.to_zarr(path)
    lazy = sx.open_zarr(path)
    derived = xr.Dataset({"t_c": lazy.t - 273.15, "wind": np.sqrt(lazy.t ** 2 + lazy.packed ** 2),
                          "q": lazy.q, "land": lazy.land}, attrs=lazy.attrs)
    derived.t_c.attrs["units"] = "degC"
    out = place("out.zarr")
    computes.reset()
    derived.strata.to_zarr(out.target)
    assert computes.n == 1, "one compute writes every variable and coordinate"
    expected = xr.Dataset({"t_c": ds.t - 273.15, "wind": np.sqrt(ds.t ** 2 + ds.packed ** 2),
                           "q": ds.q, "land": ds.land}, attrs=ds.attrs)
    expected.t_c.attrs["units"] = "degC"
    back = out.readable(tmp_path)
    xr.testing.assert_identical(xr.open_zarr(back).compute(), expected)
    xr.testing.assert_identical(xr.open_zarr(back, consolidated=False).compute(), expected)
    # And strata's own reader agrees.
    xr.testing.assert_identical(sx.open_zarr(out.target).strata.compute(), expected)
    assert [n for n in out.files() if "strata" in n] == []
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []
    # A DataArray's accessor writes a one-variable dataset.
    da = place("da.zarr")
    (lazy.t * 2).strata.to_zarr(da.target, name="t2")
    xr.testing.assert_identical(sx.open_zarr(da.target).t2.strata.compute(),
                                (ds.t * 2).rename("t2"))


def test_accessor_to_zarr_modes_and_refusals(tmp_path, rng):
    npda, sda = sample(rng)
    out = str(tmp_path / "out.zarr")
    sda.strata.to_zarr(out)
    with pytest.raises(FileExistsError, match="mode='w'"):
        sda.strata.to_zarr(out)
    (sda * 2).strata.to_zarr(out, mode="w")
    xr.testing.assert_allclose(xr.open_zarr(out).t.compute(), npda * 2)
    (tmp_path / "not_zarr").mkdir()
    (tmp_path / "not_zarr" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a Zarr group"):
        sda.strata.to_zarr(str(tmp_path / "not_zarr"), mode="w")
    assert (tmp_path / "not_zarr" / "keep.txt").read_text() == "mine"
    # A variable strata cannot write fails before anything is written, and
    # leaves nothing behind.
    bad = xr.Dataset({"t": sda, "name": ("lon", np.array([{}, 1, 2, 3, 4, 5], dtype=object))})
    with pytest.raises((TypeError, ValueError), match="'name'"):
        bad.strata.to_zarr(str(tmp_path / "bad.zarr"))
    assert not os.path.exists(tmp_path / "bad.zarr")
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []


def test_to_zarr_fill_value_and_dimension_names(tmp_path):
    x = strata.asarray(np.array([[0.0, np.nan], [1.0, 2.0]]), chunks=1)
    strata.to_zarr(x, str(tmp_path / "a"), fill_value=float("nan"), dimension_names=["y", "x"],
                   zarr_format=3)
    with open(tmp_path / "a" / "zarr.json") as f:
        meta = json.load(f)
    assert meta["dimension_names"] == ["y", "x"] and meta["fill_value"] == "NaN"
    np.testing.assert_array_equal(strata.from_zarr(str(tmp_path / "a")).compute(), x.compute())
    strata.to_zarr(x, str(tmp_path / "b"), fill_value="null")
    with open(tmp_path / "b" / ".zarray") as f:
        assert json.load(f)["fill_value"] is None
    # Every chunk is written when the fill value is null (the zero chunk too).
    assert sorted(n for n in os.listdir(tmp_path / "b") if not n.startswith(".")) == \
        ["0.0", "0.1", "1.0", "1.1"]
    # Edge chunks of a null-filled array are padded (with zeros, as zarr-python's are).
    y = strata.asarray(np.arange(15, dtype="int16").reshape(3, 5), chunks=(2, 2))
    strata.to_zarr(y, str(tmp_path / "edges"), fill_value="null")
    np.testing.assert_array_equal(strata.from_zarr(str(tmp_path / "edges")).compute(),
                                  y.compute())
    with pytest.raises(ValueError, match="fill_value"):
        strata.to_zarr(x, str(tmp_path / "c"), fill_value="zero")
    with pytest.raises(TypeError, match="fill_value"):
        strata.to_zarr(x, str(tmp_path / "c"), fill_value=[1])
    with pytest.raises(ValueError, match="dimension_names"):
        strata.to_zarr(x, str(tmp_path / "c"), dimension_names=["y"])


def zarr_meta(path, name):
    """Array `name`'s metadata document in the group at `path` (v2 or v3)."""
    for key in (".zarray", "zarr.json"):
        p = os.path.join(path, name, key)
        if os.path.exists(p):
            with open(p) as f:
                return json.load(f)
    raise FileNotFoundError(f"no Zarr array {name!r} in {path}")


def written_chunks(path, name):
    meta = zarr_meta(path, name)
    if "chunks" in meta:
        return meta["chunks"]
    return meta["chunk_grid"]["configuration"]["chunk_shape"]


def test_accessor_writes_the_chunks_a_user_names(tmp_path, rng, computes):
    """open_zarr(chunks=), .chunk() and encoding= chunks win over the stored
    chunks a reader keeps in the encoding (which once were written again
    whatever the user asked for)."""
    ds = xarray_dataset(rng)
    ds.t.encoding = {"chunks": (2, 5, 4)}
    src = str(tmp_path / "src.zarr")
    ds.to_zarr(src, zarr_format=2)
    expected = xr.open_zarr(src).compute()

    def out(name):
        return str(tmp_path / name)
    sx.open_zarr(src, chunks={"time": 3, "lon": -1}).strata.to_zarr(out("named.zarr"))
    assert written_chunks(out("named.zarr"), "t") == [3, 5, 8]
    # .chunk() on a Strata-backed dataset with strata as xarray's chunk
    # manager (by name, or xarray's chunk_manager option: without either,
    # xarray hands every variable to its default manager, Dask) keeps strata
    # arrays, lazily, and the accessor writes them in those chunks, in one
    # compute.
    lazy = sx.open_zarr(src)
    computes.reset()
    rechunked = lazy.chunk({"time": 6, "lat": 1}, chunked_array_type="strata")
    assert computes.n == 0
    assert_lazy(rechunked)
    assert rechunked.t.data.chunksize == (6, 1, 4)
    rechunked.strata.to_zarr(out("chunk.zarr"))
    assert computes.n == 1
    assert written_chunks(out("chunk.zarr"), "t") == [6, 1, 4]
    # DataArray.chunk too; and the chunks given to to_zarr win over the data's.
    with xr.set_options(chunk_manager="strata"):
        assert isinstance(lazy.t.chunk({"lon": 2}).data, strata.Array)
    rechunked.strata.to_zarr(out("encoding.zarr"), encoding={"t": {"chunks": (1, 5, 8)}})
    assert written_chunks(out("encoding.zarr"), "t") == [1, 5, 8]
    # Data in memory keeps the stored chunks of its encoding, as xarray's writer.
    expected.strata.to_zarr(out("memory.zarr"))
    assert written_chunks(out("memory.zarr"), "t") == [2, 5, 4]
    for name in ("named", "chunk", "encoding", "memory"):
        xr.testing.assert_identical(xr.open_zarr(out(f"{name}.zarr")).compute(), expected)
    with pytest.raises(ValueError, match="'t': encoding chunks"):
        lazy.strata.to_zarr(out("bad.zarr"), encoding={"t": {"chunks": (2, 0, 4)}})
    # Dask arrays (asked for by name) are refused, not loaded whole.
    on_dask = lazy.chunk({"time": 2}, chunked_array_type="dask")
    with pytest.raises(TypeError, match="variable '\\w+' holds a dask.*not a strata array"):
        on_dask.strata.to_zarr(out("bad.zarr"))
    assert not os.path.exists(out("bad.zarr"))


def test_accessor_writes_the_codecs_a_user_names(tmp_path, rng):
    """encoding= compressors and filters (numcodecs' or zarr-python 3's
    codecs) are written, as xarray writes them, not dropped for the codec=
    default; a codec strata cannot write is refused before anything is."""
    import numcodecs
    import zarr
    ds = xarray_dataset(rng)
    src = str(tmp_path / "src.zarr")
    ds.to_zarr(src, zarr_format=2)
    lazy = sx.open_zarr(src)
    encoding = {"t": {"compressors": (numcodecs.Zstd(level=5),)},
                "packed": {"compressors": (numcodecs.Blosc(cname="zstd", clevel=3,
                                                           shuffle=numcodecs.Blosc.BITSHUFFLE),)},
                "land": {"filters": (numcodecs.Shuffle(elementsize=1),),
                         "compressors": (numcodecs.GZip(level=4),)},
                "f32": {"compressors": None}}
    ours, ref = str(tmp_path / "ours.zarr"), str(tmp_path / "ref.zarr")
    lazy.strata.to_zarr(ours, encoding=encoding, codec="zlib:level=1")
    ds.to_zarr(ref, encoding=encoding, zarr_format=2)
    for name in encoding:
        mine, theirs = zarr_meta(ours, name), zarr_meta(ref, name)
        assert (mine["compressor"], mine["filters"]) == (theirs["compressor"],
                                                         theirs["filters"]), name
    assert zarr_meta(ours, "q")["compressor"] == {"id": "zlib", "level": 1}, "codec= for the rest"
    xr.testing.assert_identical(xr.open_zarr(ours).compute(), xr.open_zarr(ref).compute())
    # zarr-python 2's singular "compressor", and zarr-python 3's codecs in v3.
    lazy.strata.to_zarr(str(tmp_path / "one.zarr"),
                        encoding={"t": {"compressor": numcodecs.Zlib(level=7)}})
    assert zarr_meta(str(tmp_path / "one.zarr"), "t")["compressor"] == {"id": "zlib",
                                                                        "level": 7}
    v3 = {"t": {"compressors": (zarr.codecs.ZstdCodec(level=4),)},
          "q": {"compressors": (zarr.codecs.BloscCodec(cname="lz4", clevel=2,
                                                       shuffle="shuffle"),)}}
    ours, ref = str(tmp_path / "ours3.zarr"), str(tmp_path / "ref3.zarr")
    lazy.strata.to_zarr(ours, encoding=v3, zarr_format=3)
    ds.to_zarr(ref, encoding=v3, zarr_format=3)
    codecs = zarr_meta(ours, "t")["codecs"]
    assert codecs[-1] == {"name": "zstd", "configuration": {"level": 4, "checksum": False}}
    blosc = zarr_meta(ours, "q")["codecs"][-1]
    assert blosc["name"] == "blosc" and blosc["configuration"]["cname"] == "lz4" and \
        blosc["configuration"]["clevel"] == 2 and blosc["configuration"]["shuffle"] == "shuffle"
    xr.testing.assert_identical(xr.open_zarr(ours).compute(), xr.open_zarr(ref).compute())
    # What strata does not write is refused, naming the variable and the codec.
    bad = str(tmp_path / "bad.zarr")
    with pytest.raises(ValueError, match="variable 't'.*codec 'lzma'"):
        lazy.strata.to_zarr(bad, encoding={"t": {"compressors": (numcodecs.LZMA(),)}})
    with pytest.raises(ValueError, match="both 'compressor' and 'compressors'"):
        lazy.strata.to_zarr(bad, encoding={"t": {"compressor": None, "compressors": None}})
    assert not os.path.exists(bad)


def test_accessor_zarr_v3_round_trip(tmp_path, rng):
    ds = xarray_dataset(rng)
    src = str(tmp_path / "in.zarr")
    ds.to_zarr(src)
    out = str(tmp_path / "v3.zarr")
    sx.open_zarr(src).strata.to_zarr(out, zarr_format=3)
    with open(os.path.join(out, "t", "zarr.json")) as f:
        assert json.load(f)["dimension_names"] == ["time", "lat", "lon"]
    for consolidated in (None, False):
        xr.testing.assert_identical(sx.open_zarr(out, consolidated=consolidated)
                                    .strata.compute(), xr.open_zarr(src).compute())


def test_accessor_compute_to_memory_plan_visualize(tmp_path, rng, computes):
    npda, sda = sample(rng)
    ds = xr.Dataset({"a": sda * 2, "b": sda.mean("time")})
    computes.reset()
    p = ds.strata.plan()
    assert p.num_tasks > 0
    svg = ds.strata.visualize(filename=str(tmp_path / "plan"))
    assert open(svg).read().lstrip().startswith("<")
    assert computes.n == 0
    mem = ds.strata.to_memory()
    assert computes.n == 1
    assert isinstance(mem.a.data, strata.Array) and mem.a.data.chunksize == (3, 2, 4)
    computes.reset()
    xr.testing.assert_allclose((mem.a + 1).strata.compute(), npda * 2 + 1)
    assert computes.n == 1
    with pytest.raises(ValueError, match="no strata-backed"):
        npda.strata.plan()
    xr.testing.assert_identical(npda.strata.compute(), npda)


# ---------------------------------------------------------------- region writes and appends

def store_files(path):
    """Every file under path with its bytes: a store an error must leave
    exactly as it was."""
    out = {}
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


def test_strata_to_zarr_region_and_append(tmp_path, rng):
    import zarr
    path = str(tmp_path / "a.zarr")
    base = np.full((20, 14), -1.0)
    z = zarr.open_array(path, mode="w", shape=base.shape, chunks=(6, 5), dtype="f8",
                        fill_value=0)
    z[...] = base
    expected = base.copy()
    patch = rng.normal(size=(9, 7))
    # Slices as zarr-python's z[4:13, 3:10] = patch, straddling chunks.
    strata.to_zarr(strata.asarray(patch, chunks=(4, 4)), path, region=(slice(4, 13), slice(3, 10)))
    expected[4:13, 3:10] = patch
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], expected)
    # Origins as ints, None and negative bounds, a lazy handle, an int array into floats.
    h = strata.to_zarr(strata.asarray(patch * 2, chunks=(3, 7)), path, region=(11, slice(-7, None)),
                       compute=False)
    strata.compute(h)
    expected[11:20, 7:14] = patch * 2
    ints = np.arange(14).reshape(1, 14).astype("int32")
    strata.to_zarr(strata.asarray(ints), path, region=(slice(0, 1), slice(None)))
    expected[0] = ints[0]
    np.testing.assert_array_equal(strata.from_zarr(path).compute(), expected)
    # Append twice, along either axis (negative axes count from the end).
    more = rng.normal(size=(5, 14))
    strata.to_zarr(strata.asarray(more, chunks=(2, 14)), path, append_dim=0)
    expected = np.concatenate([expected, more])
    cols = rng.normal(size=(25, 3))
    strata.to_zarr(strata.asarray(cols, chunks=(25, 2)), path, append_dim=-1)
    expected = np.concatenate([expected, cols], axis=1)
    z = zarr.open_array(path, mode="r")
    assert z.shape == (25, 17) and z.chunks == (6, 5)
    np.testing.assert_array_equal(z[...], expected)
    # The method takes them too; a 0-d array.
    strata.asarray(np.ones((25, 3))).to_zarr(path, region=(0, 14))
    expected[:, 14:] = 1
    np.testing.assert_array_equal(strata.from_zarr(path).compute(), expected)
    scalar = str(tmp_path / "s.zarr")
    strata.to_zarr(strata.asarray(np.float64(1.5)), scalar)
    strata.to_zarr(strata.asarray(np.float64(2.5)), scalar, region=())
    assert strata.from_zarr(scalar).compute() == 2.5


def test_strata_to_zarr_region_and_append_refusals(tmp_path, rng):
    path = str(tmp_path / "a.zarr")
    strata.to_zarr(strata.asarray(np.arange(200.0).reshape(20, 10), chunks=(6, 5)), path)
    x = strata.asarray(rng.normal(size=(9, 7)), chunks=(4, 4))
    before = store_files(path)

    def refuse(exc, match, y=x, where=path, **kwargs):
        with pytest.raises(exc, match=match):
            strata.to_zarr(y, where, **kwargs)
        assert store_files(path) == before

    refuse(ValueError, "region has 1 entries for an array of 2", region=(slice(0, 9),))
    refuse(ValueError, "x has rank 1, the array", y=strata.ones(9), region=(0,))
    refuse(ValueError, "x has 1 dimensions, the array", y=strata.ones(9), region=(slice(0, 9),))
    refuse(ValueError, "x has rank 3", y=strata.ones((2, 10, 1)), append_dim=0)
    refuse(ValueError, r"region\[0\] is slice\(15, 24, None\), outside axis 0",
           region=(slice(15, 24), slice(0, 7)))
    refuse(ValueError, r"region\[1\] is slice\(-12, -5, None\), outside axis 1",
           region=(slice(0, 9), slice(-12, -5)))
    refuse(ValueError, "outside the array", region=(15, 0))
    refuse(ValueError, "negative origin on axis 0", region=(-1, 0))
    refuse(ValueError, "its step must be 1", region=(slice(0, 18, 2), slice(0, 7)))
    refuse(ValueError, r"region\[1\] is slice\(0, 5, None\), 5 elements, but x has 7",
           region=(slice(0, 9), slice(0, 5)))
    ints = str(tmp_path / "i.zarr")
    strata.to_zarr(strata.zeros((9, 7), dtype="int32"), ints)
    with pytest.raises(ValueError, match="x has dtype float64, the array int32.*same_kind"):
        strata.to_zarr(x, ints, region=(0, 0))
    missing = str(tmp_path / "missing.zarr")
    refuse(FileNotFoundError, f"to_zarr {missing}: {missing} does not exist", where=missing,
           region=(slice(0, 9), slice(0, 7)))
    refuse(FileNotFoundError, f"to_zarr {missing}: {missing} does not exist", where=missing,
           region=(0, 0))
    refuse(FileNotFoundError, f"to_zarr {missing}: {missing} does not exist", where=missing,
           append_dim=0)
    (tmp_path / "empty").mkdir()
    refuse(FileNotFoundError, "no Zarr array or group", where=str(tmp_path / "empty"),
           region=(slice(0, 9), 0))
    refuse(ValueError, "not both", region=(0, 0), append_dim=0)
    refuse(ValueError, "the other extents differ", append_dim=0)
    refuse(ValueError, "append_dim=2 is out of range", append_dim=2)
    refuse(TypeError, "append_dim must be an axis", append_dim="0")
    refuse(TypeError, "append_dim must be an axis", append_dim=True)
    refuse(TypeError, "region must be a tuple", region="0:9,0:7")
    refuse(TypeError, r"region\[0\] must be a slice of ints or an int", region=(0.5, 0))
    refuse(TypeError, r"region\[1\] must be a slice of ints or an int",
           region=(0, slice("a", None)))
    refuse(ValueError, "codec, attrs describe a new array", region=(0, 0), codec="zstd",
           attrs={"a": 1})
    refuse(ValueError, "overwrite describe a new array", append_dim=0, overwrite=True)
    refuse(ValueError, "(?i)read", y=strata.from_zarr(path)[:9, :7] * 2, region=(9, 3))
    assert not os.path.exists(tmp_path / "missing.zarr")


def test_region_casting_is_numpys_same_kind(tmp_path):
    """x is cast to the stored dtype exactly when numpy's same_kind casting
    allows it (zarr-python casts anything; a float written into ints would
    lose its fraction silently)."""
    dtypes = ["bool", "uint8", "int8", "int32", "uint64", "float32", "float64", "complex64"]
    for to in dtypes:
        strata.to_zarr(strata.zeros((2,), dtype=to), str(tmp_path / to))
    for frm in dtypes:
        x = strata.ones((2,), dtype=frm)
        for to in dtypes:
            if np.can_cast(frm, to, "same_kind"):
                strata.to_zarr(x, str(tmp_path / to), region=(0,), compute=False)
            else:
                with pytest.raises(ValueError, match="same_kind"):
                    strata.to_zarr(x, str(tmp_path / to), region=(0,), compute=False)
    strata.to_zarr(strata.asarray(np.array([1.25, -3.5])), str(tmp_path / "float32"),
                   region=(0,))
    np.testing.assert_array_equal(strata.from_zarr(str(tmp_path / "float32")).compute(),
                                  np.array([1.25, -3.5], dtype="float32"))


# ---------------------------------------------------------------- ... by the accessor

def weather(rng, start, n_time):
    """A small numpy-backed forecast-like dataset: n_time steps from `start`
    (6-hourly), float with NaNs, packed int16, a static bool mask, and
    coordinates of every kind (times, floats, ints, strings, a scalar)."""
    t = rng.normal(280, 5, size=(n_time, 4, 6))
    t[rng.random(t.shape) < 0.1] = np.nan
    ds = xr.Dataset(
        {"t": (("time", "lat", "lon"), t, {"units": "K"}),
         "packed": (("time", "lat", "lon"), np.where(np.isnan(t), np.nan, np.round(t, 1))),
         "q": (("time", "lat", "lon"), rng.integers(0, 100, size=t.shape).astype("int16")),
         "land": (("lat", "lon"), np.arange(24).reshape(4, 6) % 3 == 0)},
        coords={"time": pd.date_range(start, periods=n_time, freq="6h"),
                "lat": np.linspace(-30, 30, 4), "lon": np.arange(6) * 60.0,
                "station": ("lon", np.arange(6) * 3),
                "country": ("lon", np.array(["fr", "de", "fr", "it", "de", "fr"])),
                "height": 2.0},
        attrs={"title": "forecast"})
    return ds


# Chunks of 4 steps: appends of 6 and 3 steps start inside a partial chunk,
# region (3, 9) straddles two chunk boundaries (read-modify-write).
WEATHER_ENCODING = {"t": {"chunks": (4, 3, 4)}, "q": {"chunks": (4, 4, 6)},
                    "packed": {"chunks": (4, 4, 6), "dtype": "int16", "scale_factor": 0.1,
                               "add_offset": 280.0, "_FillValue": -32768}}


def on_strata(ds, chunks=(2, 3, 5)):
    """ds with its data variables as strata arrays (chunks unlike the stored
    ones, so that writes rechunk)."""
    out = ds.copy()
    for name, v in ds.data_vars.items():
        c = chunks[-v.ndim:] if v.ndim else ()
        out[name] = v.copy(data=strata.asarray(np.ascontiguousarray(v.values), chunks=c))
    return out


def write_base(ds, where, writer, tmp_path):
    """ds written to `where` (a LocalPlace or S3Place) by strata's accessor
    or by xarray (locally, then copied there)."""
    if writer == "xarray":
        local = tmp_path / f"base-{uuid.uuid4().hex[:8]}.zarr"
        ds.to_zarr(str(local), encoding=WEATHER_ENCODING)
        where.put_tree(local)
    else:
        on_strata(ds).strata.to_zarr(where.target, encoding=WEATHER_ENCODING)


def stored_array(files, name):
    """Array `name`'s shape and chunks from its own metadata, Zarr v2 or v3
    (xarray 2026 writes v3 by default, the accessor v2)."""
    if f"{name}/.zarray" in files:
        meta = json.loads(files[f"{name}/.zarray"])
        return {"shape": meta["shape"], "chunks": meta["chunks"]}
    meta = json.loads(files[f"{name}/zarr.json"])
    return {"shape": meta["shape"],
            "chunks": meta["chunk_grid"]["configuration"]["chunk_shape"]}


def consolidated_array(files, name):
    """Array `name`'s shape and chunks in the group's consolidated metadata."""
    if ".zmetadata" in files:
        meta = json.loads(files[".zmetadata"])["metadata"][f"{name}/.zarray"]
        return {"shape": meta["shape"], "chunks": meta["chunks"]}
    meta = json.loads(files["zarr.json"])["consolidated_metadata"]["metadata"][name]
    return {"shape": meta["shape"],
            "chunks": meta["chunk_grid"]["configuration"]["chunk_shape"]}


def same_stores(ours, ref, tmp_path):
    """Our store (a place) read back by xarray and by strata.xarray equals
    xarray's at the local path ref; nothing of strata's is left in it."""
    expected = xr.open_zarr(ref).compute()
    local = ours.readable(tmp_path)
    xr.testing.assert_identical(xr.open_zarr(local).compute(), expected)
    xr.testing.assert_identical(xr.open_zarr(local, consolidated=False).compute(), expected)
    xr.testing.assert_identical(sx.open_zarr(ours.target).strata.compute(), expected)
    assert [n for n in ours.files() if "strata" in n] == []
    return expected


@pytest.mark.parametrize("writer", ["strata", "xarray"])
def test_accessor_region_backfill_matches_xarray(tmp_path, place, rng, computes, writer):
    base = weather(rng, "2020-01-01", 12)
    ours, ref = place("ours.zarr"), str(tmp_path / "ref.zarr")
    write_base(base, ours, writer, tmp_path)
    base.to_zarr(ref, encoding=WEATHER_ENCODING)
    region = {"time": slice(3, 9)}
    fresh = weather(rng, "2020-01-01", 12).isel(time=region["time"])
    patch = fresh.drop_vars(["lat", "lon", "land", "station", "country", "height"])
    computes.reset()
    on_strata(patch).strata.to_zarr(ours.target, region=region)
    assert computes.n == 1
    patch.to_zarr(ref, region=region)
    got = same_stores(ours, ref, tmp_path)
    np.testing.assert_array_equal(got.t.values[3:9], patch.t.values)
    np.testing.assert_array_equal(got.t.values[:3], base.t.values[:3])
    np.testing.assert_array_equal(got.q.values[9:], base.q.values[9:])
    # The arrays keep their chunks.
    assert stored_array(ours.files(), "t")["chunks"] == [4, 3, 4]
    # mode="a" with a region also works (the group's attributes are rewritten, as xarray's).
    other = patch.isel(time=slice(0, 2)) + 1
    other.attrs = {"title": "patched"}
    region = {"time": slice(-3, -1)}
    on_strata(other).strata.to_zarr(ours.target, mode="a", region=region)
    other.to_zarr(ref, mode="a", region=region)
    assert same_stores(ours, ref, tmp_path).attrs == {"title": "patched"}


def test_accessor_region_auto_matches_xarray(tmp_path, rng):
    """region="auto" (xarray 2026): the region is where the dataset's time
    labels are in the stored coordinate; the same refusals as xarray's."""
    base = weather(rng, "2020-01-01", 12)
    ours, ref = str(tmp_path / "ours.zarr"), str(tmp_path / "ref.zarr")
    on_strata(base).strata.to_zarr(ours, encoding=WEATHER_ENCODING)
    base.to_zarr(ref, encoding=WEATHER_ENCODING, zarr_format=2)
    patch = (weather(rng, "2020-01-01", 12).isel(time=slice(5, 10))
             .drop_vars(["land", "station", "country", "height"]))
    on_strata(patch).strata.to_zarr(ours, region="auto")
    patch.to_zarr(ref, region="auto")
    got = xr.open_zarr(ours).compute()
    xr.testing.assert_identical(got, xr.open_zarr(ref).compute())
    np.testing.assert_array_equal(got.t.values[5:10], patch.t.values)
    np.testing.assert_array_equal(got.t.values[:5], base.t.values[:5])
    # "auto" for one dimension, a slice for another.
    part = patch.isel(lat=slice(1, 3)).drop_vars("lon")
    on_strata(part).strata.to_zarr(ours, region={"time": "auto", "lat": slice(1, 3)})
    part.to_zarr(ref, region={"time": "auto", "lat": slice(1, 3)})
    xr.testing.assert_identical(xr.open_zarr(ours).compute(), xr.open_zarr(ref).compute())

    def refuse(ds, exc, match, **kwargs):
        both_refuse(ours, ref, ds, exc, match, **kwargs)
    refuse(patch.isel(time=[0, 2]), ValueError, "non-contiguous indices", region="auto")
    later = patch.assign_coords(time=patch.time.values + np.timedelta64(30, "D"))
    refuse(later, KeyError, "Not all values of coordinate 'time'", region="auto")
    refuse(patch, ValueError, "``mode`` must be 'r\\+' or 'a'", mode="a-", region="auto")


@pytest.mark.parametrize("writer", ["strata", "xarray"])
def test_accessor_append_twice_matches_xarray(tmp_path, place, rng, computes, writer):
    parts = [weather(rng, "2020-01-01", 6), weather(rng, "2020-01-02 12:00", 6),
             weather(rng, "2020-01-04", 3)]
    ours, ref = place("ours.zarr"), str(tmp_path / "ref.zarr")
    write_base(parts[0], ours, writer, tmp_path)
    parts[0].to_zarr(ref, encoding=WEATHER_ENCODING)
    for n, part in enumerate(parts[1:], start=2):
        computes.reset()
        on_strata(part).strata.to_zarr(ours.target, append_dim="time")
        assert computes.n == 1
        part.to_zarr(ref, append_dim="time")
        got = same_stores(ours, ref, tmp_path)
        whole = xr.concat(parts[:n], "time", data_vars="minimal", coords="minimal",
                          compat="override")
        assert got.sizes["time"] == whole.sizes["time"]
        np.testing.assert_array_equal(got.time.values, whole.time.values)
        np.testing.assert_array_equal(got.t.values, whole.t.values)
        np.testing.assert_array_equal(got.q.values, whole.q.values)
        np.testing.assert_allclose(got.packed.values, whole.packed.values, atol=0.051)
        # Variables without the append dimension are rewritten, as xarray does.
        np.testing.assert_array_equal(got.land.values, part.land.values)
    assert consolidated_array(ours.files(), "t")["shape"] == [15, 4, 6]


def test_accessor_append_new_variables_dataarray_and_v3(tmp_path, place, rng):
    base = weather(rng, "2020-01-01", 5)
    ours, ref = place("ours.zarr"), str(tmp_path / "ref.zarr")
    on_strata(base).strata.to_zarr(ours.target, consolidated=None)
    base.to_zarr(ref)
    assert ".zmetadata" in ours.files(), "None consolidates, as xarray's"
    # mode="a" adds variables, a string coordinate among them (zarr-python
    # writes it, into the same store), and rewrites existing ones.
    extra = base[["t"]].assign(wind=base.t * 0 + 3.0).assign_coords(label=("lon", list("abcdef")))
    on_strata(extra).strata.to_zarr(ours.target, mode="a")
    extra.to_zarr(ref, mode="a")
    same_stores(ours, ref, tmp_path)
    # The DataArray accessor takes the same arguments; strings along the
    # append dimension are appended.
    tags = base.assign_coords(tag=("time", np.array(list("abcde"))))
    more = weather(rng, "2020-01-02 06:00", 2).assign_coords(tag=("time", np.array(["x", "y"])))
    ours, ref = place("ours_da.zarr"), str(tmp_path / "ref_da.zarr")
    on_strata(tags).t.strata.to_zarr(ours.target)
    tags.t.to_dataset().to_zarr(ref)
    on_strata(more).t.strata.to_zarr(ours.target, append_dim="time")
    more.t.to_dataset().to_zarr(ref, append_dim="time")
    assert same_stores(ours, ref, tmp_path).sizes["time"] == 7
    # Zarr v3: append and backfill (strings, along lon, are written by
    # zarr-python into the v3 group too).
    more = more.drop_vars("tag")
    v3 = place("v3.zarr")
    on_strata(base).strata.to_zarr(v3.target, zarr_format=3)
    on_strata(more).strata.to_zarr(v3.target, append_dim="time")
    patch = more.t.to_dataset() + 1
    patch = patch.drop_vars(["lat", "lon", "station", "height", "country"])
    on_strata(patch).strata.to_zarr(v3.target, region={"time": slice(1, 3)})
    got = sx.open_zarr(v3.target).strata.compute()
    expected_t = np.concatenate([base.t.values, more.t.values])
    expected_t[1:3] = more.t.values + 1
    np.testing.assert_array_equal(got.t.values, expected_t)
    # As xarray 2026, a region write leaves the index coordinates as they are.
    expected_time = np.concatenate([base.time.values, more.time.values])
    np.testing.assert_array_equal(got.time.values, expected_time)
    np.testing.assert_array_equal(got.country.values, more.country.values)
    group = json.loads(v3.files()["zarr.json"])
    assert group["consolidated_metadata"]["metadata"]["t"]["shape"] == [7, 4, 6]


def both_refuse(ours_path, ref_path, ds, exc, match, exact=True, **kwargs):
    """The accessor and xarray's own to_zarr refuse the same write with the
    same exception and message (exact=False: xarray checks variables in a set's
    order, so which variable a message names may differ); neither store
    changes."""
    before, ref_before = store_files(ours_path), store_files(ref_path)
    with pytest.raises(exc, match=match) as ours:
        on_strata(ds).strata.to_zarr(ours_path, **kwargs)
    with pytest.raises(exc, match=match) as theirs:
        ds.to_zarr(ref_path, **kwargs)
    if exact:
        assert str(ours.value) == str(theirs.value)
    assert store_files(ours_path) == before
    assert store_files(ref_path) == ref_before


def test_accessor_region_and_append_refusals_are_xarrays(tmp_path, rng):
    base = weather(rng, "2020-01-01", 6)
    ours, ref = str(tmp_path / "ours.zarr"), str(tmp_path / "ref.zarr")
    on_strata(base).strata.to_zarr(ours)
    base.to_zarr(ref)
    only_time = base.drop_vars(["lat", "lon", "land", "station", "country", "height"])
    part = only_time.isel(time=slice(0, 2))

    def refuse(ds, exc, match, **kwargs):
        both_refuse(ours, ref, ds, exc, match, **kwargs)

    sizes = "already exists with different dimension sizes"
    refuse(part, TypeError, "must be a dict", region=[slice(0, 2)])
    refuse(part, ValueError, "not in Dataset dimensions", region={"nope": slice(0, 2)})
    refuse(part, TypeError, "must be slice objects", region={"time": 0})
    refuse(part, ValueError, "step on all slices", region={"time": slice(0, 4, 2)})
    refuse(base.isel(time=slice(0, 2)), ValueError, r"drop_vars\(\['land', 'lat', 'lon'",
           region={"time": slice(0, 2)})
    refuse(part, ValueError, "cannot set region unless", mode="w", region={"time": slice(0, 2)})
    refuse(part, ValueError, "cannot set append_dim unless", mode="r+", append_dim="time")
    refuse(part, ValueError, "only supported options for mode", mode="x")
    refuse(part, ValueError, "both ``append_dim`` and ``region``", append_dim="time",
           region={"time": slice(0, 2)})
    refuse(part, ValueError, sizes, exact=False, region={"time": slice(0, 3)})
    refuse(part, ValueError, sizes, exact=False, region={"time": slice(5, 7)})
    refuse(base.isel(lat=slice(0, 2)), ValueError, sizes, exact=False, append_dim="time")
    # (the dimensions' order in this message is the order the store lists
    # its arrays in)
    refuse(part, ValueError, "does not match any existing dataset dimensions", exact=False,
           append_dim="step")
    refuse(part.assign(new=part.t), ValueError, "non-pre-existing variables", mode="r+",
           region={"time": slice(0, 2)})
    refuse(part, ValueError, "already exists, but encoding was provided", append_dim="time",
           encoding={"t": {"dtype": "float32"}})
    refuse(part.rename_dims(lat="y"), ValueError, "different dimension names", exact=False,
           append_dim="time")
    # Where xarray's own messages differ or it has none.
    before = store_files(ours)
    with pytest.raises(NotImplementedError, match="region= with append_dim="):
        on_strata(part.drop_vars("time")).strata.to_zarr(
            ours, mode="a", append_dim="time", region={"lat": slice(0, 4)})
    with pytest.raises(FileNotFoundError, match="no Zarr group"):
        on_strata(part).strata.to_zarr(str(tmp_path / "missing.zarr"),
                                       region={"time": slice(0, 2)})
    with pytest.raises(ValueError, match="does not match any existing dataset dimensions"):
        on_strata(part).strata.to_zarr(str(tmp_path / "missing.zarr"), append_dim="time")
    assert not os.path.exists(tmp_path / "missing.zarr")
    with pytest.raises(ValueError, match="Zarr v2 group"):
        on_strata(part).strata.to_zarr(ours, append_dim="time", zarr_format=3)
    with pytest.raises(NotImplementedError, match="compute=False"):
        on_strata(part).strata.to_zarr(ours, append_dim="time", compute=False)
    # zarr-python would cut "fra" to the stored <U2's "fr": refused as xarray refuses it.
    longer = base.isel(time=slice(0, 2)).assign_coords(country=("lon", np.array(["fra"] * 6)))
    refuse(longer, ValueError, "Mismatched dtypes for variable country between Zarr store on "
           "disk and dataset to append. Store has dtype <U2", append_dim="time")
    before = store_files(ours)
    # Backfilling a store from itself is refused (it would read chunks it rewrites).
    lazy = sx.open_zarr(ours)[["t"]].isel(time=slice(0, 2))
    lazy = lazy.drop_vars(list(lazy.coords))
    with pytest.raises(ValueError, match="(?i)read"):
        (lazy * 2).strata.to_zarr(ours, region={"time": slice(2, 4)})
    assert store_files(ours) == before
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []


def test_failed_append_puts_the_old_store_back(tmp_path, rng):
    base = weather(rng, "2020-01-01", 6)
    ours = str(tmp_path / "ours.zarr")
    on_strata(base).strata.to_zarr(ours, encoding=WEATHER_ENCODING)
    before = xr.open_zarr(ours).compute()
    more = on_strata(weather(rng, "2020-01-02 12:00", 6))

    seen = []

    def fail_late(block, block_id=None):
        if block_id[0] == 2:
            # Fails once q's append is committed (its new shape written).
            import time
            for _ in range(200):
                with open(os.path.join(ours, "q", ".zarray")) as f:
                    seen.append(json.load(f)["shape"][0])
                if seen[-1] == 12:
                    break
                time.sleep(0.05)
            raise RuntimeError("a source that fails mid-write")
        return block
    more["new"] = more.q * 2
    more["broken"] = more.t.copy(data=strata.map_blocks(fail_late, more.t.data,
                                                        dtype="float64"))
    with pytest.raises(RuntimeError, match="fails mid-write"):
        more.strata.to_zarr(ours, append_dim="time")
    assert seen[-1] == 12, "q had grown when the compute failed"
    xr.testing.assert_identical(xr.open_zarr(ours).compute(), before)
    xr.testing.assert_identical(sx.open_zarr(ours, consolidated=False).strata.compute(), before)
    assert not os.path.exists(os.path.join(ours, "new"))
    assert not os.path.exists(os.path.join(ours, "broken"))


# ---------------------------------------------------------------- groupby

def grouped_ops(plan_dict):
    return [o["op"] for o in plan_dict["ops"] if o["op"].startswith("groupby-") and
            o["op"].endswith("-partial")]


@pytest.mark.parametrize("func", ["sum", "mean", "count", "min", "max", "std", "var"])
def test_groupby_lowers_to_one_grouped_reduction(func, rng, computes):
    npda, sda = sample(rng)
    for obj_np, obj_s in ((npda, sda), (npda.to_dataset(), sda.to_dataset())):
        computes.reset()
        lazy = getattr(obj_s.strata.groupby("country"), func)()
        assert computes.n == 0
        assert_lazy(lazy)
        da = lazy if isinstance(lazy, xr.DataArray) else lazy.t
        assert len(grouped_ops(da.data.plan().to_dict())) == 1
        expected = getattr(obj_np.groupby("country"), func)()
        got = lazy.strata.compute()
        xr.testing.assert_allclose(got, expected, rtol=1e-10)
        xr.testing.assert_identical(got.coords.to_dataset(), expected.coords.to_dataset())
    # Over the group dimension and another.
    got = getattr(sda.strata.groupby("country"), func)(["lon", "time"]).strata.compute()
    xr.testing.assert_allclose(got, getattr(npda.groupby("country"), func)(["lon", "time"]),
                               rtol=1e-10)


def test_groupby_many_groups_is_still_one_op(rng):
    n = 366
    data = rng.normal(size=(n, 3))
    data[rng.random(data.shape) < 0.2] = np.nan
    time = pd.date_range("2000-01-01", periods=n, freq="D")
    npda = xr.DataArray(data, dims=("time", "x"), coords={"time": time})
    sda = npda.copy(data=strata.asarray(data, chunks=(50, 3)))
    lazy = sda.strata.groupby("time.dayofyear").mean()
    assert len(grouped_ops(lazy.data.plan().to_dict())) == 1
    assert len(lazy.data.plan().to_dict()["ops"]) < 20
    xr.testing.assert_allclose(lazy.strata.compute(), npda.groupby("time.dayofyear").mean())


def test_groupby_labels_with_nan_and_bad_input(rng):
    npda, sda = sample(rng)
    label = xr.DataArray([1.0, np.nan, 2.0, 1.0, np.nan, 2.0], dims="lon", name="zone")
    xr.testing.assert_allclose(sda.strata.groupby(label).mean().strata.compute(),
                               npda.groupby(label).mean())
    with pytest.raises(KeyError, match="'nope'"):
        sda.strata.groupby("nope")
    with pytest.raises(NotImplementedError, match="2-d group"):
        sda.strata.groupby(xr.DataArray(np.zeros((5, 6)), dims=("lat", "lon")))
    with pytest.raises(ValueError, match="must include the group dimension"):
        sda.strata.groupby("country").mean("time")
    with pytest.raises(TypeError, match="group must be"):
        sda.strata.groupby(3)
