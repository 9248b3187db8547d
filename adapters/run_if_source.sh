#!/usr/bin/env bash
# run_if_source.sh VAR <command...>: runs the command with @SRC@ in its arguments replaced by the engine source tree
# named by the environment variable VAR (SAMPLECHECK_VLLM_SRC, ...; scripts/engine-sources lays one out from your
# clone). When VAR is unset or not a directory, says so in one line and exits 77, which ctest reports as Skipped.
var="$1"
shift
src="${!var:-}"
if [ -z "$src" ] || [ ! -d "$src" ]; then
  echo "SKIPPED: $var is not set to an engine source tree (scripts/engine-sources layout <engine> <your clone> <dest>)"
  exit 77
fi
args=()
for a in "$@"; do args+=("${a//@SRC@/$src}"); done
exec "${args[@]}"
