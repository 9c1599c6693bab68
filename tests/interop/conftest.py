"""Shared fixtures for tests that run the `strata` binary beside zarr-python.

Run with the project's .venv (zarr-python 3.1, numcodecs, numpy 2), as ctest does:
    STRATA_BIN=build/ci/bin/strata .venv/bin/python -m pytest tests/interop
"""
import asyncio
import os
import subprocess

import numpy as np
import pytest
import zarr
import zarr.storage


def strata_bin():
    path = os.environ.get("STRATA_BIN")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "build", "debug", "bin", "strata")
    if not os.path.exists(path):
        pytest.exit(f"strata binary not found at {path}; set STRATA_BIN", returncode=2)
    return path


class Strata:
    """Runs `strata` and returns the CompletedProcess (text mode)."""

    def __init__(self, path):
        self.path = path

    def __call__(self, *args, check=True, env=None):
        proc = subprocess.run([self.path, *map(str, args)], capture_output=True, text=True,
                              timeout=600, env=env)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"strata {' '.join(map(str, args))} exited {proc.returncode}\n"
                f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        return proc


@pytest.fixture(scope="session")
def strata():
    return Strata(strata_bin())


# --- The chunk-independent synthetic data of src/strata/core/synthetic.h, in numpy.

_U = np.uint64


def synthetic_bits(seed, flat):
    flat = np.asarray(flat, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (np.full(flat.shape, seed, dtype=np.uint64) * _U(0x9E3779B97F4A7C15)
             + flat * _U(0xD1B54A32D192ED03) + _U(0x632BE59BD9B4E019))
        z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
        return z ^ (z >> _U(31))


def _real_values(dtype, seed, flat):
    b = synthetic_bits(seed, flat)
    if dtype == np.float64:
        return (b >> _U(11)).astype(np.float64) * 2.0 ** -53
    if dtype == np.float32:
        return ((b >> _U(40)).astype(np.float32) * np.float32(2.0 ** -24)).astype(np.float32)
    raise AssertionError(dtype)


def synthetic(shape, dtype, seed):
    """The array `strata random --shape shape --dtype dtype --seed seed` writes."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    flat = np.arange(n, dtype=np.uint64)
    if dtype == np.bool_:
        out = (synthetic_bits(seed, flat) >> _U(63)) != 0
    elif dtype == np.float16:
        # float32's values rounded to float16 (what numpy's astype does).
        out = _real_values(np.dtype(np.float32), seed, flat).astype(np.float16)
    elif dtype.kind == "f":
        out = _real_values(dtype, seed, flat)
    elif dtype.kind == "c":
        part = np.float32 if dtype == np.complex64 else np.float64
        re = _real_values(np.dtype(part), seed, 2 * flat)
        im = _real_values(np.dtype(part), seed, 2 * flat + _U(1))
        out = (re + 1j * im).astype(dtype)
    else:  # integers: the low bytes of the 64 random bits
        b = synthetic_bits(seed, flat)
        out = b.astype(np.dtype(f"u{dtype.itemsize}")).view(dtype)
    return out.reshape(shape)


def assert_same(a, b):
    """Element-wise equality with NaN == NaN."""
    a = np.asarray(a)
    b = np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    if a.dtype.kind in "fc":
        np.testing.assert_array_equal(a, b)  # treats NaN == NaN
    else:
        assert np.array_equal(a, b)


def tree_digest(path):
    """Names, sizes and contents of every file under path (to prove it is untouched)."""
    import hashlib
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = hashlib.sha256(fh.read()).hexdigest()
    return out


# --- zarr-python 3 helpers.

def zarr_v2(path, data=None, *, shape=None, chunks, dtype=None, compressor=None, filters=None,
            fill_value=0, order="C", dimension_separator="."):
    """A Zarr v2 array written by zarr-python 3 (zarr_format=2), holding `data`
    when given, reopened read-only. `compressor=None` stores chunks raw, as in
    zarr-python 2 (zarr-python 3's own default is "auto": zstd)."""
    if data is not None:
        data = np.asarray(data)
        shape, dtype = data.shape, data.dtype
    z = zarr.open_array(str(path), mode="w", zarr_format=2, shape=shape, chunks=chunks,
                        dtype=dtype, compressor=compressor, filters=filters,
                        fill_value=fill_value, order=order,
                        dimension_separator=dimension_separator)
    if data is not None:
        z[...] = data
    return zarr.open_array(str(path), mode="r")


def codec_chain(a):
    """A v2 array's filters and compressor, in the order they encode."""
    m = a.metadata
    return [*(m.filters or ()), *([m.compressor] if m.compressor is not None else [])]


def store_keys(path):
    """Every key zarr-python's LocalStore lists under path, sorted."""
    async def collect():
        return sorted([k async for k in zarr.storage.LocalStore(str(path)).list()])
    return asyncio.run(collect())
