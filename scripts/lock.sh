#!/usr/bin/env bash
# Refreshes requirements/dev.txt, the lock of the repository's .venv: the
# newest release of every package in requirements/dev.in (and of their
# dependencies) that supports CPython 3.11 on x86-64 Linux, resolved by uv
# (from PyPI; `pip install uv` gives it). Then scripts/install-deps.sh
# rebuilds .venv from the new lock.
#   scripts/lock.sh [--upgrade-package NAME ...]   (extra arguments go to uv)
set -euo pipefail
cd "$(dirname "$0")/.."
uv=${UV:-uv}
if ! command -v "$uv" >/dev/null; then
  echo "lock.sh: uv not found (pip install uv, or set UV)" >&2
  exit 1
fi
"$uv" pip compile requirements/dev.in --python-version 3.11 \
  --python-platform x86_64-unknown-linux-gnu --upgrade --no-header --annotation-style line \
  -o requirements/dev.txt "$@"
