#!/usr/bin/env bash
# Installs dependencies and Strata itself into .venv (`pip install .`: the
# wheel's release build, in build/wheel), then runs the main job with the
# installed `strata` command: the seed rechunk of Cubed #502. Writes the seed
# array (10000 x 10000 float64, chunks (10000, 1000), 800 MB), rechunks it to (1000, 10000) with
# allowed_mem 400MB (the plan, with each intermediate's tier and why, is
# printed first), and verifies the result element by element against the same
# data generated directly in the target chunking (the data is
# chunk-independent).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh --with-project

STRATA=.venv/bin/strata
OUT=${STRATA_MAIN_DIR:-build/main-job}
mkdir -p "$OUT"

set -x
"$STRATA" random "$OUT/seed.zarr" --shape 10000,10000 --chunks 10000,1000 --seed 1 --overwrite
"$STRATA" info "$OUT/seed.zarr"
"$STRATA" rechunk "$OUT/seed.zarr" "$OUT/rechunked.zarr" --chunks 1000,10000 \
  --allowed-mem 400MB --work-dir "$OUT/work" --overwrite
"$STRATA" random "$OUT/expected.zarr" --shape 10000,10000 --chunks 1000,10000 --seed 1 --overwrite
"$STRATA" verify "$OUT/rechunked.zarr" "$OUT/expected.zarr"
