"""The same xarray operations on Dask-backed and Strata-backed datasets (in
the spirit of xarray's own test_dask.py): values equal, the Strata result
lazy (strata arrays, no compute before .compute()), and every task of its
compute within its projected memory and allowed_mem. Each hook of the chunk
manager (strata.xarray._chunkmanager) is reached here through the xarray
call that uses it, or called as xarray would where xarray routes it to Dask
only (docs/xarray.md says which)."""
import dask
import numpy as np
import pytest
import xarray as xr

import strata
import strata.xarray as sx
from xarray.namedarray.parallelcompat import get_chunked_array_type, guess_chunkmanager
from xarray.namedarray.pycompat import is_chunked_array

ALLOWED = 50_000_000
CHUNKS = {"time": 4, "lat": 3, "lon": 4}


@pytest.fixture
def spec(tmp_path):
    return strata.Spec(work_dir=tmp_path / "work", allowed_mem=ALLOWED, reserved_mem="1MB",
                       workers=2)


def dataset(seed=0):
    rng = np.random.default_rng(seed)
    shape = (12, 8, 10)
    t = 280 + 5 * rng.standard_normal(shape)
    t[rng.random(shape) < 0.15] = np.nan
    return xr.Dataset(
        {"t": (("time", "lat", "lon"), t),
         "u": (("time", "lat", "lon"), rng.standard_normal(shape)),
         "v": (("time", "lat", "lon"), rng.standard_normal(shape))},
        coords={"time": np.datetime64("2026-01-01") + np.arange(12).astype("timedelta64[D]"),
                "lat": np.linspace(-60.0, 60.0, 8), "lon": np.linspace(0.0, 90.0, 10)})


@pytest.fixture
def pair(spec):
    """(numpy-backed, Dask-backed, Strata-backed) copies of one dataset."""
    ds = dataset()
    on_dask = ds.chunk(CHUNKS, chunked_array_type="dask")
    on_strata = ds.chunk(CHUNKS, chunked_array_type="strata", from_array_kwargs={"spec": spec})
    return ds, on_dask, on_strata


def strata_arrays(obj):
    variables = obj.variables.values() if isinstance(obj, xr.Dataset) else [obj.variable]
    return [v._data for v in variables if isinstance(v._data, strata.Array)]


def within_memory(obj):
    """Computes obj's strata arrays with a history: every task's measured
    peak within its projection, and the projection within allowed_mem.
    Returns the values."""
    arrays = strata_arrays(obj)
    h = strata.HistoryCallback()
    values = strata.compute(*arrays, callbacks=[h])
    assert h.ok, h.error
    assert h.tasks
    for t in h.tasks:
        assert t["measured_peak_mem"] <= t["projected_mem"] <= ALLOWED, t
    return values


def points():
    lats = xr.DataArray([-55.0, -20.0, 1.0, 17.0, 44.0, 59.0], dims="point")
    lons = xr.DataArray([2.0, 88.0, 45.0, 30.0, 61.0, 12.0], dims="point")
    country = xr.DataArray(list("abcabb"), dims="point")
    return lats, lons, country


def whole_lon(da):
    """da in one block along lon, on its own chunk manager."""
    if not is_chunked_array(da.data):
        return da
    return da.chunk({"lon": -1}, chunked_array_type=get_chunked_array_type(da.data))


# name -> function of a dataset
OPS = {
    "numpy_ufuncs": lambda ds: np.sqrt(ds.u ** 2 + ds.v ** 2) + np.exp(ds.u),
    "arithmetic_where_fillna": lambda ds: (ds.t - 273.15).where(ds.u > 0).fillna(-1.0),
    "reduction": lambda ds: ds.t.mean(["lat", "lon"]),
    "cumsum": lambda ds: ds.t.cumsum("lat"),
    "rolling": lambda ds: ds.t.rolling(time=3).mean(),
    "coarsen": lambda ds: ds.t.coarsen(lat=2, lon=5).mean(),
    "interp": lambda ds: ds.u.interp(lat=[-50.0, 3.3, 41.0], method="linear"),
    "pointwise_sel": lambda ds: ds.t.sel(lat=points()[0], lon=points()[1], method="nearest"),
    "isel_vectorized": lambda ds: ds.u.isel(lat=xr.DataArray([0, 7, 3], dims="p"),
                                            lon=xr.DataArray([9, 0, 4], dims="p")),
    "apply_ufunc_parallelized": lambda ds: xr.apply_ufunc(
        np.sin, ds.u, dask="parallelized", output_dtypes=[np.float64]),
    "apply_ufunc_core_dims": lambda ds: xr.apply_ufunc(
        np.std, whole_lon(ds.u),
        input_core_dims=[["lon"]], kwargs={"axis": -1}, dask="parallelized",
        output_dtypes=[np.float64]),
    "full_like": lambda ds: xr.full_like(ds.t, 2.5) * ds.u,
    "resample_mean": lambda ds: ds.t.resample(time="3D").mean(),
    "resample_first": lambda ds: ds.t.resample(time="5D").first(),
    "groupby_last": lambda ds: ds.t.groupby("time.dayofweek").last(),
    "groupby_points_mean": lambda ds: ds.t.sel(lat=points()[0], lon=points()[1],
                                               method="nearest")
    .assign_coords(country=points()[2]).groupby("country").mean(["point"]),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_same_values_as_dask_and_lazy(name, pair, computes):
    ds, on_dask, on_strata = pair
    op = OPS[name]
    # xarray's own group-by on strata arrays (flox knows Dask and Cubed only).
    with xr.set_options(use_flox=False):
        computes.reset()
        got = op(on_strata)
        assert computes.n == 0, f"{name}: building the result ran a compute"
        assert strata_arrays(got), f"{name}: the result is not Strata-backed"
        values = within_memory(got)
        assert values
        expected = op(on_dask).compute()
    xr.testing.assert_allclose(got.compute(), expected)
    xr.testing.assert_allclose(expected, op(ds))


def grouped_plan(obj):
    """The op kinds of the plan of obj's strata arrays."""
    return [op["op"] for op in strata.plan(*strata_arrays(obj)).to_dict()["ops"]]


def one_grouped_reduction(kinds, count=1):
    """`count` grouped reductions (each its map-reduce stages: one partial
    op), and no per-group selection or reduction."""
    assert sum(k.startswith("groupby") and k.endswith("partial") for k in kinds) == count, kinds
    per_group = [k for k in kinds if k in ("index", "subscript", "concat", "stack")
                 or k.startswith(("nan", "mean", "sum", "max", "min", "var", "std"))]
    assert not per_group, kinds


def points_pipeline(d):
    lats, lons, country = points()
    return d.sel(lat=lats, lon=lons, method="nearest").assign_coords(country=country)


GROUPED = ["mean", "sum", "count", "max", "min", "std", "var"]


@pytest.mark.parametrize("func", GROUPED)
def test_xarray_groupby_without_flox_is_one_grouped_reduction(func, pair, computes):
    """xarray's own group-by (use_flox=False: a selection and a reduction
    per group, joined) on strata arrays is planned as ONE grouped reduction
    per variable (strata/_regroup.py), equal to numpy-backed xarray."""
    ds, _, on_strata = pair
    with xr.set_options(use_flox=False):
        expected = getattr(points_pipeline(ds).groupby("country"), func)(["point"])
        computes.reset()
        got = getattr(points_pipeline(on_strata).groupby("country"), func)(["point"])
    assert computes.n == 0, "building the group-by ran a compute"
    one_grouped_reduction(grouped_plan(got.t))
    one_grouped_reduction(grouped_plan(got), count=3)  # t, u, v
    within_memory(got)
    xr.testing.assert_allclose(got.compute(), expected)


def test_xarray_groupby_of_contiguous_groups_is_one_grouped_reduction(pair):
    """Groups that are slices (resample: consecutive times) too."""
    ds, _, on_strata = pair
    with xr.set_options(use_flox=False):
        expected = ds.t.resample(time="5D").mean()
        got = on_strata.t.resample(time="5D").mean()
    one_grouped_reduction(grouped_plan(got))
    within_memory(got)
    xr.testing.assert_allclose(got.compute(), expected)


def test_xarray_groupby_with_flox_fails_fast(pair, computes):
    """With flox installed and use_flox on (xarray's default), xarray hands
    the group-by to flox, which runs its numpy path on any array that is not
    Dask or Cubed: strata refuses at flox's first reshape, in one line that
    names the spellings that work, before anything is computed."""
    pytest.importorskip("flox")
    _, _, on_strata = pair
    computes.reset()
    with xr.set_options(use_flox=True), pytest.raises(NotImplementedError) as e:
        points_pipeline(on_strata).groupby("country").mean(["point"])
    assert computes.n == 0, "flox's path ran a compute before the error"
    message = str(e.value)
    assert "\n" not in message
    assert "xr.set_options(use_flox=False)" in message and "ds.strata.groupby(" in message


def test_groupby_spellings_agree_with_and_without_flox(pair):
    """The two spellings that are one grouped reduction give the same values
    as numpy-backed xarray with flox (its default) and without."""
    pytest.importorskip("flox")
    ds, _, on_strata = pair
    for use_flox in (True, False):
        with xr.set_options(use_flox=use_flox):
            expected = points_pipeline(ds).groupby("country").mean(["point"])
            one = points_pipeline(on_strata).strata.groupby("country").mean(["point"])
            one_grouped_reduction(grouped_plan(one.t))
            xr.testing.assert_allclose(one.compute().transpose(*expected.t.dims), expected)
    with xr.set_options(use_flox=False):
        got = points_pipeline(on_strata).groupby("country").mean(["point"])
    xr.testing.assert_allclose(got.compute(), expected)


def test_concat_of_reductions_that_are_no_group_by_is_left_alone(spec):
    """The join is rewritten only for one statistic over disjoint selections
    of one array along the reduced axis; anything else is joined as given,
    with the same values."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 30))
    x[1, 3] = np.nan
    a = strata.asarray(x, chunks=(2, 8), spec=spec)
    groups = [np.array([0, 5, 9]), np.array([1, 2, 29]), np.array([7, 3])]
    cases = {
        "disjoint": ([(a, g, strata.nanmean) for g in groups], 1),
        "shared element": ([(a, g, strata.nanmean) for g in groups[:2]]
                           + [(a, np.array([5, 6]), strata.nanmean)], 0),
        "two statistics": ([(a, groups[0], strata.nanmean), (a, groups[1], strata.nansum)], 0),
        "two arrays": ([(a, groups[0], strata.nanmean), (a + 1, groups[1], strata.nanmean)], 0),
    }
    for name, (parts, grouped) in cases.items():
        joined = strata.concat([f(y[:, g], axis=1)[None] for y, g, f in parts], axis=0)
        stacked = strata.stack([f(y[:, g], axis=1) for y, g, f in parts], axis=1)
        ref = np.stack([getattr(np, f.__name__)((np.asarray(y) if y is not a else x)[:, g],
                                                axis=1) for y, g, f in parts])
        for got, want in ((joined, ref), (stacked, ref.T)):
            kinds = grouped_plan(xr.DataArray(got))
            assert sum(k.startswith("groupby") and k.endswith("partial")
                       for k in kinds) == grouped, (name, kinds)
            np.testing.assert_allclose(np.asarray(got), want, err_msg=name)


def test_ffill_bfill_through_the_scan(pair, computes):
    ds, on_dask, on_strata = pair
    for dim, limit in (("time", None), ("lat", None), ("lon", 2)):
        computes.reset()
        forward = on_strata.strata.ffill(dim, limit=limit)
        backward = on_strata.t.strata.bfill(dim, limit=limit)
        assert computes.n == 0
        within_memory(forward)
        xr.testing.assert_allclose(forward.compute(), on_dask.ffill(dim, limit=limit).compute())
        xr.testing.assert_allclose(backward.compute(), ds.t.bfill(dim, limit=limit))
    with pytest.raises(ValueError, match="'depth' is not a dimension"):
        on_strata.strata.ffill("depth")
    # xarray's own ffill/bfill hand a non-Dask array to bottleneck whole:
    # refused before anything is computed, naming the lazy spelling.
    computes.reset()
    for method in ("ffill", "bfill"):
        with pytest.raises(NotImplementedError, match=r"ds\.strata\.ffill\(dim\)"):
            getattr(on_strata, method)("time")
    assert computes.n == 0


def test_compute_load_persist_values(pair, computes):
    ds, on_dask, on_strata = pair
    derived = on_strata * 2
    computes.reset()
    kept = derived.persist()
    assert computes.n == 1
    assert all(isinstance(v.data, strata.Array) for v in kept.data_vars.values())
    xr.testing.assert_allclose(kept.compute(), ds * 2)
    np.testing.assert_allclose(derived.t.values, ds.t.values * 2)
    loaded = derived.copy().load()
    assert isinstance(loaded.t.data, np.ndarray)
    a, b = dask.compute(on_dask.t.mean(), on_dask.u.mean())   # Dask's side, for parity
    np.testing.assert_allclose([float(on_strata.t.mean()), float(on_strata.u.mean())], [a, b])


def test_chunk_without_the_manager_name(pair):
    ds, on_dask, on_strata = pair
    with xr.set_options(chunk_manager="strata"):
        again = on_strata.chunk({"time": 6})
        fresh = ds.chunk({"lat": 4})
    assert again.t.data.chunks[0] == (6, 6) and isinstance(again.t.data, strata.Array)
    assert isinstance(fresh.t.data, strata.Array)
    assert guess_chunkmanager("strata") is not None


def test_shuffle_and_unify_chunks(pair):
    ds, on_dask, on_strata = pair
    got = on_strata.t.groupby("time.dayofweek").shuffle_to_chunks()
    expected = on_dask.t.groupby("time.dayofweek").shuffle_to_chunks()
    assert isinstance(got.data, strata.Array)
    xr.testing.assert_allclose(got.compute(), expected.compute())
    a = on_strata.u
    b = on_strata.v.chunk({"time": 5, "lat": 8}, chunked_array_type="strata")
    ua, ub = xr.unify_chunks(a, b)
    da_, db_ = xr.unify_chunks(on_dask.u, on_dask.v.chunk({"time": 5, "lat": 8}))
    assert ua.chunks == ub.chunks == da_.chunks == db_.chunks
    xr.testing.assert_allclose(ub.compute(), ds.v)


def test_hooks_called_as_xarray_calls_them(pair):
    """The hooks xarray reaches for Dask only, or not from its public API
    (blockwise, scan with a preop, map_blocks with drop_axis/new_axis),
    against Dask's manager with the same arguments."""
    ds, on_dask, on_strata = pair
    ours, theirs = sx.chunk_manager(), guess_chunkmanager("dask")
    x, y = on_strata.t.data, on_dask.t.data
    from xarray.core import nputils
    from xarray.compat.dask_array_ops import _dtype_push, _fill_with_last_one

    def same(a, b):
        assert isinstance(a, strata.Array)
        np.testing.assert_allclose(a.compute(), b.compute(), equal_nan=True)

    same(ours.scan(np.cumsum, np.add, 0, x, axis=1, dtype=np.float64),
         theirs.scan(np.cumsum, np.add, 0, y, axis=1, dtype=np.float64))
    kwargs = dict(ident=np.nan, axis=0, dtype=np.float64, preop=nputils.nanlast)
    same(ours.scan(_dtype_push, _fill_with_last_one, arr=x, **kwargs),
         theirs.scan(_dtype_push, _fill_with_last_one, arr=y, method="blelloch", **kwargs))

    def nanmax(a, axis, keepdims):
        return np.nanmax(a, axis=axis, keepdims=keepdims)
    for axis in (0, (1, 2), None):
        same(ours.reduction(x, nanmax, aggregate_func=nanmax, axis=axis, dtype=np.float64),
             theirs.reduction(y, nanmax, aggregate_func=nanmax, axis=axis, dtype=np.float64))
    same(ours.reduction(x, nanmax, aggregate_func=nanmax, axis=0, dtype=np.float64,
                        keepdims=True, split_every=2),
         theirs.reduction(y, nanmax, aggregate_func=nanmax, axis=0, dtype=np.float64,
                          keepdims=True))
    u, w = on_strata.u.data, on_dask.u.data
    lat = strata.asarray(ds.lat.values, chunks=3)
    same(ours.blockwise(lambda a, b: a * b[:, None], "ijk", u, "ijk", lat, "j",
                        dtype=np.float64),
         theirs.blockwise(lambda a, b: a * b[:, None], "ijk", w, "ijk",
                          dask.array.from_array(ds.lat.values, chunks=3), "j",
                          dtype=np.float64))
    same(ours.map_blocks(np.sum, u, axis=1, dtype=np.float64, drop_axis=1),
         theirs.map_blocks(np.sum, w.rechunk({1: -1}), axis=1, dtype=np.float64, drop_axis=1))
    same(ours.map_blocks(lambda b: np.stack([b, -b], axis=-1), u, dtype=np.float64,
                         new_axis=3, chunks=u.chunks + ((2,),)),
         theirs.map_blocks(lambda b: np.stack([b, -b], axis=-1), w, dtype=np.float64,
                           new_axis=3, chunks=w.chunks + ((2,),)))
    with pytest.raises(NotImplementedError, match="contractions"):
        ours.blockwise(np.sum, "i", u, "ijk", dtype=np.float64)
    # new_axes and adjust_chunks (an int, a callable), as Dask takes them
    same(ours.blockwise(lambda a: np.stack([a, -a], axis=-1), "ijkl", u, "ijk",
                        new_axes={"l": 2}, dtype=np.float64),
         theirs.blockwise(lambda a: np.stack([a, -a], axis=-1), "ijkl", w, "ijk",
                          new_axes={"l": 2}, dtype=np.float64))
    same(ours.blockwise(lambda a: a.sum(axis=1, keepdims=True), "ijk", u, "ijk",
                        adjust_chunks={"j": 1}, dtype=np.float64),
         theirs.blockwise(lambda a: a.sum(axis=1, keepdims=True), "ijk", w, "ijk",
                          adjust_chunks={"j": 1}, dtype=np.float64))
    same(ours.blockwise(lambda a: np.repeat(a, 2, axis=2), "ijk", u, "ijk",
                        adjust_chunks={"k": lambda n: 2 * n}, dtype=np.float64),
         theirs.blockwise(lambda a: np.repeat(a, 2, axis=2), "ijk", w, "ijk",
                          adjust_chunks={"k": lambda n: 2 * n}, dtype=np.float64))
    with pytest.raises(NotImplementedError, match="regular"):
        ours.blockwise(lambda a: a, "ijk", u, "ijk", dtype=np.float64,
                       adjust_chunks={"j": (1,) * (len(u.chunks[1]) - 1) + (5,)})
    with pytest.raises(ValueError, match="new_axes index 'j'"):
        ours.blockwise(lambda a: a, "ijk", u, "ijk", new_axes={"j": 2}, dtype=np.float64)
    with pytest.raises(ValueError, match=r"output indices \['l'\]"):
        ours.blockwise(lambda a: a, "ijkl", u, "ijk", dtype=np.float64)
    # map_blocks over arrays of different numbers of dimensions: aligned on
    # the right, as Dask broadcasts them
    lon = ds.lon.values
    same(ours.map_blocks(lambda a, b: a * b, u, strata.asarray(lon, chunks=u.chunks[2][0]),
                         dtype=np.float64),
         theirs.map_blocks(lambda a, b: a * b, w,
                           dask.array.from_array(lon, chunks=w.chunks[2][0]), dtype=np.float64))
    assert ours.get_auto_chunk_size() >= 1 << 20
    assert ours.array_api is strata
    assert ours.normalize_chunks("auto", shape=(10, 4), dtype=np.float64) == ((10,), (4,))


@pytest.mark.parametrize("compute", [True, False])
def test_to_zarr_modes_region_append(pair, tmp_path, compute, computes):
    ds, on_dask, on_strata = pair
    out_s, out_d = str(tmp_path / "s.zarr"), str(tmp_path / "d.zarr")
    for src, out in ((on_strata, out_s), (on_dask, out_d)):
        first = src.isel(time=slice(0, 8))
        w = first.to_zarr(out, mode="w", compute=compute)
        if not compute:
            w.compute()
        w = src.isel(time=slice(8, None)).to_zarr(out, append_dim="time", compute=compute)
        if not compute:
            dask.compute(w)
        region = (src.isel(time=slice(4, 8)) * 0 - 1).drop_vars(["lat", "lon", "time"])
        w = region.to_zarr(out, region={"time": slice(4, 8)}, compute=compute)
        if not compute:
            w.compute()
    got, expected = xr.open_zarr(out_s).compute(), xr.open_zarr(out_d).compute()
    xr.testing.assert_identical(got, expected)
    assert float(got.t.isel(time=5, lat=0, lon=0)) == -1.0
    computes.reset()
    lazy = on_strata.to_zarr(str(tmp_path / "late.zarr"), compute=False)
    assert computes.n == 0, "compute=False writes nothing yet"
    dask.compute(lazy)
    assert computes.n == 1
    xr.testing.assert_allclose(xr.open_zarr(str(tmp_path / "late.zarr")).compute(), ds)


def test_open_zarr_and_open_dataset_with_strata(pair, spec, tmp_path, computes):
    ds, on_dask, on_strata = pair
    path = str(tmp_path / "in.zarr")
    ds.chunk({"time": 4}).to_zarr(path)
    computes.reset()
    a = xr.open_zarr(path, chunked_array_type="strata", from_array_kwargs={"spec": spec})
    b = xr.open_dataset(path, engine="zarr", chunks={"time": 6}, chunked_array_type="strata",
                        from_array_kwargs={"spec": spec})
    assert computes.n == 0
    assert isinstance(a.t.data, strata.Array) and a.t.data.spec.allowed_mem == ALLOWED
    assert b.t.data.chunks[0] == (6, 6)
    point = a.t.sel(lat=points()[0], lon=points()[1], method="nearest")
    xr.testing.assert_allclose(point.compute(), ds.t.sel(lat=points()[0], lon=points()[1],
                                                          method="nearest"))
    xr.testing.assert_allclose(b.compute(), ds)


def test_pointwise_sel_reads_only_the_chunks_of_its_points(tmp_path):
    """xr.open_zarr(chunked_array_type="strata") in the stored chunks:
    variables stored as they are read become strata's Zarr reads, so that
    the vectorized selection is one gather of the chunks its points fall in
    (here 2 of 80; the third point shares a chunk)."""
    ds = dataset()
    path = str(tmp_path / "points.zarr")
    ds.to_zarr(path, encoding={"t": {"chunks": (12, 1, 1)}})
    lazy = xr.open_zarr(path, chunked_array_type="strata")
    lats = xr.DataArray([-42.0, 25.0, 26.0], dims="point")
    lons = xr.DataArray([30.0, 60.0, 61.0], dims="point")
    got = lazy.t.sel(lat=lats, lon=lons, method="nearest")
    h = strata.HistoryCallback()
    (values,) = strata.compute(got.data, callbacks=[h])
    assert h.ok and len(h.tasks) <= 3, [t["op"] for t in h.tasks]
    np.testing.assert_allclose(values, ds.t.sel(lat=lats, lon=lons, method="nearest").values)


@pytest.mark.parametrize("encoding", [
    {"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0, "_FillValue": -32768},
    {"dtype": "int16", "_FillValue": -1},            # masked only: float32 out
    {"dtype": "int8", "_Unsigned": "true", "_FillValue": -1},  # stored signed, read unsigned
])
def test_cf_decoded_variables_are_zarr_reads_too(tmp_path, encoding):
    """Packed variables (scale and offset, integer fill values, _Unsigned)
    are strata's Zarr reads followed by xarray's own decoding functions
    block by block: the values are xarray's exactly, NaN where the fill
    was, and the pointwise selection still reads only its points' chunks."""
    ds = dataset()
    t = ds.t.values.copy()
    if encoding["dtype"] == "int8":
        t = np.clip(np.round(t - t.min()), 0, 250)
    elif "scale_factor" not in encoding:
        t = np.round(t * 10)
    t[0, 0, :3] = np.nan
    ds = ds.assign(t=(ds.t.dims, t))
    path = str(tmp_path / "packed.zarr")
    ds.to_zarr(path, encoding={"t": {**encoding, "chunks": (12, 1, 1)}})
    expected = xr.open_zarr(path).compute()
    lazy = xr.open_zarr(path, chunked_array_type="strata")
    kinds = [op["op"] for op in strata.plan(lazy.t.data).to_dict()["ops"]]
    assert kinds[0] == "from_zarr" and set(kinds[1:]) == {"cf-decode"}, kinds
    got = lazy.compute()
    xr.testing.assert_identical(got, expected)
    assert got.t.dtype == expected.t.dtype and np.isnan(got.t.values[0, 0, :3]).all()
    lats = xr.DataArray([-42.0, 25.0, 26.0], dims="point")
    lons = xr.DataArray([30.0, 60.0, 61.0], dims="point")
    h = strata.HistoryCallback()
    (values,) = strata.compute(lazy.t.sel(lat=lats, lon=lons, method="nearest").data,
                               callbacks=[h])
    # The decoding's blocks that no point reads are not run (reported as
    # skipped, so that progress reaches the end).
    ran = [t["op"] for t in h.tasks if not t["skipped"]]
    assert h.ok and len(ran) <= 3 * len(set(kinds)), ran
    assert len(h.tasks) - len(ran) >= 70, len(h.tasks)
    np.testing.assert_array_equal(values,
                                  expected.t.sel(lat=lats, lon=lons, method="nearest").values)


def test_weather_pipeline_verbatim_against_dask(tmp_path, spec, computes):
    """The issue's pipeline as xarray users write it, but for naming the
    chunk manager: open_zarr, pointwise sel, derived variables by numpy
    ufuncs, group-by mean over the points, to_zarr; against xarray+Dask."""
    ds = dataset(1)
    src = str(tmp_path / "ifs.zarr")
    ds.to_zarr(src, encoding={k: {"chunks": (4, 4, 5)} for k in ds.data_vars})
    lats, lons, country = points()

    def pipeline(opened, out):
        pts = opened.sel(lat=lats, lon=lons, method="nearest").assign_coords(country=country)
        pts["wind"] = np.sqrt(pts.u ** 2 + pts.v ** 2)
        pts["t_c"] = pts.t - 273.15
        with xr.set_options(use_flox=False):
            means = pts[["wind", "t_c"]].groupby("country").mean(["point"])
        return means.to_zarr(out, compute=False)

    computes.reset()
    lazy = pipeline(xr.open_zarr(src, chunked_array_type="strata",
                                 from_array_kwargs={"spec": spec}), str(tmp_path / "s.zarr"))
    assert computes.n == 0
    dask.compute(lazy)
    assert computes.n == 1, "the whole pipeline is one strata compute"
    dask.compute(pipeline(xr.open_zarr(src), str(tmp_path / "d.zarr")))
    got = xr.open_zarr(str(tmp_path / "s.zarr")).compute()
    expected = xr.open_zarr(str(tmp_path / "d.zarr")).compute()
    xr.testing.assert_allclose(got, expected)
    assert set(got.country.values) == {"a", "b", "c"}
