"""strata as an xarray chunk manager (issue 19), through xarray's own API.

xarray finds chunk managers through the `xarray.chunkmanagers` entry point
group; the build writes strata's (a `strata-<version>.dist-info` beside the
package). Everything here goes through xarray's own API
(chunked_array_type="strata", .chunk, .compute, .persist, .to_zarr,
apply_ufunc) and is checked to stay lazy until xarray computes (one strata
compute for a whole Dataset) and to equal numpy-backed xarray."""
import importlib.metadata
import os

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint, list_chunkmanagers

import strata
import strata.xarray as sx
from strata.xarray._chunkmanager import StrataChunkManager


def test_the_entry_point_is_in_the_package_metadata():
    eps = importlib.metadata.entry_points(group="xarray.chunkmanagers")
    ours = [ep for ep in eps if ep.name == "strata"]
    assert len(ours) == 1, list(eps)
    assert ours[0].value == "strata.xarray._chunkmanager:StrataChunkManager"
    # The metadata is the package's own: beside the package imported here.
    dist = ours[0].dist
    assert dist.metadata["Name"] == "strata"
    located = os.path.dirname(os.path.dirname(os.path.abspath(strata.__file__)))
    assert os.path.samefile(dist.locate_file(""), located)


def dataset(rng):
    t = rng.normal(280, 5, size=(6, 5, 8))
    t[rng.random(t.shape) < 0.1] = np.nan
    return xr.Dataset(
        {"t": (("time", "lat", "lon"), t, {"units": "K"}),
         "packed": (("time", "lat", "lon"), np.where(np.isnan(t), np.nan, np.round(t, 1))),
         "q": (("time", "lat", "lon"), rng.integers(0, 100, size=t.shape).astype("int16")),
         "land": (("lat", "lon"), rng.random((5, 8)) > 0.5)},
        coords={"time": pd.date_range("2020-01-01", periods=6, freq="6h"),
                "lat": np.linspace(-50, 50, 5), "lon": np.arange(8) * 45.0,
                "country": ("lon", np.array(list("abcdabcd")))},
        attrs={"title": "test"})


ENCODING = {"t": {"chunks": (2, 5, 4)},
            "packed": {"dtype": "int16", "scale_factor": 0.1, "add_offset": 280.0,
                       "_FillValue": -32768, "chunks": (3, 5, 8)}}


def assert_strata(ds, names):
    for name in names:
        assert isinstance(ds[name].variable._data, strata.Array), (name, type(ds[name].data))


def test_strata_is_a_registered_chunk_manager():
    managers = list_chunkmanagers()
    assert isinstance(managers["strata"], StrataChunkManager)
    assert isinstance(managers["strata"], ChunkManagerEntrypoint)
    assert isinstance(sx.chunk_manager(), StrataChunkManager)
    # The instance works where the entry point is not installed.
    da = xr.DataArray([1.0, 2.0, 3.0], dims="x").chunk(x=2, chunked_array_type=sx.chunk_manager())
    assert isinstance(da.data, strata.Array) and da.chunksizes == {"x": (2, 1)}


def test_chunk_compute_and_persist(rng, computes):
    ds = dataset(rng)
    spec = strata.Spec(allowed_mem="50MB")
    chunked = ds.chunk({"time": 2, "lon": 4}, chunked_array_type="strata",
                       from_array_kwargs={"spec": spec})
    assert_strata(chunked, ["t", "packed", "q", "land"])
    assert chunked.t.data.chunksize == (2, 5, 4)
    assert chunked.t.data.spec.allowed_mem == 50_000_000
    assert chunked.chunksizes["time"] == (2, 2, 2)
    derived = xr.Dataset({"anom": chunked.t - chunked.t.mean("time"),
                          "wind": np.sqrt(chunked.t ** 2 + chunked.packed ** 2),
                          "masked": chunked.t.where(chunked.land),
                          "sel": chunked.t.sel(lat=10.0, method="nearest")})
    assert_strata(derived, ["anom", "wind", "masked", "sel"])
    assert computes.n == 0, "still lazy"
    got = derived.compute()
    assert computes.n == 1, "xarray's compute() is one strata compute"
    expected = xr.Dataset({"anom": ds.t - ds.t.mean("time"),
                           "wind": np.sqrt(ds.t ** 2 + ds.packed ** 2),
                           "masked": ds.t.where(ds.land),
                           "sel": ds.t.sel(lat=10.0, method="nearest")})
    xr.testing.assert_allclose(got, expected)
    computes.reset()
    kept = derived.persist()
    assert computes.n == 1
    assert_strata(kept, ["anom", "wind"])
    xr.testing.assert_allclose((kept.anom * 2).compute(), expected.anom * 2)
    # A DataArray, .values and .load().
    da = xr.DataArray(np.arange(12.0).reshape(3, 4), dims=("x", "y"))
    c = da.chunk({"x": 2}, chunked_array_type="strata")
    assert isinstance(c.data, strata.Array) and c.chunks == ((2, 1), (4,))
    assert c.chunk({"y": 2}, chunked_array_type="strata").data.chunksize == (2, 2), \
        "a rechunk keeps the other axes"
    # Without chunked_array_type, .chunk() uses xarray's default manager
    # (Dask when installed), which xarray's own option names.
    with xr.set_options(chunk_manager="strata"):
        assert c.chunk({"y": 2}).data.chunksize == (2, 2)
    np.testing.assert_array_equal((c + 1).values, da.values + 1)
    np.testing.assert_array_equal(c.load().values, da.values)
    assert isinstance(c.data, np.ndarray), "load() computed it in place"


def test_open_zarr_with_chunked_array_type_strata(tmp_path, rng, computes):
    ds = dataset(rng)
    path = str(tmp_path / "ds.zarr")
    ds.to_zarr(path, encoding=ENCODING)
    computes.reset()
    ours = xr.open_zarr(path, chunked_array_type="strata", chunks={})
    assert computes.n == 0, "nothing is read until a compute"
    assert_strata(ours, ["t", "packed", "q", "land"])
    assert ours.t.data.chunksize == (2, 5, 4), "the stored chunks"
    assert ours.packed.encoding["scale_factor"] == 0.1
    expected = xr.open_zarr(path, chunks=None).compute()
    got = ours.compute()
    assert computes.n == 1
    xr.testing.assert_identical(got, expected)
    # Blocks read by strata's Zarr reader, as stored (t) and CF-decoded by
    # xarray's own functions block by block (packed), stay within their
    # projection; nothing goes through xarray's backend.
    spec = strata.Spec(allowed_mem="20MB", reserved_mem="1MB")
    ours = xr.open_zarr(path, chunked_array_type="strata", chunks={"time": 3, "lon": -1},
                        from_array_kwargs={"spec": spec})
    assert ours.t.data.chunksize == (3, 5, 8)
    hist = strata.HistoryCallback()
    strata.compute(ours.t.data, ours.packed.data, callbacks=[hist])
    assert not [t for t in hist.tasks if t["op"].startswith("from_array-xarray")]
    assert any(t["op"] == "from_zarr" for t in hist.tasks)
    assert any(t["op"] == "cf-decode" for t in hist.tasks)
    for t in hist.tasks:
        assert 0 < t["measured_peak_mem"] <= t["projected_mem"] <= 20_000_000, t
    xr.testing.assert_allclose(ours.mean("time").compute(), expected.mean("time"))
    # strata's own reader (C++ reads, CF decoding as strata ops) agrees.
    xr.testing.assert_identical(sx.open_zarr(path).strata.compute(), expected)


def test_to_zarr_region_and_append_through_xarray(tmp_path, rng, computes):
    ds = dataset(rng)
    chunked = ds.chunk({"time": 2}, chunked_array_type="strata")
    out, ref = str(tmp_path / "out.zarr"), str(tmp_path / "ref.zarr")
    computes.reset()
    chunked.to_zarr(out)
    assert computes.n == 1, "every variable written in one strata compute"
    ds.to_zarr(ref)
    xr.testing.assert_identical(xr.open_zarr(out).compute(), xr.open_zarr(ref).compute())
    # Region backfill and append, xarray deciding the regions.
    patch = (ds.isel(time=slice(2, 4)) + 1).drop_vars(["lat", "lon", "land", "country"])
    patch.chunk(chunked_array_type="strata").to_zarr(out, region={"time": slice(2, 4)})
    patch.to_zarr(ref, region={"time": slice(2, 4)})
    more = dataset(rng).assign_coords(time=pd.date_range("2020-01-03", periods=6, freq="6h"))
    more.chunk({"time": 4}, chunked_array_type="strata").to_zarr(out, append_dim="time")
    more.to_zarr(ref, append_dim="time")
    xr.testing.assert_identical(xr.open_zarr(out).compute(), xr.open_zarr(ref).compute())


def test_apply_ufunc_and_map_blocks(rng):
    ds = dataset(rng)
    c = ds.t.chunk({"time": 2}, chunked_array_type="strata")
    r = xr.apply_ufunc(np.sin, c, dask="parallelized", output_dtypes=[np.float64])
    assert isinstance(r.data, strata.Array)
    xr.testing.assert_allclose(r.compute(), np.sin(ds.t))
    r = xr.apply_ufunc(lambda a, b: a * b, c, 2.0, dask="parallelized",
                       output_dtypes=[np.float64])
    xr.testing.assert_allclose(r.compute(), ds.t * 2.0)
    # xarray's CF coders map chunked data through the manager's map_blocks.
    from xarray.coding.variables import lazy_elemwise_func
    r = lazy_elemwise_func(c.data, lambda a: a * 0.5 + 1, np.dtype("float64"))
    assert isinstance(r, strata.Array)
    np.testing.assert_allclose(r.compute(), ds.t.values * 0.5 + 1)
    r = sx.chunk_manager().map_blocks(np.sum, c.data, dtype="float64", drop_axis=0, axis=0)
    np.testing.assert_allclose(r.compute(), ds.t.values.sum(axis=0))
    # Core dimensions consumed: strata.apply_gufunc.
    r = xr.apply_ufunc(np.mean, c.chunk({"lon": -1}, chunked_array_type="strata"),
                       input_core_dims=[["lon"]], kwargs={"axis": -1}, dask="parallelized",
                       output_dtypes=[np.float64])
    assert isinstance(r.data, strata.Array)
    xr.testing.assert_allclose(r.compute(), ds.t.mean("lon", skipna=False))


def test_strata_accessor_on_the_newer_xarray(tmp_path, rng):
    ds = dataset(rng)
    path = str(tmp_path / "ds.zarr")
    ds.to_zarr(path, encoding=ENCODING)
    lazy = sx.open_zarr(path)
    means = lazy.t.strata.groupby("country").mean()
    xr.testing.assert_allclose(means.strata.compute(), ds.t.groupby("country").mean())
    out = str(tmp_path / "out.zarr")
    (lazy[["t", "q"]] * 2).strata.to_zarr(out)
    xr.testing.assert_identical(xr.open_zarr(out).compute(),
                                xr.open_zarr(path)[["t", "q"]].compute() * 2)


def test_to_zarr_into_a_zarr_python_memory_store(rng, computes):
    """xarray's to_zarr into a store strata's engine cannot write (a
    zarr-python MemoryStore): zarr-python writes each strata block, in one
    strata compute, within the plan's memory check; modes, region=,
    append_dim= and compute=False as into a path, values equal to
    numpy-backed xarray's writes."""
    from zarr.storage import MemoryStore
    ds = dataset(rng)
    spec = strata.Spec(allowed_mem="20MB", reserved_mem="1MB")
    chunked = ds.chunk({"time": 2, "lon": 4}, chunked_array_type="strata",
                       from_array_kwargs={"spec": spec})
    out, ref = MemoryStore(), MemoryStore()
    hist = strata.HistoryCallback()
    computes.reset()
    chunked.to_zarr(out, chunkmanager_store_kwargs={"callbacks": [hist]})
    assert computes.n == 1, "every variable written in one strata compute"
    writers = [t for t in hist.tasks if t["op"].startswith("store-zarr-python")]
    assert len(writers) == 3 * 2 * 3 + 2, "one task per block of t, packed, q and land"
    for t in hist.tasks:
        assert 0 < t["measured_peak_mem"] <= t["projected_mem"] <= 20_000_000, t
    ds.to_zarr(ref, encoding={"t": {"chunks": (2, 5, 4)}, "packed": {"chunks": (2, 5, 4)},
                              "q": {"chunks": (2, 5, 4)}, "land": {"chunks": (5, 4)}})
    xr.testing.assert_identical(xr.open_zarr(out).compute(), xr.open_zarr(ref).compute())
    patch = (ds.isel(time=slice(2, 4)) + 1).drop_vars(["lat", "lon", "land", "country"])
    patch.chunk({"time": 2, "lon": 4}, chunked_array_type="strata").to_zarr(
        out, region={"time": slice(2, 4)})
    patch.to_zarr(ref, region={"time": slice(2, 4)})
    more = dataset(rng).assign_coords(time=pd.date_range("2020-01-03", periods=6, freq="6h"))
    delayed = more.chunk({"time": 2, "lon": 4}, chunked_array_type="strata").to_zarr(
        out, append_dim="time", compute=False)
    import dask
    dask.compute(delayed)
    more.to_zarr(ref, append_dim="time")
    extra = xr.Dataset({"w": ds.t.isel(time=0, drop=True) * 2})
    extra.chunk({"lon": 4}, chunked_array_type="strata").to_zarr(out, mode="a")
    extra.to_zarr(ref, mode="a")
    xr.testing.assert_identical(xr.open_zarr(out).compute(), xr.open_zarr(ref).compute())
    chunked.to_zarr(out, mode="w")
    xr.testing.assert_identical(xr.open_zarr(out).compute(), ds)


def test_to_zarr_into_a_zarr_python_store_refusals(rng):
    """Blocks that share a Zarr chunk (xarray's safe_chunks turned off) are
    refused before anything is written: two tasks would write one chunk at
    once. A store that fails names the target in one line."""
    from zarr.storage import MemoryStore
    ds = dataset(rng)[["t"]]
    out = MemoryStore()
    odd = ds.chunk({"time": 3}, chunked_array_type="strata")
    with pytest.raises(ValueError, match=r"share Zarr chunks of 2, which two tasks would write "
                                         r"at once; rechunk the data to multiples of 2") as e:
        odd.to_zarr(out, encoding={"t": {"chunks": (2, 5, 8)}}, safe_chunks=False)
    assert "\n" not in str(e.value)
    assert not [k for k in out._store_dict if k.startswith("t/c")], "nothing written"
    # A sharded array's unit of writing is the shard.
    v = xr.Dataset({"v": ("x", np.arange(16.0))})
    with pytest.raises(ValueError, match="share Zarr chunks of 8") as e:
        v.chunk({"x": 4}, chunked_array_type="strata").to_zarr(
            MemoryStore(), encoding={"v": {"chunks": (2,), "shards": (8,)}}, zarr_format=3,
            safe_chunks=False)
    sharded = MemoryStore()
    v.chunk({"x": 8}, chunked_array_type="strata").to_zarr(
        sharded, encoding={"v": {"chunks": (2,), "shards": (8,)}}, zarr_format=3)
    np.testing.assert_array_equal(xr.open_zarr(sharded).v.values, v.v.values)
    # One block covering part of chunks no other block writes is no race.
    region = ds.isel(time=slice(1, 4)).drop_vars(["lat", "lon", "country"])
    region.chunk(chunked_array_type="strata").to_zarr(out, region={"time": slice(1, 4)},
                                                      safe_chunks=False)
    np.testing.assert_array_equal(xr.open_zarr(out).t.values[1:4], ds.t.values[1:4])

    class Failing(MemoryStore):
        async def set(self, key, value, byte_range=None):
            if key.startswith("t/c"):   # the strata-backed variable's chunks
                raise OSError("disk full\nsecond line")
            return await super().set(key, value)
    with pytest.raises(OSError, match=r"store into .*/t: writing block \(0, 0, 0\): OSError: "
                                      r"disk full second line") as e:
        ds.chunk({"time": 6}, chunked_array_type="strata").to_zarr(Failing())
    assert "\n" not in str(e.value)


def test_s3fs_settings_strata_takes():
    """s3fs storage options as strata's S3 URL query, or None (zarr-python
    writes) where strata's S3 store would not write where and as s3fs does."""
    from strata.xarray._chunkmanager import _s3_query
    assert _s3_query({}) == {}
    assert _s3_query({"endpoint_url": "http://127.0.0.1:9000/", "anon": True,
                      "client_kwargs": {"region_name": "eu-west-1"},
                      "asynchronous": True}) == {
        "endpoint": "http://127.0.0.1:9000", "region": "eu-west-1", "anon": "true"}
    assert _s3_query({"client_kwargs": {"endpoint_url": "http://h:1"}, "profile": "p"}) == {
        "endpoint": "http://h:1", "profile": "p"}
    env = {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"}
    with pytest.MonkeyPatch.context() as m:
        for k, v in env.items():
            m.setenv(k, v)
        m.delenv("AWS_SESSION_TOKEN", raising=False)
        assert _s3_query({"key": "AK", "secret": "SK"}) == {}
        assert _s3_query({"key": "AK", "secret": "other"}) is None
        assert _s3_query({"key": "AK", "secret": "SK", "token": "T"}) is None
        assert _s3_query({"key": "AK", "secret": "SK", "profile": "p"}) is None
    for other in ({"requester_pays": True}, {"config_kwargs": {"retries": {}}},
                  {"s3_additional_kwargs": {"ACL": "private"}},
                  {"client_kwargs": {"verify": False}}, {"endpoint_url": "http://h/?a=b"}):
        assert _s3_query(other) is None, other
