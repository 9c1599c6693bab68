"""The weather-features pipeline of issue 37, as its users write it in
xarray, verbatim but for naming the chunk manager and a Spec:

    xr.open_zarr(store, chunked_array_type="strata", from_array_kwargs={"spec": spec})
      .sel(lat=lats, lon=lons, method="nearest")   # lats, lons: DataArrays along "point"
      ... derived variables (np.hypot(u, v), temperature in C)
      .groupby("country").mean(["point"])          # country: a coordinate along "point"
      -> .to_zarr(...)  and  -> ds.strata.to_parquet(...)

on a synthetic forecast archive (init_time x valid_time x lat x lon), on a
local path and on S3 (s3rver on 127.0.0.1), compared with the same code on
xarray + Dask (its threaded scheduler) on the same archive. xarray reaches
S3 here through a zarr-python store over strata's own Store (`strata_store`:
the venv has no s3fs), the same store object for both engines. Parquet is
read back by pandas and by DuckDB."""
import uuid
import warnings
from collections.abc import MutableMapping

import numpy as np
import pandas as pd
import pytest

import strata
import strata.xarray  # noqa: F401  (the .strata accessor)
from conftest import S3_BUCKETS, S3Place, open_store

xr = pytest.importorskip("xarray")
dask = pytest.importorskip("dask")
pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

SHAPE = (2, 3, 24, 40)   # init_time, valid_time, lat, lon
CHUNKS = (1, 1, 12, 16)  # a forecast field in spatial tiles
POINTS = 60
COUNTRIES = 7
# float32 inputs: a mean in degC near 0 carries the absolute error of Kelvin
# values near 300 (float32 spacing 3e-5).
RTOL, ATOL = 1e-5, 1e-4


def archive():
    rng = np.random.default_rng(37)
    n_init, n_valid, n_lat, n_lon = SHAPE
    dims = ("init_time", "valid_time", "lat", "lon")
    coords = {"init_time": pd.date_range("2024-01-01", periods=n_init, freq="12h"),
              "valid_time": pd.to_timedelta(np.arange(n_valid) * 6, unit="h"),
              "lat": np.linspace(90.0, -90.0, n_lat),
              "lon": np.linspace(0.0, 360.0, n_lon, endpoint=False)}

    def field(lo, hi):
        return (rng.random(SHAPE) * (hi - lo) + lo).astype("float32")
    ds = xr.Dataset({"u10": (dims, field(-20, 20), {"units": "m s-1"}),
                     "v10": (dims, field(-20, 20), {"units": "m s-1"}),
                     "t2m": (dims, field(230, 310), {"units": "K"})}, coords=coords)
    for v in ds.data_vars.values():
        v.encoding["chunks"] = CHUNKS
    return ds


def stations():
    rng = np.random.default_rng(38)
    lats = xr.DataArray(rng.uniform(-60.0, 70.0, POINTS), dims="point")
    lons = xr.DataArray(rng.uniform(0.0, 359.0, POINTS), dims="point")
    country = np.array([f"C{int(i):02d}" for i in rng.integers(0, COUNTRIES, POINTS)])
    return lats, lons, xr.DataArray(country, dims="point")


def pipeline(ds, use_flox=None):
    """The pipeline from the opened archive to the per-country means
    (use_flox None: flox for Dask, xarray's own group-by for Strata)."""
    lats, lons, country = stations()
    pts = ds.sel(lat=lats, lon=lons, method="nearest").assign_coords(country=country)
    features = xr.Dataset({"wind_speed": np.hypot(pts.u10, pts.v10),
                           "t2m_celsius": pts.t2m - 273.15})
    # With flox installed, xarray hands every chunked array's group-by to flox,
    # which computes Dask and Cubed arrays only; on Strata, xarray's own
    # group-by runs instead, planned as one grouped reduction per variable
    # (docs/xarray.md, "Group-by").
    if use_flox is None:
        use_flox = not type(features.wind_speed.data).__module__.startswith("strata")
    with xr.set_options(use_flox=use_flox):
        return features.groupby("country").mean(["point"])


class _StoreMapping(MutableMapping):
    """strata's Store of a URL as the dictionary of a zarr-python MemoryStore."""

    def __init__(self, url):
        self._store = open_store(url)

    def __getitem__(self, key):
        from zarr.core.buffer import default_buffer_prototype
        value = self._store.get(key)
        if value is None:
            raise KeyError(key)
        return default_buffer_prototype().buffer.from_bytes(value)

    def __setitem__(self, key, value):
        self._store.set(key, value.to_bytes())

    def __delitem__(self, key):
        self._store.erase(key)

    def __iter__(self):
        return iter(self._store.list(""))

    def __len__(self):
        return len(self._store.list(""))


def strata_store(url):
    """A zarr-python 3 store of an s3:// group through strata's Store."""
    from zarr.storage import MemoryStore
    return MemoryStore(_StoreMapping(url))


@pytest.fixture(scope="module")
def local_archive(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("archive") / "ifs.zarr")
    with warnings.catch_warnings():   # zarr-python: v3's consolidated metadata is no standard
        warnings.simplefilter("ignore")
        archive().to_zarr(path, zarr_format=3, consolidated=True)
    return path


@pytest.fixture(params=["local", "s3"])
def where(request, local_archive, tmp_path):
    """(the archive as xr.open_zarr takes it, a place for outputs)."""
    if request.param == "local":
        return local_archive, str(tmp_path)
    request.getfixturevalue("s3_env")
    prefix = f"s3://{S3_BUCKETS[0]}/{uuid.uuid4().hex[:8]}"
    S3Place(f"{prefix}/ifs.zarr").put_tree(local_archive)
    return strata_store(f"{prefix}/ifs.zarr"), prefix


@pytest.fixture
def expected(local_archive):
    """The pipeline on xarray + Dask (threads), computed."""
    with dask.config.set(scheduler="threads"):
        return pipeline(xr.open_zarr(local_archive)).compute()


def on_strata(store, spec):
    return xr.open_zarr(store, chunked_array_type="strata", from_array_kwargs={"spec": spec})


def test_pipeline_is_lazy_on_strata(where, spec):
    store, _ = where
    means = pipeline(on_strata(store, spec))
    for v in means.data_vars.values():
        assert isinstance(v.data, strata.Array)


def grouped_reductions(means):
    """The grouped reductions in the plan of means (one partial op each), and
    the plan's op kinds."""
    kinds = [op["op"] for op in
             strata.plan(*[v.data for v in means.data_vars.values()]).to_dict()["ops"]]
    return sum(k.startswith("groupby") and k.endswith("partial") for k in kinds), kinds


def test_pipeline_without_flox_is_one_grouped_reduction_per_variable(local_archive, spec,
                                                                     expected):
    """xarray's own group-by (use_flox=False) over the 7 countries is ONE
    grouped reduction per variable, not a selection and a reduction per
    country; values as xarray + Dask with flox, every task within its
    projection and allowed_mem."""
    means = pipeline(on_strata(local_archive, spec), use_flox=False)
    n, kinds = grouped_reductions(means)
    assert n == len(means.data_vars) == 2, kinds
    assert not [k for k in kinds if k in ("index", "concat") or k.startswith("nanmean")], kinds
    h = strata.HistoryCallback()
    values = strata.compute(*[v.data for v in means.data_vars.values()], callbacks=[h])
    assert h.ok, h.error
    for t in h.tasks:
        assert t["measured_peak_mem"] <= t["projected_mem"] <= spec.allowed_mem, t
    for got, name in zip(values, means.data_vars):
        ref = expected[name].transpose(*means[name].dims).values
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def test_pipeline_with_flox_fails_fast(local_archive, spec):
    """With flox (xarray's default when it is installed) the group-by goes
    to flox, which would compute strata arrays whole: a one-line error that
    names the spellings that work, before anything is read."""
    pytest.importorskip("flox")
    with pytest.raises(NotImplementedError, match=r"use_flox=False.*ds\.strata\.groupby"):
        pipeline(on_strata(local_archive, spec), use_flox=True)


def test_pipeline_on_dask_reads_the_same_store(where, expected):
    store, _ = where
    with dask.config.set(scheduler="threads"):
        ours = pipeline(xr.open_zarr(store)).compute()
    xr.testing.assert_identical(ours, expected)


def test_pipeline_to_zarr(where, spec, expected, tmp_path):
    store, out = where
    means = pipeline(on_strata(store, spec))
    target = f"{out}/means.zarr"
    if target.startswith("s3://"):
        means.strata.to_zarr(target)
        back = xr.open_zarr(S3Place(target).readable(tmp_path)).compute()
    else:
        means.to_zarr(target)
        back = xr.open_zarr(target).compute()
    xr.testing.assert_allclose(back.transpose(*expected.dims), expected, rtol=RTOL, atol=ATOL)


def test_pipeline_xarray_to_zarr_into_an_s3_store(s3_env, local_archive, spec, expected,
                                                  tmp_path):
    prefix = f"s3://{S3_BUCKETS[0]}/{uuid.uuid4().hex[:8]}"
    S3Place(f"{prefix}/ifs.zarr").put_tree(local_archive)
    means = pipeline(on_strata(strata_store(f"{prefix}/ifs.zarr"), spec))
    # A zarr-python store of the user's own (zarr-python writes the blocks).
    means.to_zarr(strata_store(f"{prefix}/means.zarr"))
    back = xr.open_zarr(S3Place(f"{prefix}/means.zarr").readable(tmp_path)).compute()
    xr.testing.assert_allclose(back.transpose(*expected.dims), expected, rtol=RTOL, atol=ATOL)
    # xarray's s3:// with s3fs's storage options (strata's engine writes).
    pytest.importorskip("s3fs")
    options = {"endpoint_url": s3_env.endpoint, "key": "S3RVER", "secret": "S3RVER"}
    means.to_zarr(f"{prefix}/means2.zarr", storage_options=options)
    back = xr.open_zarr(f"{prefix}/means2.zarr", storage_options=options).compute()
    xr.testing.assert_allclose(back.transpose(*expected.dims), expected, rtol=RTOL, atol=ATOL)
    # Opened through s3fs, the stored variables are read by strata's S3
    # reader: the pointwise selection (vindex) reads the stored chunks its
    # points fall in itself, and no block goes through xarray's backend
    # (whose read, one op, runs every block).
    ds = xr.open_zarr(f"{prefix}/ifs.zarr", storage_options=options,
                      chunked_array_type="strata", from_array_kwargs={"spec": spec})
    for name in ("u10", "v10", "t2m"):
        kinds = [op["op"] for op in strata.plan(ds[name].data).to_dict()["ops"]]
        assert kinds == ["from_zarr"], (name, kinds)
    xr.testing.assert_allclose(pipeline(ds).compute().transpose(*expected.dims), expected,
                               rtol=RTOL, atol=ATOL)


def test_pipeline_to_parquet(where, spec, expected, tmp_path):
    store, out = where
    means = pipeline(on_strata(store, spec))
    target = f"{out}/means.parquet"
    means.strata.to_parquet(target)
    local = S3Place(target).readable(tmp_path) if target.startswith("s3://") else target
    ref = expected.to_dataframe()
    back = pd.read_parquet(local)
    pd.testing.assert_frame_equal(back.sort_index(), ref.sort_index(), rtol=RTOL, atol=ATOL)
    rows = duckdb.sql(f"SELECT country, count(*) AS n, avg(wind_speed) AS w "
                      f"FROM read_parquet('{local}/*.parquet') GROUP BY country "
                      "ORDER BY country").df()
    by_country = ref.groupby("country").wind_speed
    np.testing.assert_array_equal(rows.country, by_country.mean().index)
    np.testing.assert_array_equal(rows.n, by_country.size())
    np.testing.assert_allclose(rows.w, by_country.mean(), rtol=RTOL, atol=ATOL)


def test_pipeline_to_dataframe(where, spec, expected):
    store, _ = where
    frame = pipeline(on_strata(store, spec)).strata.to_dataframe()
    pd.testing.assert_frame_equal(frame, expected.to_dataframe(), rtol=RTOL, atol=ATOL)


def test_derived_features_to_parquet(where, spec, tmp_path):
    """The per-point features (before the group-by), a dataset with a
    string coordinate along "point", to Parquet."""
    store, out = where
    lats, lons, country = stations()

    def features(ds):
        pts = ds.sel(lat=lats, lon=lons, method="nearest").assign_coords(country=country)
        return xr.Dataset({"wind_speed": np.hypot(pts.u10, pts.v10),
                           "t2m_celsius": pts.t2m - 273.15})
    target = f"{out}/features.parquet"
    features(on_strata(store, spec)).strata.to_parquet(target)
    local = S3Place(target).readable(tmp_path) if target.startswith("s3://") else target
    with dask.config.set(scheduler="threads"):
        ref = features(xr.open_zarr(store)).compute().to_dataframe()
    back = pd.read_parquet(local)
    pd.testing.assert_frame_equal(back.sort_index(), ref.sort_index(), rtol=RTOL, atol=ATOL)
    n = duckdb.sql(f"SELECT count(*) FROM read_parquet('{local}/*.parquet')").fetchall()[0][0]
    assert n == len(ref)
