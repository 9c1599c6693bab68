"""Python functions over blocks: map_overlap and apply_gufunc (and
map_blocks, which shares their mechanism) against numpy and dask.array on
random shapes, chunkings (ragged last chunks, one-chunk and empty axes),
depths, boundaries and dtypes, on the threads and inline executors (the dask
executor: test_dask.py); the memory contract (measured <= projected <=
allowed_mem) for each; errors (wrong shape or dtype, an exception in the
function, bad arguments, executors that fork); and the numpy functions
xarray calls that these serve (numpy.gradient, numpy.apply_along_axis), with
numpy.vectorize refused rather than computing."""
import threading

import dask
import dask.array as da
import numpy as np
import pytest

import strata
from conftest import assert_eq

# numpy's pad mode for each of Dask's boundaries.
NUMPY_MODE = {"reflect": "symmetric", "nearest": "edge"}
DTYPES = ["float64", "float32", "int32", "int16", "uint8", "bool"]


@pytest.fixture(params=["threads", "inline"])
def spec(request, tmp_path):
    return strata.Spec(work_dir=tmp_path / "work", allowed_mem="100MB", reserved_mem="1MB",
                       workers=2, executor=request.param)


def random_data(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def ragged_chunks(rng, shape):
    """Chunk sizes per axis that rarely divide the axis (a ragged last
    chunk), sometimes the whole axis (one chunk)."""
    out = []
    for n in shape:
        if n == 0:
            out.append(1)
        elif rng.random() < 0.25:
            out.append(n)
        else:
            out.append(int(rng.integers(1, n + 1)))
    return tuple(out)


def stencil(radii):
    """A function whose result on a block is exact wherever the block has
    `radii` elements of halo (a difference of the neighbours at distance r
    along each axis, the edge repeated past the block): exact on the
    trimmed block, whatever the chunking, for Dask and for Strata alike."""
    def f(b):
        out = b.copy()
        for ax, r in enumerate(radii):
            n = b.shape[ax]
            if r == 0 or n == 0:
                continue
            width = [(0, 0)] * b.ndim
            width[ax] = (r, r)
            p = np.pad(b, width, mode="edge")
            before = np.take(p, np.arange(0, n), axis=ax)
            after = np.take(p, np.arange(2 * r, 2 * r + n), axis=ax)
            if b.dtype == bool:
                out = out ^ before | after
            else:
                out = out + before - after * 2
        return out
    return f


def numpy_overlap(a, f, before, after, boundary, constant):
    """The oracle: the whole array padded as the boundary says, f over it,
    the padding cut off again."""
    width = [(b if m != "none" else 0, e if m != "none" else 0)
             for b, e, m in zip(before, after, boundary)]
    p = a
    for ax, (w, m) in enumerate(zip(width, boundary)):
        if m == "none" or w == (0, 0):
            continue
        axis_width = [(0, 0)] * a.ndim
        axis_width[ax] = w
        if m == "constant":
            p = np.pad(p, axis_width, mode="constant", constant_values=constant)
        elif m == "periodic":
            # Around and around (numpy's wrap differs once a width passes n).
            n = a.shape[ax]
            p = np.take(p, np.arange(-w[0], n + w[1]) % n, axis=ax)
        else:
            p = np.pad(p, axis_width, mode=NUMPY_MODE[m])
    out = f(p)
    return out[tuple(slice(w[0], w[0] + n) for w, n in zip(width, a.shape))]


# ============================================================== map_overlap

def random_case(rng, dtype):
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 10)) for _ in range(ndim))
    chunks = ragged_chunks(rng, shape)
    radii = [int(rng.integers(0, 3)) for _ in shape]
    # Depth at least the stencil's radius, sometimes deeper than a chunk.
    depth = [r + int(rng.integers(0, 3)) for r in radii]
    modes = ["none", "reflect", "periodic", "nearest", "constant"]
    boundary = [modes[int(rng.integers(0, len(modes)))] for _ in shape]
    return shape, chunks, radii, depth, boundary


def test_map_overlap_against_numpy_and_dask(rng, spec):
    for case in range(24):
        dtype = DTYPES[case % len(DTYPES)]
        shape, chunks, radii, depth, boundary = random_case(rng, dtype)
        constant = {"bool": True, "float64": np.nan}.get(dtype, 3)
        a = random_data(rng, shape, dtype)
        f = stencil(radii)
        # Dask's forms of depth and boundary: a tuple, a dict, one value.
        form = case % 3
        if form == 0:
            d_arg = d_dask = tuple(depth)
            b_arg = tuple(constant if m == "constant" else m for m in boundary)
        elif form == 1:
            # Negative axes too (Dask takes only non-negative ones).
            d_arg = {ax - len(shape) if ax % 2 else ax: d for ax, d in enumerate(depth) if d}
            d_dask = {ax: d for ax, d in enumerate(depth) if d}
            b_arg = {ax: (constant if m == "constant" else m) for ax, m in enumerate(boundary)}
        else:
            d_arg = d_dask = max(depth)
            depth = [d_arg] * len(shape)
            boundary = [boundary[0]] * len(shape)
            b_arg = constant if boundary[0] == "constant" else boundary[0]
        what = f"case {case}: {dtype} {shape} chunks {chunks} depth {d_arg} boundary {b_arg}"
        x = strata.asarray(a, chunks=chunks, spec=spec)
        got = strata.map_overlap(f, x, depth=d_arg, boundary=b_arg, dtype=dtype)
        assert got.chunks == x.chunks, what
        expected = numpy_overlap(a, f, depth, depth, boundary, constant)
        np.testing.assert_array_equal(got.compute(), expected, err_msg=what)
        assert got.dtype == np.dtype(dtype)
        # Dask's map_overlap on the same chunks agrees (it refuses a halo
        # deeper than the axis, which Strata wraps or mirrors again).
        if all(d <= n for d, n in zip(depth, shape)):
            with dask.config.set(scheduler="sync"):
                theirs = da.map_overlap(f, da.from_array(a, chunks=chunks), depth=d_dask,
                                        boundary=b_arg, dtype=dtype).compute()
            np.testing.assert_array_equal(expected, theirs, err_msg=what)


def test_map_overlap_asymmetric_depth_and_trim_false(rng, spec):
    a = rng.standard_normal((11, 7))
    x = strata.asarray(a, chunks=(4, 3), spec=spec)
    # Asymmetric: two after along axis 0 (Dask's (before, after) pairs).
    f = stencil([0, 1])

    def look_ahead(b):
        return b + np.roll(b, -2, axis=0)

    got = strata.map_overlap(look_ahead, x, depth={0: (0, 2), 1: 1}, boundary="none")
    with dask.config.set(scheduler="sync"):
        theirs = da.map_overlap(look_ahead, da.from_array(a, chunks=(4, 3)),
                                depth={0: (0, 2), 1: 1}, boundary="none").compute()
    np.testing.assert_allclose(got.compute(), theirs)
    # trim=False: the function cuts its halo off itself (Dask's meaning).
    depth = (2, 1)

    def trims_itself(b):
        return f(b)[2:-2, 1:-1]

    got = x.map_overlap(trims_itself, depth, boundary="periodic", trim=False)
    expected = numpy_overlap(a, f, depth, depth, ["periodic"] * 2, 0)
    np.testing.assert_allclose(got.compute(), expected)
    with dask.config.set(scheduler="sync"):
        theirs = da.from_array(a, chunks=(4, 3)).map_overlap(
            trims_itself, depth, boundary="periodic", trim=False).compute()
    np.testing.assert_allclose(got.compute(), theirs)


def test_map_overlap_several_arrays_block_id_and_kwargs(rng, spec):
    a, b = rng.standard_normal((9, 8)), rng.standard_normal((9, 8))
    x = strata.asarray(a, chunks=(4, 3), spec=spec)
    y = strata.asarray(b, chunks=(3, 5), spec=spec)   # unified with x's chunks
    seen = []
    lock = threading.Lock()

    def combine(u, v, block_id=None, scale=1.0):
        with lock:
            seen.append(block_id)
        return u * scale + np.roll(v, 1, axis=0)

    got = strata.map_overlap(combine, x, y, depth=1, boundary="periodic", scale=2.0)
    expected = a * 2.0 + np.roll(b, 1, axis=0)
    np.testing.assert_allclose(got.compute(), expected)
    assert sorted(seen) == [(i, j) for i in range(3) for j in range(3)]
    # Depth 0 is map_blocks (as in Dask).
    assert_eq(strata.map_overlap(lambda u: u + 1, x, depth=0), a + 1)
    # align_arrays=False refuses different chunks, as Dask does.
    with pytest.raises(ValueError, match="align_arrays"):
        strata.map_overlap(combine, x, y, depth=1, align_arrays=False)


def test_map_overlap_empty_zero_d_and_one_chunk(rng, spec):
    calls = []

    def counted(b):
        calls.append(b.shape)
        return b * 2

    e = strata.asarray(np.zeros((0, 5)), chunks=(1, 2), spec=spec)
    out = strata.map_overlap(counted, e, depth=2, boundary="nearest")
    assert out.shape == (0, 5)
    assert out.compute().shape == (0, 5)
    assert calls == []
    z = strata.asarray(np.array(3.5), spec=spec)
    assert_eq(strata.map_overlap(counted, z, depth=1, boundary="reflect"), np.array(7.0))
    # One chunk along an axis, a halo deeper than the axis: wrapped around.
    a = rng.standard_normal((3, 4))
    x = strata.asarray(a, chunks=(3, 2), spec=spec)
    calls.clear()
    got = strata.map_overlap(counted, x, depth=(5, 1), boundary="periodic")
    assert_eq(got, a * 2)
    assert sorted(calls) == [(13, 4), (13, 4)]


def test_map_overlap_errors(spec):
    x = strata.asarray(np.arange(24.0).reshape(4, 6), chunks=(2, 3), spec=spec)

    def boom(b, block_id=None):
        if block_id == (1, 0):
            raise ZeroDivisionError("no luck in this block")
        return b

    with pytest.raises(ZeroDivisionError, match="no luck in this block") as info:
        strata.map_overlap(boom, x, depth=1).compute()
    assert any("map_overlap-boom: block 1.0" in n for n in info.value.__notes__), \
        info.value.__notes__

    def too_small(b, block_id=None):
        return b[:1] if block_id == (0, 0) else b

    with pytest.raises(ValueError, match=r"map_overlap-too_small: the function returned a "
                       r"float64 block of shape \(1, 4\) for block 0\.0, expected float64 of "
                       r"shape \(3, 4\) \(the block with its halo"):
        strata.map_overlap(too_small, x, depth=1, boundary="none").compute()
    with pytest.raises(ValueError, match=r"shape \(2, 3\) \(the block without its halo"):
        strata.map_overlap(lambda b: b, x, depth=1, trim=False, name="keeps").compute()
    # A result numpy's same_kind casting does not turn into the dtype.
    ints = strata.asarray(np.arange(24).reshape(4, 6), chunks=(2, 3), spec=spec)
    with pytest.raises(ValueError, match=r"map_overlap-halve: block \d\.\d: the function "
                       r"returned a float64 block \(its result\) where int64 was declared"):
        def halve(b):
            return b / 2
        strata.map_overlap(halve, ints, depth=1).compute()
    assert_eq(strata.map_overlap(lambda b: b / 2, ints, depth=1, dtype="float64"),
              np.arange(24).reshape(4, 6) / 2)
    # float64 into a declared float32 is same_kind: cast.
    assert strata.map_overlap(lambda b: b * 1.0, x, depth=1, dtype="float32").compute().dtype \
        == np.float32
    with pytest.raises(ValueError, match="not an array of float64"):
        strata.map_overlap(lambda b: None, x, depth=1).compute()
    kept = []
    with pytest.raises(ValueError, match="kept a reference to input 0"):
        strata.map_overlap(lambda b: kept.append(b) or b, x, depth=1).compute()
    kept.clear()
    with pytest.raises(ValueError, match="depth -1 along axis 1 is negative"):
        strata.map_overlap(boom, x, depth=(1, -1))
    with pytest.raises(ValueError, match=r"depth \(1, 1, 1\) has 3 entries"):
        strata.map_overlap(boom, x, depth=(1, 1, 1))
    with pytest.raises(TypeError, match="depth must be an int"):
        strata.map_overlap(boom, x, depth=1.5)
    with pytest.raises(ValueError, match="axis 2 of depth is out of range"):
        strata.map_overlap(boom, x, depth={2: 1})
    with pytest.raises(ValueError, match="unknown boundary 'wrap'"):
        strata.map_overlap(boom, x, depth=1, boundary="wrap")
    with pytest.raises(NotImplementedError, match="constant boundaries of different values"):
        strata.map_overlap(boom, x, depth=1, boundary=(0, 1))
    with pytest.raises(NotImplementedError, match="chunks= is not supported"):
        strata.map_overlap(boom, x, depth=1, chunks=(1, 1))
    with pytest.raises(NotImplementedError, match="different depth per array"):
        strata.map_overlap(lambda u, v: u, x, x, depth=[1, 2])
    with pytest.raises(ValueError, match=r"array 1 has shape \(6, 4\)"):
        strata.map_overlap(lambda u, v: u, x, x.T, depth=1)
    with pytest.raises(TypeError, match="not callable"):
        strata.map_overlap(3, x, depth=1)
    with pytest.raises(TypeError, match="must be strata.Array objects"):
        strata.map_overlap(boom, np.ones(3), depth=1)
    with pytest.raises(TypeError, match="extra_mem or extra_projected_mem, not both"):
        strata.map_overlap(boom, x, depth=1, extra_mem=10, extra_projected_mem=10)
    # (The mpi executor refuses it too: api/overlap_test.cc; its Specs resolve
    # only under mpirun.)
    other = strata.Spec(executor="processes", workers=2)
    with pytest.raises(ValueError, match="map_overlap-boom: the function calls a Python "
                       "function, so it cannot run on the processes executor"):
        strata.map_overlap(boom, strata.ones((4, 4), chunks=2, spec=other), depth=1)


# ============================================================== apply_gufunc

def both_gufunc(func, signature, arrays, numpy_arrays, chunks, **kwargs):
    """strata.apply_gufunc and dask.array.apply_gufunc on the same data and
    chunks, as numpy arrays."""
    got = strata.apply_gufunc(func, signature, *arrays, **kwargs)
    got = tuple(g.compute() for g in got) if isinstance(got, tuple) else got.compute()
    with dask.config.set(scheduler="sync"):
        theirs = da.apply_gufunc(func, signature,
                                 *[da.from_array(a, chunks=c)
                                   for a, c in zip(numpy_arrays, chunks)], **kwargs)
        theirs = tuple(t.compute() for t in theirs) if isinstance(theirs, tuple) \
            else theirs.compute()
    return got, theirs


def check_same(got, theirs, what):
    got = got if isinstance(got, tuple) else (got,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(got) == len(theirs), what
    for g, t in zip(got, theirs):
        assert g.shape == t.shape and g.dtype == t.dtype, (what, g.shape, t.shape, g.dtype,
                                                           t.dtype)
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12, err_msg=what)
        else:
            np.testing.assert_array_equal(g, t, err_msg=what)


def test_apply_gufunc_against_dask(rng, spec):
    def mean(x):
        return x.mean(axis=-1)

    def dot(x, y):
        return (x * y).sum(axis=-1)

    def stats(x):
        return x.max(axis=-1), x.argmax(axis=-1).astype(np.int32)

    def outer(x):
        return x[..., :, None] * np.arange(3)

    for case in range(12):
        loop = tuple(int(rng.integers(1, 7)) for _ in range(int(rng.integers(0, 3))))
        n = int(rng.integers(1, 8))
        dtype = ["float64", "float32", "int32"][case % 3]
        a = random_data(rng, loop + (n,), dtype)
        v = random_data(rng, (n,), dtype)
        chunks = ragged_chunks(rng, loop) + (n,)   # core dimension whole (Dask's rule)
        x = strata.asarray(a, chunks=chunks, spec=spec)
        vx = strata.asarray(v, chunks=(n,), spec=spec)
        what = f"case {case}: {dtype} {a.shape} chunks {chunks}"
        check_same(*both_gufunc(mean, "(i)->()", [x], [a], [chunks]), what + " mean")
        check_same(*both_gufunc(dot, "(i),(i)->()", [x, vx], [a, v], [chunks, (n,)]),
                   what + " dot, broadcast")
        check_same(*both_gufunc(stats, "(i)->(),()", [x], [a], [chunks],
                                output_dtypes=(a.dtype, np.int32)), what + " two outputs")
        check_same(*both_gufunc(outer, "(i)->(i,k)", [x], [a], [chunks],
                                output_sizes={"k": 3}), what + " a new dimension")
        if loop:
            # axis=0: the core dimension first; keepdims.
            t = np.moveaxis(a, -1, 0)
            tc = (chunks[-1],) + chunks[:-1]
            xt = strata.asarray(t, chunks=tc, spec=spec)
            check_same(*both_gufunc(mean, "(i)->()", [xt], [t], [tc], axis=0), what + " axis=0")
            check_same(*both_gufunc(mean, "(i)->()", [xt], [t], [tc], axis=0, keepdims=True),
                       what + " keepdims")
            check_same(*both_gufunc(outer, "(i)->(i,k)", [xt], [t], [tc],
                                    axes=[(0,), (0, -1)], output_sizes={"k": 3}),
                       what + " axes")


def test_apply_gufunc_vectorize_inference_rechunk_and_empty(rng, spec):
    t = np.linspace(0.0, 1.0, 9)
    a = rng.standard_normal((5, 4, 9))

    def slope(y, x):  # a scalar function of two vectors: vectorize=True
        return np.polyfit(x, y, 1)[0]

    x = strata.asarray(a, chunks=(2, 3, 4), spec=spec)   # core dimension in 3 chunks
    with pytest.raises(ValueError, match=r"apply_gufunc-slope: core dimension 't' of input 0 "
                       r"is in 3 chunks; rechunk it into one chunk along axis 2 or allow "
                       r"rechunking"):
        strata.apply_gufunc(slope, "(t),(t)->()", x, t, vectorize=True)
    got = strata.apply_gufunc(slope, "(t),(t)->()", x, t, vectorize=True, allow_rechunk=True)
    expected = np.array([[np.polyfit(t, a[i, j], 1)[0] for j in range(4)] for i in range(5)])
    assert got.dtype == np.float64   # inferred, as Dask does
    np.testing.assert_allclose(got.compute(), expected, rtol=1e-10)
    with dask.config.set(scheduler="sync"):
        # Dask's own dtype probe calls slope on one-point vectors, where
        # numpy 2's polyfit raises LinAlgError: its dtype is given.
        theirs = da.apply_gufunc(slope, "(t),(t)->()", da.from_array(a, chunks=(2, 3, 4)), t,
                                 vectorize=True, allow_rechunk=True,
                                 output_dtypes="float64").compute()
    np.testing.assert_allclose(got.compute(), theirs, rtol=1e-10)
    # An empty loop dimension: nothing to call.
    calls = []
    e = strata.asarray(np.zeros((0, 3)), chunks=(1, 3), spec=spec)
    out = strata.apply_gufunc(lambda b: calls.append(1) or b.sum(-1), "(i)->()", e,
                              output_dtypes="float64")
    assert out.shape == (0,) and out.compute().shape == (0,) and not calls
    with pytest.raises(ValueError, match="core dimension 'i' of input 0 has extent 0"):
        strata.apply_gufunc(np.sum, "(i)->()", strata.asarray(np.zeros((3, 0)), spec=spec),
                            output_dtypes="float64")
    # Inputs that are numpy arrays or scalars are converted; 0-d loops.
    assert_eq(strata.apply_gufunc(lambda u, s: u.sum(-1) * s, "(i),()->()",
                                  strata.asarray(np.arange(4.0), spec=spec), 2.0),
              np.array(12.0))


def test_apply_gufunc_errors(spec):
    x = strata.asarray(np.arange(24.0).reshape(4, 6), chunks=(2, 6), spec=spec)

    def bad_shape(b):
        return b   # "(i)->()" wants one value per row

    with pytest.raises(ValueError, match=r"apply_gufunc-bad_shape: the function returned a "
                       r"float64 block of shape \(2, 6\) for block \d, expected float64 of "
                       r"shape \(2,\)"):
        strata.apply_gufunc(bad_shape, "(i)->()", x, output_dtypes="float64").compute()

    def two(b):
        return b.sum(-1), b.sum(-1)

    with pytest.raises(ValueError, match=r"apply_gufunc-two: block \d: the function returned "
                       r"2 arrays, the signature has 3 outputs"):
        strata.apply_gufunc(two, "(i)->(),(),()", x,
                            output_dtypes=("float64",) * 3)[0].compute()
    with pytest.raises(ValueError, match="expected a tuple of 2 arrays"):
        strata.apply_gufunc(lambda b: b.sum(-1), "(i)->(),()", x,
                            output_dtypes=("float64", "float64"))[1].compute()
    with pytest.raises(ValueError, match=r"returned a float64 block \(output 1\) where int32 "
                       r"was declared"):
        strata.apply_gufunc(two, "(i)->(),()", x, output_dtypes=("float64", "int32"))[1].compute()

    def fails(b):
        raise KeyError("missing station")

    with pytest.raises(KeyError, match="missing station") as info:
        strata.apply_gufunc(fails, "(i)->()", x, output_dtypes="float64").compute()
    assert any("apply_gufunc-fails: block" in n for n in info.value.__notes__)
    with pytest.raises(ValueError, match="cannot infer the output dtypes: fails raised KeyError"):
        strata.apply_gufunc(fails, "(i)->()", x)
    with pytest.raises(ValueError, match="malformed signature"):
        strata.apply_gufunc(two, "(i->()", x)
    with pytest.raises(ValueError, match="has 2 inputs, 1 arrays given"):
        strata.apply_gufunc(two, "(i),(i)->()", x)
    with pytest.raises(ValueError, match="output dimension 'k' has no size"):
        strata.apply_gufunc(two, "(i)->(k)", x, output_dtypes="float64")
    with pytest.raises(ValueError, match="give a tuple or list of 2 output_dtypes"):
        strata.apply_gufunc(two, "(i)->(),()", x, output_dtypes="float64")
    with pytest.raises(ValueError, match="axis can be used only with one core dimension"):
        strata.apply_gufunc(two, "(i,j)->()", x, axis=0, output_dtypes="float64")
    with pytest.raises(ValueError, match="keepdims can only be used for scalar outputs"):
        strata.apply_gufunc(two, "(i)->(i)", x, keepdims=True, output_dtypes="float64")
    with pytest.raises(TypeError, match="signature must be a string"):
        strata.apply_gufunc(two, None, x)
    other = strata.Spec(executor="processes", workers=2)
    with pytest.raises(ValueError, match="cannot run on the processes executor"):
        strata.apply_gufunc(two, "(i)->()", strata.ones((4, 4), chunks=(2, 4), spec=other),
                            output_dtypes="float64")


# ============================================================== map_blocks

def test_map_blocks_shares_the_mechanism(spec):
    x = strata.asarray(np.arange(12).reshape(3, 4), chunks=(2, 2), spec=spec)
    with pytest.raises(ValueError, match="same_kind"):
        strata.map_blocks(lambda b: b + 0.5, x).compute()
    assert_eq(strata.map_blocks(lambda b: b + 0.5, x, dtype="float64"),
              np.arange(12).reshape(3, 4) + 0.5)
    def projection(y):
        return max(o["projected_mem"] for o in strata.plan(y).to_dict()["ops"]
                   if o["op"].startswith("map_blocks"))

    assert projection(strata.map_blocks(lambda b: b * 2, x, extra_projected_mem=5_000_000)) \
        == projection(strata.map_blocks(lambda b: b * 2, x)) + 5_000_000


# ========================================================= the memory contract

ALLOWED = 60_000_000


@pytest.fixture
def tight(tmp_path):
    return strata.Spec(work_dir=tmp_path / "work", allowed_mem=ALLOWED, reserved_mem="1MB",
                       workers=2)


def measured(x, *, at_least):
    """Computes x with a history: every task within its projection and the
    projection within allowed_mem; some task of the op held `at_least`
    bytes (the measurement is real). Returns the history's tasks."""
    h = strata.HistoryCallback()
    x.compute(callbacks=[h])
    assert h.ok, h.error
    for t in h.tasks:
        assert 0 < t["measured_peak_mem"] <= t["projected_mem"] <= ALLOWED, t
    assert max(t["measured_peak_mem"] for t in h.tasks) >= at_least
    return h.tasks


def test_memory_contract_map_overlap(tight):
    block = 500 * 500 * 8   # 2 MB chunks
    x = strata.random.random((1500, 1500), chunks=(500, 500), seed=1, spec=tight)
    y = strata.random.random((1500, 1500), chunks=(500, 500), seed=2, spec=tight)

    def smooth(b):
        return b * 0.5 + np.roll(b, 1, axis=0) * 0.5

    tasks = measured(strata.map_overlap(smooth, x, depth=(8, 8), boundary="reflect"),
                     at_least=2 * block)
    overlap = [t for t in tasks if t["op"].startswith("map_overlap")]
    assert len(overlap) == 9
    # The projection counts the halo block, the function's result (both
    # extended) and the output block, beside what the halo is read from.
    extended = 516 * 516 * 8
    for t in overlap:
        assert t["projected_mem"] >= 2 * extended + block, t
    two = strata.map_overlap(lambda u, v: (u - v)[8:-8, 8:-8], x, y, depth=8,
                             boundary="nearest", trim=False)
    measured(two, at_least=2 * block)

    # extra_mem (Cubed: extra_projected_mem) joins the projection.
    def projection(z):
        return max(o["projected_mem"] for o in strata.plan(z).to_dict()["ops"]
                   if o["op"].startswith("map_overlap"))

    plain = strata.map_overlap(smooth, x, depth=(8, 8), boundary="reflect")
    more = strata.map_overlap(smooth, x, depth=(8, 8), boundary="reflect",
                              extra_projected_mem=3_000_000)
    assert projection(more) == projection(plain) + 3_000_000
    # Over allowed_mem: refused before anything runs.
    with pytest.raises(strata.PlanError, match="map_overlap"):
        strata.map_overlap(smooth, x, depth=(8, 8), extra_mem=ALLOWED).compute()


def test_memory_contract_apply_gufunc(tight):
    block = 500 * 2000 * 8
    x = strata.random.random((2000, 2000), chunks=(500, 2000), seed=3, spec=tight)
    one = strata.apply_gufunc(lambda b: b.mean(-1), "(j)->()", x, output_dtypes="float64")
    measured(one, at_least=block)
    pair = strata.apply_gufunc(lambda b: (b.cumsum(-1), b.max(-1)), "(j)->(j),()", x,
                               output_dtypes=("float64", "float64"))
    for out in pair:
        measured(out, at_least=block)
    # A core dimension in several chunks, rechunked into one.
    split = strata.random.random((2000, 2000), chunks=(1000, 500), seed=4, spec=tight)
    measured(strata.apply_gufunc(lambda b: b.sum(-1), "(j)->()", split, allow_rechunk=True,
                                 output_dtypes="float64"), at_least=500 * 2000 * 8)


# ================================================= numpy and xarray's calls

def test_numpy_gradient_is_a_lazy_map_overlap(rng, spec):
    for case in range(10):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(rng.integers(3, 10)) for _ in range(ndim))
        chunks = ragged_chunks(rng, shape)
        dtype = ["float64", "float32", "int32"][case % 3]
        a = random_data(rng, shape, dtype)
        x = strata.asarray(a, chunks=chunks, spec=spec)
        edge = 1 + case % 2
        what = f"{dtype} {shape} chunks {chunks} edge_order {edge}"
        got = np.gradient(x, edge_order=edge)
        expected = np.gradient(a, edge_order=edge)
        if ndim == 1:
            got, expected = [got], [expected]
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert isinstance(g, strata.Array)
            assert_eq(g, e, rtol=1e-6 if dtype == "float32" else 1e-12)
        ax = int(rng.integers(0, ndim))
        coords = np.cumsum(rng.random(shape[ax]) + 0.1)
        assert_eq(np.gradient(x, coords, axis=ax, edge_order=edge),
                  np.gradient(a, coords, axis=ax, edge_order=edge),
                  rtol=1e-5 if dtype == "float32" else 1e-10), what
    with pytest.raises(ValueError, match="too small"):
        np.gradient(strata.asarray(np.ones(2), spec=spec), edge_order=2)
    with pytest.raises(ValueError, match="must match the length"):
        np.gradient(strata.asarray(np.ones(4), spec=spec), np.arange(3.0))


def test_numpy_apply_along_axis_is_an_apply_gufunc(rng, spec):
    a = rng.standard_normal((5, 7, 4))
    x = strata.asarray(a, chunks=(2, 3, 3), spec=spec)
    for axis in (0, 1, -1):
        assert_eq(np.apply_along_axis(np.sort, axis, x), np.apply_along_axis(np.sort, axis, a))
        assert_eq(np.apply_along_axis(np.ptp, axis, x), np.apply_along_axis(np.ptp, axis, a))
        got = np.apply_along_axis(lambda v: np.outer(v[:2], v[:3]), axis, x)
        assert_eq(got, np.apply_along_axis(lambda v: np.outer(v[:2], v[:3]), axis, a))


def test_numpy_vectorize_is_refused_not_computed(spec):
    x = strata.asarray(np.arange(6.0), chunks=3, spec=spec)
    for call in (lambda: np.vectorize(lambda v: v + 1)(x),
                 lambda: np.vectorize(lambda v: v.sum(), signature="(i)->()")(x)):
        with pytest.raises(NotImplementedError, match="numpy.vectorize on a strata.Array"):
            call()
    # Other conversions still compute, as np.asarray(x) is documented to.
    np.testing.assert_array_equal(np.asarray(x), np.arange(6.0))


def test_xarray_paths(rng, spec):
    xr = pytest.importorskip("xarray")
    a = rng.standard_normal((12, 5))
    coords = {"time": np.cumsum(rng.random(12) + 0.5), "x": np.arange(5)}
    plain = xr.DataArray(a, dims=("time", "x"), coords=coords)
    lazy = xr.DataArray(strata.asarray(a, chunks=(5, 2), spec=spec), dims=("time", "x"),
                        coords=coords)
    # differentiate: numpy.gradient, here a map_overlap.
    d = lazy.differentiate("time")
    assert isinstance(d.data, strata.Array)
    np.testing.assert_allclose(d.data.compute(), plain.differentiate("time").values)
    # rolling(...).construct: sliding_window_view, lazy.
    r = lazy.rolling(time=3, center=True).construct("window")
    assert isinstance(r.data, strata.Array)
    np.testing.assert_allclose(r.data.compute(),
                               plain.rolling(time=3, center=True).construct("window").values,
                               equal_nan=True)
    # apply_ufunc with dask="allowed": func gets the strata array itself.
    u = xr.apply_ufunc(np.gradient, lazy, kwargs={"axis": 0}, dask="allowed")
    assert isinstance(u.data, strata.Array)
    np.testing.assert_allclose(u.data.compute(), np.gradient(a, axis=0))
    # vectorize=True with dask="allowed": xarray 2025 on hands func the
    # strata array itself (no numpy.vectorize, whose refusal is tested
    # above), so the result stays lazy.
    seen = []
    v = xr.apply_ufunc(lambda y: seen.append(type(y)) or strata.max(y, axis=-1), lazy,
                       input_core_dims=[["time"]], vectorize=True, dask="allowed")
    assert seen == [strata.Array] and isinstance(v.data, strata.Array)
    np.testing.assert_allclose(v.data.compute(), a.max(axis=0))
    # A numpy function without a strata operation is named, not computed.
    with pytest.raises(NotImplementedError, match="numpy.convolve"):
        xr.apply_ufunc(np.convolve, lazy.isel(x=0), np.ones(3), input_core_dims=[["time"], []],
                       dask="allowed")
