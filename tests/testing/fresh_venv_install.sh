#!/usr/bin/env bash
# fresh_venv_install.sh <source root> <scratch dir>: `pip install ./python` as the README says, from what a fresh
# clone holds, into a fresh virtual environment, offline; then `pip install -e ./python` into another. Each must
# import samplecheck from where it was installed and register the pytest plugin's entry point.
#
# "What a fresh clone holds": the files `git ls-files --cached --others --exclude-standard` lists (tracked, and new
# files git does not ignore), copied into the scratch dir, so a file that .gitignore swallows is missing here as it
# is on every clone (python/build_backend/ was, until issue 40). Outside a git work tree, python/ as it is.
# Skipped (exit 77, "SKIPPED: ...") without a python3 that can make a venv (Debian: python3-venv, scripts/setup).
set -uo pipefail
root="$1"; scratch="$2"
rm -rf "$scratch"; mkdir -p "$scratch/clone"
fail() { echo "FAILED: $*"; echo "reproduce: bash $0 $root $scratch"; exit 1; }
if [ -e "$root/.git" ]; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard -- python) |
    (cd "$root" && xargs -0 cp --parents -t "$scratch/clone" 2>/dev/null) || true
  echo "copied $(cd "$scratch/clone" && find python -type f | wc -l) files of python/ as a clone holds them"
else
  cp -r "$root/python" "$scratch/clone/python"
  echo "not a git work tree: copied python/ as it is"
fi
[ -f "$scratch/clone/python/pyproject.toml" ] || fail "the clone has no python/pyproject.toml"
py=""
for candidate in "${SAMPLECHECK_PYTHON:-}" "$(command -v python3 2>/dev/null)" /usr/bin/python3; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  if "$candidate" -m venv "$scratch/probe" >/dev/null 2>&1 && [ -x "$scratch/probe/bin/pip" ]; then py="$candidate"; break; fi
  rm -rf "$scratch/probe"
done
rm -rf "$scratch/probe"
if [ -z "$py" ]; then
  echo "SKIPPED: no python3 here makes a virtual environment with pip (Debian: apt-get install python3-venv)"
  exit 77
fi
echo "python: $py ($("$py" --version 2>&1))"
check_import() {  # <venv> <where samplecheck must come from>
  "$1/bin/python" - "$2" <<'PY' || fail "samplecheck does not import from $2 in $1"
import sys
from importlib import metadata
import samplecheck
assert samplecheck.__file__.startswith(sys.argv[1]), (samplecheck.__file__, sys.argv[1])
group = metadata.entry_points()
plugins = group.select(group="pytest11") if hasattr(group, "select") else group.get("pytest11", [])
assert any(e.value == "samplecheck.pytest_plugin" for e in plugins), list(plugins)
print("import samplecheck: %s; pytest11 entry point: samplecheck.pytest_plugin; version %s"
      % (samplecheck.__file__, metadata.version("samplecheck")))
PY
}
pip_args=(--no-index --no-cache-dir --disable-pip-version-check)
"$py" -m venv "$scratch/venv" || fail "python3 -m venv failed"
(cd "$scratch/clone" && "$scratch/venv/bin/pip" install "${pip_args[@]}" ./python) ||
  fail "pip install ./python failed in a fresh venv"
check_import "$scratch/venv" "$scratch/venv/lib"
"$py" -m venv "$scratch/venv-e" || fail "python3 -m venv failed"
(cd "$scratch/clone" && "$scratch/venv-e/bin/pip" install "${pip_args[@]}" -e ./python) ||
  fail "pip install -e ./python failed in a fresh venv"
check_import "$scratch/venv-e" "$scratch/clone/python/samplecheck"
echo "PASS: pip install ./python and pip install -e ./python from a fresh clone's files, offline, in fresh venvs"
