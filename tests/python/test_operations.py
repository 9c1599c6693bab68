"""The operations of issue 16 from Python: NaN-aware reductions, group-by
options, scans and diff, sorting and searching, set functions, NumPy
indexing (integer arrays, vindex, boolean masks), pad, manipulation, the
*_like family, tril/triu, from_dlpack and the data type functions: values
against numpy on random shapes and chunkings, laziness, and bad input."""
import os

import numpy as np
import pytest
import zarr

import strata
from conftest import assert_eq, random_chunks, random_shape


def lazy(rng, a):
    return strata.asarray(a, chunks=random_chunks(rng, a.shape))


def with_nan(rng, shape, frac=0.3):
    a = rng.uniform(-3, 3, shape)
    a[rng.random(shape) < frac] = np.nan
    return a


# ------------------------------------------------------- NaN-aware reductions

class _no_warnings:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmean", "nanmin", "nanmax",
                                  "nanvar", "nanstd"])
def test_nan_reductions_against_numpy(rng, name):
    ref = getattr(np, name)
    for _ in range(4):
        shape = random_shape(rng, 3, 7)
        if 0 in shape and name in ("nanmin", "nanmax"):
            continue
        a = with_nan(rng, shape)
        x = lazy(rng, a)
        axis = None if not shape or rng.random() < 0.3 else int(rng.integers(0, len(shape)))
        if axis is not None and shape[axis] == 0 and name in ("nanmin", "nanmax"):
            continue
        with _no_warnings():
            want = ref(a, axis=axis)
        assert_eq(getattr(strata, name)(x, axis=axis), want, rtol=1e-9)
    # An all-NaN column: numpy's results (0 for nansum, NaN for nanmean).
    a = np.array([[np.nan, 1.0], [np.nan, 3.0]])
    x = strata.asarray(a, chunks=1)
    with _no_warnings():
        assert_eq(getattr(strata, name)(x, axis=0), ref(a, axis=0), rtol=1e-12)


def test_nanvar_ddof_and_nanarg(rng):
    a = with_nan(rng, (6, 5))
    x = strata.asarray(a, chunks=(4, 2))
    assert_eq(strata.nanvar(x, axis=0, ddof=1), np.nanvar(a, axis=0, ddof=1), rtol=1e-9)
    assert_eq(strata.nanargmin(x, axis=1), np.nanargmin(a, axis=1))
    assert_eq(strata.nanargmax(x), np.nanargmax(a))
    with pytest.raises(ValueError, match="All-NaN"):
        strata.nanargmin(strata.asarray(np.full((2, 2), np.nan)), axis=0).compute()
    with pytest.raises(ValueError, match="ddof"):
        strata.nanvar(x, ddof=-1)


def test_groupby_skipna_statistics_and_array_labels(rng):
    a = with_nan(rng, (5, 12), 0.2)
    labels = rng.integers(0, 4, 12)
    labels[:4] = [0, 1, 2, 3]
    x = strata.asarray(a, chunks=(3, 5))

    def by_group(f):
        with _no_warnings():
            return np.stack([f(a[:, labels == g], axis=1) for g in range(4)], axis=1)
    for func, ref in (("mean", np.nanmean), ("sum", np.nansum), ("var", np.nanvar),
                      ("std", np.nanstd), ("min", np.nanmin), ("max", np.nanmax)):
        assert_eq(strata.groupby_reduce(x, labels, axis=1, func=func), by_group(ref), rtol=1e-9)
    # skipna=False: NaN propagates, as numpy's plain mean.
    assert_eq(strata.groupby_reduce(x, labels, axis=1, func="mean", skipna=False),
              by_group(np.mean), rtol=1e-9)
    # Labels as a chunked strata Array, and num_groups beyond the labels.
    lab = strata.asarray(labels, chunks=5)
    got = strata.groupby_reduce(x, lab, axis=1, func="mean", num_groups=5)
    assert got.shape == (5, 5)
    assert_eq(got[:, :4], by_group(np.nanmean), rtol=1e-9)
    # first/last: of the non-NaN elements in position order.
    first = strata.groupby_reduce(x, labels, axis=1, func="first").compute()
    for g in range(4):
        for r in range(5):
            vals = a[r, labels == g]
            vals = vals[~np.isnan(vals)]
            want = vals[0] if vals.size else np.nan
            np.testing.assert_equal(first[r, g], want)
    with pytest.raises(ValueError, match="unknown func"):
        strata.groupby_reduce(x, labels, axis=1, func="median")
    with pytest.raises(TypeError, match="labels"):
        strata.groupby_reduce(x, np.ones(12), axis=1)


# --------------------------------------------------------------------- scans

def test_cumulative_and_diff(rng):
    for _ in range(5):
        shape = random_shape(rng, 3, 8)
        if not shape:
            shape = (4,)
        a = rng.uniform(-2, 2, shape)
        x = lazy(rng, a)
        axis = int(rng.integers(0, len(shape)))
        assert_eq(strata.cumulative_sum(x, axis=axis), np.cumsum(a, axis=axis), rtol=1e-9)
        assert_eq(strata.cumulative_prod(x, axis=axis), np.cumprod(a, axis=axis), rtol=1e-9)
        assert_eq(strata.diff(x, axis=axis), np.diff(a, axis=axis), rtol=1e-12)
        if shape[axis] >= 2:
            assert_eq(strata.diff(x, axis=axis, n=2), np.diff(a, axis=axis, n=2), rtol=1e-9)
    a = np.arange(10, dtype=np.int32)
    x = strata.asarray(a, chunks=3)
    assert_eq(strata.cumulative_sum(x), np.cumsum(a, dtype=np.int64))
    got = strata.cumulative_sum(x, include_initial=True)
    assert_eq(got, np.concatenate([[0], np.cumsum(a)]).astype(np.int64))
    n = with_nan(rng, (7,))
    assert_eq(strata.nancumsum(strata.asarray(n, chunks=2)), np.nancumsum(n), rtol=1e-12)
    with pytest.raises(ValueError, match="axis"):
        strata.cumulative_sum(strata.ones((2, 2)))
    with pytest.raises(ValueError):
        strata.diff(x, n=-1)


# --------------------------------------------------------- sorting, searching

def test_sort_argsort_take_along_axis(rng):
    for _ in range(5):
        shape = random_shape(rng, 3, 7)
        if not shape:
            shape = (5,)
        a = rng.integers(-4, 5, shape).astype(np.float64)
        if a.size:
            a.flat[0] = np.nan
        x = lazy(rng, a)
        axis = int(rng.integers(0, len(shape)))
        assert_eq(strata.sort(x, axis=axis), np.sort(a, axis=axis))
        idx = strata.argsort(x, axis=axis)
        assert_eq(idx, np.argsort(a, axis=axis, kind="stable"))
        assert_eq(strata.take_along_axis(x, idx, axis=axis),
                  np.take_along_axis(a, np.argsort(a, axis=axis, kind="stable"), axis=axis))
    d = strata.sort(strata.asarray(np.array([3.0, 1.0, 2.0])), descending=True)
    assert_eq(d, np.array([3.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="complex"):
        strata.sort(strata.ones(3, dtype=strata.complex128))


def nonempty_shape(rng, max_extent):
    return tuple(int(rng.integers(1, max_extent + 1)) for _ in range(int(rng.integers(1, 4))))


QUANTILE_METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                    "interpolated_inverted_cdf", "hazen", "weibull", "linear",
                    "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint",
                    "nearest"]


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_quantile_methods_against_numpy(rng, method):
    for fn in ("quantile", "nanquantile"):
        for q in (0.3, [0.0, 0.25, 0.5, 0.99, 1.0], np.array([[0.1, 0.2], [0.7, 0.8]])):
            shape = nonempty_shape(rng, 6)
            a = with_nan(rng, shape, 0.2 if fn == "nanquantile" else 0.05)
            if rng.random() < 0.3:
                a = rng.integers(-5, 6, shape).astype(np.int16)
            x = lazy(rng, a)
            axis = None if rng.random() < 0.3 else tuple(
                sorted(rng.choice(len(shape), int(rng.integers(1, len(shape) + 1)),
                                  replace=False).tolist()))
            keepdims = bool(rng.random() < 0.5)
            with _no_warnings():
                if np.ndim(q) > 1:
                    # numpy 1.24's nanquantile moves only the first of a 2-d
                    # q's axes to the front (fixed in numpy 2); the reference
                    # is numpy's flat-q result with q's shape in front.
                    flat = getattr(np, fn)(a, np.ravel(q), axis=axis, method=method,
                                           keepdims=keepdims)
                    want = flat.reshape(np.shape(q) + flat.shape[1:])
                else:
                    want = getattr(np, fn)(a, q, axis=axis, method=method, keepdims=keepdims)
            got = getattr(strata, fn)(x, q, axis=axis, method=method, keepdims=keepdims)
            assert_eq(got, want, rtol=1e-12)
            # numpy's functions dispatch to strata, lazily.
            with _no_warnings():
                via_numpy = getattr(np, fn)(x, q, axis=axis, method=method, keepdims=keepdims)
            assert isinstance(via_numpy, strata.Array)
            assert_eq(via_numpy, want, rtol=1e-12)
            if np.ndim(q) > 1 and fn == "quantile":
                assert_eq(got, np.quantile(a, q, axis=axis, method=method, keepdims=keepdims))


def test_median_against_numpy(rng):
    for fn in ("median", "nanmedian"):
        for dtype in (np.float64, np.float32, np.int32, np.uint8):
            shape = nonempty_shape(rng, 7)
            a = with_nan(rng, shape, 0.2) if np.dtype(dtype).kind == "f" else \
                rng.integers(0, 9, shape)
            a = a.astype(dtype)
            x = lazy(rng, a)
            for axis in (None, -1, tuple(range(len(shape)))[:2]):
                with _no_warnings():
                    want = getattr(np, fn)(a, axis=axis, keepdims=True)
                tol = 1e-6 if dtype == np.float32 else 1e-12
                assert_eq(getattr(strata, fn)(x, axis=axis, keepdims=True), want, rtol=tol)
                with _no_warnings():
                    assert_eq(getattr(np, fn)(x, axis=axis), getattr(np, fn)(a, axis=axis),
                              rtol=tol)
    # An all-NaN slice: NaN, as numpy (and a NaN anywhere gives NaN without nan-).
    a = np.array([[np.nan, 1.0, 4.0], [np.nan, np.nan, 2.0]])
    x = strata.asarray(a, chunks=(1, 2))
    with _no_warnings():
        assert_eq(strata.nanmedian(x, axis=0), np.nanmedian(a, axis=0))
        assert_eq(strata.median(x, axis=1), np.median(a, axis=1))
        assert_eq(strata.nanquantile(x, [0.2, 0.9], axis=0), np.nanquantile(a, [0.2, 0.9], axis=0))


def test_quantile_bad_input_and_budget(tmp_path):
    x = strata.asarray(np.arange(12.0).reshape(3, 4), chunks=2)
    with pytest.raises(ValueError, match=r"q must be in \[0, 1\], got 1.5"):
        strata.quantile(x, 1.5)
    with pytest.raises(ValueError, match="'cubic' is not a method; use one of inverted_cdf"):
        strata.quantile(x, 0.5, method="cubic")
    with pytest.raises(TypeError, match="method must be a str"):
        strata.quantile(x, 0.5, method=3)
    with pytest.raises(TypeError, match="q must be real numbers"):
        strata.quantile(x, "half")
    with pytest.raises(ValueError, match="axis 1 repeats"):
        strata.median(x, axis=(1, -1))
    with pytest.raises(ValueError, match="complex128"):
        strata.median(strata.ones(3, dtype=strata.complex128))
    with pytest.raises(TypeError):
        strata.median(np.zeros(3).tolist())
    assert strata.quantile(x, [], axis=0).shape == (0, 4)
    # One slice over the budget: refused when built, naming axis and budget,
    # nothing computed and nothing left in work_dir.
    spec = strata.Spec(work_dir=tmp_path / "work", allowed_mem="4MB", reserved_mem="1MB")
    big = strata.random.random((1 << 20, 2), chunks=(1 << 16, 2), spec=spec)
    with pytest.raises(ValueError, match="nanmedian: axis 0 of extent 1048576 must be in one "
                                         "chunk.*allowed_mem"):
        strata.nanmedian(big, axis=0)
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())
    # Within the budget: the time axis is made one chunk, the rest split to fit.
    spec = strata.Spec(work_dir=tmp_path / "work2", allowed_mem="12MB", reserved_mem="1MB")
    t = strata.random.random((400, 30, 40), chunks=(50, 30, 40), spec=spec)
    p = strata.quantile(t, [0.1, 0.9], axis=0)
    assert_eq(p, np.quantile(t.compute(), [0.1, 0.9], axis=0))


def test_searchsorted_isin(rng):
    s = np.sort(rng.uniform(0, 10, 20))
    v = rng.uniform(-1, 11, (4, 5))
    xs, xv = strata.asarray(s, chunks=7), strata.asarray(v, chunks=(3, 2))
    for side in ("left", "right"):
        assert_eq(strata.searchsorted(xs, xv, side=side), np.searchsorted(s, v, side=side))
    a = rng.integers(0, 10, (6, 4))
    t = np.array([1, 3, 7])
    x = strata.asarray(a, chunks=(4, 3))
    assert_eq(strata.isin(x, strata.asarray(t)), np.isin(a, t))
    assert_eq(strata.isin(x, strata.asarray(t), invert=True), np.isin(a, t, invert=True))
    with pytest.raises(ValueError, match="side"):
        strata.searchsorted(xs, xv, side="middle")


def test_unique_and_nonzero_compute_eagerly(rng):
    a = rng.integers(0, 5, (6, 7)).astype(np.float64)
    x = strata.asarray(a, chunks=(4, 3))
    assert_eq(strata.unique_values(x), np.unique(a))
    v, c = strata.unique_counts(x)
    wv, wc = np.unique(a, return_counts=True)
    assert_eq(v, wv)
    assert_eq(c, wc.astype(np.int64))
    v, inv = strata.unique_inverse(x)
    assert_eq(inv, np.unique(a, return_inverse=True)[1].reshape(a.shape).astype(np.int64))
    r = strata.unique_all(x)
    assert_eq(r.indices, np.unique(a, return_index=True)[1].astype(np.int64))
    assert_eq(r.counts, wc.astype(np.int64))
    got = strata.nonzero(x > 2)
    for g, w in zip(got, np.nonzero(a > 2)):
        assert_eq(g, w.astype(np.int64))
    with pytest.raises(ValueError, match="0-d"):
        strata.nonzero(strata.asarray(np.float64(1.0)))


# ------------------------------------------------------------------ indexing

def test_numpy_indexing(rng):
    a = rng.uniform(size=(6, 7, 5))
    x = strata.asarray(a, chunks=(4, 3, 2))
    i, j, k = np.array([5, 0, 2, 2]), np.array([1, 6, 0, 3]), np.array([4, 0, 0, 3])
    assert_eq(x[i, j], a[i, j])
    assert_eq(x[:, j[:3, None], k[None, :2]], a[:, j[:3, None], k[None, :2]])
    assert_eq(x[i, :, k], a[i, :, k])                  # not adjacent: broadcast dims first
    assert_eq(x[..., [4, 0]], a[..., [4, 0]])
    assert_eq(x[1, None, [2, 3]], a[1, None, [2, 3]])
    assert_eq(x[strata.asarray(i)], a[i])
    assert_eq(x.vindex[i, j], a[i, j])
    mask = a[:, :, 0] > 0.5
    assert_eq(x[mask], a[mask])
    assert_eq(x[strata.asarray(mask, chunks=3)], a[mask])
    assert_eq(x[a > 0.5], a[a > 0.5])
    assert_eq(strata.take(x, strata.asarray(np.array([3, 3, 0])), axis=1),
              np.take(a, [3, 3, 0], axis=1))
    with pytest.raises(IndexError, match="out of bounds"):
        x[np.array([6])]
    with pytest.raises(IndexError, match="integers or bools"):
        x[np.array([0.5])]
    with pytest.raises(IndexError):
        x[np.ones((2, 2), bool)]


# ------------------------------------------------------------------- pad etc.

@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad(rng, mode):
    a = rng.uniform(size=(5, 6))
    x = strata.asarray(a, chunks=(2, 4))
    for width in (1, (2, 3), ((1, 0), (3, 2))):
        assert_eq(strata.pad(x, width, mode=mode), np.pad(a, width, mode=mode))
    assert_eq(strata.pad(x, 2, constant_values=7.5), np.pad(a, 2, constant_values=7.5))


def test_pad_bad_mode():
    with pytest.raises(ValueError, match="unknown mode 'median'"):
        strata.pad(strata.ones(3), 1, mode="median")
    with pytest.raises(ValueError, match="pad_width"):
        strata.pad(strata.ones(3), [1, 2, 3])


def test_manipulation(rng):
    a = rng.uniform(size=(3, 4, 5))
    x = strata.asarray(a, chunks=(2, 3, 2))
    assert_eq(strata.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    assert_eq(strata.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)))
    assert_eq(strata.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1))
    assert_eq(strata.repeat(x, [1, 0, 3], axis=0), np.repeat(a, [1, 0, 3], axis=0))
    assert_eq(strata.repeat(x, 2), np.repeat(a, 2))
    assert_eq(strata.roll(x, 3, axis=2), np.roll(a, 3, axis=2))
    assert_eq(strata.roll(x, (1, -2), axis=(0, 1)), np.roll(a, (1, -2), axis=(0, 1)))
    assert_eq(strata.roll(x, 7), np.roll(a, 7))
    assert_eq(strata.tile(x, (2, 1, 3)), np.tile(a, (2, 1, 3)))
    for g, w in zip(strata.unstack(x, axis=1), [a[:, k] for k in range(4)]):
        assert_eq(g, w)
    assert strata.broadcast_shapes((3, 1), (1, 4)) == (3, 4)
    assert_eq(strata.tril(x, k=1), np.tril(a, k=1))
    assert_eq(strata.triu(x, k=-1), np.triu(a, k=-1))
    assert_eq(strata.matrix_transpose(x), np.swapaxes(a, -1, -2))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        strata.broadcast_shapes((3,), (4,))
    with pytest.raises(ValueError):
        strata.repeat(x, -1)
    with pytest.raises(ValueError, match="shifts"):
        strata.roll(x, (1, 2), axis=0)
    with pytest.raises(ValueError):
        strata.tril(strata.ones(3))


def test_new_elementwise_functions(rng):
    a = rng.uniform(1.1, 3, (4, 5))
    b = rng.uniform(-3, 3, (4, 5))
    x, y = strata.asarray(a, chunks=3), strata.asarray(b, chunks=(2, 5))
    assert_eq(strata.acosh(x), np.arccosh(a))
    assert_eq(strata.asinh(y), np.arcsinh(b))
    assert_eq(strata.atanh(y / 4), np.arctanh(b / 4))
    assert_eq(strata.reciprocal(y), np.reciprocal(b))
    assert_eq(strata.signbit(y), np.signbit(b))
    assert_eq(strata.copysign(x, y), np.copysign(a, b))
    assert_eq(strata.hypot(x, y), np.hypot(a, b))
    assert_eq(strata.logaddexp(x, y), np.logaddexp(a, b))
    assert_eq(strata.nextafter(x, y), np.nextafter(a, b))
    with pytest.raises(ValueError, match="complex"):
        strata.hypot(strata.ones(2, dtype=strata.complex128), x[0, :2])


def test_like_and_from_dlpack(rng):
    a = rng.uniform(size=(5, 6))
    x = strata.asarray(a, chunks=((2, 3), (4, 2)))
    z = strata.zeros_like(x)
    assert z.chunks == x.chunks and z.dtype == x.dtype
    assert_eq(z, np.zeros_like(a))
    assert_eq(strata.full_like(x, 3, chunks=2), np.full_like(a, 3))
    assert strata.ones_like(x, chunks=2).chunks == ((2, 2, 1), (2, 2, 2))
    # A transposed numpy view: shared, not copied, gathered per block.
    t = a.T
    d = strata.from_dlpack(t)
    assert_eq(d, t)
    assert_eq(strata.from_dlpack(a[::-1, ::2]), a[::-1, ::2])
    with pytest.raises(TypeError, match="__dlpack__"):
        strata.from_dlpack([1, 2])


def test_data_type_functions_come_from_the_engine():
    # The values are the engine's (api/dtype_info.h), and agree with numpy.
    for t in (strata.float32, strata.float64):
        f, n = strata.finfo(t), np.finfo(t)
        assert (f.bits, f.eps, f.max, f.min, f.smallest_normal) == (
            n.bits, float(n.eps), float(n.max), float(n.min), float(n.smallest_normal))
    for t in (strata.int8, strata.uint16, strata.int64, strata.uint64):
        i, n = strata.iinfo(t), np.iinfo(t)
        assert (i.bits, i.max, i.min) == (n.bits, int(n.max), int(n.min))
    assert strata.result_type(strata.int8, strata.uint8) == strata.int16
    with pytest.raises(ValueError, match="at least one"):
        strata.result_type(1, 2.0)


# ------------------------------------------------------------------ laziness

def test_new_operations_read_nothing_before_compute(tmp_path, spec):
    """Every lazy new op builds (and plans) over a Zarr array whose chunks are
    all corrupt; computing it is the first read."""
    a = np.arange(48.0).reshape(6, 8)
    src = tmp_path / "src.zarr"
    z = zarr.open(str(src), mode="w", shape=a.shape, chunks=(3, 4), dtype=a.dtype)
    z[...] = a
    # Every chunk file (zarr 3 keeps them under c/), not the metadata.
    chunks = [p for p in src.rglob("*") if p.is_file() and p.name != "zarr.json"]
    assert len(chunks) == 4
    for p in chunks:
        p.write_bytes(b"not a chunk")
    x = strata.from_zarr(str(src), spec=spec)
    built = [
        strata.nanmean(x, axis=0), strata.nanvar(x), strata.nanargmax(x, axis=1),
        strata.cumulative_sum(x, axis=1), strata.diff(x, axis=0), strata.sort(x, axis=1),
        strata.argsort(x, axis=0), strata.searchsorted(strata.arange(5.0), x),
        strata.isin(x, strata.arange(3.0)), strata.pad(x, 1, mode="reflect"),
        strata.roll(x, 2, axis=1), strata.tile(x, (1, 2)), strata.repeat(x, 2, axis=0),
        strata.moveaxis(x, 0, 1), strata.tril(x), strata.zeros_like(x) + x,
        strata.groupby_reduce(x, [0, 1, 0, 1, 2, 2, 0, 1], axis=1, func="std"),
        x[[1, 4], [0, 7]], x.vindex[[5, 0], [2, 3]], strata.take(x, strata.arange(3), axis=1),
        strata.acosh(x), strata.logaddexp(x, x),
    ]
    for y in built:
        assert strata.plan(y).num_tasks > 0
    assert not (tmp_path / "work").exists() or not os.listdir(tmp_path / "work")
    for y in built[:3] + built[-3:]:
        with pytest.raises(OSError, match="chunk"):
            y.compute()
