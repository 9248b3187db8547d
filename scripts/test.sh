#!/usr/bin/env bash
# The test command: install what is missing, build (default preset), run the whole test suite with ctest.
# Tests labelled `slow` (large simulations, the full mutant table) run only with --slow. Tests that need a GPU
# report as skipped on a machine without one (run them on a GPU machine with scripts/gpu-test).
#
#   bash scripts/test.sh            every label but slow
#   bash scripts/test.sh --slow     everything
#   bash scripts/test.sh -L unit    extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup
cmake --preset default
cmake --build --preset default -j"$(nproc)"
args=(--preset default)
if [ "${1:-}" = "--slow" ]; then shift; else args+=(-LE slow); fi
ctest "${args[@]}" "$@"
