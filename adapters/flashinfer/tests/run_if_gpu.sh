#!/usr/bin/env bash
# run_if_gpu.sh <plugin.so or not-built> <command...>: runs the command when the FlashInfer plugin was built and a CUDA
# device is present; else prints "SKIPPED: <why>" and exits 77, which ctest reports as Skipped (SKIP_RETURN_CODE),
# never as Passed. What the command must exit and print is checked by cmake/run_test.py (samplecheck_add_command_test).
plugin="$1"; shift
if [ -z "$plugin" ] || [ ! -f "$plugin" ]; then
  echo "SKIPPED: the FlashInfer plugin is not built (configure with -DSAMPLECHECK_FLASHINFER_DIR=<a FlashInfer source tree> and CUDA on)"
  exit 77
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIPPED: no CUDA device (nvidia-smi -L lists none)"
  exit 77
fi
exec "$@"
