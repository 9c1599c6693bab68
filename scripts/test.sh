#!/usr/bin/env bash
# Installs dependencies, builds the ci preset (the debug preset's ASan + UBSan,
# with line tables only and test code at -O0, to fit CI's time on 2 cores) and
# runs the whole test suite through ctest. Exits non-zero on any failure.
# `cmake --preset debug` is the same build with full debug information.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
phase() { echo "test.sh: $1 took $((SECONDS - start)) s"; start=$SECONDS; }

./scripts/install-deps.sh
phase "installing dependencies"
# No test may reach a cloud's instance metadata address (169.254.169.254):
# the S3 credential chain's last source is off unless a test turns it on
# against its own fake server on 127.0.0.1.
export AWS_EC2_METADATA_DISABLED=true
cmake --preset ci
cmake --build --preset ci
phase "building"
status=0
ctest --preset ci || status=$?
phase "testing"
if ((status != 0)); then
  # ctest printed each failing test's output where it failed, pages above;
  # its failures are repeated here, last, where a reader of the log's tail
  # sees them (scripts/failed_tests.py: pytest's FAILED/ERROR lines or the
  # output's last lines).
  "$(dirname "$0")"/failed_tests.py build/ci || true
fi
exit $status
