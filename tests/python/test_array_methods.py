"""One semantics per name: an Array method and the namespace function of the
same name do the same thing (docs/python-api.md), and numpy's function on an
Array (its __array_function__) gives the same result too.

Before the package was laid out in layers, x.sum() followed the Array API
while x.prod(), x.std() and x.var() followed numpy's entries of the numpy
protocol, with different keywords and checks."""
import inspect

import numpy as np
import pytest

import strata

# Methods that take more than their function, and why (each is documented in
# the method's docstring and in docs/python-api.md).
EXTRA_PARAMETERS = {
    "astype": {"order", "casting", "subok"},   # numpy's, passed by xarray; no effect
    "round": {"decimals"},                      # numpy's x.round(decimals)
}
# Methods whose first array is self: strata.f(func, x, ...) is x.f(func, ...).
SELF_IS_AN_ARGUMENT = {"map_blocks", "map_overlap"}


def shared_names():
    return sorted(n for n in dir(strata.Array)
                  if not n.startswith("_") and callable(getattr(strata.Array, n))
                  and callable(getattr(strata, n, None)) and not isinstance(
                      getattr(strata, n), type))


def test_methods_take_their_functions_parameters():
    names = shared_names()
    for must in ("sum", "prod", "mean", "min", "max", "std", "var", "all", "any", "argmin",
                 "argmax", "cumsum", "cumprod", "astype", "reshape", "squeeze", "clip",
                 "transpose"):
        assert must in names
    differ = []
    for name in names:
        if name in SELF_IS_AN_ARGUMENT:
            continue
        method = [p for p in inspect.signature(getattr(strata.Array, name)).parameters
                  if p != "self"]
        function = list(inspect.signature(getattr(strata, name)).parameters)
        if name not in ("compute", "plan", "visualize"):
            function = function[1:]  # x
        else:
            function = [p for p in function if p != "arrays"]
        if set(method) - EXTRA_PARAMETERS.get(name, set()) != set(function):
            differ.append(f"{name}: x.{name}{method} but strata.{name}(x, {function})")
    assert not differ, "\n".join(differ)


REDUCTIONS = ["sum", "prod", "mean", "min", "max", "std", "var", "all", "any"]


def same(a, b):
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64", "bool"])
@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (-1, True),
                                           ((0, 2), False), ((), False)])
def test_reduction_method_is_the_function(name, dtype, axis, keepdims):
    a = (np.arange(2 * 3 * 4) % 7 + 1).reshape(2, 3, 4).astype(dtype)
    x = strata.asarray(a, chunks=(1, 2, 3))
    by_method = getattr(x, name)(axis=axis, keepdims=keepdims).compute()
    by_function = getattr(strata, name)(x, axis=axis, keepdims=keepdims).compute()
    same(by_method, by_function)
    # A positional axis (numpy code's habit) is the same axis.
    same(getattr(x, name)(axis, keepdims=keepdims).compute(), by_function)
    # numpy's function on the Array (numpy's protocol) too, and the values
    # are numpy's own.
    by_numpy = getattr(np, name)(x, axis=axis, keepdims=keepdims).compute()
    same(by_numpy, by_function)
    expected = np.asarray(getattr(np, name)(a, axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(by_function, expected, rtol=1e-5)


@pytest.mark.parametrize("name", ["sum", "prod"])
@pytest.mark.parametrize("dtype", [None, "uint8", "float32", "int64"])
def test_sum_and_prod_take_dtype_alike(name, dtype):
    a = np.arange(1, 7, dtype="int16").reshape(2, 3)
    x = strata.asarray(a, chunks=1)
    by_method = getattr(x, name)(axis=1, dtype=dtype).compute()
    by_function = getattr(strata, name)(x, axis=1, dtype=dtype).compute()
    by_numpy = getattr(np, name)(x, axis=1, dtype=dtype).compute()
    same(by_method, by_function)
    same(by_numpy, by_function)
    np.testing.assert_array_equal(by_function, getattr(np, name)(a, axis=1, dtype=dtype))
    assert by_function.dtype == getattr(np, name)(a, axis=1, dtype=dtype).dtype


@pytest.mark.parametrize("name", ["std", "var"])
def test_correction_and_ddof_are_one_number(name):
    a = np.arange(12, dtype="float64").reshape(3, 4) ** 1.5
    x = strata.asarray(a, chunks=2)
    expected = getattr(np, name)(a, axis=0, ddof=1)
    for r in (getattr(x, name)(axis=0, ddof=1), getattr(x, name)(0, correction=1),
              getattr(strata, name)(x, axis=0, correction=1),
              getattr(strata, name)(x, axis=0, ddof=1),
              getattr(np, name)(x, axis=0, ddof=1)):
        np.testing.assert_allclose(r.compute(), expected)
    with pytest.raises(TypeError, match=f"{name}: give correction= or numpy's ddof=, not both"):
        getattr(x, name)(ddof=1, correction=1)


@pytest.mark.parametrize("name", ["argmin", "argmax"])
def test_arg_reductions_alike(name):
    a = np.array([[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]], dtype="int64")
    x = strata.asarray(a, chunks=2)
    for axis in (None, 0, 1, -1):
        expected = getattr(np, name)(a, axis=axis)
        same(getattr(x, name)(axis).compute(), np.asarray(expected))
        same(getattr(strata, name)(x, axis=axis).compute(), np.asarray(expected))
        same(getattr(np, name)(x, axis=axis).compute(), np.asarray(expected))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_alike(name):
    a = np.arange(1, 13, dtype="int32").reshape(3, 4)
    x = strata.asarray(a, chunks=2)
    for axis in (None, 0, 1):
        expected = getattr(np, name)(a, axis=axis)
        same(getattr(x, name)(axis).compute(), expected)
        same(getattr(strata, name)(x, axis=axis).compute(), expected)
        same(getattr(np, name)(x, axis=axis).compute(), expected)


def test_manipulation_methods_alike():
    a = np.arange(6.0).reshape(1, 2, 3)
    x = strata.asarray(a, chunks=1)
    same(x.squeeze().compute(), a.squeeze())
    same(strata.squeeze(x).compute(), a.squeeze())
    same(x.squeeze(0).compute(), strata.squeeze(x, axis=0).compute())
    same(x.transpose().compute(), a.transpose())
    same(strata.transpose(x, (2, 0, 1)).compute(), a.transpose(2, 0, 1))
    same(x.transpose(2, 0, 1).compute(), np.transpose(x, (2, 0, 1)).compute())
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        x.transpose(0, 1, 3)
    same(x.reshape(3, 2).compute(), strata.reshape(x, (3, 2)).compute())
    same(x.clip(1, 4).compute(), strata.clip(x, 1, 4).compute())
    same(x.clip(1, 4).compute(), np.clip(a, 1, 4))
    same(x.astype("int8").compute(), strata.astype(x, strata.int8).compute())
    same(x.round().compute(), strata.round(x).compute())
    same((x / 7).round(2).compute(), np.round(a / 7, 2))
