# Sourced by the nightly runners (calibration-nightly, properties-nightly, fuzz-nightly): their --shard option,
# read as `samplecheck run --shard` reads it (docs/scale.md): I/N (0-based), auto (GTEST_SHARD_INDEX /
# GTEST_TOTAL_SHARDS, or SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN / SLURM_ARRAY_TASK_COUNT) or auto/N (the index
# from those or from a Kubernetes indexed Job's JOB_COMPLETION_INDEX, the count N).
#
#   parse_shard <spec> <program name>   sets SHARD_INDEX and SHARD_COUNT, or prints why not and returns 2

parse_shard() {
  local spec=$1 who=$2 index="" count="" env_count="" first=0
  local head=${spec%%/*}
  [[ $spec == */* ]] && count=${spec#*/}
  if [[ -n $count && ! $count =~ ^[1-9][0-9]{0,4}$ ]]; then
    echo "$who: --shard count '$count' is not a whole number in [1, 65536]" >&2; return 2
  fi
  if [[ $head != auto ]]; then
    [[ -n $count ]] || { echo "$who: --shard '$spec' has no count (allowed: I/N, auto, auto/N)" >&2; return 2; }
    [[ $head =~ ^[0-9]+$ ]] || { echo "$who: --shard index '$head' is not a whole non-negative number" >&2; return 2; }
    index=$head
  elif [[ -n ${GTEST_SHARD_INDEX:-} ]]; then
    index=$GTEST_SHARD_INDEX env_count=${GTEST_TOTAL_SHARDS:-}
  elif [[ -n ${SLURM_ARRAY_TASK_ID:-} ]]; then
    index=$SLURM_ARRAY_TASK_ID env_count=${SLURM_ARRAY_TASK_COUNT:-} first=${SLURM_ARRAY_TASK_MIN:-0}
  elif [[ -n ${JOB_COMPLETION_INDEX:-} ]]; then
    index=$JOB_COMPLETION_INDEX
  else
    echo "$who: --shard $spec: no scheduler's shard index in the environment (GTEST_SHARD_INDEX," \
         "SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX); give --shard I/N" >&2
    return 2
  fi
  if ! [[ $index =~ ^[0-9]+$ && $first =~ ^[0-9]+$ && ( -z $env_count || $env_count =~ ^[1-9][0-9]*$ ) ]]; then
    echo "$who: the scheduler's shard variables are not whole numbers (index '$index', count '$env_count')" >&2
    return 2
  fi
  if [[ -n $count && -n $env_count && $count != "$env_count" ]]; then
    echo "$who: --shard $spec but the scheduler's count is $env_count" >&2; return 2
  fi
  count=${count:-$env_count}
  [[ -n $count ]] || { echo "$who: the shard count is not set: give it as --shard auto/N" >&2; return 2; }
  index=$((index - first))
  if (( index < 0 || index >= count )); then
    echo "$who: shard $index of $count: the index runs from 0 to $((count - 1))" >&2; return 2
  fi
  SHARD_INDEX=$index SHARD_COUNT=$count
}
