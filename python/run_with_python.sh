#!/usr/bin/env bash
# run_with_python.sh MODULE[,MODULE...] <command...>: runs the command with @PY@ in its arguments replaced by a
# python3 that imports every MODULE (Debian's python3-torch and python3-pytest are installed for /usr/bin/python3,
# which need not be the python3 on PATH). Tried in order: $SAMPLECHECK_PYTHON, /usr/bin/python3, python3 on PATH.
# When none does, says so in one line and exits 77, which ctest reports as Skipped (SKIP_RETURN_CODE).
modules="$1"
shift
for candidate in "${SAMPLECHECK_PYTHON:-}" /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  if "$candidate" -c "import ${modules}" >/dev/null 2>&1; then
    export SAMPLECHECK_PYTHON="$candidate"
    args=()
    for a in "$@"; do args+=("${a//@PY@/$candidate}"); done
    exec "${args[@]}"
  fi
done
echo "SKIPPED: no python3 here imports ${modules} (bash scripts/setup installs Debian's python3-torch and python3-pytest for /usr/bin/python3)"
exit 77
