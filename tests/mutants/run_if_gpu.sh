#!/bin/sh
# Runs the command when this machine has an NVIDIA GPU; otherwise exits 77, which the calling ctest reports as
# skipped (SKIP_RETURN_CODE 77), never as passed.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "no NVIDIA GPU on this machine: skipped"
  exit 77
fi
exec "$@"
