#!/usr/bin/env bash
# Runs every benchmark behind the tables of docs/benchmarks.md under the protocol
# (bench/README.md), in that page's order, then prints the tables. Needs a quiet
# machine, a release build and scripts/install-deps.sh (it makes the peers'
# environments itself, bench/peers-env.sh); about two hours on this 2-core VM
# (bench/README.md gives each script's duration).
# Stops at the first benchmark that fails (exit 3: not enough undisturbed reps).
#   bench/run_all.sh            # the figures of docs/benchmarks.md
#   bench/run_all.sh --smoke    # every script end to end on tiny sizes (~2 min)
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
smoke=0
if [[ " $* " == *" --smoke "* ]]; then smoke=1; fi
cliff_out=bench/results/rechunk_cliff.json
if ((smoke)); then cliff_out=build/bench/smoke/rechunk_cliff.json; fi
bench/peers-env.sh  # the peers' environments (idempotent)
$py bench/codec.py "$@"
$py bench/copy_bench.py --prepared "$@"
$py bench/quadratic_means.py "$@"
$py bench/rechunk.py --prepared --workloads W1 W4 "$@"
$py bench/rechunk.py --workloads W5 --out "$cliff_out" "$@"   # the cliff, its own document
$py bench/processes.py "$@"
$py bench/mpi.py "$@"
$py bench/mpi_hosts.py "$@"
$py bench/s3_copy.py "$@"
$py bench/climate_ops.py "$@"
$py bench/weather_pipeline.py "$@"
$py bench/sharding.py "$@"
$py bench/python_overhead.py "$@"
$py bench/dask_rechunk.py "$@"
$py bench/ray_rechunk.py "$@"
$py bench/coordinator_scale.py "$@"
if ((smoke)); then
  $py bench/report.py --draft build/bench/smoke/{codec_bench,copy_bench,quadratic_means,rechunk,rechunk_cliff,processes,mpi,mpi_hosts,s3_copy,climate_ops,weather_pipeline,sharding,python_overhead,dask_rechunk,ray_rechunk,coordinator_scale}.json
else
  $py bench/report.py --all --svg bench/results/rechunk_cliff.svg
fi
