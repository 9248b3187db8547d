#!/usr/bin/env bash
# run_with_torch.sh <command...>: runs the command with @PY@ replaced by a python3 that imports torch
# (python/run_with_python.sh: $SAMPLECHECK_PYTHON, /usr/bin/python3, python3 on PATH); exits 77 (ctest: Skipped)
# with a one-line reason when none does.
exec "$(dirname "$0")/../../python/run_with_python.sh" torch "$@"
