"""strata.xarray with datasets on S3 (issue 19): open_zarr of s3:// groups
and the .strata accessor's to_zarr into them, against s3rver on 127.0.0.1
(started by the s3_server fixture, stopped after).

Each check of the local suite (test_xarray.py) is made on S3: values equal
to numpy-backed xarray, coordinates read now and data lazy, attributes and
encodings kept, Zarr v2 (consolidated or not) and v3, round trips through
the accessor, and bad input (an unreachable endpoint, a missing bucket, a
prefix that is no Zarr group, a write that fails) refused in one line with
nothing half-written. Region backfills, appends and added variables,
matched against xarray's own to_zarr, are test_xarray.py's tests, which run
on a path and on S3 (its `place` fixture). The oracle is xarray on a local
copy: groups go to S3 and come back byte for byte through strata's own
store (`_strata.open_store`, conftest's S3Place), which the first test
checks. The last tests write with xarray's own to_zarr("s3://...",
storage_options=) through s3fs (the chunk manager's store hook)."""
import json
import socket
import time
import uuid

import numpy as np
import pytest

import strata
import strata.xarray as sx
from conftest import S3_BUCKETS, LocalPlace, S3Place, open_store
from test_xarray import WEATHER_ENCODING, on_strata, weather, xarray_dataset

xr = pytest.importorskip("xarray")

BUCKET = S3_BUCKETS[0]


@pytest.fixture
def s3(s3_env):
    """A fresh prefix in the test bucket."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}"


def upload(local, url):
    S3Place(url).put_tree(local)


def objects(url):
    """Every key under `url` with its bytes."""
    return S3Place(url).files()


def one_line(excinfo):
    text = str(excinfo.value)
    assert "\n" not in text, text
    return text


def test_upload_and_download_are_byte_for_byte(s3, tmp_path, rng):
    local = str(tmp_path / "ds.zarr")
    xarray_dataset(rng).to_zarr(local)
    upload(local, s3)
    files = LocalPlace(local).files()
    assert objects(s3) == files
    assert LocalPlace(S3Place(s3).readable(tmp_path)).files() == files


# ---------------------------------------------------------------- open_zarr

@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_open_zarr_of_xarray_written_dataset_on_s3(s3, tmp_path, rng, computes, consolidated,
                                                   zarr_format):
    ds = xarray_dataset(rng).assign_coords(
        country=("lon", np.array(["fr", "de", "fr", "it", "de", "fr", "es", "pt"])))
    ds.packed.encoding = {"dtype": "int16", "scale_factor": 0.1, "add_offset": 2800.0,
                          "_FillValue": -32768}
    ds.t.encoding = {"chunks": (2, 5, 4)}
    local = str(tmp_path / "ds.zarr")
    ds.to_zarr(local, consolidated=consolidated, zarr_format=zarr_format)
    url = f"{s3}/ds.zarr"
    upload(local, url)
    if zarr_format == 2:
        assert (".zmetadata" in objects(url)) == consolidated
    else:
        group = json.loads(objects(url)["zarr.json"])
        assert ("consolidated_metadata" in group) == consolidated
    computes.reset()
    ours = sx.open_zarr(url)
    assert computes.n == 5, "the numeric coordinates are read now, one compute each"
    for name in ("t", "packed", "q", "f32", "land"):
        assert isinstance(ours[name].data, strata.Array), name
    assert not isinstance(ours.country.data, strata.Array), "strings are read now"
    assert ours.t.data.chunksize == (2, 5, 4)
    mine = sx.open_zarr(local)
    for name in mine.variables:   # (repr: a NaN fill value equals itself)
        assert repr(ours[name].encoding) == repr(mine[name].encoding), name
        assert repr(ours[name].attrs) == repr(mine[name].attrs), name
    assert ours.attrs == mine.attrs
    computes.reset()
    got = ours.strata.compute()
    assert computes.n == 1
    xr.testing.assert_identical(got, xr.open_zarr(local, consolidated=consolidated).compute())
    # chunks=, spec=, group= and the open_zarr options work as on a path.
    spec = strata.Spec(allowed_mem="50MB")
    ours = sx.open_zarr(s3, group="ds.zarr", chunks={"time": 4, "lon": -1}, spec=spec,
                        drop_variables=["q"])
    assert ours.t.data.chunksize == (4, 5, 8) and ours.t.data.spec.allowed_mem == 50_000_000
    xr.testing.assert_identical(ours.strata.compute(),
                                xr.open_zarr(local, drop_variables=["q"]).compute())


def test_zarr_v3_with_dimension_names_on_s3(s3, tmp_path, rng):
    ds = xarray_dataset(rng)
    local = str(tmp_path / "in.zarr")
    ds.to_zarr(local)
    expected = xr.open_zarr(local).compute()
    # Written to S3 by the accessor in Zarr v3 ...
    url = f"{s3}/v3.zarr"
    sx.open_zarr(local).strata.to_zarr(url, zarr_format=3)
    store = open_store(url)
    assert json.loads(store.get("t/zarr.json"))["dimension_names"] == ["time", "lat", "lon"]
    assert "consolidated_metadata" in json.loads(store.get("zarr.json"))
    for consolidated in (None, False):
        xr.testing.assert_identical(sx.open_zarr(url, consolidated=consolidated)
                                    .strata.compute(), expected)
    # ... and written locally, then uploaded.
    v3_local = str(tmp_path / "v3.zarr")
    sx.open_zarr(local).strata.to_zarr(v3_local, zarr_format=3, consolidated=False)
    upload(v3_local, f"{s3}/v3b.zarr")
    xr.testing.assert_identical(sx.open_zarr(f"{s3}/v3b.zarr").strata.compute(), expected)


# ---------------------------------------------------------------- the accessor

def test_accessor_modes_on_s3(s3, tmp_path, rng):
    ds = weather(rng, "2020-01-01", 4)
    url = f"{s3}/out.zarr"
    on_strata(ds).strata.to_zarr(url)
    with pytest.raises(FileExistsError, match="mode='w'") as e:
        on_strata(ds).strata.to_zarr(url)
    one_line(e)
    # "w" replaces the group: variables it does not write are gone.
    (on_strata(ds)[["t"]] * 2).strata.to_zarr(url, mode="w")
    keys = objects(url)
    assert not any(k.startswith(("q/", "packed/", "land/")) for k in keys)
    got = sx.open_zarr(url).strata.compute()
    assert set(got.data_vars) == {"t"}
    np.testing.assert_array_equal(got.t.values, ds.t.values * 2)
    # Replacing a group with what is computed from it: S3 cannot stage the
    # new group, so overwriting an array the compute reads is refused before
    # anything changes; new variables computed from old ones are fine.
    lazy = sx.open_zarr(url)
    before = objects(url)
    with pytest.raises(ValueError, match="the computation reads the Zarr array") as e:
        (lazy * 2).strata.to_zarr(url, mode="w")
    one_line(e)
    assert objects(url) == before
    xr.Dataset({"t4": lazy.t * 2}).strata.to_zarr(url, mode="w")
    assert not any(k.startswith("t/") for k in objects(url)), "the old t is gone"
    got = sx.open_zarr(url)
    assert set(got.data_vars) == {"t4"}
    np.testing.assert_array_equal(got.t4.values, ds.t.values * 4)
    # Objects that are not a Zarr group are never replaced.
    other = f"{s3}/not_zarr"
    open_store(other).set("keep.txt", b"mine")
    with pytest.raises(ValueError, match="not a Zarr group") as e:
        on_strata(ds).strata.to_zarr(other, mode="w")
    one_line(e)
    assert objects(other) == {"keep.txt": b"mine"}
    # A variable strata cannot write is refused before anything is written.
    bad = on_strata(ds).assign(name=("lon", np.array([{}, 1, 2, 3, 4, 5], dtype=object)))
    with pytest.raises((TypeError, ValueError), match="'name'"):
        bad.strata.to_zarr(f"{s3}/bad.zarr")
    assert objects(f"{s3}/bad.zarr") == {}
    before = objects(url)
    with pytest.raises((TypeError, ValueError), match="'name'"):
        bad.strata.to_zarr(url, mode="w")
    assert objects(url) == before, "a refused mode='w' leaves the old group as it was"


def failing(ds, url, wait_for=None):
    """ds with a variable "broken" whose compute fails (its third block),
    once `wait_for(store)` holds (polled for up to 10 s); the keys under
    `url` then are in the returned list (None if wait_for never held)."""
    seen = []

    def fail(block, block_id=None):
        if block_id[0] == 2:
            store = open_store(url)
            held = False
            for _ in range(200):
                held = wait_for is None or wait_for(store)
                if held:
                    break
                time.sleep(0.05)
            seen.append(set(store.list("")) if held else None)
            raise RuntimeError("a source that fails mid-write")
        return block
    out = ds.copy()
    out["broken"] = ds.t.copy(data=strata.map_blocks(fail, ds.t.data, dtype="float64"))
    return out, seen


def test_failed_writes_leave_nothing_half_written_on_s3(s3, rng):
    ds = on_strata(weather(rng, "2020-01-01", 6))
    # A new group: no group while it is written, nothing at all left after.
    url = f"{s3}/new.zarr"
    bad, seen = failing(ds, url, lambda store: "t/.zarray" in store.list("t/"))
    with pytest.raises(RuntimeError, match="fails mid-write"):
        bad.strata.to_zarr(url)
    assert "t/.zarray" in seen[0] and not seen[0] & {".zgroup", ".zmetadata", ".zattrs"}
    assert objects(url) == {}
    # A replaced group: S3 cannot rename, so the old group's metadata goes
    # first (README); a failure leaves no group rather than a mix.
    url = f"{s3}/old.zarr"
    ds.strata.to_zarr(url)
    assert {".zgroup", ".zmetadata"} <= set(objects(url))
    bad, seen = failing(ds, url)
    with pytest.raises(RuntimeError, match="fails mid-write"):
        bad.strata.to_zarr(url, mode="w")
    assert not seen[0] & {".zgroup", ".zmetadata", ".zattrs"}
    assert objects(url) == {}
    with pytest.raises(FileNotFoundError, match="no Zarr group"):
        sx.open_zarr(url)
    # An append that fails once q has grown: the old dataset comes back,
    # created variables go.
    url = f"{s3}/append.zarr"
    base = weather(rng, "2020-01-01", 6)
    on_strata(base).strata.to_zarr(url, encoding=WEATHER_ENCODING)
    before = sx.open_zarr(url).strata.compute()
    more = on_strata(weather(rng, "2020-01-02 12:00", 6))
    more["new"] = more.q * 2

    def q_grown(store):
        return json.loads(store.get("q/.zarray"))["shape"][0] == 12
    bad, seen = failing(more, url, q_grown)
    with pytest.raises(RuntimeError, match="fails mid-write"):
        bad.strata.to_zarr(url, append_dim="time")
    assert q_grown(open_store(url)) is False
    assert any(k.startswith("new/") for k in seen[0]), "new had been written when it failed"
    xr.testing.assert_identical(sx.open_zarr(url).strata.compute(), before)
    xr.testing.assert_identical(sx.open_zarr(url, consolidated=False).strata.compute(), before)
    assert not any(k.startswith(("new/", "broken/")) for k in objects(url))


# ---------------------------------------------------------------- bad input

def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_bad_input_on_s3_is_one_clear_line(s3, rng, monkeypatch):
    ds = on_strata(weather(rng, "2020-01-01", 3))
    # An unreachable endpoint names itself (a port nothing listens on).
    endpoint = f"http://127.0.0.1:{closed_port()}"
    url = f"s3://{BUCKET}/x.zarr?endpoint={endpoint}&max_retries=1"
    with pytest.raises(OSError, match=f"open_zarr: .*{endpoint}") as e:
        sx.open_zarr(url)
    one_line(e)
    with pytest.raises(OSError, match=f"to_zarr: .*{endpoint}") as e:
        ds.strata.to_zarr(url)
    one_line(e)
    # A bucket that does not exist.
    with pytest.raises(FileNotFoundError, match="bucket 'no-such-bucket' does not exist") as e:
        sx.open_zarr("s3://no-such-bucket/ds.zarr")
    one_line(e)
    with pytest.raises(FileNotFoundError, match="bucket 'no-such-bucket' does not exist") as e:
        ds.strata.to_zarr("s3://no-such-bucket/ds.zarr")
    one_line(e)
    # Nothing at the prefix; objects that are no Zarr group; one array.
    with pytest.raises(FileNotFoundError, match=f"no Zarr group at '{s3}/missing.zarr'") as e:
        sx.open_zarr(f"{s3}/missing.zarr")
    one_line(e)
    open_store(f"{s3}/plain").set("data.csv", b"1,2,3")
    with pytest.raises(ValueError, match="is not a Zarr group") as e:
        sx.open_zarr(f"{s3}/plain")
    one_line(e)
    strata.to_zarr(strata.ones((4,)), f"{s3}/array.zarr", zarr_format=3)
    with pytest.raises(ValueError, match="is a Zarr 'array', not a group") as e:
        sx.open_zarr(f"{s3}/array.zarr")
    one_line(e)
    with pytest.raises(ValueError, match="unsupported URL scheme") as e:
        sx.open_zarr("gs://bucket/ds.zarr")
    one_line(e)
    # Region and append into nothing, as on a path.
    only_t = ds[["t"]].drop_vars(["lat", "lon", "station", "country", "height"])
    with pytest.raises(FileNotFoundError, match="no Zarr group") as e:
        only_t.strata.to_zarr(f"{s3}/missing.zarr", region={"time": slice(0, 3)})
    one_line(e)
    with pytest.raises(ValueError, match="does not match any existing dataset dimensions"):
        only_t.strata.to_zarr(f"{s3}/missing.zarr", append_dim="time")
    assert objects(f"{s3}/missing.zarr") == {}
    # Wrong credentials.
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(OSError, match="403") as e:
        sx.open_zarr(f"{s3}/plain")
    one_line(e)


# ------------------------------------------- xarray's own to_zarr("s3://...")
# xarray opens s3:// through zarr-python's FsspecStore over s3fs; the chunk
# manager's store hook writes the chunks with strata's own S3 store when it
# can say the same settings (_strata_url), else through zarr-python.

def options(server, **overrides):
    """storage_options for s3fs, pointing at the test server."""
    pytest.importorskip("s3fs")
    out = {"endpoint_url": server.endpoint, "key": "S3RVER", "secret": "S3RVER",
           "client_kwargs": {"region_name": "us-east-1"}}
    out.update(overrides)
    return out


@pytest.fixture
def writes(monkeypatch):
    """How the store hook writes: the number of (strata-engine, zarr-python)
    array writes it made."""
    from strata.xarray import _chunkmanager as cm
    count = {"engine": 0, "zarr": 0}
    real_url, real_writes = cm._strata_url, cm._zarr_writes

    def url(target):
        u = real_url(target)
        count["engine"] += u is not None
        return u

    def zarr_writes(*args):
        count["zarr"] += 1
        return real_writes(*args)
    monkeypatch.setattr(cm, "_strata_url", url)
    monkeypatch.setattr(cm, "_zarr_writes", zarr_writes)
    return count


# The weather encodings, t's chunks left to xarray (the data's own blocks:
# xarray's safe_chunks refuses blocks that share a Zarr chunk).
ENCODING = {k: v for k, v in WEATHER_ENCODING.items() if k != "t"}


def check_tasks(hist, allowed):
    assert hist.tasks
    for t in hist.tasks:
        assert 0 < t["measured_peak_mem"] <= t["projected_mem"] <= allowed, t


def test_xarray_to_zarr_s3_storage_options(s3, s3_env, tmp_path, rng, writes):
    """xarray's own to_zarr("s3://...", storage_options=) of strata-backed
    data, mode "w", "a" (a new variable), region= and append_dim=, equals
    xarray's numpy-backed writes into a local store; the engine writes the
    chunks (the settings are the ones its S3 store takes)."""
    so = options(s3_env)
    url, ref = f"{s3}/xr.zarr", str(tmp_path / "ref.zarr")
    spec = strata.Spec(allowed_mem="30MB", reserved_mem="1MB")
    base = weather(rng, "2020-01-01", 8)
    hist = strata.HistoryCallback()
    on_strata(base, chunks=(4, 4, 6)).to_zarr(url, storage_options=so, mode="w",
                                               encoding=ENCODING,
                                               chunkmanager_store_kwargs={"callbacks": [hist]})
    base.to_zarr(ref, mode="w", encoding=ENCODING)
    assert writes == {"engine": 4, "zarr": 0}
    check_tasks(hist, 30_000_000)
    patch = (base.isel(time=slice(4, 8)) + 1)[["t", "q"]].drop_vars(
        ["lat", "lon", "station", "country", "height"])
    on_strata(patch, chunks=(4, 4, 6)).to_zarr(url, storage_options=so,
                                               region={"time": slice(4, 8)})
    patch.to_zarr(ref, region={"time": slice(4, 8)})
    more = weather(rng, "2020-01-03", 4)
    on_strata(more, chunks=(4, 4, 6)).to_zarr(url, storage_options=so, append_dim="time")
    more.to_zarr(ref, append_dim="time")
    extra = xr.Dataset({"w": base.t.isel(time=0, drop=True) * 2})
    on_strata(extra, chunks=(2, 3)).to_zarr(url, storage_options=so, mode="a")
    extra.to_zarr(ref, mode="a")
    assert writes["zarr"] == 0
    got = xr.open_zarr(url, storage_options=so).compute()
    xr.testing.assert_identical(got, xr.open_zarr(ref).compute())
    # strata's own reader agrees.
    xr.testing.assert_identical(sx.open_zarr(url).strata.compute()[list(got.data_vars)], got)


def test_xarray_to_zarr_s3_compute_false(s3, s3_env, tmp_path, rng, writes):
    dask = pytest.importorskip("dask")
    so = options(s3_env)
    url, ref = f"{s3}/lazy.zarr", str(tmp_path / "ref.zarr")
    ds = weather(rng, "2020-01-01", 8)
    delayed = on_strata(ds, chunks=(4, 4, 6)).to_zarr(url, storage_options=so,
                                                      encoding=ENCODING, compute=False)
    assert not [k for k in objects(url) if k.startswith("t/c")], "no chunk before the compute"
    dask.compute(delayed)
    assert writes == {"engine": 4, "zarr": 0}
    ds.to_zarr(ref, encoding=ENCODING)
    xr.testing.assert_identical(xr.open_zarr(url, storage_options=so).compute(),
                                xr.open_zarr(ref).compute())


def test_xarray_to_zarr_s3_settings_strata_cannot_take(s3, s3_env, rng, monkeypatch, writes):
    """Credentials in storage_options that are not the ones strata's chain
    finds (it takes none in a URL), and s3fs options strata has no spelling
    for: zarr-python writes every block, within the plan's memory check."""
    so = options(s3_env)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "SOMEONE-ELSE")
    ds = weather(rng, "2020-01-01", 8)
    hist = strata.HistoryCallback()
    url = f"{s3}/generic.zarr"
    on_strata(ds, chunks=(4, 4, 6)).to_zarr(url, storage_options=so, encoding=ENCODING,
                                            chunkmanager_store_kwargs={"callbacks": [hist]})
    assert writes == {"engine": 0, "zarr": 4}
    check_tasks(hist, strata.Spec().allowed_mem)
    assert any(t["op"].startswith("store-zarr-python") for t in hist.tasks)
    more = weather(rng, "2020-01-03", 4)
    on_strata(more, chunks=(4, 4, 6)).to_zarr(
        url, storage_options=options(s3_env, requester_pays=False), append_dim="time")
    got = xr.open_zarr(url, storage_options=so).compute()
    np.testing.assert_array_equal(got.t.values, np.concatenate([ds.t.values, more.t.values]))
    np.testing.assert_array_equal(got.q.values, np.concatenate([ds.q.values, more.q.values]))


def test_xarray_to_zarr_s3_errors(s3, s3_env, rng):
    """A server that does not answer: s3fs's own error, from xarray's first
    metadata write, before anything of the data is written. A write that
    fails mid-way raises from to_zarr; xarray wrote the group's metadata
    (consolidated) before any chunk, as with Dask, so the chunks not written
    read as fill values (docs/xarray.md: the accessor's to_zarr writes the
    metadata last)."""
    ds = on_strata(weather(rng, "2020-01-01", 8), chunks=(2, 4, 6))
    endpoint = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(Exception, match="127.0.0.1"):
        ds.to_zarr(f"{s3}/nowhere.zarr",
                   storage_options=options(s3_env, endpoint_url=endpoint,
                                           config_kwargs={"retries": {"max_attempts": 1},
                                                          "connect_timeout": 1}))
    url = f"{s3}/broken.zarr"
    bad, _ = failing(ds, url)
    with pytest.raises(RuntimeError, match="fails mid-write") as e:
        bad.to_zarr(url, storage_options=options(s3_env), zarr_format=2)
    one_line(e)
