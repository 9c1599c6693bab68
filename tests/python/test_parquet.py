"""ds.strata.to_dataframe() and ds.strata.to_parquet() (issue 37): frames
equal to xarray's `compute().to_dataframe()`; Parquet datasets that pandas,
pyarrow and DuckDB (an independent reader) read back equal, written block by
block within allowed_mem, published with `_SUCCESS` last, on a path and on
S3 (s3rver on 127.0.0.1); failures that leave nothing that looks complete
and no staging litter; bad arguments refused in one line."""
import json
import os
import sys
import uuid

import numpy as np
import pandas as pd
import pytest

import strata
import strata.xarray  # noqa: F401  (the .strata accessor)
from conftest import S3_BUCKETS, S3Place
from strata.xarray import _parquet

xr = pytest.importorskip("xarray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")


def dataset(rng):
    """float, int, bool, datetime and string coordinates and variables; a
    dimension without a coordinate ("member")."""
    time = pd.date_range("2024-01-01", periods=6, freq="6h")
    return xr.Dataset(
        {"u": (("time", "lat", "lon"), rng.random((6, 5, 4)).astype("float32")),
         "count": (("lat", "member"), rng.integers(0, 100, (5, 3))),
         "ok": (("time",), rng.random(6) > 0.5)},
        coords={"time": time, "lat": np.linspace(10.0, -10.0, 5), "lon": np.arange(4) * 1.5,
                "name": ("lon", np.array(["fr", "de", "it", "pt"])),
                "flag": ("lat", np.array([True, False, True, True, False])),
                "issued": ("time", time - pd.Timedelta("3h")),
                "level": 850})


def on_strata(ds, spec, chunks=None):
    chunks = chunks or {"time": 2, "lat": 3, "member": 2}
    return ds.chunk(chunks, chunked_array_type="strata", from_array_kwargs={"spec": spec})


def one_line(excinfo):
    text = str(excinfo.value)
    assert "\n" not in text, text
    return text


def rows_sorted(frame, dims):
    return frame.reset_index().sort_values(list(dims), kind="stable").reset_index(drop=True)


def duckdb_rows(directory, dims):
    order = ", ".join(f'"{d}"' for d in dims)
    return duckdb.sql(f"SELECT * FROM read_parquet('{directory}/*.parquet') "
                      f"ORDER BY {order}").df()


def assert_readers_agree(directory, expected):
    """pandas, pyarrow and DuckDB read back what xarray's to_dataframe gives."""
    dims = list(expected.index.names)
    back = pd.read_parquet(directory)
    pd.testing.assert_frame_equal(back.sort_index(), expected.sort_index())
    table = pq.read_table(directory)
    assert table.num_rows == len(expected)
    assert table.column_names == dims + list(expected.columns)
    ours = duckdb_rows(directory, dims)
    ref = rows_sorted(expected, dims)
    assert list(ours.columns) == list(ref.columns)
    for c in ref.columns:
        a, b = ours[c].to_numpy(), ref[c].to_numpy()
        if ref[c].dtype.kind == "M":
            a, b = a.astype("datetime64[us]"), b.astype("datetime64[us]")
        np.testing.assert_array_equal(a.astype(b.dtype) if b.dtype != object else a, b,
                                      err_msg=c)


def litter(parent):
    return [n for n in os.listdir(parent) if ".strata-" in n]


# ============================================================ to_dataframe

@pytest.mark.parametrize("dim_order", [None, ["member", "lon", "lat", "time"]])
def test_to_dataframe_equals_xarrays(spec, rng, computes, dim_order):
    ds = dataset(rng)
    s = on_strata(ds, spec)
    assert isinstance(s.u.data, strata.Array)
    computes.reset()
    df = s.strata.to_dataframe(dim_order)
    assert computes.n == 1   # every variable in one compute
    pd.testing.assert_frame_equal(df, ds.to_dataframe(dim_order))


def test_dataarray_to_dataframe_takes_its_name(spec, rng):
    ds = dataset(rng)
    s = on_strata(ds, spec)
    pd.testing.assert_frame_equal(s.u.strata.to_dataframe(), ds.u.to_dataframe())
    pd.testing.assert_frame_equal(s.u.strata.to_dataframe(name="wind"),
                                  ds.u.to_dataframe(name="wind"))
    # xarray's positional order: a DataArray's name, then dim_order.
    order = ["lon", "lat", "time"]
    pd.testing.assert_frame_equal(s.u.strata.to_dataframe("wind", order),
                                  ds.u.to_dataframe("wind", order))
    with pytest.raises(TypeError, match="at most 2 positional") as e:
        s.u.strata.to_dataframe("wind", order, 3)
    one_line(e)
    with pytest.raises(ValueError, match="unnamed DataArray") as e:
        (s.u + 1).rename(None).strata.to_dataframe()
    one_line(e)


def test_to_dataframe_refuses_a_frame_larger_than_memory(tmp_path):
    spec = strata.Spec(work_dir=tmp_path / "work", allowed_mem="10MB", reserved_mem="1MB",
                       total_system_mem="20MB")
    big = xr.Dataset({"x": (("a", "b"), strata.zeros((4000, 1000), chunks=(500, 1000),
                                                      spec=spec))})
    with pytest.raises(MemoryError, match="to_dataframe: .*total_system_mem.*to_parquet") as e:
        big.strata.to_dataframe()
    one_line(e)


# ============================================================== to_parquet

@pytest.mark.parametrize("dim_order", [None, ["lon", "member", "time", "lat"]])
def test_to_parquet_readers_agree(spec, rng, tmp_path, dim_order):
    ds = dataset(rng)
    out = tmp_path / "ds.parquet"
    on_strata(ds, spec).strata.to_parquet(out, dim_order=dim_order)
    expected = ds.to_dataframe(dim_order)
    assert_readers_agree(out, expected)
    done = json.loads((out / "_SUCCESS").read_text())
    assert done["rows"] == len(expected)
    assert sorted(os.listdir(out)) == sorted(done["files"] + ["_SUCCESS"])
    assert litter(tmp_path) == []


def test_one_file_and_row_group_per_block(spec, rng, tmp_path):
    ds = dataset(rng)
    s = on_strata(ds, spec)
    s.strata.to_parquet(tmp_path / "whole")   # 360 rows: one file
    assert sorted(os.listdir(tmp_path / "whole")) == ["_SUCCESS", "part-00000.parquet"]
    out = tmp_path / "a"
    s.strata.to_parquet(out, rows_per_file=48)
    # time in 2s, lat in 3s, member in 2s; lon whole: 3 x 2 x 1 x 2 blocks.
    parts = sorted(p for p in os.listdir(out) if p.endswith(".parquet"))
    assert len(parts) == 12
    for p in parts:
        meta = pq.ParquetFile(out / p).metadata
        assert meta.num_row_groups == 1
        assert meta.num_rows <= 2 * 3 * 4 * 2
    out = tmp_path / "b"
    s.strata.to_parquet(out, row_group_size=5, compression="zstd", rows_per_file=48)
    meta = pq.ParquetFile(out / "part-00000.parquet").metadata
    assert meta.num_rows == 2 * 3 * 4 * 2
    assert meta.num_row_groups == 10   # 48 rows in groups of at most 5
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert_readers_agree(out, ds.to_dataframe())
    # Chunks smaller than a file are grouped, trailing dimensions first.
    out = tmp_path / "c"
    s.strata.to_parquet(out, rows_per_file=150)
    rows = [pq.ParquetFile(out / p).metadata.num_rows
            for p in sorted(os.listdir(out)) if p.endswith(".parquet")]
    assert rows == [2 * 5 * 4 * 3] * 3   # time in 2s, the rest whole
    assert_readers_agree(out, ds.to_dataframe())


def test_numpy_backed_dataset_and_dataarray(spec, rng, tmp_path):
    ds = dataset(rng)
    ds.strata.to_parquet(tmp_path / "np", spec=spec)
    assert_readers_agree(tmp_path / "np", ds.to_dataframe())
    on_strata(ds, spec).u.strata.to_parquet(tmp_path / "da", name="wind")
    assert_readers_agree(tmp_path / "da", ds.u.to_dataframe(name="wind"))


def test_derived_variables(spec, rng, tmp_path):
    ds = dataset(rng)
    s = on_strata(ds, spec)
    derived = xr.Dataset({"hyp": np.hypot(s.u, s.u * 2), "c": s.u - 273.15})
    derived.strata.to_parquet(tmp_path / "d")
    ref = xr.Dataset({"hyp": np.hypot(ds.u, ds.u * 2), "c": ds.u - 273.15}).to_dataframe()
    back = pd.read_parquet(tmp_path / "d").sort_index()
    pd.testing.assert_frame_equal(back, ref.sort_index(), rtol=1e-6)


class Ops(strata.Callback):
    def __init__(self):
        self.ops = []

    def on_compute_start(self, event):
        self.ops = event.ops


def test_rows_are_counted_in_the_projection_and_blocks_split_to_fit(tmp_path, rng):
    spec = strata.Spec(work_dir=tmp_path / "work", allowed_mem="12MB", reserved_mem="1MB",
                       workers=2)
    x = rng.random((64, 200, 100))
    ds = xr.Dataset({"x": (("t", "y", "z"), x), "y2": (("t", "y", "z"), x * 2)},
                    coords={"t": np.arange(64.0)})
    s = on_strata(ds, spec, {"t": 16})
    cb = Ops()
    out = tmp_path / "big"
    s.strata.to_parquet(out, callbacks=[cb])
    [op] = [o for o in cb.ops if o.op == "to_parquet"]
    row_bytes = _parquet._row_bytes(ds, ds.sizes, ["x", "y2"])
    rows = max(pq.ParquetFile(out / p).metadata.num_rows
               for p in os.listdir(out) if p.endswith(".parquet"))
    # A 16 x 200 x 100 block (320,000 rows of 48 bytes, four copies) cannot
    # fit in 12 MB: the blocks were split, and each task's projection counts
    # its rows.
    assert rows < 16 * 200 * 100
    assert op.projected_mem >= _parquet._ROW_COPIES_LOCAL * rows * row_bytes
    assert op.projected_mem <= spec.allowed_mem
    assert len(pd.read_parquet(out)) == x.size


# --------------------------------------------------------- atomic publishing

def failing(spec, ds, fail_block, check=None):
    """ds on strata with a variable whose block `fail_block` raises (after
    check() has looked at the target while the write is under way)."""
    s = on_strata(ds, spec)

    def boom(block, block_id=None):
        if block_id == fail_block:
            if check is not None:
                check()
            raise RuntimeError("disk on fire")
        return block
    u = strata.map_blocks(boom, s.u.data, dtype=s.u.dtype)
    return s.assign(u=(s.u.dims, u))


def test_failed_write_leaves_nothing(spec, rng, tmp_path):
    ds = dataset(rng)
    out = tmp_path / "ds.parquet"
    seen = []

    def check():   # mid-write: no dataset at the target, only the staging dir
        seen.append((os.path.exists(out), len(litter(tmp_path))))
    with pytest.raises(RuntimeError, match="disk on fire"):
        failing(spec, ds, (1, 0, 0), check).strata.to_parquet(out)
    assert seen == [(False, 1)]
    assert not os.path.exists(out)
    assert litter(tmp_path) == []


def test_failed_replace_keeps_the_old_dataset(spec, rng, tmp_path):
    ds = dataset(rng)
    out = tmp_path / "ds.parquet"
    on_strata(ds, spec).strata.to_parquet(out)
    before = {p: (out / p).read_bytes() for p in os.listdir(out)}
    with pytest.raises(RuntimeError, match="disk on fire"):
        failing(spec, ds, (2, 1, 0)).strata.to_parquet(out, mode="w")
    assert {p: (out / p).read_bytes() for p in os.listdir(out)} == before
    assert litter(tmp_path) == []
    new = ds.assign(u=ds.u * 2)
    on_strata(new, spec).strata.to_parquet(out, mode="w")
    assert_readers_agree(out, new.to_dataframe())
    assert litter(tmp_path) == []


# ------------------------------------------------------------- bad input

def test_bad_arguments(spec, rng, tmp_path):
    s = on_strata(dataset(rng), spec)
    cases = [
        (dict(path=tmp_path / "a", mode="a"), ValueError, "mode must be 'w-' or 'w'"),
        (dict(path=tmp_path / "a", compression="lzma9"), ValueError, "compression 'lzma9'"),
        (dict(path=tmp_path / "a", compression=3), TypeError, "compression must be"),
        (dict(path=tmp_path / "a", row_group_size=0), ValueError, "row_group_size must be"),
        (dict(path=tmp_path / "a", row_group_size=2.5), TypeError, "row_group_size must be"),
        (dict(path=tmp_path / "a", rows_per_file=-1), ValueError, "rows_per_file must be"),
        (dict(path=42), TypeError, "expected a directory path or an s3:// URL, got int"),
        (dict(path="gs://bucket/x"), ValueError, "unsupported URL scheme"),
        (dict(path="s3://bucket"), ValueError, "name a prefix under the bucket"),
        (dict(path=tmp_path / "a", dim_order=["time"]), ValueError, "does not match"),
        (dict(path=tmp_path / "a", name="x"), TypeError, "name= is for a DataArray"),
        (dict(path=tmp_path / "a", spec="2GB"), TypeError, "spec must be a strata.Spec"),
        (dict(path=tmp_path / "no" / "a"), FileNotFoundError, "is not a directory"),
        (dict(path=tmp_path / "a", callbacks=3, optimize="yes"), TypeError, "unexpected"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message) as e:
            s.strata.to_parquet(**kwargs)
        assert one_line(e).startswith("to_parquet: ") or error is TypeError
        assert not os.path.exists(tmp_path / "a")
        assert litter(tmp_path) == []


def test_existing_targets(spec, rng, tmp_path):
    s = on_strata(dataset(rng), spec)
    out = tmp_path / "ds.parquet"
    s.strata.to_parquet(out)
    with pytest.raises(FileExistsError, match="exists") as e:
        s.strata.to_parquet(out)
    one_line(e)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "thesis.tex").write_text("keep me")
    with pytest.raises(ValueError, match="not a Parquet dataset") as e:
        s.strata.to_parquet(other, mode="w")
    one_line(e)
    assert (other / "thesis.tex").read_text() == "keep me"


def test_without_pyarrow(spec, rng, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"pip install 'strata\[parquet\]'") as e:
        on_strata(dataset(rng), spec).strata.to_parquet(tmp_path / "a")
    one_line(e)
    assert os.listdir(tmp_path) == ["work"] or not os.path.exists(tmp_path / "a")


# ====================================================================== S3

@pytest.fixture
def s3(s3_env):
    return f"s3://{S3_BUCKETS[0]}/{uuid.uuid4().hex[:8]}"


def s3_filesystem(server):
    """pyarrow's own S3 client (not strata's) on the s3rver endpoint."""
    from pyarrow import fs
    env = server.env()
    scheme, _, host = env["AWS_ENDPOINT_URL"].partition("://")
    return fs.S3FileSystem(access_key=env["AWS_ACCESS_KEY_ID"],
                           secret_key=env["AWS_SECRET_ACCESS_KEY"], region=env["AWS_REGION"],
                           endpoint_override=host, scheme=scheme)


def test_to_parquet_on_s3(spec, rng, tmp_path, s3, s3_env):
    ds = dataset(rng)
    url = f"{s3}/ds.parquet"
    on_strata(ds, spec).strata.to_parquet(url)
    expected = ds.to_dataframe()
    keys = S3Place(url).files()
    assert json.loads(keys["_SUCCESS"])["rows"] == len(expected)
    # pyarrow through its own S3 client; pandas and DuckDB on a copy.
    table = pq.read_table(url[len("s3://"):], filesystem=s3_filesystem(s3_env))
    pd.testing.assert_frame_equal(table.to_pandas().sort_index(), expected.sort_index())
    assert_readers_agree(S3Place(url).readable(tmp_path), expected)
    with pytest.raises(FileExistsError, match="holds objects") as e:
        on_strata(ds, spec).strata.to_parquet(url)
    one_line(e)
    new = ds.assign(u=ds.u + 1)
    on_strata(new, spec).strata.to_parquet(url, mode="w")
    assert_readers_agree(S3Place(url).readable(tmp_path), new.to_dataframe())


def test_failed_write_on_s3_leaves_nothing(spec, rng, s3):
    url = f"{s3}/ds.parquet"
    seen = []

    def check():   # mid-write: parts may be there, _SUCCESS is not
        seen.append("_SUCCESS" in S3Place(url).files())
    with pytest.raises(RuntimeError, match="disk on fire"):
        failing(spec, dataset(rng), (1, 1, 0), check).strata.to_parquet(url)
    assert seen == [False]
    assert S3Place(url).files() == {}


def test_s3_errors_are_one_line(spec, rng, s3_env, monkeypatch):
    s = on_strata(dataset(rng), spec)
    with pytest.raises(FileNotFoundError) as e:
        s.strata.to_parquet("s3://no-such-bucket/x")
    assert "to_parquet: " in one_line(e)
    with pytest.raises(OSError) as e:
        s.strata.to_parquet(f"s3://{S3_BUCKETS[0]}/x?endpoint=http://127.0.0.1:9")
    assert "to_parquet: " in one_line(e)


# ======================================================= the dask executor

def test_to_parquet_on_the_dask_executor(rng, tmp_path, s3):
    """Each block written by a Dask worker process (the writer travels by
    cloudpickle; on S3 each worker opens its own store): locally and on S3,
    the same rows as on threads."""
    distributed = pytest.importorskip("distributed")
    ds = dataset(rng)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                  silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        spec = strata.Spec(executor="dask", client=client, work_dir=tmp_path / "work",
                           allowed_mem="100MB", reserved_mem="1MB")
        s = on_strata(ds, spec)
        s.strata.to_parquet(tmp_path / "local", rows_per_file=48)
        s.strata.to_parquet(f"{s3}/ds.parquet", rows_per_file=48)
    expected = ds.to_dataframe()
    assert_readers_agree(tmp_path / "local", expected)
    assert len([p for p in os.listdir(tmp_path / "local") if p.endswith(".parquet")]) == 12
    assert_readers_agree(S3Place(f"{s3}/ds.parquet").readable(tmp_path), expected)
    assert litter(tmp_path) == []


def test_a_block_allocates_no_more_than_its_declared_rows(tmp_path, rng):
    """What one block's rows cost in Python (numpy and pandas, seen by
    tracemalloc) and in Arrow (a proxy pool that records its peak) while
    the block is flattened, converted and encoded stays within the extra
    memory the to_parquet op declares for them."""
    import tracemalloc
    spec = strata.Spec(work_dir=tmp_path / "work", allowed_mem="400MB", reserved_mem="1MB",
                       executor="inline")
    x = rng.random((4, 250, 200))
    ds = xr.Dataset({"x": (("t", "y", "z"), x), "n": (("t", "y", "z"), (x * 100).astype("i4"))},
                    coords={"t": pd.date_range("2024-01-01", periods=4), "y": np.arange(250.0),
                            "name": ("z", np.array([f"s{i}" for i in range(200)]))})
    s = on_strata(ds, spec, {"t": 4})
    cb = Ops()
    original = pa.default_memory_pool()
    arrow = pa.proxy_memory_pool(original)
    pa.set_memory_pool(arrow)
    tracemalloc.start()
    try:
        s.strata.to_parquet(tmp_path / "one", callbacks=[cb])
        _, python_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        pa.set_memory_pool(original)
    assert [p for p in os.listdir(tmp_path / "one") if p.endswith(".parquet")] == \
        ["part-00000.parquet"]   # one block of 200,000 rows
    rows = x.size
    row_bytes = _parquet._row_bytes(ds, ds.sizes, ["x", "n", "name"])
    declared = _parquet._ROW_COPIES_LOCAL * rows * row_bytes + _parquet._WRITER_FIXED_BYTES
    [op] = [o for o in cb.ops if o.op == "to_parquet"]
    assert op.projected_mem >= declared
    measured = python_peak + arrow.max_memory()
    print(f"python peak {python_peak}, arrow peak {arrow.max_memory()}, declared {declared}")
    assert 0 < measured <= declared, (measured, declared)
