"""The reliability settings of `strata rechunk` and `strata plan`: accepted
when sensible, a usage error (exit 2) naming the flag otherwise, and a
rechunk with backups off and a short heartbeat timeout runs as usual."""
import pytest

from conftest import tree_digest


@pytest.fixture
def source(strata, tmp_path):
    src = tmp_path / "src.zarr"
    strata("random", src, "--shape", "300,200", "--chunks", "300,10", "--seed", "3")
    return src


@pytest.mark.parametrize("flag,value", [
    ("--backup-slowdown", "1"), ("--backup-slowdown", "0.5"), ("--backup-slowdown", "nan"),
    ("--backup-slowdown", "abc"), ("--heartbeat-timeout", "0"),
    ("--heartbeat-timeout", "-3"), ("--heartbeat-timeout", "inf"),
])
def test_bad_values_are_usage_errors(strata, source, tmp_path, flag, value):
    proc = strata("rechunk", source, tmp_path / "dst.zarr", "--chunks", "10,200", flag, value,
                  check=False)
    assert proc.returncode == 2, proc.stderr
    assert flag in proc.stderr, proc.stderr
    assert not (tmp_path / "dst.zarr").exists()


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_settings_are_accepted(strata, source, tmp_path, executor):
    dst = tmp_path / "dst.zarr"
    strata("rechunk", source, dst, "--chunks", "10,200", "--executor", executor, "--workers", "2",
           "--no-backups", "--heartbeat-timeout", "5", "--quiet")
    strata("rechunk", source, tmp_path / "b.zarr", "--chunks", "10,200", "--executor", executor,
           "--workers", "2", "--backup-slowdown", "2.5", "--quiet")
    assert tree_digest(dst) == tree_digest(tmp_path / "b.zarr")
    assert strata("verify", source, dst).returncode == 0
