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


def test_credentials_come_from_the_aws_chain(s3_env, monkeypatch, tmp_path):
    """No keys anywhere is a PermissionError naming where strata looked;
    ?anon=true reads a public bucket unsigned; ?profile= takes the keys
    of a shared-credentials-file profile (s3_credentials.h)."""
    a = np.arange(48.0).reshape(6, 8)
    strata.to_zarr(strata.asarray(a, chunks=(4, 4)), "s3://pybucket/pub.zarr")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_WEB_IDENTITY_TOKEN_FILE",
              "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
              "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_SERVICE_ENDPOINT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never the real 169.254.169.254
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    with pytest.raises(PermissionError, match=r"s3://pybucket/pub.zarr: no AWS credentials "
                                              r"found \(looked at: environment"):
        strata.from_zarr("s3://pybucket/pub.zarr")
    assert_eq(strata.from_zarr("s3://pybucket/pub.zarr?anon=true"), a)
    (tmp_path / "credentials").write_text(
        "[py]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n")
    assert_eq(strata.from_zarr("s3://pybucket/pub.zarr?profile=py") + 1, a + 1)
