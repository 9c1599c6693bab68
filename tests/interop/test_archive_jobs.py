"""Archive jobs on CF-encoded datasets: `strata write-region` of a patch
dataset (a group) into an archive, as a backfill (--at init_time=N) or an
append (--append-dim init_time), compared with what xarray itself writes for
the same job (to_zarr(region=...) / to_zarr(append_dim=...)).

The archive is a forecast dataset as xarray writes one: init_time x step x
lat x lon, t2m packed into int16 with scale_factor/add_offset/_FillValue,
CF times in a coordinate (init_time) and in a data variable (valid_time),
timedeltas (step), consolidated metadata. Patches use other encodings (other
time units, another packing): values must move as values.
"""
import os
import signal
import subprocess
import time

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

ARCHIVE_ENCODING = {
    "t2m": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -32767,
            "chunks": (2, 2, 4, 5)},
    "init_time": {"units": "hours since 2000-01-01", "calendar": "proleptic_gregorian",
                  "dtype": "int64", "chunks": (4,)},
    "valid_time": {"units": "hours since 2000-01-01", "calendar": "proleptic_gregorian",
                   "dtype": "int64", "chunks": (4, 2)},
}
# Another packing (scale 0.02, no offset, fill -1) and other time units.
PATCH_ENCODING = {
    "t2m": {"dtype": "int16", "scale_factor": 0.02, "_FillValue": -1},
    "init_time": {"units": "minutes since 1990-01-01", "dtype": "int64"},
    "valid_time": {"units": "seconds since 2020-01-01", "dtype": "int64"},
}


def forecast(start, n_init, nstep=4, nlat=8, nlon=10, seed=0):
    init = pd.date_range(start, periods=n_init, freq="6h")
    step = (np.arange(nstep) * 6).astype("timedelta64[h]").astype("timedelta64[ns]")
    valid = init.values[:, None] + step[None, :]
    rng = np.random.default_rng(seed)
    # On the patch's grid (multiples of 0.02 K), so that repacking into the
    # archive's 0.01 K is exact for strata and xarray alike.
    t2m = np.round((250 + 50 * rng.random((n_init, nstep, nlat, nlon))) / 0.02) * 0.02
    t2m[0, 0, 0, :3] = np.nan
    return xr.Dataset(
        {"t2m": (("init_time", "step", "lat", "lon"), t2m, {"units": "K"}),
         "valid_time": (("init_time", "step"), valid)},
        coords={"init_time": init, "step": step, "lat": np.linspace(40.0, 47.0, nlat),
                "lon": np.linspace(0.0, 9.0, nlon)},
        attrs={"title": "forecast archive"},
    )


def write(ds, path, encoding, zarr_format, **kw):
    ds.to_zarr(str(path), encoding=encoding, zarr_format=zarr_format, consolidated=True, **kw)


def open_(path, **kw):
    return xr.open_zarr(str(path), consolidated=True, **kw).load()


def stored(path):
    """The stored numbers (no CF decoding)."""
    return open_(path, decode_cf=False, mask_and_scale=False, decode_times=False)


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def zarr_format(request):
    return request.param


def make_archive(tmp_path, zarr_format, n_init=6):
    ds = forecast("2020-01-01", n_init)
    archive = tmp_path / "archive.zarr"
    write(ds, archive, ARCHIVE_ENCODING, zarr_format)
    twin = tmp_path / "xarray_twin.zarr"  # the same archive, for xarray's job
    write(ds, twin, ARCHIVE_ENCODING, zarr_format)
    return ds, archive, twin


def test_append_converts_encodings_like_xarray(strata, tmp_path, zarr_format):
    _, archive, twin = make_archive(tmp_path, zarr_format)
    new = forecast("2020-01-02T12:00", 3, seed=1)
    patch = tmp_path / "patch.zarr"
    write(new, patch, PATCH_ENCODING, zarr_format)

    proc = strata("write-region", patch, archive, "--append-dim", "init_time")
    assert "appended to" in proc.stdout
    # xarray's own append of the same patch (as a reader of it sees it).
    open_(patch).to_zarr(str(twin), append_dim="init_time", consolidated=True)

    got, want = open_(archive), open_(twin)
    assert got.sizes["init_time"] == 9
    xr.testing.assert_identical(got, want)
    xr.testing.assert_identical(stored(archive), stored(twin))
    # The consolidated metadata was updated with the members (issue: it kept
    # the old length), and a reader of the members' own metadata agrees.
    unconsolidated = xr.open_zarr(str(archive), consolidated=False).load()
    xr.testing.assert_identical(unconsolidated, want)
    assert not os.path.exists(archive / ".strata-journal")
    assert not os.path.exists(archive / ".strata-staging")


def test_backfill_converts_encodings_like_xarray(strata, tmp_path, zarr_format):
    ds, archive, twin = make_archive(tmp_path, zarr_format)
    # A re-run of two forecasts (init_time 2 and 3) with new values.
    fixed = forecast("2020-01-01T12:00", 2, seed=7)
    patch = tmp_path / "patch.zarr"
    write(fixed, patch, PATCH_ENCODING, zarr_format)

    proc = strata("write-region", patch, archive, "--at", "init_time=2")
    assert "backfilled" in proc.stdout
    region = open_(patch).drop_vars(["step", "lat", "lon"])
    region.to_zarr(str(twin), region={"init_time": slice(2, 4)}, consolidated=True)

    got, want = open_(archive), open_(twin)
    xr.testing.assert_identical(got, want)
    xr.testing.assert_identical(stored(archive), stored(twin))
    # The patch's values landed, the rest stayed.
    np.testing.assert_allclose(got.t2m.values[2:4], fixed.t2m.values, atol=1e-9)
    np.testing.assert_allclose(got.t2m.values[:2], ds.t2m.values[:2], atol=1e-9)
    assert (got.init_time.values[2:4] == fixed.init_time.values).all()


def test_per_array_backfill_converts_values(strata, tmp_path):
    """The issue's first case, one command per variable: the stored integers
    were copied as they were (times in other units landed near 1970, t2m
    packed at 0.02 K into an archive packed at 0.01 K came out kelvins off)."""
    ds, archive, _ = make_archive(tmp_path, 2)
    fixed = forecast("2020-01-01T12:00", 2, seed=3)
    patch = tmp_path / "patch.zarr"
    write(fixed, patch, PATCH_ENCODING, 2)
    for var, at in [("init_time", "2"), ("valid_time", "2,0"), ("t2m", "2,0,0,0")]:
        strata("write-region", patch / var, archive / var, "--at", at, "--quiet")
    got = open_(archive)
    np.testing.assert_array_equal(got.init_time.values[2:4], fixed.init_time.values)
    np.testing.assert_array_equal(got.valid_time.values[2:4], fixed.valid_time.values)
    np.testing.assert_allclose(got.t2m.values[2:4], fixed.t2m.values, atol=1e-9)
    np.testing.assert_allclose(got.t2m.values[:2], ds.t2m.values[:2], atol=1e-9)


def test_per_array_append_to_a_dataset_is_refused(strata, tmp_path):
    """The issue's second case: appending one variable at a time left the
    variables at different lengths (and .zmetadata behind)."""
    _, archive, _ = make_archive(tmp_path, 2)
    before = open_(archive)
    new = forecast("2020-01-02T12:00", 2, seed=1)
    patch = tmp_path / "patch.zarr"
    write(new, patch, ARCHIVE_ENCODING, 2)
    proc = strata("write-region", patch / "t2m", archive / "t2m", "--append-dim", "0",
                  check=False)
    assert proc.returncode != 0
    assert "append the dataset as a whole" in proc.stderr, proc.stderr
    xr.testing.assert_identical(open_(archive), before)
    xr.testing.assert_identical(xr.open_zarr(str(archive), consolidated=False).load(), before)


def test_unrepresentable_values_are_refused_and_change_nothing(strata, tmp_path):
    ds, archive, _ = make_archive(tmp_path, 2)
    before = open_(archive)
    # A run at 07:30, in an archive of whole hours.
    odd = forecast("2020-01-02T07:30", 1, seed=2)
    patch = tmp_path / "odd.zarr"
    write(odd, patch, PATCH_ENCODING, 2)
    proc = strata("write-region", patch, archive, "--append-dim", "init_time", check=False)
    assert proc.returncode != 0
    assert "is not a whole number of hours" in proc.stderr, proc.stderr
    assert "2020-01-02T07:30:00" in proc.stderr
    # 700 K does not fit int16 at 0.01 K from 273.15 K (at most 600.82 K).
    hot = forecast("2020-01-02T12:00", 1, seed=2)
    hot["t2m"][:] = 700.0
    patch = tmp_path / "hot.zarr"
    write(hot, patch, {**PATCH_ENCODING, "t2m": {"dtype": "float32"}}, 2)
    proc = strata("write-region", patch, archive, "--append-dim", "init_time", check=False)
    assert proc.returncode != 0
    assert "t2m: value 700 is outside what the target" in proc.stderr, proc.stderr
    xr.testing.assert_identical(open_(archive), before)
    xr.testing.assert_identical(xr.open_zarr(str(archive), consolidated=False).load(), before)


def test_equal_encodings_copy_stored_numbers(strata, tmp_path):
    """The fast path: a patch in the archive's own encoding moves its stored
    bytes as they are (the encodings are compared field by field first)."""
    _, archive, twin = make_archive(tmp_path, 2)
    new = forecast("2020-01-02T12:00", 2, seed=4)
    patch = tmp_path / "same.zarr"
    write(new, patch, ARCHIVE_ENCODING, 2)
    proc = strata("write-region", patch, archive, "--append-dim", "init_time")
    assert "appended to 3 variables" in proc.stdout and "3 copied as stored" in proc.stdout
    open_(patch).to_zarr(str(twin), append_dim="init_time", consolidated=True)
    xr.testing.assert_identical(stored(archive), stored(twin))


def test_other_calendars_are_refused(strata, tmp_path):
    _, archive, _ = make_archive(tmp_path, 2)
    before = open_(archive)
    new = forecast("2020-01-02T12:00", 2)
    patch = tmp_path / "noleap.zarr"
    write(new, patch, PATCH_ENCODING, 2)
    group = zarr.open_group(str(patch), mode="r+")
    group["init_time"].attrs["calendar"] = "noleap"
    zarr.consolidate_metadata(str(patch))
    proc = strata("write-region", patch, archive, "--append-dim", "init_time", check=False)
    assert proc.returncode != 0
    assert "init_time: calendar 'noleap' is not supported" in proc.stderr, proc.stderr
    xr.testing.assert_identical(open_(archive), before)


def test_a_patch_that_does_not_match_is_refused(strata, tmp_path):
    ds, archive, _ = make_archive(tmp_path, 2)
    other_grid = forecast("2020-01-02T12:00", 2).assign_coords(lat=np.linspace(0.0, 7.0, 8))
    patch = tmp_path / "grid.zarr"
    write(other_grid, patch, PATCH_ENCODING, 2)
    proc = strata("write-region", patch, archive, "--append-dim", "init_time", check=False)
    assert proc.returncode != 0
    assert "lat: the job does not write it" in proc.stderr, proc.stderr
    proc = strata("write-region", patch, archive, "--at", "init_time=5", check=False)
    assert proc.returncode != 0
    assert "2 elements of init_time at 5 do not fit DST's 6" in proc.stderr, proc.stderr
    proc = strata("write-region", patch, archive, "--append-dim", "0", check=False)
    assert proc.returncode != 0
    assert "is a group: name the dimension" in proc.stderr, proc.stderr


def test_kill_during_a_dataset_append_then_rerun(strata, tmp_path):
    """kill -9 while the append is staged: xarray sees the old dataset; the
    same command again completes it, once."""
    ds = forecast("2020-01-01", 6, nlat=64, nlon=64)
    archive = tmp_path / "archive.zarr"
    enc = {**ARCHIVE_ENCODING, "t2m": {**ARCHIVE_ENCODING["t2m"], "chunks": (1, 1, 8, 8)}}
    write(ds, archive, enc, 2)
    twin = tmp_path / "xarray_twin.zarr"
    write(ds, twin, enc, 2)
    new = forecast("2020-01-02T12:00", 40, nlat=64, nlon=64, seed=5)
    patch = tmp_path / "patch.zarr"
    write(new, patch, PATCH_ENCODING, 2)
    before = open_(archive)

    proc = subprocess.Popen([strata.path, "write-region", str(patch), str(archive),
                             "--append-dim", "init_time", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    staging = archive / ".strata-staging" / "t2m"
    deadline = time.time() + 120
    killed = False
    while time.time() < deadline and proc.poll() is None:
        if staging.exists() and len(os.listdir(staging)) > 50:
            os.kill(proc.pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.005)
    proc.wait()
    assert killed, f"the append finished (exit {proc.returncode}) before it could be killed"
    assert (archive / ".strata-journal").exists()
    # Readers see the old dataset, consolidated or not.
    xr.testing.assert_identical(open_(archive), before)
    xr.testing.assert_identical(xr.open_zarr(str(archive), consolidated=False).load(), before)

    rerun = strata("write-region", patch, archive, "--append-dim", "init_time")
    assert "an interrupted job was finished first" in rerun.stdout
    open_(patch).to_zarr(str(twin), append_dim="init_time", consolidated=True)
    got = open_(archive)
    assert got.sizes["init_time"] == 46
    xr.testing.assert_identical(got, open_(twin))
    assert not (archive / ".strata-journal").exists()
    assert not (archive / ".strata-staging").exists()


def test_append_into_an_archive_on_s3(strata, tmp_path):
    """The same job on an S3 archive (s3rver on 127.0.0.1): staged objects,
    a publish by copy and delete, the consolidated metadata last."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from s3_server import S3Server

    server = S3Server(["archive"])
    try:
        env = server.env()
        _, archive, twin = make_archive(tmp_path, 2)
        remote = "s3://archive/forecast.zarr"
        strata("copy", archive, remote, env=env)
        new = forecast("2020-01-02T12:00", 3, seed=1)
        patch = tmp_path / "patch.zarr"
        write(new, patch, PATCH_ENCODING, 2)
        proc = strata("write-region", patch, remote, "--append-dim", "init_time", env=env)
        assert "appended to" in proc.stdout
        back = tmp_path / "back.zarr"
        strata("copy", remote, back, env=env)
        open_(patch).to_zarr(str(twin), append_dim="init_time", consolidated=True)
        xr.testing.assert_identical(open_(back), open_(twin))
        # Nothing of the job is left in the bucket (s3rver keeps objects as files).
        left = [os.path.join(d, f) for d, _, fs in os.walk(server.dir) for f in fs
                if ".strata-" in os.path.join(d, f)]
        assert not left, left
        assert any("forecast.zarr" in d for d, _, _ in os.walk(server.dir))
    finally:
        server.stop()
