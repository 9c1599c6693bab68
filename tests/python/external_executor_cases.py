"""Cases that every external executor's suite (test_dask.py, test_ray.py)
runs against the threads executor, written once: each suite parametrises
its test by the cases' names and passes its executor's Spec.

    @pytest.mark.parametrize("case", ERROR_CASES)
    def test_errors_have_the_threads_messages(case, dask_spec, threads_spec, tmp_path):
        assert_error_matches_threads(case, dask_spec, threads_spec, tmp_path)

Not a test module (no test_ prefix): pytest imports it from the suites'
folder, which is on sys.path when they run.
"""
import re

import numpy as np
import pytest

import strata

# The data every case (and the suites' own tests) computes on.
DATA = np.random.default_rng(20).random((48, 40))


@pytest.fixture
def threads_spec(tmp_path):
    """The threads executor every external executor's output is compared with."""
    return strata.Spec(work_dir=tmp_path / "threads-work", allowed_mem="100MB",
                       reserved_mem="1MB", workers=2)


class Events(strata.Callback):
    """Every task's end event and the compute's summary."""

    def __init__(self):
        self.tasks = []
        self.summary = None

    def on_task_end(self, event):
        self.tasks.append(event)

    def on_compute_end(self, event):
        self.summary = event.summary


def same_bytes(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def both(build, spec, threads_spec, **kwargs):
    """build(spec) computed on the external executor's spec and on threads,
    byte for byte the same; returns the external executor's result."""
    external = build(spec).compute(**kwargs)
    same_bytes(external, build(threads_spec).compute())
    return external


def _wrong_shape(spec, tmp_path):
    x = strata.asarray(DATA, chunks=(12, 10), spec=spec)
    return strata.map_blocks(lambda blk, block_id=None: blk[:1] if block_id == (3, 2) else blk, x)


def _raising_at(where, error, message):
    """A block function that raises error(message) at block `where`."""
    def f(blk, block_id=None):
        if block_id == where:
            raise error(message)
        return blk
    return f


def _raising(spec, tmp_path):
    x = strata.asarray(DATA, chunks=(12, 10), spec=spec)
    return strata.map_blocks(_raising_at((2, 1), KeyError, "no such station"), x)


def _corrupt(spec, tmp_path):
    src = tmp_path / "corrupt.zarr"
    if not src.exists():
        strata.to_zarr(strata.asarray(DATA, chunks=(8, 8)), str(src), codec="zstd")
        with open(src / "2.3", "r+b") as f:
            f.seek(4)
            f.write(b"\xff" * 16)
    return strata.from_zarr(str(src), spec=spec) * 2


def _overlap_raising(spec, tmp_path):
    x = strata.asarray(DATA, chunks=(12, 10), spec=spec)
    return strata.map_overlap(_raising_at((1, 3), ArithmeticError, "a halo too far"), x,
                              depth=2, boundary="periodic")


def _gufunc_wrong_dtype(spec, tmp_path):
    x = strata.asarray(DATA, chunks=(48, 40), spec=spec)   # one block: one error
    return strata.apply_gufunc(lambda b: b.sum(-1), "(i)->()", x, output_dtypes="int32")


# name -> build(spec, tmp_path): an array whose compute fails.
ERROR_CASES = {
    "wrong_shape": _wrong_shape,              # a block function returns the wrong shape
    "raising": _raising,                      # a block function raises
    "corrupt": _corrupt,                      # a stored chunk does not decode
    "overlap_raising": _overlap_raising,      # map_overlap's function raises
    "gufunc_wrong_dtype": _gufunc_wrong_dtype,  # apply_gufunc's result cannot be cast
}


def _same_names(text):
    # Each build makes arrays of its own names; and on a loaded machine a
    # straggler's backup may be the attempt whose error is reported ("after
    # 2 attempts"), on either executor.
    return re.sub(r" after \d+ attempts", "", re.sub(r"array-\d+", "array-N", text))


def assert_error_matches_threads(case, spec, threads_spec, tmp_path):
    """ERROR_CASES[case] computed on threads_spec and on spec (the external
    executor's) fails with the same exception type, message and notes, and
    the external executor's error names the calling process's array."""
    build = ERROR_CASES[case]
    errors = []
    for s in (threads_spec, spec):
        x = build(s, tmp_path)
        with pytest.raises(Exception) as info:
            x.compute()
        errors.append(info.value)
    threads, external = errors
    assert type(external) is type(threads), (threads, external)
    assert _same_names(str(external)) == _same_names(str(threads)), (str(threads), str(external))
    notes = getattr(external, "__notes__", [])
    assert [_same_names(n) for n in notes] == \
        [_same_names(n) for n in getattr(threads, "__notes__", [])]
    # The calling process's array names, not the workers'.
    assert x.name in str(external) + "".join(notes), (x.name, external)
