"""Fixtures for the `strata` package's own suites.

Run by ctest (tests/CMakeLists.txt) with the .venv's interpreter and the build
tree's package on PYTHONPATH; by hand:
    PYTHONPATH=build/release/python .venv/bin/python -m pytest tests/python
(the debug build's module is ASan-instrumented: it needs
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
and ASAN_OPTIONS=detect_leaks=0, as tests/CMakeLists.txt sets).
"""
import os
import shutil
import sys
import uuid
import zlib

import numpy as np
import pytest

import strata

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from s3_server import S3Server  # noqa: E402

# The buckets the S3 server of the `s3_server` fixture has.
S3_BUCKETS = ["pybucket"]


@pytest.fixture
def spec(tmp_path):
    # Small budgets keep the suites fast and make plans multi-block.
    return strata.Spec(work_dir=tmp_path / "work", allowed_mem="100MB", reserved_mem="1MB",
                       workers=2)


@pytest.fixture(scope="module")
def s3_server():
    """s3rver on 127.0.0.1 (tests/s3_server.py), one per test module."""
    s = S3Server(S3_BUCKETS)
    yield s
    s.stop()


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """This process's AWS_* settings pointing at s3_server (strata's S3
    stores read them when they open)."""
    for k, v in s3_server.env().items():
        if k.startswith("AWS_"):
            monkeypatch.setenv(k, v)
    for k in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    return s3_server


@pytest.fixture
def computes(monkeypatch):
    """The number of strata computes run (every path to the engine's compute
    goes through _strata.compute: Array.compute, __array__, bool(), ...)."""
    count = [0]
    real = strata._core._strata.compute

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(strata._core._strata, "compute", counting)

    class Counter:
        @property
        def n(self):
            return count[0]

        def reset(self):
            count[0] = 0
    return Counter()


def open_store(url):
    """strata's own key-value store of a path or URL (_strata.open_store)."""
    return strata._core._strata.open_store(url, True)


class LocalPlace:
    """Where a test writes a Zarr group: a local directory."""

    def __init__(self, path):
        self.target = str(path)

    def files(self):
        """Every file with its bytes (relative paths)."""
        out = {}
        for dirpath, _, files in os.walk(self.target):
            for f in files:
                p = os.path.join(dirpath, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, self.target)] = fh.read()
        return out

    def put_tree(self, local):
        shutil.copytree(local, self.target)

    def readable(self, tmp_path):
        """A local path xarray (zarr-python) can open."""
        return self.target


class S3Place:
    """Where a test writes a Zarr group: an s3:// prefix. Groups go up and
    come back byte for byte through strata's own store (xarray cannot open
    s3:// here: no s3fs)."""

    def __init__(self, url):
        self.target = url

    def files(self):
        store = open_store(self.target)
        return {k: store.get(k) for k in store.list("")}

    def put_tree(self, local):
        store = open_store(self.target)
        for key, value in LocalPlace(local).files().items():
            store.set(key, value)

    def readable(self, tmp_path):
        copy = tmp_path / f"copy-{uuid.uuid4().hex[:8]}"
        for key, value in self.files().items():
            p = copy / key
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(value)
        return str(copy)


@pytest.fixture(params=["local", "s3"])
def place(request, tmp_path):
    """Makes places for Zarr groups, place("ours.zarr"): in tmp_path, or
    under a fresh prefix of the s3_server fixture's bucket."""
    if request.param == "local":
        return lambda name: LocalPlace(tmp_path / name)
    request.getfixturevalue("s3_env")
    prefix = f"s3://{S3_BUCKETS[0]}/{uuid.uuid4().hex[:8]}"
    return lambda name: S3Place(f"{prefix}/{name}")


@pytest.fixture
def rng(request):
    # A seed per test, the same on every run (from the test's id; Python's
    # hash() of a string changes from process to process), shifted by
    # STRATA_TEST_SEED to try others, and shown in a failure's report.
    shift = int(os.environ.get("STRATA_TEST_SEED", "0"))
    seed = (zlib.crc32(request.node.nodeid.encode()) + shift) % (2 ** 32)
    request.node.user_properties.append(("rng seed", seed))
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for name, value in item.user_properties:
            if name == "rng seed":
                report.sections.append(("rng", f"seed {value} (STRATA_TEST_SEED={os.environ.get('STRATA_TEST_SEED', '0')})"))


def random_chunks(rng, shape):
    """A random regular chunking of `shape` (1 to the whole axis per axis)."""
    return tuple(int(rng.integers(1, d + 1)) if d > 0 else 1 for d in shape)


def random_shape(rng, max_ndim=3, max_extent=9):
    ndim = int(rng.integers(0, max_ndim + 1))
    return tuple(int(rng.integers(0 if rng.random() < 0.05 else 1, max_extent + 1))
                 for _ in range(ndim))


def assert_eq(actual, expected, rtol=1e-12, atol=0):
    """`actual` (a strata.Array or numpy) equals numpy's `expected`: same shape,
    dtype and values (NaN equal to NaN)."""
    if isinstance(actual, strata.Array):
        assert actual.shape == np.shape(expected), (actual.shape, np.shape(expected))
        actual = actual.compute()
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if actual.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)
