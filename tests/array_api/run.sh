#!/usr/bin/env bash
# Runs the Array API standard's test suite (data-apis/array-api-tests)
# against `strata` (or another namespace, for a baseline) on this machine.
# Not part of CI: the suite is fetched, never committed.
#
#   tests/array_api/run.sh SUITE_DIR NDINDEX_DIR [MODULE] [extra pytest args]
#
# SUITE_DIR   a checkout of github:data-apis/array-api-tests (HEAD) with its
#             array-api submodule checked out at the commit it names
# NDINDEX_DIR a checkout of github:Quansight-Labs/ndindex at tag 1.8 (pure
#             Python; Debian has no ndindex)
# MODULE      the namespace under test: strata (default) or array_api_strict
#             (then put a checkout of github:data-apis/array-api-strict on
#             PYTHONPATH)
#
# Debian's hypothesis (6.67) knows only the 2021.12 standard, hence
# ARRAY_API_TESTS_VERSION=2021.12. pytest-json-report and pytest-metadata are
# not packaged by Debian: shims/pytest_jsonreport.py stands in for the first
# (the suite's conftest needs its `json_metadata` fixture); the second is not
# loaded (the suite's hook for it is optional). Strata's skips are in
# skips.txt, each with its reason.
#
# The issue's command disables the linalg extension; WITH_LINALG=1 runs it
# too (test_linalg.py against strata.linalg), as the README reports.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
suite="$1"; ndindex="$2"; module="${3:-strata}"; shift $(( $# >= 3 ? 3 : $# ))
repo="$(cd "$here/../.." && pwd)"
build="${STRATA_PYTHON_BUILD:-$repo/build/release/python}"

skips=()
linalg=(--disable-extension linalg)
if [[ "${WITH_LINALG:-0}" == 1 ]]; then linalg=(); fi
if [[ "$module" == strata ]]; then skips=(--skips-file "$here/skips.txt"); fi

# A debug (ASan) build's module needs ASan's runtime loaded first, as ctest
# does for tests/python.
if ldd "$build"/strata/_strata*.so 2>/dev/null | grep -q libasan; then
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
fi

cd "$suite"
export ARRAY_API_TESTS_MODULE="$module"
export ARRAY_API_TESTS_VERSION=2021.12
export PYTHONPATH="$build:$ndindex:$here/shims${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 -m pytest array_api_tests/ -p pytest_jsonreport -p no:cacheprovider \
  --max-examples=2 --disable-deadline --disable-data-dependent-shapes \
  "${linalg[@]}" -q -rN "${skips[@]}" "$@"
