"""Datasets, not only arrays: groups as xarray writes them (coordinates,
_ARRAY_DIMENSIONS, consolidated metadata) through `strata info`, `copy` and
`rechunk --chunks time=-1,...`; and backfill/append with `strata write-region`.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import assert_same


def make_dataset(path, nt=24, nlat=10, nlon=12):
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
    ds.chunk({"time": 5, "lat": 5, "lon": 6}).to_zarr(str(path), mode="w", consolidated=True)
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


def test_info_tree_of_nested_groups_without_consolidated_metadata(strata, tmp_path):
    root = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    root.attrs["a"] = 1
    obs = root.create_group("obs")
    obs.create_dataset("station", shape=(4,), chunks=(2,), dtype="i4")
    root.create_dataset("grid", shape=(3, 3), chunks=(3, 3), dtype="f8")
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
    assert zarr.open_consolidated(str(out))["temperature"].compressor.codec_id == "zstd"


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


def write_array(path, data, chunks, fill_value=0):
    z = zarr.open_array(str(path), mode="w", shape=data.shape, chunks=chunks, dtype=data.dtype,
                        fill_value=fill_value)
    z[...] = data
    return z


def zarr_keys_only(path):
    """What zarr-python lists in an array is its metadata and chunk keys only:
    no lock file or other stray key of Strata's (issue 17)."""
    store = zarr.DirectoryStore(str(path))
    keys = sorted(store.keys())
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
