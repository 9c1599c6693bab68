#!/usr/bin/env bash
# What a user does: `pip install .` into an empty virtual environment, then,
# from outside the repository, `import strata` with a computation and the
# `strata` command. Fails on any failure.
#
#   tests/package/check_install.sh [--fast] [PYTHON]
#
# --fast (CI) compiles the wheel at -O0 without optimisation, as a unity
# build (cmake/strata.cmake), in build/wheel-check: the packaging is what is checked, and an optimised build
# of the whole engine would cost CI minutes that the test suites need.
#
# The wheel is built by pip with the repository's .venv as its build
# environment (scikit-build-core and pybind11 are in the lock, so nothing is
# fetched to build it; the release build goes to build/wheel and is reused by
# the next run). The empty environment then installs the wheel and its only
# dependency, numpy, from PyPI.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
settings=()
if [[ ${1:-} == --fast ]]; then
  settings=(-C build-dir=build/wheel-check -C cmake.build-type=Debug
            -C cmake.define.CMAKE_CXX_FLAGS_DEBUG=-O0
            -C cmake.define.CMAKE_UNITY_BUILD=ON -C cmake.define.CMAKE_UNITY_BUILD_BATCH_SIZE=16)
  shift
fi
python=${1:-$repo/.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  "${settings[@]}" -w "$work/dist" "$repo"
base=$("$python" -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$work"/dist/strata-*.whl

cd "$work"
# The environment has numpy and strata and nothing else of the repository's.
out=$(env -u PYTHONPATH "$work/venv/bin/python" -c \
  "import strata, numpy; print(strata.sum(strata.ones((10**4,), chunks=100)).compute())")
[[ $out == "10000.0" ]] || { echo "check_install: expected 10000.0, got '$out'" >&2; exit 1; }
env -u PYTHONPATH "$work/venv/bin/python" - <<'PY'
import importlib.metadata as md
import os
import strata
# Imported from the new environment, not from the repository or a build tree.
assert os.path.realpath(strata.__file__).startswith(os.path.realpath(os.getcwd())), strata.__file__
names = {d.metadata["Name"] for d in md.distributions()}
assert names >= {"strata", "numpy"}, names
for extra in ("zarr", "xarray", "s3fs", "dask", "distributed", "pyarrow"):
    assert extra not in names, f"the core pulled in {extra}"
ep = [e for e in md.entry_points(group="xarray.chunkmanagers") if e.name == "strata"]
assert ep and ep[0].value == "strata.xarray._chunkmanager:StrataChunkManager", ep
PY
help=$(PATH="$work/venv/bin:$PATH" strata --help)
grep -q "rechunk" <<<"$help" || { echo "check_install: strata --help names no rechunk" >&2; exit 1; }
echo "check_install: pip install . works: import strata computes 10000.0 and strata --help runs"
