"""Datasets, not only arrays: groups as xarray and zarr-python 3 write them
(coordinates, _ARRAY_DIMENSIONS or v3 dimension_names, consolidated metadata
in .zmetadata or inline in the root zarr.json, nested groups) through
`strata info`, `copy` and `rechunk --chunks time=-1,...`, and zarr-python
reading Strata's groups back in both formats; and backfill/append with
`strata write-region`.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import assert_same, store_keys


def make_dataset(path, nt=24, nlat=10, nlon=12, zarr_format=2):
    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {
            "temperature": (("time", "lat", "lon"), rng.random((nt, nlat, nlon)).astype("f4"),
                            {"units": "K", "long_name": "air temperature"}),
            "precip": (("time", "lat", "lon"), rng.random((nt, nlat, nlon))),
            "station_height": (("lat",), np.arange(nlat, dtype="i2")),
        },
        coords={
            "time": np.arange(nt, dtype="i8"),
            "lat": np.linspace(-45, 45, nlat),
            "lon": np.linspace(0, 330, nlon),
        },
        attrs={"title": "synthetic", "version": 3},
    )
    ds.chunk({"time": 5, "lat": 5, "lon": 6}).to_zarr(str(path), mode="w", consolidated=True,
                                                       zarr_format=zarr_format)
    return ds


def test_info_describes_a_group(strata, tmp_path):
    src = tmp_path / "ds.zarr"
    make_dataset(src)
    text = strata("info", src).stdout
    assert "group (6 arrays, 0 groups; read from consolidated metadata)" in text
    assert "temperature" in text and "dims (time, lat, lon)" in text
    assert '"units":"K"' in text
    assert '"title":"synthetic"' in text
    j = json.loads(strata("info", src, "--json").stdout)
    assert j["node_type"] == "group" and j["consolidated"]
    members = {m["path"]: m for m in j["members"]}
    assert members["temperature"]["shape"] == [24, 10, 12]
    assert members["temperature"]["chunks"] == [5, 5, 6]
    assert members["temperature"]["dimensions"] == ["time", "lat", "lon"]
    assert members["lat"]["dtype"] == "float64"


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_info_tree_of_nested_groups_without_consolidated_metadata(strata, tmp_path, zarr_format):
    root = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=zarr_format)
    root.attrs["a"] = 1
    obs = root.create_group("obs")
    obs.create_array("station", shape=(4,), chunks=(2,), dtype="i4")
    root.create_array("grid", shape=(3, 3), chunks=(3, 3), dtype="f8")
    text = strata("info", tmp_path / "g.zarr").stdout
    assert "group (2 arrays, 1 groups)" in text
    assert "├── grid" in text and "└── obs/" in text and "    └── station" in text


def test_copy_of_a_group_keeps_everything(strata, tmp_path):
    src = tmp_path / "ds.zarr"
    ds = make_dataset(src)
    out = tmp_path / "copy.zarr"
    strata("copy", src, out, "--codec", "zstd:level=1")
    got = xr.open_zarr(str(out), consolidated=True)
    xr.testing.assert_identical(got.load(), ds)
    assert zarr.open_consolidated(str(out))["temperature"].metadata.compressor.codec_id == "zstd"


def test_copy_overwrite_of_a_group_deletes_only_its_members(strata, tmp_path):
    """--overwrite of a group deleted every file under it; only Zarr members
    go now (as an array keeps files that are no chunk of it)."""
    src = tmp_path / "ds.zarr"
    ds = make_dataset(src)
    grp = tmp_path / "grp.zarr"
    old = zarr.open_group(str(grp), mode="w", zarr_format=2)
    old.attrs["title"] = "old"
    old.create_array("stale", shape=(4,), chunks=(2,), dtype="i4")[...] = 7
    sub = old.create_group("sub")
    sub.create_array("deep", shape=(3,), chunks=(3,), dtype="f8")[...] = 1.5
    (grp / "photos").mkdir()
    (grp / "photos" / "cat.jpg").write_bytes(b"\xff\xd8 a cat")
    (grp / "sub" / "readme.txt").write_text("notes")
    (grp / "stale" / "notes.txt").write_text("mine")
    proc = strata("copy", src, grp, check=False)
    assert proc.returncode == 1 and "--overwrite" in proc.stderr
    strata("copy", src, grp, "--overwrite")
    assert (grp / "photos" / "cat.jpg").read_bytes() == b"\xff\xd8 a cat"
    assert (grp / "sub" / "readme.txt").read_text() == "notes"
    assert (grp / "stale" / "notes.txt").read_text() == "mine"
    # The old members are gone, the new ones are the copy.
    assert not (grp / "stale" / ".zarray").exists() and not (grp / "stale" / "0").exists()
    assert not (grp / "sub" / ".zgroup").exists()
    assert not (grp / "sub" / "deep" / ".zarray").exists()
    assert not (grp / "sub" / "deep" / "0").exists()
    got = xr.open_zarr(str(grp), consolidated=True)
    xr.testing.assert_identical(got.load(), ds)
    assert "stale" not in zarr.open_group(str(grp), mode="r")


def test_copy_to_v3_and_back_keeps_dimension_names(strata, tmp_path):
    src = tmp_path / "ds.zarr"
    ds = make_dataset(src)
    v3 = tmp_path / "v3.zarr"
    strata("copy", src, v3, "--zarr-format", "3")
    meta = json.loads((v3 / "temperature" / "zarr.json").read_text())
    assert meta["dimension_names"] == ["time", "lat", "lon"]
    # Attributes are carried verbatim (issue 13): a v2 _ARRAY_DIMENSIONS stays beside them.
    assert meta["attributes"].get("_ARRAY_DIMENSIONS", meta["dimension_names"]) == meta["dimension_names"]
    assert meta["attributes"]["units"] == "K"
    root = json.loads((v3 / "zarr.json").read_text())
    assert root["consolidated_metadata"]["kind"] == "inline"
    assert "temperature" in root["consolidated_metadata"]["metadata"]
    info = json.loads(strata("info", v3, "--json").stdout)
    assert info["consolidated"]
    back = tmp_path / "back.zarr"
    strata("copy", v3, back, "--zarr-format", "2")
    # (v3 has no null fill value: integer arrays come back with fill 0, which
    # xarray would decode as a mask; compare the stored values and names.)
    g = zarr.open_group(str(back), mode="r")
    for name in ds.variables:
        assert_same(g[name][...], ds[name].values)
        assert g[name].attrs["_ARRAY_DIMENSIONS"] == list(ds[name].dims)
    assert g.attrs["title"] == "synthetic"


def test_rechunk_a_dataset_by_dimension_name(strata, tmp_path):
    src = tmp_path / "ds.zarr"
    ds = make_dataset(src)
    out = tmp_path / "ts.zarr"
    strata("rechunk", src, out, "--chunks", "time=-1,lat=2", "--allowed-mem", "64MB",
           "--quiet")
    got = xr.open_zarr(str(out), consolidated=True)
    xr.testing.assert_identical(got.load(), ds)
    z = zarr.open_consolidated(str(out))
    assert z["temperature"].chunks == (24, 2, 6)   # lon keeps its chunks
    assert z["precip"].chunks == (24, 2, 6)
    assert z["time"].chunks == (24,)
    assert z["lat"].chunks == (2,)
    assert z["station_height"].chunks == (2,)
    assert z["lon"].chunks == (12,)  # an index coordinate: one chunk, kept


def test_rechunk_of_a_group_needs_named_chunks(strata, tmp_path):
    src = tmp_path / "ds.zarr"
    make_dataset(src)
    proc = strata("rechunk", src, tmp_path / "o.zarr", "--chunks", "5,5,5", check=False)
    assert proc.returncode == 1
    assert "give --chunks by dimension name" in proc.stderr
    proc = strata("rechunk", src, tmp_path / "o.zarr", "--chunks", "time=0", check=False)
    assert proc.returncode == 2 and "not name=size" in proc.stderr


def test_v3_dataset_as_xarray_writes_it(strata, tmp_path):
    """xarray on zarr-python 3 writes v3 by default: dimension_names, and the
    consolidated metadata inline in the root zarr.json."""
    src = tmp_path / "ds.zarr"
    ds = make_dataset(src, zarr_format=3)
    root = json.loads((src / "zarr.json").read_text())
    assert root["consolidated_metadata"]["kind"] == "inline"
    j = json.loads(strata("info", src, "--json").stdout)
    assert j["node_type"] == "group" and j["consolidated"]
    members = {m["path"]: m for m in j["members"]}
    assert members["temperature"]["dimensions"] == ["time", "lat", "lon"]
    assert members["temperature"]["chunks"] == [5, 5, 6]
    out = tmp_path / "copy.zarr"
    strata("copy", src, out, "--codec", "blosc")
    xr.testing.assert_identical(xr.open_zarr(str(out), consolidated=True).load(), ds)
    ts = tmp_path / "ts.zarr"
    strata("rechunk", src, ts, "--chunks", "time=-1,lat=2", "--quiet")
    got = xr.open_zarr(str(ts), consolidated=True)
    xr.testing.assert_identical(got.load(), ds)
    assert got["temperature"].encoding["chunks"] == (24, 2, 6)
    # And into v2, with .zmetadata and _ARRAY_DIMENSIONS. (v3 has no null
    # fill value: xarray's integer arrays have fill 0, which xarray reads as
    # a mask in v2; compare the stored values and names.)
    v2 = tmp_path / "v2.zarr"
    strata("copy", src, v2, "--zarr-format", "2")
    assert (v2 / ".zmetadata").is_file()
    g = zarr.open_consolidated(str(v2))
    for name in ds.variables:
        assert_same(g[name][...], ds[name].values)
        assert g[name].attrs["_ARRAY_DIMENSIONS"] == list(ds[name].dims)
    got = xr.open_zarr(str(v2), consolidated=True)
    xr.testing.assert_identical(got["temperature"].variable.load(), ds["temperature"].variable)


def zarr_python_group(path, zarr_format, consolidated):
    """Nested groups and arrays as zarr-python 3 writes them; returns the
    arrays' values by path."""
    root = zarr.open_group(str(path), mode="w", zarr_format=zarr_format,
                           attributes={"title": "nested"})
    values = {}
    a = root.create_array("a", shape=(7, 5), chunks=(3, 5), dtype="f4", fill_value=np.nan)
    a[0:3] = np.arange(15, dtype="f4").reshape(3, 5)
    values["a"] = a[...]
    sub = root.create_group("sub", attributes={"level": 1})
    b = sub.create_array("b", shape=(9,), chunks=(4,), dtype="i2", fill_value=-1)
    b[...] = np.arange(9, dtype="i2")
    values["sub/b"] = b[...]
    deeper = sub.create_group("deeper")
    c = deeper.create_array("c", shape=(2, 2, 2), chunks=(1, 2, 2), dtype="u8")
    c[...] = np.arange(8, dtype="u8").reshape(2, 2, 2)
    values["sub/deeper/c"] = c[...]
    root.create_group("empty")
    if consolidated:
        zarr.consolidate_metadata(str(path))
    return values


def check_zarr_python_reads_group(path, values, consolidated):
    g = zarr.open_consolidated(str(path)) if consolidated else \
        zarr.open_group(str(path), mode="r", use_consolidated=False)
    assert g.attrs["title"] == "nested"
    assert g["sub"].attrs["level"] == 1
    assert sorted(name for name, _ in g.members(max_depth=None)) == \
        ["a", "empty", "sub", "sub/b", "sub/deeper", "sub/deeper/c"]
    for name, expected in values.items():
        assert_same(g[name][...], expected)
    assert np.isnan(g["a"].fill_value) and g["sub/b"].fill_value == -1


@pytest.mark.parametrize("src_format", [2, 3])
@pytest.mark.parametrize("dst_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_groups_both_ways(strata, tmp_path, src_format, dst_format, consolidated):
    src = tmp_path / "src.zarr"
    values = zarr_python_group(src, src_format, consolidated)
    check_zarr_python_reads_group(src, values, consolidated)
    j = json.loads(strata("info", src, "--json").stdout)
    assert j["node_type"] == "group" and j["consolidated"] == consolidated
    kinds = {m["path"]: m["node_type"] for m in j["members"]}
    assert kinds == {"a": "array", "empty": "group", "sub": "group", "sub/b": "array",
                     "sub/deeper": "group", "sub/deeper/c": "array"}
    text = strata("info", src).stdout
    assert "group (3 arrays, 3 groups" in text, text
    out = tmp_path / "out.zarr"
    strata("copy", src, out, "--zarr-format", str(dst_format), "--codec", "zstd:level=1")
    # Strata writes consolidated metadata where the source had it.
    check_zarr_python_reads_group(out, values, consolidated)
    if consolidated:
        g = zarr.open_consolidated(str(out))
        assert g.metadata.consolidated_metadata is not None
        assert sorted(g.metadata.consolidated_metadata.flattened_metadata) == \
            ["a", "empty", "sub", "sub/b", "sub/deeper", "sub/deeper/c"]
    strata("verify", src / "sub" / "b", out / "sub" / "b")


def test_consolidated_metadata_zarr_python_rewrites(strata, tmp_path):
    """Strata's consolidated metadata is what zarr-python would consolidate:
    re-consolidating with zarr-python changes no member's metadata."""
    src = tmp_path / "src.zarr"
    values = zarr_python_group(src, 3, consolidated=True)
    out = tmp_path / "out.zarr"
    strata("copy", src, out)
    ours = zarr.open_consolidated(str(out)).metadata.consolidated_metadata.to_dict()
    zarr.consolidate_metadata(str(out))
    theirs = zarr.open_consolidated(str(out)).metadata.consolidated_metadata.to_dict()
    assert ours == theirs
    check_zarr_python_reads_group(out, values, True)


def write_array(path, data, chunks, fill_value=0):
    z = zarr.open_array(str(path), mode="w", shape=data.shape, chunks=chunks, dtype=data.dtype,
                        fill_value=fill_value, zarr_format=2)
    z[...] = data
    return z


def zarr_keys_only(path):
    """What zarr-python lists in an array is its metadata and chunk keys only:
    no lock file or other stray key of Strata's (issue 17)."""
    keys = store_keys(path)
    stray = [k for k in keys if not (k in (".zarray", ".zattrs")
                                     or all(p.isdigit() for p in k.split(".")))]
    assert not stray, keys
    return keys


def test_write_region_backfills(strata, tmp_path):
    dst = tmp_path / "dst.zarr"
    base = np.full((20, 14), -1.0)
    write_array(dst, base, (6, 5))
    patch = np.arange(9 * 7, dtype="f8").reshape(9, 7)
    src = tmp_path / "patch.zarr"
    write_array(src, patch, (4, 4))
    strata("write-region", src, dst, "--at", "4,3", "--quiet")
    expected = base.copy()
    expected[4:13, 3:10] = patch
    z = zarr.open_array(str(dst), mode="r")
    assert z.chunks == (6, 5)
    assert_same(z[...], expected)
    zarr_keys_only(dst)  # the per-chunk lock file of the partial chunks is gone
    # Outside the array: an error, nothing changed.
    proc = strata("write-region", src, dst, "--at", "15,0", check=False)
    assert proc.returncode == 1 and "outside the array" in proc.stderr
    assert_same(zarr.open_array(str(dst), mode="r")[...], expected)
    zarr_keys_only(dst)


@pytest.mark.parametrize("at", ["9223372036854775800,0", "0,9223372036854775807"])
def test_write_region_whose_end_overflows_is_refused(strata, tmp_path, at):
    """origin + extent past 2^63 wrapped to a negative end that passed the
    bound check: the first origin overwrote 2,940 cells at row 0 (exit 0), the
    second aborted with a double free and left the chunk lock file."""
    dst = tmp_path / "dst.zarr"
    base = np.arange(400 * 300, dtype="f8").reshape(400, 300)
    write_array(dst, base, (64, 64))
    src = tmp_path / "patch.zarr"
    write_array(src, np.full((50, 70), -5.0), (50, 70))
    before = sorted(os.listdir(dst))
    proc = strata("write-region", src, dst, "--at", at, check=False)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("strata: error: "), proc.stderr
    assert f"region at ({at.replace(',', ', ')}) of shape (50, 70) ends past the largest index" \
        in lines[0], lines[0]
    assert_same(zarr.open_array(str(dst), mode="r")[...], base)
    assert sorted(os.listdir(dst)) == before  # no .strata-chunk-locks either


def test_write_region_from_itself_is_refused(strata, tmp_path):
    """SRC is read while DST's chunks are rewritten: as every verb that writes
    (issue 13), write-region refuses overlapping locations with exit 2."""
    dst = tmp_path / "dst.zarr"
    base = np.arange(64, dtype="f8").reshape(8, 8)
    write_array(dst, base, (4, 4))
    (tmp_path / "x").mkdir()
    for src in (str(dst), str(dst) + "/", str(tmp_path / "x" / ".." / "dst.zarr")):
        proc = strata("write-region", src, dst, "--at", "0,0", check=False)
        assert proc.returncode == 2, proc.stderr
        assert "DST" in proc.stderr
    assert_same(zarr.open_array(str(dst), mode="r")[...], base)


def test_write_region_appends(strata, tmp_path):
    dst = tmp_path / "dst.zarr"
    first = np.arange(30, dtype="i4").reshape(10, 3)
    write_array(dst, first, (4, 3))
    more = np.arange(100, 121, dtype="i4").reshape(7, 3)
    src = tmp_path / "more.zarr"
    write_array(src, more, (7, 3))
    strata("write-region", src, dst, "--append-dim", "0", "--quiet")
    z = zarr.open_array(str(dst), mode="r")
    assert z.shape == (17, 3)
    assert_same(z[...], np.concatenate([first, more]))


def test_concurrent_region_writes_sharing_chunks_lose_nothing(strata, tmp_path):
    """Two processes backfill neighbouring column strips that share every
    chunk; the per-chunk lock keeps both strips."""
    dst = tmp_path / "dst.zarr"
    write_array(dst, np.zeros((40, 40)), (10, 10))
    procs = []
    expected = np.zeros((40, 40))
    for k in range(4):
        strip = np.full((40, 5), k + 1.0)
        src = tmp_path / f"s{k}.zarr"
        write_array(src, strip, (40, 5))
        expected[:, 5 * k:5 * k + 5] = strip
        procs.append(subprocess.Popen([strata.path, "write-region", str(src), str(dst), "--at",
                                       f"0,{5 * k}", "--quiet", "--workers", "2"]))
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    assert_same(zarr.open_array(str(dst), mode="r")[...], expected)
    zarr_keys_only(dst)  # the last writer removed the lock file
