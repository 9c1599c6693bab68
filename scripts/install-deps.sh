#!/usr/bin/env bash
# Installs everything the build, the tests and the benchmarks use:
#  1. the C/C++ toolchain and libraries from Debian's archive (apt-get);
#  2. the S3 test server (@20minutes/s3rver, pinned, from npm) into .deps/s3rver;
#  3. the repository's Python environment, .venv, from the lock file
#     requirements/dev.txt (exact versions for CPython 3.11: numpy 2,
#     zarr-python 3, xarray, Dask, ...). The interpreter is $STRATA_PYTHON,
#     default `python3.11` as found on PATH (pyenv's CPython 3.11 on these
#     machines, else Debian's /usr/bin/python3.11).
# With --with-project it also installs Strata itself into .venv (`pip install
# .`, a release build of the wheel in build/wheel): scripts/main.sh does.
# Idempotent: nothing is installed when it is all there (apt skips installed
# packages; the venv is rebuilt only when the lock file changed).
#
# The lock is refreshed with scripts/lock.sh (see there).
set -euo pipefail
cd "$(dirname "$0")/.."

with_project=0
for arg in "$@"; do
  case "$arg" in
    --with-project) with_project=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (known: --with-project)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  libblosc-dev libzstd-dev liblz4-dev zlib1g-dev libbz2-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libcurl4-openssl-dev
  # strata.linalg's decompositions (src/strata/core/kernels/lapack.cc)
  liblapack-dev
  # the fuzz targets (scripts/fuzz.sh) and LeakSanitizer's runtime
  clang libclang-rt-14-dev
  libopenmpi-dev openmpi-bin
  # ip netns and unshare: the simulated hosts of tests/interop/test_mpi_hosts.py
  iproute2 util-linux
  # strata.visualize's pictures
  graphviz
  # Debian's CPython 3.11 with venv and headers: the fallback interpreter
  python3.11 python3.11-venv python3.11-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The S3 test server for the S3Store tests, interop tests and bench/s3_copy.py:
# @20minutes/s3rver, the maintained fork of s3rver (the original 3.7.1 does
# not check Signature V4 signatures), pinned. Node and npm come with the
# machine (they are not installed from apt here). Started by
# scripts/s3_test_server.js.
S3RVER_PACKAGE="@20minutes/s3rver"
S3RVER_VERSION="4.0.4"
S3RVER_DIR=".deps/s3rver"
installed_version() {
  node -p "require('./$S3RVER_DIR/node_modules/$S3RVER_PACKAGE/package.json').version" 2>/dev/null || true
}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install-deps.sh: node and npm are needed for the S3 test server" >&2
  exit 1
fi
if [[ "$(installed_version)" != "$S3RVER_VERSION" ]]; then
  mkdir -p "$S3RVER_DIR"
  npm install --prefix "$S3RVER_DIR" --no-audit --no-fund --omit=dev --no-save \
    "$S3RVER_PACKAGE@$S3RVER_VERSION"
fi

# The Python environment. A stamp holds the lock file's hash: a changed lock
# (or another interpreter) rebuilds .venv from scratch, so that nothing
# installed by hand survives into a test run.
python=${STRATA_PYTHON:-}
if [[ -z $python ]]; then
  python=$(command -v python3.11 || true)
  [[ -n $python ]] || python=/usr/bin/python3.11
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
  echo "install-deps.sh: $python is not CPython 3.11 (set STRATA_PYTHON to one)" >&2
  exit 1
fi
stamp=.venv/.strata-lock
want="$(sha256sum requirements/dev.txt | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])')"
if [[ ! -x .venv/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  rm -rf .venv
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt
  echo "$want" > "$stamp"
fi

if ((with_project)); then
  # The wheel's build environment is .venv itself (scikit-build-core and
  # pybind11 are in the lock), so nothing is fetched at build time.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-build-isolation \
    --no-deps --force-reinstall .
fi
