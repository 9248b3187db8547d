#!/usr/bin/env bash
# Queue a sharded samplecheck campaign on Slurm: N array tasks (one GPU each), then the merge once all succeeded.
#   examples/scale/submit-slurm.sh N [OUT]       (settings: see slurm-shards.sbatch; exported to both jobs)
# Example, the 200-seed null calibration instead: see docs/scale.md ("Calibration, properties, fuzzing").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?usage: submit-slurm.sh N [OUT]}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "submit-slurm.sh: N '$n' is not a positive whole number" >&2; exit 2; }
export OUT=${2:-$PWD/samplecheck-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
array=$(sbatch --parsable --export=ALL --array="0-$((n - 1))" "$here/slurm-shards.sbatch")
merge=$(sbatch --parsable --export=ALL --dependency="afterok:${array%%;*}" "$here/slurm-merge.sbatch")
echo "shards: job $array ($n tasks) -> $OUT/shard-*.json; merge: job $merge -> $OUT/merged.json"
