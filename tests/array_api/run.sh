#!/usr/bin/env bash
# Runs the Array API standard's test suite (data-apis/array-api-tests)
# against `strata` (or another namespace, for a baseline) on this machine.
# Not part of CI: the suite is fetched, never committed.
#
#   tests/array_api/run.sh SUITE_DIR [MODULE] [extra pytest args]
#
# SUITE_DIR   a checkout of github:data-apis/array-api-tests at tag 2025.05.23
#             (3c273cd, the suite's release for the 2024.12 standard) with its
#             array-api submodule at the commit it names (772fb461)
# MODULE      the namespace under test: strata (default) or array_api_strict
#             (the .venv's array-api-strict, at the same standard)
#
# The suite's own needs (hypothesis, ndindex, pytest-json-report) come from
# the repository's .venv (requirements/dev.txt). Strata's skips are in
# skips.txt, each with its reason; array_api_strict runs with none.
#
# The standard's linalg extension is disabled unless WITH_LINALG=1 (then
# test_linalg.py runs against strata.linalg too). STRATA_PYTHON_BUILD picks
# the build's python directory (default: build/release/python if built,
# else build/ci/python).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
suite="$(cd "$1" && pwd)"; module="${2:-strata}"; shift $(( $# >= 2 ? 2 : $# ))
repo="$(cd "$here/../.." && pwd)"
python="$repo/.venv/bin/python"
build="${STRATA_PYTHON_BUILD:-}"
if [[ -z "$build" ]]; then
  build="$repo/build/release/python"
  [[ -d "$build/strata" ]] || build="$repo/build/ci/python"
fi

skips=()
linalg=(--disable-extension linalg)
if [[ "${WITH_LINALG:-0}" == 1 ]]; then linalg=(); fi
if [[ "$module" == strata ]]; then skips=(--skips-file "$here/skips.txt"); fi

# A ci (ASan) build's module needs ASan's runtime loaded first, as ctest
# does for tests/python. Both namespaces run under it, so that their runs
# differ only in the module.
# (Not `ldd | grep -q`: grep -q closes the pipe early, and under pipefail
# ldd's SIGPIPE would make the test false now and then.)
if [[ "$(ldd "$build"/strata/_strata*.so 2>/dev/null)" == *libasan* ]]; then
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:detect_stack_use_after_return=0}"
fi

cd "$suite"
export ARRAY_API_TESTS_MODULE="$module"
export ARRAY_API_TESTS_VERSION=2024.12
export ARRAY_API_STRICT_API_VERSION=2024.12  # array_api_strict's own default is newer
export PYTHONPATH="$build${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" -m pytest array_api_tests/ -p no:cacheprovider \
  --max-examples="${MAX_EXAMPLES:-20}" --disable-deadline --disable-data-dependent-shapes \
  "${linalg[@]}" -q -rN "${skips[@]}" "$@"
