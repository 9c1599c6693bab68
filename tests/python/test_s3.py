"""from_zarr / to_zarr with s3:// URLs, against s3rver on 127.0.0.1
(started here, stopped after)."""
import numpy as np
import pytest

import strata
from conftest import assert_eq


def test_round_trip_through_s3(s3_env, tmp_path):
    a = np.random.default_rng(1).random((30, 20))
    x = strata.asarray(a, chunks=(7, 8))
    strata.to_zarr(x * 2, "s3://pybucket/a.zarr")
    y = strata.from_zarr("s3://pybucket/a.zarr")
    assert y.chunksize == (7, 8)
    assert_eq(y + 1, a * 2 + 1)
    strata.to_zarr(y.rechunk((30, 5)), str(tmp_path / "local.zarr"))
    assert_eq(strata.from_zarr(str(tmp_path / "local.zarr")), a * 2)


def test_s3_errors(s3_env, monkeypatch):
    with pytest.raises(FileNotFoundError):
        strata.from_zarr("s3://pybucket/missing.zarr")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(OSError, match="403|Signature"):
        strata.from_zarr("s3://pybucket/a.zarr")
