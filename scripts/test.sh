#!/usr/bin/env bash
# Installs dependencies, builds the ci preset (the debug preset's ASan + UBSan,
# with line tables only and test code at -O0, to fit CI's time on 2 cores) and
# runs the whole test suite through ctest. Exits non-zero on any failure.
# `cmake --preset debug` is the same build with full debug information.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake --preset ci
cmake --build --preset ci
ctest --preset ci
