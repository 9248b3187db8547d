#!/usr/bin/env bash
# run_if_present.sh <libllama> <command...>: runs the command when libllama exists; else says why in one line and
# exits 77, which ctest reports as Skipped (SKIP_RETURN_CODE), never as Passed.
lib="$1"; shift
if [ ! -f "$lib" ]; then
  echo "SKIPPED: $lib is not there (bash scripts/setup unpacks @node-llama-cpp/linux-x64 3.22.1 when npm can reach the registry)"
  exit 77
fi
exec "$@"
