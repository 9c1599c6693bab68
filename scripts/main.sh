#!/usr/bin/env bash
# Installs dependencies, builds the release preset and runs the main job on the
# seed array (10000 x 10000 float64, chunks (10000, 1000), 800 MB): writes it,
# describes it, writes the same data in the transposed chunking and verifies
# the two are equal element by element (the data is chunk-independent).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target strata

STRATA=build/release/bin/strata
OUT=${STRATA_MAIN_DIR:-build/main-job}
mkdir -p "$OUT"

set -x
"$STRATA" random "$OUT/seed.zarr" --shape 10000,10000 --chunks 10000,1000 --seed 1 --overwrite
"$STRATA" info "$OUT/seed.zarr"
"$STRATA" random "$OUT/seed-rows.zarr" --shape 10000,10000 --chunks 1000,10000 --seed 1 --overwrite
"$STRATA" verify "$OUT/seed.zarr" "$OUT/seed-rows.zarr"
