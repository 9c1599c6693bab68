#!/usr/bin/env bash
# Makes bench/.venv-peers, the bench-only environment of the peers (Cubed,
# TensorStore, flox, Ray, on the main lock's numpy / zarr-python / xarray /
# Dask), from its lock bench/peers.txt (bench/peers.in says how the lock is
# refreshed), and bench/.venv-rechunker, rechunker's (it needs zarr-python < 3;
# bench/rechunker.in, lock bench/rechunker.txt). Strata is made importable in
# the peers' venv the way the other bench
# scripts expect: by default a .pth file puts the release build's package
# directory (build/release/python, `cmake --build --preset release`) on the
# path; with --wheel FILE that wheel is installed instead.
#   bench/peers-env.sh [--wheel dist/strata-*.whl]
# The interpreter is $STRATA_PYTHON, default python3.11 on PATH (as in
# scripts/install-deps.sh). Idempotent: a venv is rebuilt only when its
# lock or the interpreter changed.
set -euo pipefail
cd "$(dirname "$0")/.."

wheel=""
while (($# > 0)); do
  case "$1" in
    --wheel) wheel=${2:?--wheel needs a file}; shift 2 ;;
    *) echo "peers-env.sh: unknown argument '$1' (known: --wheel FILE)" >&2; exit 2 ;;
  esac
done

python=${STRATA_PYTHON:-}
if [[ -z $python ]]; then
  python=$(command -v python3.11 || true)
  [[ -n $python ]] || python=/usr/bin/python3.11
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
  echo "peers-env.sh: $python is not CPython 3.11 (set STRATA_PYTHON to one)" >&2
  exit 1
fi

# make_venv DIR LOCK: DIR from LOCK, rebuilt only when the lock or the
# interpreter changed.
make_venv() {
  local venv=$1 lock=$2
  local stamp=$venv/.peers-lock
  local want
  want="$(sha256sum "$lock" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])')"
  if [[ ! -x $venv/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$lock"
    echo "$want" > "$stamp"
  fi
}

venv=bench/.venv-peers
make_venv "$venv" bench/peers.txt
# rechunker needs zarr-python < 3: an environment of its own (bench/rechunker.in)
make_venv bench/.venv-rechunker bench/rechunker.txt

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [[ -n $wheel ]]; then
  rm -f "$site/strata-build.pth"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --force-reinstall "$wheel"
else
  "$venv/bin/python" -m pip uninstall --quiet --yes strata 2>/dev/null || true
  echo "$(pwd)/build/release/python" > "$site/strata-build.pth"
  if [[ ! -d build/release/python/strata ]]; then
    echo "peers-env.sh: build/release/python has no strata package yet" \
      "(cmake --preset release && cmake --build --preset release)" >&2
  fi
fi
