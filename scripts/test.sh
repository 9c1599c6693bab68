#!/usr/bin/env bash
# Installs dependencies, builds the debug preset (ASan + UBSan) and runs the
# whole test suite through ctest. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake --preset debug
cmake --build --preset debug
ctest --preset debug
