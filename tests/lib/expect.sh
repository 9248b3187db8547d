# Sourced by the end-to-end test scripts (tests/tools/*.sh, tests/samplers/plugin_cli_test.sh) after they set
# $scenario (the ctest scenario) and $dir (its scratch folder):
#   fail <message>              the scenario fails: "FAIL (<scenario>): <message>" on stderr, exit 1
#   expect_rc <rc> <command...> runs the command (stdout in $dir/out.txt, stderr in $dir/err.txt, both echoed) and
#                               fails unless it exits <rc>
fail() { echo "FAIL ($scenario): $*" >&2; exit 1; }
expect_rc() {
  local want=$1; shift
  "$@" >"$dir/out.txt" 2>"$dir/err.txt"; local rc=$?
  cat "$dir/out.txt" "$dir/err.txt"
  [ "$rc" -eq "$want" ] || fail "expected exit $want, got $rc: $*"
}
