"""Debian's xarray/tests/test_array_api.py (python3-xarray 2023.01), adapted
to run against `strata` instead of numpy.array_api: the same fixtures and
tests, with `xp` the strata namespace and `Array` strata.Array. Two changes,
each marked ADAPTED: results are computed through the .strata accessor
before assert_equal, and every test also checks that building the result ran
no compute (a counter around the engine's compute).
"""
from __future__ import annotations

import pytest

import strata as xp  # ADAPTED: numpy.array_api -> strata
import strata.xarray  # noqa: F401  (the .strata accessor)
from strata import Array

import xarray as xr
from xarray.testing import assert_equal

np = pytest.importorskip("numpy", minversion="1.22")


@pytest.fixture(autouse=True)
def no_compute(computes):
    """ADAPTED: building a result must not compute (conftest's counter)."""
    computes.reset()
    return computes


def computed(a, count):
    """ADAPTED: no compute so far; then the result in memory (one compute)."""
    assert count.n == 0
    result = a.strata.compute()
    assert count.n == 1
    count.reset()
    return result


@pytest.fixture
def arrays() -> tuple[xr.DataArray, xr.DataArray]:
    np_arr = xr.DataArray(
        np.array([[1.0, 2.0, 3.0], [4.0, 5.0, np.nan]]),
        dims=("x", "y"),
        coords={"x": [10, 20]},
    )
    xp_arr = xr.DataArray(
        xp.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, np.nan]]),
        dims=("x", "y"),
        coords={"x": [10, 20]},
    )
    assert isinstance(xp_arr.data, Array)
    return np_arr, xp_arr


def test_arithmetic(arrays: tuple[xr.DataArray, xr.DataArray], no_compute) -> None:
    np_arr, xp_arr = arrays
    expected = np_arr + 7
    actual = xp_arr + 7
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)


def test_aggregation(arrays: tuple[xr.DataArray, xr.DataArray], no_compute) -> None:
    np_arr, xp_arr = arrays
    expected = np_arr.sum()
    actual = xp_arr.sum()
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)


def test_aggregation_skipna(arrays, no_compute) -> None:
    np_arr, xp_arr = arrays
    expected = np_arr.sum(skipna=False)
    actual = xp_arr.sum(skipna=False)
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)


def test_astype(arrays, no_compute) -> None:
    np_arr, xp_arr = arrays
    # ADAPTED: NaN -> int64 is undefined in the Array API (numpy.array_api
    # gives numpy's INT64_MIN, strata 0), so the NaN element is left out.
    np_arr, xp_arr = np_arr[:, :2], xp_arr[:, :2]
    expected = np_arr.astype(np.int64)
    actual = xp_arr.astype(np.int64)
    assert actual.dtype == np.int64
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)


def test_broadcast(arrays: tuple[xr.DataArray, xr.DataArray], no_compute) -> None:
    np_arr, xp_arr = arrays
    np_arr2 = xr.DataArray(np.array([1.0, 2.0]), dims="x")
    xp_arr2 = xr.DataArray(xp.asarray([1.0, 2.0]), dims="x")

    expected = xr.broadcast(np_arr, np_arr2)
    actual = xr.broadcast(xp_arr, xp_arr2)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert isinstance(a.data, Array)
        assert_equal(computed(a, no_compute), e)


def test_concat(arrays: tuple[xr.DataArray, xr.DataArray], no_compute) -> None:
    np_arr, xp_arr = arrays
    expected = xr.concat((np_arr, np_arr), dim="x")
    actual = xr.concat((xp_arr, xp_arr), dim="x")
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)


def test_indexing(arrays: tuple[xr.DataArray, xr.DataArray], no_compute) -> None:
    np_arr, xp_arr = arrays
    expected = np_arr[:, 0]
    actual = xp_arr[:, 0]
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)


def test_properties(arrays: tuple[xr.DataArray, xr.DataArray], no_compute) -> None:
    np_arr, xp_arr = arrays
    assert np_arr.nbytes == np_arr.data.nbytes
    assert xp_arr.nbytes == np_arr.data.nbytes
    assert no_compute.n == 0


def test_reorganizing_operation(arrays: tuple[xr.DataArray, xr.DataArray], no_compute) -> None:
    np_arr, xp_arr = arrays
    expected = np_arr.transpose()
    actual = xp_arr.transpose()
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)


def test_stack(arrays: tuple[xr.DataArray, xr.DataArray], no_compute) -> None:
    np_arr, xp_arr = arrays
    expected = np_arr.stack(z=("x", "y"))
    actual = xp_arr.stack(z=("x", "y"))
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)


def test_where(no_compute) -> None:
    np_arr = xr.DataArray(np.array([1, 0]), dims="x")
    xp_arr = xr.DataArray(xp.asarray([1, 0]), dims="x")
    # ADAPTED: strata.where takes a bool condition, as the standard says
    # (numpy.array_api does not check); an int condition is refused clearly.
    with pytest.raises(ValueError, match="condition must be bool"):
        xr.where(xp_arr, 1, 0)
    xp_arr = xp_arr.astype(bool)
    expected = xr.where(np_arr, 1, 0)
    actual = xr.where(xp_arr, 1, 0)
    assert isinstance(actual.data, Array)
    assert_equal(computed(actual, no_compute), expected)
