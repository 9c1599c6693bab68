#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build/fuzz, a unity build: see
# cmake/strata.cmake) and runs each on its seed corpus (fuzz/corpus/<target>)
# for SECONDS (default 12). Any crash,
# sanitizer report or failed check fails the script; the input that caused it
# is kept in build/fuzz/crashes/. Prints one JSON line per target (runs,
# seconds, crashes) and appends them to build/fuzz/results.jsonl.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-12}
shift || true
build=build/fuzz
targets=(fuzz_zarr_v2_metadata fuzz_zarr_v3_metadata fuzz_s3_xml
         fuzz_codec_blosc fuzz_codec_zstd fuzz_codec_zlib fuzz_codec_gzip fuzz_codec_lz4
         fuzz_codec_crc32c)
if (($# > 0)); then targets=("$@"); fi

if [[ ! -f $build/build.ninja ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 -DSTRATA_FUZZ=ON -DSTRATA_BUILD_TESTS=OFF \
    -DSTRATA_BUILD_BENCH=OFF -DSTRATA_WITH_MPI=OFF > "$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
fi
cmake --build "$build" --target "${targets[@]}" -- -j2

mkdir -p "$build/crashes" "$build/work"
status=0
for t in "${targets[@]}"; do
  work="$build/work/$t"
  rm -rf "$work"
  mkdir -p "$work"
  log="$build/$t.log"
  # New inputs go to a scratch directory; the committed corpus is read only.
  if "$build/fuzz/$t" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
      -timeout=10 -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" \
      "$work" "fuzz/corpus/$t" > "$log" 2>&1; then
    crashes=0
  else
    crashes=1
    status=1
    tail -40 "$log" >&2
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  line="{\"target\": \"$t\", \"seconds\": $seconds, \"runs\": ${runs:-0}, \"crashes\": $crashes}"
  echo "$line"
  echo "$line" >> "$build/results.jsonl"
done
exit $status
