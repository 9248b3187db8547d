#!/usr/bin/env bash
# run_with_torch.sh <command...>: runs the command with SAMPLECHECK_TORCH_PYTHON set to a python3 that imports torch
# (Debian's python3-torch is installed for /usr/bin/python3, which need not be the python3 on PATH); when none
# does, says so in one line and exits 77, which ctest reports as Skipped (SKIP_RETURN_CODE).
for candidate in "${SAMPLECHECK_TORCH_PYTHON:-}" /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  if "$candidate" -c "import torch" >/dev/null 2>&1; then
    export SAMPLECHECK_TORCH_PYTHON="$candidate"
    # The commands name the interpreter as @PY@: replace it in every argument.
    args=()
    for a in "$@"; do args+=("${a//@PY@/$candidate}"); done
    exec "${args[@]}"
  fi
done
echo "SKIPPED: no python3 here imports torch (bash scripts/setup installs python3-torch for /usr/bin/python3)"
exit 77
