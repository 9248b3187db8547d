#!/bin/sh
# run_if_gpu.sh <command...>: runs the command when this machine has an NVIDIA GPU; otherwise prints
# "SKIPPED: <why>" and exits 77, which the calling ctest reports as skipped (SKIP_RETURN_CODE 77), never as passed.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIPPED: no NVIDIA GPU on this machine (nvidia-smi -L lists none)"
  exit 77
fi
exec "$@"
