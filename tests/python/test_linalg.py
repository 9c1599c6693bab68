"""strata.linalg against numpy.linalg: random shapes and chunkings (batched
inputs, ragged chunks), tall-and-skinny qr/svd by TSQR over several row
blocks, the memory contract from the history (measured <= projected <=
allowed_mem for every task), the refusal of a matrix over allowed_mem, and
bad arguments with clear errors."""
import math

import numpy as np
import pytest

import strata
import strata.linalg as sl

from conftest import random_chunks


def lazy(a, rng, spec):
    return strata.from_array(a, chunks=random_chunks(rng, a.shape), spec=spec)


def run(*arrays):
    """Computes `arrays` together; every task within its projection and the
    projection within allowed_mem."""
    hist = strata.HistoryCallback()
    out = strata.compute(*arrays, callbacks=[hist])
    assert hist.ok, hist.error
    assert hist.tasks
    for t in hist.tasks:
        assert 0 < t["measured_peak_mem"] <= t["projected_mem"] <= t["allowed_mem"], t
    return out


def spd(rng, batch, n):
    x = rng.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def test_namespace_has_every_2021_12_name(spec):
    names = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
             "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
             "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
             "vector_norm"]
    x = strata.ones((2, 2), spec=spec)
    xp = x.__array_namespace__()
    for name in names:
        assert callable(getattr(xp.linalg, name)), name
    assert issubclass(sl.LinAlgError, ValueError)


@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_square_decompositions(batch, rng, spec):
    n = int(rng.integers(1, 6))
    a = spd(rng, batch, n)
    b = rng.standard_normal(batch + (n, 2))
    x, y = lazy(a, rng, spec), lazy(b, rng, spec)
    w, v = sl.eigh(x)
    sign, logabs = sl.slogdet(x)
    got = run(sl.inv(x), sl.det(x), sl.cholesky(x), sl.cholesky(x, upper=True), w, v,
              sl.eigvalsh(x), sign, logabs, sl.solve(x, y), sl.matrix_rank(x), sl.pinv(x))
    nw, nv = np.linalg.eigh(a)
    ns, nl = np.linalg.slogdet(a)
    want = [np.linalg.inv(a), np.linalg.det(a), np.linalg.cholesky(a),
            np.swapaxes(np.linalg.cholesky(a), -1, -2), nw, None, np.linalg.eigvalsh(a), ns, nl,
            np.linalg.solve(a, b), np.linalg.matrix_rank(a), np.linalg.pinv(a)]
    for i, (g, e) in enumerate(zip(got, want)):
        if e is None:
            continue
        assert g.shape == np.shape(e), i
        np.testing.assert_allclose(g, e, rtol=1e-8, atol=1e-10, err_msg=str(i))
    # Eigenvectors up to sign: a v = v diag(w).
    np.testing.assert_allclose(a @ got[5], got[5] * got[4][..., None, :], atol=1e-9)


def test_solve_with_a_vector_and_broadcast_batches(rng, spec):
    a = spd(rng, (4,), 3)
    b = rng.standard_normal(3)
    got, = run(sl.solve(lazy(a, rng, spec), lazy(b, rng, spec)))
    np.testing.assert_allclose(got, np.linalg.solve(a, b), rtol=1e-10)
    b2 = rng.standard_normal((1, 3, 2))
    got, = run(sl.solve(lazy(a, rng, spec), lazy(b2, rng, spec)))
    np.testing.assert_allclose(got, np.linalg.solve(a, b2), rtol=1e-10)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (3, 6, 2)])
def test_qr_svd_general(shape, rng, spec):
    a = rng.standard_normal(shape)
    x = lazy(a, rng, spec)
    q, r = sl.qr(x)
    qc, rc = sl.qr(x, mode="complete")
    u, s, vh = sl.svd(x, full_matrices=False)
    uf, sf, vhf = sl.svd(x)
    got = run(q, r, qc, rc, u, s, vh, uf, sf, vhf, sl.svdvals(x))
    nq, nr = np.linalg.qr(a)
    assert got[0].shape == nq.shape and got[1].shape == nr.shape
    np.testing.assert_allclose(got[0] @ got[1], a, atol=1e-10)
    np.testing.assert_allclose(np.abs(got[1]), np.abs(nr), atol=1e-10)
    np.testing.assert_allclose(got[2] @ got[3], a, atol=1e-10)
    assert got[2].shape == np.linalg.qr(a, mode="complete")[0].shape
    np.testing.assert_allclose((got[4] * got[5][..., None, :]) @ got[6], a, atol=1e-10)
    np.testing.assert_allclose(got[5], np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    nuf, _, nvhf = np.linalg.svd(a)
    assert got[7].shape == nuf.shape and got[9].shape == nvhf.shape
    np.testing.assert_allclose(got[10], got[5], rtol=1e-12)


def test_tall_skinny_qr_and_svd_by_tsqr(rng, spec):
    # 250 x 8 in ragged row blocks of 40 (7 blocks), one column chunk.
    a = rng.standard_normal((250, 8))
    x = strata.from_array(a, chunks=(40, 8), spec=spec)
    q, r = sl.qr(x)
    assert q.chunks[0] == x.chunks[0]
    assert any("tsqr" in str(op) for op in strata.plan(q).to_dict()["ops"])
    u, s, vh = sl.svd(x, full_matrices=False)
    gq, gr, gu, gs, gvh, gsv = run(q, r, u, s, vh, sl.svdvals(x))
    np.testing.assert_allclose(gq @ gr, a, atol=1e-10)
    np.testing.assert_allclose(gq.T @ gq, np.eye(8), atol=1e-10)
    assert np.allclose(np.tril(gr, -1), 0)
    np.testing.assert_allclose(np.abs(gr), np.abs(np.linalg.qr(a)[1]), atol=1e-10)
    np.testing.assert_allclose(gs, np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose((gu * gs) @ gvh, a, atol=1e-10)
    np.testing.assert_allclose(gsv, gs, rtol=1e-12)
    # Several column chunks are joined first; float32 stays float32.
    x32 = strata.from_array(a.astype(np.float32), chunks=(50, 3), spec=spec)
    q32, r32 = sl.qr(x32)
    assert q32.dtype == strata.float32
    g32, r32v = run(q32, r32)
    np.testing.assert_allclose(g32 @ r32v, a, atol=1e-4)


def test_chunked_ops_against_numpy(rng, spec):
    shape = (3,) + tuple(int(d) for d in rng.integers(1, 8, size=2))
    a = rng.standard_normal(shape)
    x = lazy(a, rng, spec)
    c1, c2 = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    v1, v2 = rng.standard_normal(5), rng.standard_normal(4)
    sq = rng.standard_normal((2, 3, 3))
    checks = [
        (sl.cross(lazy(c1, rng, spec), lazy(c2, rng, spec)), np.cross(c1, c2)),
        (sl.outer(lazy(v1, rng, spec), lazy(v2, rng, spec)), np.outer(v1, v2)),
        (sl.matrix_power(lazy(sq, rng, spec), 3), np.linalg.matrix_power(sq, 3)),
        (sl.matrix_power(lazy(sq, rng, spec), -2), np.linalg.matrix_power(sq, -2)),
        (sl.matrix_power(lazy(sq, rng, spec), 0), np.linalg.matrix_power(sq, 0)),
        (sl.vector_norm(x), np.linalg.norm(a.ravel())),
        (sl.vector_norm(x, axis=(0, 2), keepdims=True, ord=1),
         np.sum(np.abs(a), axis=(0, 2), keepdims=True)),
        (sl.vector_norm(x, axis=-1, ord=math.inf), np.linalg.norm(a, ord=np.inf, axis=-1)),
        (sl.vector_norm(x, axis=1, ord=-math.inf), np.linalg.norm(a, ord=-np.inf, axis=1)),
        (sl.vector_norm(x, axis=1, ord=3.5), np.sum(np.abs(a) ** 3.5, axis=1) ** (1 / 3.5)),
        (sl.vector_norm(x, axis=1, ord=0), np.linalg.norm(a, ord=0, axis=1)),
    ]
    for ord in ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]:
        checks.append((sl.matrix_norm(x, ord=ord), np.linalg.norm(a, ord=ord, axis=(-2, -1))))
    checks.append((sl.matrix_norm(x, ord=1, keepdims=True),
                   np.linalg.norm(a, ord=1, axis=(-2, -1), keepdims=True)))
    for offset in (-shape[1] - 1, -1, 0, 1, 2, shape[2]):
        checks.append((sl.diagonal(x, offset=offset),
                       np.diagonal(a, offset=offset, axis1=-2, axis2=-1)))
        checks.append((sl.trace(x, offset=offset),
                       np.trace(a, offset=offset, axis1=-2, axis2=-1)))
    got = run(*[c[0] for c in checks])
    for i, (g, (_, e)) in enumerate(zip(got, checks)):
        assert g.shape == np.shape(e), (i, g.shape, np.shape(e))
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=str(i))
    # numpy's dtype rules for trace: ints sum in int64, dtype= overrides.
    ints = strata.asarray(np.arange(12, dtype=np.int32).reshape(3, 4), spec=spec)
    assert sl.trace(ints).dtype == strata.int64
    assert sl.trace(ints, dtype=strata.float32).dtype == strata.float32


def test_singular_matrix_raises_linalg_error(spec):
    x = strata.zeros((2, 3, 3), chunks=(1, 3, 3), spec=spec)
    with pytest.raises(sl.LinAlgError, match="linalg.inv: singular matrix"):
        sl.inv(x).compute()
    with pytest.raises(sl.LinAlgError, match="linalg.solve: singular matrix"):
        sl.solve(x, strata.ones((2, 3, 1), spec=spec)).compute()
    with pytest.raises(sl.LinAlgError, match="not positive definite"):
        sl.cholesky(-strata.ones((3, 3), spec=spec) - strata.eye(3, spec=spec)).compute()
    sign, logabs = sl.slogdet(x)
    s, l = strata.compute(sign, logabs)
    assert (s == 0).all() and np.isneginf(l).all()


def test_matrix_over_allowed_mem_is_refused_when_built(tmp_path):
    spec = strata.Spec(work_dir=tmp_path / "w", allowed_mem="20MB", reserved_mem="1MB")
    x = strata.random.random((2000, 2000), chunks=(500, 500), seed=1, spec=spec)
    for f in (sl.inv, sl.det, sl.cholesky, sl.eigvalsh, lambda a: sl.svd(a).S,
              lambda a: sl.qr(a, mode="complete").Q):
        with pytest.raises(ValueError, match=r"a 2000x2000 float64 matrix must be in one chunk.*"
                                             r"allowed_mem"):
            f(x)
    # The chunked ops plan under the same budget.
    strata.plan(sl.matrix_norm(x, ord=1), sl.trace(x), sl.diagonal(x, offset=3))


def test_batches_are_chunked_to_fit_allowed_mem(tmp_path, rng):
    # 64 matrices of 100 x 100 (80 kB each) in one chunk of 5 MB, under a
    # budget that holds a few dozen matrices per task: several tasks, each
    # within its projection.
    spec = strata.Spec(work_dir=tmp_path / "w", allowed_mem="6MB", reserved_mem="1MB")
    a = spd(rng, (64,), 100)
    x = strata.from_array(a, chunks=(64, 100, 100), spec=spec)
    inv = sl.inv(x)
    assert inv.numblocks[0] > 1
    got, = run(inv)
    np.testing.assert_allclose(got, np.linalg.inv(a), rtol=1e-8, atol=1e-12)


def test_bad_arguments(spec):
    v = strata.ones((4,), spec=spec)
    m = strata.ones((3, 4), spec=spec)
    sq = strata.ones((3, 3), spec=spec)
    with pytest.raises(ValueError, match="linalg.inv: expected an array of rank >= 2"):
        sl.inv(v)
    with pytest.raises(ValueError, match="linalg.det: the last two axes must be square"):
        sl.det(m)
    with pytest.raises(ValueError, match="linalg.matrix_norm: ord must be"):
        sl.matrix_norm(sq, ord=3)
    with pytest.raises(ValueError, match="linalg.matrix_norm: ord must be"):
        sl.matrix_norm(sq, ord="spectral")
    with pytest.raises(ValueError, match="linalg.qr: mode must be"):
        sl.qr(sq, mode="r")
    with pytest.raises(ValueError, match="linalg.cross: axis -1 must have extent 3"):
        sl.cross(v, v)
    with pytest.raises(ValueError, match="complex input"):
        sl.inv(strata.ones((2, 2), dtype=strata.complex128, spec=spec))
    with pytest.raises(TypeError, match="linalg.matrix_power: n must be an int"):
        sl.matrix_power(sq, 1.5)
    with pytest.raises(TypeError, match="linalg.inv: expected a strata.Array"):
        sl.inv([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="linalg.solve: b of shape"):
        sl.solve(sq, v)
