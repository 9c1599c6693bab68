"""strata as an xarray chunk manager (issue 19).

xarray 2024.x and later find chunk managers through the
`xarray.chunkmanagers` entry point group; the build writes strata's (a
`strata-<version>.dist-info` beside the package). Debian's xarray 2023.01,
which CI has, has no chunk managers: there the registration must change
nothing, and these tests check that it does not.

The chunk manager itself runs against a newer xarray only when one is
given: STRATA_NEWER_XARRAY=DIR, a directory whose `xarray` package is
xarray 2024.x (e.g. `git archive v2024.11.0 xarray | tar -x -C DIR`; it runs
on Debian's numpy 1.24 and pandas 1.5). Then xarray_newer_checks.py runs in
a fresh interpreter with DIR first on PYTHONPATH; otherwise that test is
skipped, saying why."""
import importlib.metadata
import os
import subprocess
import sys

import pytest

import strata
import strata.xarray as sx

xr = pytest.importorskip("xarray")

HERE = os.path.dirname(os.path.abspath(__file__))


def has_chunk_managers():
    try:
        from xarray.namedarray import parallelcompat  # noqa: F401
    except ImportError:
        return False
    return True


def test_the_entry_point_is_in_the_package_metadata():
    eps = importlib.metadata.entry_points(group="xarray.chunkmanagers")
    ours = [ep for ep in eps if ep.name == "strata"]
    assert len(ours) == 1, list(eps)
    assert ours[0].value == "strata._chunkmanager:StrataChunkManager"
    # The metadata is the package's own: beside the package imported here.
    dist = ours[0].dist
    assert dist.metadata["Name"] == "strata"
    located = os.path.dirname(os.path.dirname(os.path.abspath(strata.__file__)))
    assert os.path.samefile(dist.locate_file(""), located)


@pytest.mark.skipif(has_chunk_managers(), reason="this xarray has chunk managers: "
                    "xarray_newer_checks.py covers it")
def test_registration_is_a_no_op_without_chunk_managers():
    assert "strata._chunkmanager" not in sys.modules, "nothing imports it on this xarray"
    with pytest.raises(NotImplementedError, match="has no chunk managers"):
        sx.chunk_manager()
    # xarray works as before: strata arrays stay duck arrays.
    da = xr.DataArray(strata.ones((4, 3), chunks=2), dims=("x", "y"))
    assert isinstance((da * 2).data, strata.Array)
    assert "strata._chunkmanager" not in sys.modules


def newer_xarray():
    """The directory of a newer xarray, or a reason to skip."""
    path = os.environ.get("STRATA_NEWER_XARRAY")
    if not path:
        return None, ("STRATA_NEWER_XARRAY is not set: give it a directory holding xarray "
                      "2024.x (e.g. v2024.11.0's source) to run the chunk manager against it; "
                      "this machine's xarray (Debian's 2023.01) has no chunk managers")
    if not os.path.isfile(os.path.join(path, "xarray", "namedarray", "parallelcompat.py")):
        return None, (f"STRATA_NEWER_XARRAY={path} holds no xarray with chunk managers "
                      "(xarray/namedarray/parallelcompat.py)")
    return path, None


def test_chunk_manager_on_a_newer_xarray(tmp_path):
    path, reason = newer_xarray()
    if path is None:
        pytest.skip(reason)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([path] + [p for p in
                                                  env.get("PYTHONPATH", "").split(os.pathsep)
                                                  if p])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "--basetemp", str(tmp_path / "pytest"), os.path.join(HERE, "xarray_newer_checks.py")],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=850)
    print(proc.stdout[-20000:])
    print(proc.stderr[-5000:], file=sys.stderr)
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout
