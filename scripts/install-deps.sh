#!/usr/bin/env bash
# Installs every system dependency Strata needs from Debian's archive, and the
# S3 test server (s3rver, from npm) into .deps/s3rver.
# Idempotent: packages already present are skipped by apt, and nothing is
# installed when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libblosc-dev libzstd-dev liblz4-dev zlib1g-dev libbz2-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libcurl4-openssl-dev
  # strata.linalg's decompositions (src/strata/core/kernels/lapack.cc)
  liblapack-dev
  clang libclang-rt-14-dev
  libopenmpi-dev openmpi-bin
  # ip netns and unshare: the simulated hosts of tests/interop/test_mpi_hosts.py
  iproute2 util-linux
  python3-zarr python3-numpy python3-pytest python3-dask python3-xarray
  # the dask executor (issue 20) and its tests
  python3-distributed python3-cloudpickle
  python3-dev pybind11-dev python3-hypothesis python3-tqdm graphviz
  # strata.xarray and its tests (Debian's xarray 2023.01, with pandas)
  python3-xarray python3-pandas
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
cd "$(dirname "$0")/.."
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
