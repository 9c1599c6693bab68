"""Arguments of the wrong type or range raise TypeError/ValueError naming the
argument, never pybind11's internals ("Unable to cast Python instance to C++
type", or the 600-character signature of the constructor it could not call).

Spec's settings are converted in one place (the binding's named conversions,
src/strata/python/convert.cc), shapes and region origins in another (_core's
shape_tuple and int64_arg); a region whose end passes 2**63 is the engine's
to refuse (it once killed the interpreter).
"""
import pathlib

import numpy as np
import pytest
import zarr

import strata


def assert_clean(excinfo, *needles):
    text = str(excinfo.value)
    assert "Unable to cast" not in text and "incompatible" not in text, text
    assert "\n" not in text and len(text) < 300, text
    for needle in needles:
        assert needle in text, (needle, text)


@pytest.mark.parametrize("kwargs,error,needles", [
    # Sizes: a number of bytes must fit in int64.
    ({"allowed_mem": 2**70}, ValueError,
     ["Spec: allowed_mem 1180591620717411303424 is out of range"]),
    ({"reserved_mem": 2**64}, ValueError, ["Spec: reserved_mem"]),
    ({"total_system_mem": -1}, ValueError, ["Spec: total_system_mem -1 is out of range"]),
    ({"allowed_mem": float("inf")}, ValueError, ["Spec: allowed_mem inf"]),
    ({"allowed_mem": [1]}, TypeError, ["Spec: allowed_mem must be a size", "list"]),
    ({"allowed_mem": True}, TypeError, ["Spec: allowed_mem must be a size", "bool"]),
    # Ints, bools and names.
    ({"retries": "3"}, TypeError, ["Spec: retries must be an int, got str"]),
    ({"retries": 2.0}, TypeError, ["Spec: retries must be an int, got float"]),
    ({"retries": True}, TypeError, ["Spec: retries must be an int, got bool"]),
    ({"retries": 2**40}, ValueError, ["Spec: retries 1099511627776 is out of range"]),
    ({"retries": -1}, ValueError, ["retries must be 0..100"]),
    ({"workers": 2**70}, ValueError, ["Spec: workers"]),
    ({"fuse": "yes"}, TypeError, ["Spec: fuse must be True or False, got str"]),
    ({"fuse": 1}, TypeError, ["Spec: fuse must be True or False, got int"]),
    ({"tier": None}, TypeError, ["Spec: tier must be a str, got NoneType"]),
    ({"tier": "fast"}, ValueError, ["fast"]),
    ({"work_dir": ["a"]}, TypeError, ["Spec: work_dir must be a str, got list"]),
    ({"work_dir": b"dir"}, TypeError, ["Spec: work_dir must be a str, got bytes"]),
    ({"object_store_url": 5}, TypeError, ["Spec: object_store_url must be a str, got int"]),
])
def test_spec_arguments(kwargs, error, needles):
    with pytest.raises(error) as excinfo:
        strata.Spec(**kwargs)
    assert_clean(excinfo, *needles)


def test_spec_accepts_what_it_documents(tmp_path):
    s = strata.Spec(work_dir=pathlib.Path(tmp_path), allowed_mem=np.int64(200_000_000),
                    reserved_mem=1e6, retries=np.int32(3), fuse=np.bool_(False), tier="auto")
    assert s.work_dir == str(tmp_path)
    assert s.allowed_mem == 200_000_000
    assert s.reserved_mem == 1_000_000
    assert s._cpp.retries == 3 and s._cpp.fuse is False
    assert strata.Spec(work_dir=str(tmp_path), allowed_mem="1GB").allowed_mem == 10**9


@pytest.mark.parametrize("call,error,needles", [
    (lambda: strata.ones((2**63, 1)), ValueError,
     ["shape: 9223372036854775808 in (9223372036854775808, 1) is out of range"]),
    (lambda: strata.zeros(2**64), ValueError, ["shape: 18446744073709551616"]),
    (lambda: strata.full((3, -2**63 - 1), 1.0), ValueError, ["shape:", "out of range"]),
    (lambda: strata.empty((2, "3")), TypeError, ["shape: expected ints"]),
    # Fits int64, but its elements do not: the engine's own error.
    (lambda: strata.ones((2**62, 4)), ValueError, ["(4611686018427387904, 4)"]),
])
def test_shapes_out_of_range(call, error, needles):
    with pytest.raises(error) as excinfo:
        call()
    assert_clean(excinfo, *needles)


def test_to_zarr_region_whose_end_overflows(tmp_path):
    dst = tmp_path / "dst.zarr"
    base = np.arange(400 * 300, dtype="f8").reshape(400, 300)
    z = zarr.open_array(str(dst), mode="w", shape=base.shape, chunks=(64, 64), dtype="f8",
                        zarr_format=2)
    z[...] = base
    patch = strata.asarray(np.full((50, 70), -5.0), chunks=(50, 70))
    for region, needle in [
            ((0, 2**63 - 1), "region at (0, 9223372036854775807) of shape (50, 70) ends past"),
            ((2**63 - 8, 0), "region at (9223372036854775800, 0) of shape (50, 70) ends past"),
            ((0, 2**63), "to_zarr: region[1]: 9223372036854775808")]:
        with pytest.raises(ValueError) as excinfo:
            strata.to_zarr(patch, str(dst), region=region)
        assert_clean(excinfo, needle)
    np.testing.assert_array_equal(zarr.open_array(str(dst), mode="r")[...], base)
