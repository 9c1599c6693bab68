"""Every function of the namespace against numpy, on random shapes and
chunkings (each test draws its own seeded cases)."""
import warnings

import numpy as np
import pytest

import strata
from conftest import assert_eq, random_chunks, random_shape

CASES = 6


def cases(rng, dtype=np.float64, low=-3.0, high=3.0, max_ndim=3, min_ndim=0):
    for _ in range(CASES):
        shape = random_shape(rng, max_ndim)
        while len(shape) < min_ndim:
            shape = shape + (int(rng.integers(1, 6)),)
        if np.dtype(dtype).kind == "f":
            a = rng.uniform(low, high, shape).astype(dtype)
        elif np.dtype(dtype).kind == "b":
            a = rng.random(shape) < 0.5
        else:
            a = rng.integers(int(low), int(high) + 1, shape).astype(dtype)
        yield a, strata.asarray(a, chunks=random_chunks(rng, shape))


UNARY = {
    "abs": (np.abs, -3, 3), "negative": (np.negative, -3, 3), "positive": (np.positive, -3, 3),
    "square": (np.square, -3, 3), "sqrt": (np.sqrt, 0, 9), "exp": (np.exp, -3, 3),
    "expm1": (np.expm1, -3, 3), "log": (np.log, 0.1, 9), "log1p": (np.log1p, 0, 9),
    "log2": (np.log2, 0.1, 9), "log10": (np.log10, 0.1, 9), "sin": (np.sin, -3, 3),
    "cos": (np.cos, -3, 3), "tan": (np.tan, -1, 1), "asin": (np.arcsin, -1, 1),
    "acos": (np.arccos, -1, 1), "atan": (np.arctan, -3, 3), "sinh": (np.sinh, -3, 3),
    "cosh": (np.cosh, -3, 3), "tanh": (np.tanh, -3, 3), "floor": (np.floor, -3, 3),
    "ceil": (np.ceil, -3, 3), "round": (np.round, -3, 3), "trunc": (np.trunc, -3, 3),
    "sign": (np.sign, -3, 3), "isnan": (np.isnan, -3, 3), "isinf": (np.isinf, -3, 3),
    "isfinite": (np.isfinite, -3, 3), "logical_not": (np.logical_not, -1, 1),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, rng):
    fn, low, high = UNARY[name]
    for a, x in cases(rng, low=low, high=high):
        assert_eq(getattr(strata, name)(x), fn(a), rtol=1e-12, atol=1e-15)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "pow": np.power,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "minimum": np.minimum, "maximum": np.maximum, "atan2": np.arctan2,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(name, rng):
    fn = BINARY[name]
    for a, x in cases(rng, low=0.5, high=3):
        # b broadcasts against a: a trailing subset of a's axes, some of extent 1.
        k = int(rng.integers(0, a.ndim + 1))
        bshape = tuple(d if rng.random() < 0.7 else 1 for d in a.shape[a.ndim - k:])
        b = rng.uniform(0.5, 3, bshape)
        y = strata.asarray(b, chunks=random_chunks(rng, bshape))
        assert_eq(getattr(strata, name)(x, y), fn(a, b))
        assert_eq(getattr(strata, name)(y, x), fn(b, a))


INT_BINARY = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
              "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift,
              "bitwise_right_shift": np.right_shift, "floor_divide": np.floor_divide,
              "remainder": np.remainder}


@pytest.mark.parametrize("name", sorted(INT_BINARY))
def test_integer_binary(name, rng):
    for a, x in cases(rng, dtype=np.int32, low=1, high=20):
        b = rng.integers(1, 5, a.shape).astype(np.int32)
        y = strata.asarray(b, chunks=random_chunks(rng, a.shape))
        assert_eq(getattr(strata, name)(x, y), INT_BINARY[name](a, b))


def test_square_root_power_is_numpy_bit_for_bit():
    # numpy computes x ** 0.5 as sqrt(x): -0.0 stays -0.0, negatives give NaN
    a = np.array([-0.0, 0.0, 2.0, -1.0, np.inf, 1e-310, 3.0], dtype=np.float64)
    for dtype in (np.float32, np.float64, np.complex128):
        b = a.astype(dtype)
        with np.errstate(invalid="ignore"):
            want = b ** 0.5
        got = (strata.asarray(b, chunks=(3,)) ** 0.5).compute()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        if dtype is not np.complex128:
            assert np.array_equal(np.signbit(got), np.signbit(want))


def test_operators_and_scalars(rng):
    for a, x in cases(rng, low=0.5, high=3):
        assert_eq(x + 1, a + 1)
        assert_eq(2 - x, 2 - a)
        assert_eq(x * 2.5, a * 2.5)
        assert_eq(1 / x, 1 / a)
        assert_eq(x // 0.7, a // 0.7)
        assert_eq(x % 0.7, a % 0.7)
        assert_eq(x ** 2, a ** 2)
        assert_eq(x ** 0.5, a ** 0.5)
        assert_eq(2 ** x, 2 ** a)
        assert_eq(-x, -a)
        assert_eq(+x, +a)
        assert_eq(abs(x - 1.5), abs(a - 1.5))
        assert_eq(x > 1.5, a > 1.5)
        assert_eq(x <= 1.5, a <= 1.5)
        assert_eq(x == x, a == a)
        assert_eq(x != 1.0, a != 1.0)
        # numpy on the left defers to strata (zero-copy asarray of numpy).
        res = a + x
        assert isinstance(res, strata.Array)
        assert_eq(res, a + a)
    for a, x in cases(rng, dtype=np.int64, low=0, high=50):
        assert_eq(x & 7, a & 7)
        assert_eq(3 | x, 3 | a)
        assert_eq(x ^ 5, a ^ 5)
        assert_eq(x << 2, a << 2)
        assert_eq(x >> 1, a >> 1)
        assert_eq(~x, ~a)
    # Python scalars take the array's dtype (Array API), as numpy 2 does.
    f32 = strata.asarray(np.ones(3, np.float32))
    assert (f32 + 1.5).dtype == np.float32
    i8 = strata.asarray(np.ones(3, np.int8))
    assert (i8 * 3).dtype == np.int8


def test_type_promotion():
    pairs = [("int8", "int16", "int16"), ("uint8", "int8", "int16"), ("int32", "float32",
                                                                      "float32"),
             ("float32", "float64", "float64"), ("bool", "int8", "int8"),
             ("float32", "complex64", "complex64"), ("uint16", "uint32", "uint32")]
    for a, b, want in pairs:
        x = strata.ones(2, dtype=a)
        y = strata.ones(2, dtype=b)
        assert (x + y).dtype == np.dtype(want), (a, b)
        assert strata.add(x, y).compute().dtype == np.dtype(want)


REDUCTIONS = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "min": np.min, "max": np.max,
              "var": np.var, "std": np.std}


def random_axis(rng, ndim):
    r = rng.random()
    if r < 0.3 or ndim == 0:
        return None
    if r < 0.6:
        return int(rng.integers(-ndim, ndim))
    k = int(rng.integers(1, ndim + 1))
    return tuple(int(v) for v in rng.choice(ndim, k, replace=False))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name, rng):
    for a, x in cases(rng, low=0.5, high=1.5):
        if a.size == 0 and name in ("min", "max", "mean", "var", "std"):
            continue
        axis = random_axis(rng, a.ndim)
        keepdims = bool(rng.random() < 0.5)
        assert_eq(getattr(strata, name)(x, axis=axis, keepdims=keepdims),
                  REDUCTIONS[name](a, axis=axis, keepdims=keepdims), rtol=1e-10)


def test_var_std_correction(rng):
    for a, x in cases(rng, min_ndim=1):
        if a.size < 2:
            continue
        assert_eq(strata.var(x, correction=1), np.var(a, ddof=1), rtol=1e-10)
        assert_eq(strata.std(x, axis=0, correction=1), np.std(a, axis=0, ddof=1), rtol=1e-10)
        # A fractional correction, also one as large as the count (inf/NaN as numpy).
        assert_eq(strata.var(x, axis=-1, correction=1.5, keepdims=True),
                  np.var(a, axis=-1, ddof=1.5, keepdims=True), rtol=1e-10)
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # degrees of freedom <= 0
            expected = np.std(a, axis=0, ddof=a.shape[0] + 0.5)
        assert_eq(strata.std(x, axis=0, correction=a.shape[0] + 0.5), expected, rtol=1e-10)
    with pytest.raises(ValueError, match="non-negative"):
        strata.var(strata.ones(3), correction=-1)
    with pytest.raises(TypeError, match="number"):
        strata.std(strata.ones(3), correction="1")
    # sum and prod return the dtype asked for (numpy wraps too).
    u8 = np.array([200, 100], dtype=np.uint8)
    assert_eq(strata.sum(strata.asarray(u8), dtype=strata.uint8), np.sum(u8, dtype=np.uint8))
    assert_eq(strata.prod(strata.asarray(u8), dtype=strata.uint8), np.prod(u8, dtype=np.uint8))


def test_logical_reductions_and_arg(rng):
    for a, x in cases(rng, dtype=np.bool_):
        axis = random_axis(rng, a.ndim)
        assert_eq(strata.all(x, axis=axis), np.all(a, axis=axis))
        assert_eq(strata.any(x, axis=axis), np.any(a, axis=axis))
        assert_eq(strata.count_nonzero(x, axis=axis), np.count_nonzero(a, axis=axis))
    for a, x in cases(rng, min_ndim=1):
        if a.size == 0:
            continue
        axis = int(rng.integers(-a.ndim, a.ndim)) if rng.random() < 0.7 else None
        if axis is not None and a.shape[axis] == 0:
            continue
        assert_eq(strata.argmax(x, axis=axis), np.argmax(a, axis=axis))
        assert_eq(strata.argmin(x, axis=axis), np.argmin(a, axis=axis))
        assert_eq(strata.argmax(x, axis=axis, keepdims=True),
                  np.argmax(a, axis=axis, keepdims=True))


def test_reduction_dtypes():
    x = strata.ones((4, 4), dtype="int32", chunks=2)
    assert_eq(strata.sum(x, dtype=strata.int64), np.ones((4, 4), np.int32).sum(dtype=np.int64))
    assert strata.sum(x, dtype="float32").dtype == np.float32
    assert strata.mean(strata.ones(4, dtype="float32")).dtype == np.float32


def test_manipulation(rng):
    for a, x in cases(rng, min_ndim=1):
        perm = tuple(int(v) for v in rng.permutation(a.ndim))
        assert_eq(strata.permute_dims(x, perm), np.transpose(a, perm))
        ax = int(rng.integers(-a.ndim - 1, a.ndim + 1))
        assert_eq(strata.expand_dims(x, axis=ax), np.expand_dims(a, ax))
        assert_eq(strata.flip(x), np.flip(a))
        fa = int(rng.integers(0, a.ndim))
        assert_eq(strata.flip(x, axis=fa), np.flip(a, fa))
        assert_eq(strata.reshape(x, (-1,)), a.reshape(-1))
        assert_eq(strata.reshape(x, a.shape[::-1]), a.reshape(a.shape[::-1]))
        assert_eq(strata.broadcast_to(x, (2,) + a.shape), np.broadcast_to(a, (2,) + a.shape))
        ones = tuple(i for i, d in enumerate(a.shape) if d == 1)
        if ones:
            assert_eq(strata.squeeze(x, axis=ones), np.squeeze(a, ones))
        c = random_chunks(rng, a.shape)
        y = x.rechunk(c)
        assert y.chunksize == tuple(min(ci, max(d, 1)) for ci, d in zip(c, a.shape))
        assert_eq(y, a)
        if a.ndim == 2:
            assert_eq(x.T, a.T)
            assert_eq(x.mT, a.T)


def test_rechunk_dict_keeps_other_axes_as_dask_does():
    a = np.arange(24 * 30 * 6, dtype=np.float64).reshape(24, 30, 6)
    x = strata.asarray(a, chunks=(5, 7, 6))
    y = x.rechunk({1: 10})
    assert y.chunksize == (5, 10, 6)
    assert_eq(y, a)
    assert x.rechunk({-1: 2, 0: None}).chunksize == (5, 7, 2)
    assert x.rechunk({0: -1}).chunksize == (24, 7, 6)
    with pytest.raises(ValueError, match="rechunk: axis 3 is out of range"):
        x.rechunk({3: 4})


def test_concat_stack(rng):
    for a, x in cases(rng, min_ndim=1):
        b = rng.random(a.shape)
        y = strata.asarray(b, chunks=random_chunks(rng, a.shape))
        axis = int(rng.integers(-a.ndim, a.ndim))
        assert_eq(strata.concat([x, y], axis=axis), np.concatenate([a, b], axis=axis))
        assert_eq(strata.concat((x, y), axis=None), np.concatenate([a, b], axis=None))
        sa = int(rng.integers(-a.ndim - 1, a.ndim + 1))
        assert_eq(strata.stack([x, y, x], axis=sa), np.stack([a, b, a], axis=sa))


def test_linalg(rng):
    for _ in range(CASES):
        n, k, m = (int(v) for v in rng.integers(1, 12, 3))
        a, b = rng.random((n, k)), rng.random((k, m))
        x = strata.asarray(a, chunks=random_chunks(rng, a.shape))
        y = strata.asarray(b, chunks=random_chunks(rng, b.shape))
        assert_eq(strata.matmul(x, y), a @ b, rtol=1e-10)
        assert_eq(x @ y, a @ b, rtol=1e-10)
        assert_eq(strata.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1), rtol=1e-10)
        assert_eq(strata.tensordot(x, y, axes=([1], [0])), np.tensordot(a, b, axes=([1], [0])),
                  rtol=1e-10)
        # Batched and vector cases.
        c = rng.random((3, n, k))
        z = strata.asarray(c, chunks=random_chunks(rng, c.shape))
        assert_eq(z @ y, c @ b, rtol=1e-10)
        v = rng.random(k)
        assert_eq(x @ strata.asarray(v), a @ v, rtol=1e-10)


def random_key(rng, shape):
    key = []
    for d in shape:
        r = rng.random()
        if r < 0.25 and d > 0:
            key.append(int(rng.integers(-d, d)))
        elif r < 0.85:
            start = int(rng.integers(-d - 2, d + 3)) if rng.random() < 0.7 else None
            stop = int(rng.integers(-d - 2, d + 3)) if rng.random() < 0.7 else None
            step = int(rng.choice([1, 1, 2, 3, -1, -2])) if rng.random() < 0.6 else None
            key.append(slice(start, stop, step))
        else:
            key.append(slice(None))
    cut = int(rng.integers(0, len(key) + 1))
    key = key[:cut]
    if rng.random() < 0.3:
        key.insert(int(rng.integers(0, len(key) + 1)), None)
    if rng.random() < 0.3:
        # The items after an Ellipsis index the trailing axes: it may go
        # anywhere in a key of every axis, and only last in a shorter one.
        indexed = sum(1 for k in key if k is not None)
        at = int(rng.integers(0, len(key) + 1)) if indexed == len(shape) else len(key)
        key.insert(at, Ellipsis)
    return tuple(key)


def test_getitem(rng):
    for a, x in cases(rng):
        for _ in range(4):
            key = random_key(rng, a.shape)
            assert_eq(x[key], a[key])
    a = np.arange(24.0).reshape(4, 6)
    x = strata.asarray(a, chunks=(3, 4))
    assert_eq(x[1], a[1])
    assert_eq(x[..., 2], a[..., 2])
    assert_eq(x[None, :, None], a[None, :, None])
    assert_eq(x[()], a[()])
    assert_eq(x[[3, 0, 1]], a[[3, 0, 1]])
    assert_eq(x[1:, np.array([5, 0])], a[1:, np.array([5, 0])])
    assert_eq(x[2, [1, 1, 4]], a[2, [1, 1, 4]])
    assert_eq(strata.take(x, [2, 0], axis=1), np.take(a, [2, 0], axis=1))


def test_creation(rng):
    assert_eq(strata.zeros((3, 4), chunks=2), np.zeros((3, 4)))
    assert_eq(strata.ones(5, dtype="int16"), np.ones(5, np.int16))
    assert_eq(strata.empty((2, 2)).compute().shape, (2, 2)) if False else None
    assert strata.empty((2, 2)).shape == (2, 2)
    assert_eq(strata.full((2, 3), 7), np.full((2, 3), 7))
    assert_eq(strata.full((2, 3), 1.5, dtype="float32"), np.full((2, 3), 1.5, np.float32))
    assert_eq(strata.full((2,), True), np.full((2,), True))
    assert_eq(strata.arange(10, chunks=3), np.arange(10))
    assert_eq(strata.arange(2, 11, 3), np.arange(2, 11, 3))
    assert_eq(strata.arange(0.5, 3.0, 0.5), np.arange(0.5, 3.0, 0.5))
    assert_eq(strata.arange(5, dtype="float32"), np.arange(5, dtype=np.float32))
    assert_eq(strata.linspace(0, 1, num=7, chunks=2), np.linspace(0, 1, 7))
    assert_eq(strata.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False))
    assert_eq(strata.eye(4, chunks=3), np.eye(4))
    assert_eq(strata.eye(3, 5, k=1), np.eye(3, 5, k=1))
    assert_eq(strata.eye(3, 0), np.eye(3, 0))
    assert_eq(strata.asarray([[1, 2], [3, 4]]), np.asarray([[1, 2], [3, 4]]))
    assert_eq(strata.asarray(3.5), np.asarray(3.5))
    assert_eq(strata.asarray([True, False]), np.asarray([True, False]))
    assert_eq(strata.asarray([1, 2], dtype="float32"), np.asarray([1, 2], np.float32))
    # random: chunk-independent, the same seed gives the same values.
    r1 = strata.random.random((20, 30), chunks=(7, 11), seed=5).compute()
    r2 = strata.random.random((20, 30), chunks=(20, 3), seed=5).compute()
    np.testing.assert_array_equal(r1, r2)
    assert 0 <= r1.min() and r1.max() < 1
    i = strata.random.integers(3, 9, (50,), seed=1).compute()
    assert i.dtype == np.int64 and i.min() >= 3 and i.max() < 9


def test_where_clip_astype(rng):
    for a, x in cases(rng):
        c = a > 0
        assert_eq(strata.where(x > 0, x, -x), np.where(c, a, -a))
        assert_eq(strata.where(x > 0, x, 0.0), np.where(c, a, 0.0))
        assert_eq(strata.where(x > 0, 1.0, 0.0), np.where(c, 1.0, 0.0))
        assert_eq(strata.clip(x, -1, 1), np.clip(a, -1, 1))
        assert_eq(strata.clip(x, max=0.5), np.clip(a, None, 0.5))
        assert_eq(strata.astype(x, "int32"), a.astype(np.int32))
        assert_eq(x.astype(strata.float32), a.astype(np.float32))


def test_complex():
    a = np.array([1 + 2j, 3 - 4j, -1j], np.complex128)
    x = strata.asarray(a, chunks=2)
    assert_eq(x.real, a.real)
    assert_eq(x.imag, a.imag)
    assert_eq(strata.conj(x), np.conj(a))
    assert_eq(x * (1 + 1j), a * (1 + 1j))
    assert_eq(abs(x), abs(a))


def test_groupby_reduce():
    a = np.arange(24.0).reshape(4, 6)
    labels = np.array([0, 1, 0, 2, 1, 0])
    x = strata.asarray(a, chunks=(2, 4))
    got = strata.groupby_reduce(x, labels, axis=1, func="sum")
    want = np.stack([a[:, labels == g].sum(axis=1) for g in range(3)], axis=1)
    assert_eq(got, want)


def test_chunks_normalisation():
    x = strata.zeros((10, 20), chunks=(3, -1))
    assert x.chunks == ((3, 3, 3, 1), (20,))
    assert strata.zeros((10, 20), chunks=4).chunksize == (4, 4)
    assert strata.zeros((10, 20), chunks=((5, 5), (15, 5))).chunks == ((5, 5), (15, 5))
    assert strata.zeros((10, 20), chunks={1: 5}).chunks[1] == (5, 5, 5, 5)
    assert strata.zeros((10, 20), chunks=(None, 7)).chunks == ((10,), (7, 7, 6))
    assert strata.zeros((10, 20), chunks=(2, "auto")).chunksize == (2, 20)
    # A byte size: blocks of at most that many bytes, trailing axes whole.
    y = strata.zeros((1000, 1000), chunks="800kB")
    assert y.chunksize == (100, 1000)
    # Rectilinear chunks survive a compute.
    z = strata.asarray(np.arange(10.0), chunks=((1, 4, 5),))
    assert z.chunks == ((1, 4, 5),)
    assert_eq(z * 2, np.arange(10.0) * 2)
    assert x.numblocks == (4, 1) and x.npartitions == 4
    with pytest.raises(ValueError, match="sum to 9"):
        strata.zeros((10,), chunks=((4, 5),))
    with pytest.raises(ValueError, match="rank"):
        strata.zeros((10, 2), chunks=(5,))
    with pytest.raises(TypeError):
        strata.zeros((10,), chunks=1.5)


def test_like_broadcast_meshgrid_vecdot(rng):
    for a, x in cases(rng):
        for fn, ref in ((strata.zeros_like, np.zeros_like), (strata.ones_like, np.ones_like)):
            y = fn(x)
            assert y.chunks == x.chunks
            assert_eq(y, ref(a))
        assert_eq(strata.full_like(x, 7, dtype=strata.int16), np.full_like(a, 7, dtype=np.int16))
        assert strata.empty_like(x, dtype=strata.float32).dtype == np.float32
        b = rng.uniform(-1, 1, a.shape[-1:]) if a.ndim else rng.uniform(-1, 1, ())
        got = strata.broadcast_arrays(x, strata.asarray(b))
        for g, e in zip(got, np.broadcast_arrays(a, b)):
            assert_eq(g, e)
        if a.ndim:
            assert_eq(strata.vecdot(x, strata.asarray(b)), np.sum(a * b, axis=-1))
    u, v, w = (rng.uniform(-1, 1, n) for n in (3, 4, 2))
    for indexing in ("xy", "ij"):
        got = strata.meshgrid(*(strata.asarray(t, chunks=2) for t in (u, v, w)), indexing=indexing)
        for g, e in zip(got, np.meshgrid(u, v, w, indexing=indexing)):
            assert_eq(g, e)
    c = rng.uniform(-1, 1, (3, 4)) + 1j * rng.uniform(-1, 1, (3, 4))
    d = rng.uniform(-1, 1, (3, 4)) + 1j * rng.uniform(-1, 1, (3, 4))
    assert_eq(strata.vecdot(strata.asarray(c, chunks=2), strata.asarray(d), axis=0),
              np.sum(np.conj(c) * d, axis=0))
    i8 = strata.asarray(np.arange(6, dtype=np.int8).reshape(2, 3))
    assert strata.vecdot(i8, i8).dtype == np.int8
    with pytest.raises(ValueError, match="cannot be broadcast"):
        strata.broadcast_arrays(strata.ones(3), strata.ones(4))
    with pytest.raises(ValueError, match="1-D"):
        strata.meshgrid(strata.ones((2, 2)))
    with pytest.raises(ValueError, match="out of range"):
        strata.vecdot(strata.ones(3), strata.ones(3), axis=1)
    with pytest.raises(TypeError, match="strata.Array"):
        strata.zeros_like(np.ones(3))


# ------------------------------------------- numpy 2 and the Array API 2024.12

def test_python_scalars_are_weak_and_must_fit_nep50():
    """NEP 50: a Python int takes an integer array's dtype and must fit it
    (numpy 2's OverflowError otherwise); comparisons with any int are exact,
    as numpy 2's are; floats and complex take the array's precision."""
    a = np.array([0, 7, 200, 255], np.uint8)
    x = strata.asarray(a, chunks=2)
    assert (x + 1).dtype == np.uint8 and strata.add(x, 1).dtype == np.uint8
    for f in (lambda v: v + 300, lambda v: 300 - v, lambda v: v * -1, lambda v: v << 256,
              lambda v: strata.maximum(v, 256), lambda v: strata.add(-1, v)):
        with pytest.raises(OverflowError, match="Python integer -?[0-9]+ out of bounds for uint8"):
            f(a)
        with pytest.raises(OverflowError, match="Python integer -?[0-9]+ out of bounds for uint8"):
            f(x)
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        x += 256
    for v in (-2**70, -1, 0, 7, 255, 256, 2**70):
        for op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            assert_eq(getattr(strata, op)(x, v), getattr(np, op)(a, v))
            assert_eq(getattr(strata, op)(v, x), getattr(np, op)(v, a))
    # Beyond int64: a uint64 array still takes the int; a float array a float.
    u = np.array([1, 2], np.uint64)
    assert_eq(strata.asarray(u) + 2**63, u + 2**63)
    assert_eq(strata.asarray(np.ones(2)) * 2**70, np.ones(2) * 2**70)
    with pytest.raises(OverflowError, match=f"Python integer {2**70} out of bounds for int64"):
        strata.asarray(np.ones(2, bool)) + 2**70
    assert (strata.asarray(np.ones(2, np.float32)) + 1e300).dtype == np.float32
    assert (strata.asarray(np.ones(2, np.float32)) * 1j).dtype == np.complex64
    assert (strata.asarray(np.ones(2, bool)) + 1).dtype == np.int64
    # clip's int bounds outside the dtype clip at its range, as numpy 2's.
    assert_eq(strata.clip(x, -5, 300), np.clip(a, -5, 300))
    assert_eq(strata.clip(x, 9, 1000), np.clip(a, 9, 1000))


def test_numpy_functions_follow_nep50_promotion():
    """numpy functions on an Array (NEP 13/18) promote as numpy 2 does: numpy
    scalars and 0-d arrays count by their dtype, Python scalars are weak."""
    a = np.array([1, 2, 3], np.uint8)
    f = np.array([1.5, 2.5], np.float32)
    x, y = strata.asarray(a), strata.asarray(f)
    for got, want in ((np.add(x, 1), np.add(a, 1)),
                      (np.add(x, np.int64(1)), np.add(a, np.int64(1))),
                      (np.multiply(x, np.array(2, np.int16)),
                       np.multiply(a, np.array(2, np.int16))),
                      (np.add(y, np.array(1.0)), np.add(f, np.array(1.0))),
                      (np.float64(2) * y, np.float64(2) * f),
                      (np.add(y, 1.0), np.add(f, 1.0)),
                      (np.equal(x, 300), np.equal(a, 300)),
                      (np.where(x > 1, x, np.int16(7)), np.where(a > 1, a, np.int16(7)))):
        assert isinstance(got, strata.Array)
        assert got.dtype == want.dtype
        assert_eq(got, want)
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        np.add(x, 300)
    zero_d = strata.asarray(np.array(1.0))
    assert np.result_type(zero_d, np.float32) == np.result_type(np.array(1.0), np.float32)


def test_array_conversion_takes_numpy_2_copy_keyword():
    """__array__(dtype=None, copy=None): numpy 2 passes copy= (and warns,
    DeprecationWarning, when __array__ cannot take it)."""
    x = strata.asarray(np.arange(6.0), chunks=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = np.asarray(x, copy=True)
        np.testing.assert_array_equal(c, np.arange(6.0))
        assert not np.shares_memory(c, np.asarray(x))
        f = np.array(x, dtype=np.float32)
        assert f.dtype == np.float32 and f.tolist() == list(range(6))
    with pytest.raises(ValueError, match="lazy and has no memory to share.*copy=False"):
        np.asarray(x, copy=False)


def test_array_api_2024_12_namespace():
    x = strata.asarray(np.arange(4))
    assert strata.__array_api_version__ == "2024.12"
    for version in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        assert x.__array_namespace__(api_version=version) is strata
    with pytest.raises(ValueError, match="Array API 2021.12, 2022.12, 2023.12, 2024.12, not "
                       "'2025.12'"):
        x.__array_namespace__(api_version="2025.12")
    info = strata.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True,
                                   "max dimensions": None}
    assert info.default_device() == "cpu" and info.devices() == ["cpu"]
    assert info.default_dtypes(device="cpu") == {
        "real floating": strata.float64, "complex floating": strata.complex128,
        "integral": strata.int64, "indexing": strata.int64}
    assert list(info.dtypes(kind="unsigned integer")) == ["uint8", "uint16", "uint32", "uint64"]
    assert list(info.dtypes(kind=("bool", "complex floating"))) == ["bool", "complex64",
                                                                    "complex128"]
    assert len(info.dtypes()) == 13
    for call in (lambda: info.dtypes(device="gpu"), lambda: info.default_dtypes(device="gpu")):
        with pytest.raises(ValueError, match="'cpu' device, not 'gpu'"):
            call()
    # 2024.12's scalar arguments: one of two operands may be a Python scalar.
    assert_eq(strata.add(1, x), 1 + np.arange(4))
    assert_eq(strata.where(x > 1, x, 0), np.where(np.arange(4) > 1, np.arange(4), 0))
    assert strata.result_type(x, 1, 2.0) == np.float64
    assert strata.result_type(strata.float32, 1j) == np.complex64


def test_dlpack_numpy_2():
    """__dlpack__ with the 2023.12 keywords numpy 2 passes, bool included;
    from_dlpack with device= and copy=."""
    b = np.array([True, False, True])
    x = strata.asarray(b, chunks=2)
    assert_eq(np.from_dlpack(x), b)
    assert x.__dlpack_device__() == (1, 0)
    capsule = x.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(capsule)
    assert np.from_dlpack(x, device="cpu", copy=True).tolist() == b.tolist()
    with pytest.raises(BufferError, match="copy=False cannot be honoured"):
        x.__dlpack__(copy=False)
    with pytest.raises(BufferError, match=r"CPU \(1, 0\), not device \(2, 0\)"):
        x.__dlpack__(dl_device=(2, 0))
    a = np.arange(12.0).reshape(3, 4)
    shared = strata.from_dlpack(a, copy=False)
    copied = strata.from_dlpack(a, copy=True)
    a[0, 0] = -1.0
    assert shared.compute()[0, 0] == -1.0 and copied.compute()[0, 0] == 0.0
    with pytest.raises(ValueError, match="'cpu' device, not 'gpu'"):
        strata.from_dlpack(a, device="gpu")


FFT_CASES = [("fft", "c", {}), ("ifft", "c", {"n": 7, "axis": 0}), ("fftn", "c", {}),
             ("ifftn", "c", {"s": (3, 4), "axes": (0, 1)}),
             ("fftn", "c", {"axes": (1, 0), "norm": "ortho"}),
             ("hfft", "c", {}), ("irfft", "c", {"n": 5}), ("irfftn", "c", {"norm": "forward"}),
             ("rfft", "f", {}), ("rfftn", "f", {"s": (4, 3), "axes": (1, 0)}),
             ("ihfft", "f", {"n": 4}), ("rfft", "f", {"n": 9, "axis": 0})]


@pytest.mark.parametrize("name,kind,kwargs", FFT_CASES)
@pytest.mark.parametrize("precision", ["single", "double"])
def test_fft_extension_against_numpy(name, kind, kwargs, precision, rng):
    """strata.fft (the 2024.12 extension): numpy 2's values and dtypes
    (single precision stays single), on arrays chunked along the axes."""
    a = rng.standard_normal((6, 5))
    if kind == "c":
        a = a + 1j * rng.standard_normal((6, 5))
    a = a.astype({("c", "single"): np.complex64, ("c", "double"): np.complex128,
                  ("f", "single"): np.float32, ("f", "double"): np.float64}[kind, precision])
    x = strata.asarray(a, chunks=(2, 2))
    got, want = getattr(strata.fft, name)(x, **kwargs), getattr(np.fft, name)(a, **kwargs)
    assert isinstance(got, strata.Array) and got.dtype == want.dtype
    assert_eq(got, want, rtol=1e-4 if precision == "single" else 1e-10,
              atol=1e-4 if precision == "single" else 1e-10)


def test_fft_helpers_and_errors(rng):
    a = rng.standard_normal((6, 5))
    x = strata.asarray(a, chunks=(4, 2))
    assert_eq(strata.fft.fftshift(x), np.fft.fftshift(a))
    assert_eq(strata.fft.ifftshift(x, axes=0), np.fft.ifftshift(a, axes=0))
    assert_eq(strata.fft.fftfreq(7, d=0.5), np.fft.fftfreq(7, d=0.5))
    assert strata.fft.rfftfreq(8, dtype=strata.float32).dtype == np.float32
    assert_eq(strata.fft.rfftfreq(8), np.fft.rfftfreq(8))
    with pytest.raises(TypeError, match="fft.fft: expected a complex array, got float64"):
        strata.fft.fft(x)
    with pytest.raises(TypeError, match="fft.rfft: expected a real floating-point array"):
        strata.fft.rfft(x.astype(strata.complex128))
    with pytest.raises(ValueError, match="fft.rfft: norm must be one of backward, ortho, "
                       "forward, got 'both'"):
        strata.fft.rfft(x, norm="both")
    with pytest.raises(ValueError, match=r"fft.rfft: invalid number of data points \(0\)"):
        strata.fft.rfft(x, n=0)
    with pytest.raises(ValueError, match="'cpu' device, not 'gpu'"):
        strata.fft.fftfreq(4, device="gpu")


def test_eye_clip_astype_2024_12_edges():
    # eye: a diagonal past the matrix (any int) is all zeros.
    for k in (2**63, -2**70, 5, -3):
        assert_eq(strata.eye(3, 4, k=k), np.eye(3, 4, k=max(min(k, 4), -3)))
    # clip: one array bound, the other absent.
    a = np.array([0, 3, 7, 250], np.uint8)
    x = strata.asarray(a, chunks=2)
    hi = np.array([5, 5, 5, 5], np.uint8)
    assert_eq(strata.clip(x, max=strata.asarray(hi)), np.clip(a, None, hi))
    f = np.array([1.0, np.nan, -5.0])
    assert_eq(strata.clip(strata.asarray(f), min=strata.asarray(np.array(0.0))),
              np.clip(f, np.array(0.0), None))
    # astype: copy=True is always a new Array object, copy=False may be x.
    assert strata.astype(x, strata.uint8) is not x
    assert strata.astype(x, strata.uint8, copy=False) is x
    assert strata.astype(x, strata.int16, device="cpu").dtype == np.int16
    with pytest.raises(ValueError, match="astype: strata arrays live on the 'cpu' device"):
        strata.astype(x, strata.int16, device="gpu")


def test_numpy_2_array_api_names_on_arrays(rng):
    """numpy 2's functions under the Array API's names (and its vecdot
    gufunc) build lazy Arrays, as the older numpy names do."""
    a = rng.standard_normal((3, 4))
    x = strata.asarray(a, chunks=2)
    for f, kw in ((np.matrix_transpose, {}), (np.cumulative_sum, {"axis": 1}),
                  (np.cumulative_prod, {"axis": 0, "include_initial": True}),
                  (np.vecdot, {}), (np.vecdot, {"axis": 0})):
        got = f(x, x, **kw) if f is np.vecdot else f(x, **kw)
        assert isinstance(got, strata.Array), f
        assert_eq(got, f(a, a, **kw) if f is np.vecdot else f(a, **kw), rtol=1e-12)
    for got, want in zip(np.unstack(x, axis=1), np.unstack(a, axis=1)):
        assert_eq(got, want)
    b = np.array([3, 1, 3, 2, 1, 3])
    y = strata.asarray(b, chunks=4)
    # numpy 2.3 on leaves unique_values unsorted (the standard allows any
    # order); strata's are sorted, as unique_counts' are in both.
    assert_eq(np.unique_values(y), np.sort(np.unique_values(b)))
    got, want = np.unique_counts(y), np.unique_counts(b)
    assert_eq(got.values, want.values)
    assert_eq(got.counts, want.counts)
    with pytest.raises(TypeError, match="out= is not supported"):
        np.cumulative_sum(x, axis=0, out=np.empty((3, 4)))


def test_expand_dims_axis_range_and_error():
    """axis in [-ndim - 1, ndim]; outside, numpy's AxisError (the IndexError
    the standard asks for, numpy's ValueError)."""
    for shape in ((), (3,), (2, 3)):
        a = np.arange(int(np.prod(shape))).reshape(shape)
        x = strata.asarray(a)
        for axis in range(-a.ndim - 1, a.ndim + 1):
            assert_eq(strata.expand_dims(x, axis=axis), np.expand_dims(a, axis))
        for axis in (-a.ndim - 2, a.ndim + 1):
            with pytest.raises(IndexError, match=f"expand_dims: axis {axis} is out of range"):
                strata.expand_dims(x, axis=axis)
            with pytest.raises(ValueError, match="out of range for an array of rank"):
                strata.expand_dims(x, axis=axis)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "min", "max", "var", "std"])
def test_reduction_over_no_axes_keeps_the_shape(name):
    """axis=() reduces nothing: x's shape and values, keepdims or not (the
    Array API suite's test_mean drew keepdims=True)."""
    a = np.arange(6.0).reshape(2, 3)
    x = strata.asarray(a, chunks=2)
    for keepdims in (False, True):
        assert_eq(getattr(strata, name)(x, axis=(), keepdims=keepdims),
                  getattr(np, name)(a, axis=(), keepdims=keepdims))


def test_quantile_dtype_follows_nep50(rng):
    """numpy 2: a scalar q is a weak Python float, so float32 data keeps its
    dtype; q as a list or array is float64 and promotes the result."""
    a = rng.standard_normal((5, 8)).astype(np.float32)
    x = strata.asarray(a, chunks=(5, 3))
    for q in (0.3, [0.25, 0.75], np.array([0.5])):
        for method in ("linear", "hazen", "lower"):
            got = strata.quantile(x, q, axis=1, method=method)
            want = np.quantile(a, q, axis=1, method=method)
            assert got.dtype == want.dtype, (q, method)
            assert_eq(got, want, rtol=1e-6)
    assert strata.median(x, axis=0).dtype == np.float32
    assert strata.quantile(strata.asarray(np.arange(6)), 0.5).dtype == np.float64
