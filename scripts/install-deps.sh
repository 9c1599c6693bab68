#!/usr/bin/env bash
# Installs every system dependency Strata needs from Debian's archive.
# Idempotent: packages already present are skipped by apt, and nothing is
# installed when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libblosc-dev libzstd-dev liblz4-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libcurl4-openssl-dev
  libopenmpi-dev openmpi-bin
  python3-zarr python3-numpy python3-pytest python3-dask
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
