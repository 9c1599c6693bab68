"""Memory: the idea of Cubed's test_mem_utilization.py. Large arrays
(10000 x 10000 float64, 800 MB, in 5000 x 5000 chunks of 200 MB) through
elementwise ops, reductions, matmul, rechunk and concat; for every task the
history must show measured peak <= projected <= allowed_mem."""
import shutil

import pytest

import strata

ALLOWED_MEM = 2_000_000_000


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return strata.Spec(work_dir=tmp_path_factory.mktemp("work"), allowed_mem=ALLOWED_MEM,
                       reserved_mem="100MB", workers=2)


def big(spec, seed):
    return strata.random.random((10000, 10000), chunks=(5000, 5000), seed=seed, spec=spec)


def run(arrays, tmp_path):
    hist = strata.HistoryCallback()
    handles = [strata.to_zarr(a, str(tmp_path / f"out{i}.zarr"), compute=False, codec="none")
               for i, a in enumerate(arrays)]
    strata.compute(*handles, callbacks=[hist])
    assert hist.ok, hist.error
    assert hist.tasks
    for t in hist.tasks:
        assert 0 < t["measured_peak_mem"] <= t["projected_mem"] <= ALLOWED_MEM, t
    for i in range(len(arrays)):
        shutil.rmtree(tmp_path / f"out{i}.zarr")
    return hist


def test_elementwise(spec, tmp_path):
    a, b = big(spec, 1), big(spec, 2)
    run([strata.negative(a), a + b], tmp_path)


def test_reductions(spec, tmp_path):
    a = big(spec, 3)
    run([strata.sum(a, axis=0), strata.mean(a, axis=1), strata.max(a)], tmp_path)


def test_matmul(spec, tmp_path):
    # 200 MB output chunks as in Cubed's test; a thin inner dimension keeps the
    # arithmetic (and the test) short: the memory is in the blocks, not the flops.
    a = strata.random.random((10000, 20), chunks=(5000, 20), seed=4, spec=spec)
    b = strata.random.random((20, 10000), chunks=(20, 5000), seed=5, spec=spec)
    run([strata.matmul(a, b)], tmp_path)


def test_rechunk(spec, tmp_path):
    a = big(spec, 6)
    # Materialise a first, so that the rechunk really moves data.
    src = tmp_path / "src.zarr"
    strata.to_zarr(a, str(src), codec="none")
    run([strata.from_zarr(str(src), spec=spec).rechunk((10000, 2500))], tmp_path)


def test_concat(spec, tmp_path):
    a, b = big(spec, 7), big(spec, 8)
    run([strata.concat([a + 1, b], axis=0)], tmp_path)
