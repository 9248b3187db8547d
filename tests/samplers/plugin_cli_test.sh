#!/usr/bin/env bash
# Isolated plugins through the samplecheck program, one scenario per ctest test (tests/samplers/CMakeLists.txt):
#   plugin_cli_test.sh <scenario> <scratch> <samplecheck> <fatal plugin> <example plugin> <build dir> <cmake>
# The fatal plugin (plugins/fatal_plugin.cpp) exits, segfaults or hangs where its config says.
set -uo pipefail
scenario=$1; dir=$2/$scenario; bin=$3; fatal=$4; example=$5; build=$6; cmake=$7
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=../lib/expect.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/expect.sh"
expect_text() {  # expect_text <file> <fixed string>
  grep -qF -- "$2" "$1" || fail "'$2' not in $1"
}
# A stand-in for the plugin host that says who it is and exits 3.
fake_host() {
  printf '#!/bin/sh\necho "%s ran with $1" >&2\nexit 3\n' "$2" >"$1"
  chmod +x "$1"
}
smoke() { local b=$1; shift; "$b" run --suite smoke --profile vllm --seed 1 --progress none "$@"; }

case "$scenario" in
  exit_fails_cases)
    # _exit(0) inside count_draws: in process this ends samplecheck with status 0 and no verdict; isolated it fails
    # every case with the cause, and the report is written.
    expect_rc 1 smoke "$bin" --sampler "plugin:$fatal:exit-in-count" --report "$dir/r.json"
    expect_text "$dir/out.txt" "VERDICT: FAIL"
    expect_text "$dir/out.txt" "plugin:fatal:exit-in-count ($fatal, isolated)"
    expect_text "$dir/out.txt" "exited with status 0"
    expect_text "$dir/r.json" "exited with status 0"
    ;;
  segfault_fails_cases)
    expect_rc 1 smoke "$bin" --sampler "plugin:$fatal:segfault-in-count" --report "$dir/r.json"
    expect_text "$dir/out.txt" "VERDICT: FAIL"
    expect_text "$dir/out.txt" "killed by signal 11"
    expect_text "$dir/r.json" "killed by signal 11"
    ;;
  segfault_in_identify)
    # identify calls a crash a crash: no profile fails, so a sampler that dies answers no profile (exit 1), and the
    # probes say FAILED with the signal, never "rejected the params" (an answer some profiles give).
    expect_rc 1 "$bin" identify --sampler "plugin:$fatal:segfault-in-count" --draws 1000 --json "$dir/i.json"
    expect_text "$dir/out.txt" "(the sampler FAILED: not a rejection)"
    expect_text "$dir/out.txt" "drawn      FAILED: plugin error: "
    expect_text "$dir/out.txt" "killed by signal 11"
    expect_text "$dir/out.txt" "consistent with: no profile (the sampler failed on every probe"
    grep -q "rejected the params" "$dir/out.txt" && fail "a crash reads as a rejection of the params"
    expect_text "$dir/i.json" '"sampler_failed": true'
    ;;
  hang_fails_cases)
    # The deadline under test: 2 s (the first case waits for it; the sampler then fails every case at once).
    SAMPLECHECK_PROCESS_TIMEOUT_S=2 expect_rc 1 smoke "$bin" --sampler "plugin:$fatal:hang-in-count" \
      --report "$dir/r.json"
    expect_text "$dir/out.txt" "VERDICT: FAIL"
    expect_text "$dir/out.txt" "did not answer in time while answering COUNT: the deadline of 2 s passed"
    ;;
  example_same_verdicts)
    # The example plugin, correct and with its bugs, gives the same output isolated and in process (but for the
    # timings): same verdicts, cases, p-values and messages.
    expect_rc 0 "$bin" list
    expect_text "$dir/out.txt" "plugin:<path.so>[:config]"
    expect_text "$dir/out.txt" "plugin-inproc:<path.so>[:config]"
    for config in "" ":bug=no-renorm" ":bug=out-of-range" ":bug=error" ":bug=miscount"; do
      for kind in plugin plugin-inproc; do
        smoke "$bin" --sampler "$kind:$example$config" --report "$dir/$kind.json" >"$dir/$kind.txt" 2>&1
        echo "$?" >>"$dir/$kind.txt"
        # timings, the report path and the replay files named after it differ by nature
        sed -E -e 's/[0-9.e+]+ draws in [0-9.e+-]+ s/N draws in T s/' -e '/^report:/d' -e '/^ *reproduce: /d' -e '/^replay /d' \
          -e 's/ in [0-9.]+ s\b/ in T s/g' \
          "$dir/$kind.txt" >"$dir/$kind.norm"
      done
      cat "$dir/plugin.txt"
      diff "$dir/plugin-inproc.norm" "$dir/plugin.norm" || fail "config '$config': isolated and in-process differ"
    done
    ;;
  host_next_to_samplecheck)
    # A samplecheck with no build tree nearby finds the host next to itself (an installed samplecheck: bin/). The
    # stand-in host proves which one ran.
    mkdir -p "$dir/bin"
    cp "$bin" "$dir/bin/samplecheck"
    fake_host "$dir/bin/samplecheck-plugin-host" "the host next to samplecheck"
    expect_rc 2 smoke "$dir/bin/samplecheck" --sampler "plugin:$example"
    expect_text "$dir/err.txt" "the host next to samplecheck ran with $example"
    ;;
  host_from_variable)
    fake_host "$dir/my-host" "the host of SAMPLECHECK_PLUGIN_HOST"
    SAMPLECHECK_PLUGIN_HOST="$dir/my-host" expect_rc 2 smoke "$bin" --sampler "plugin:$example"
    expect_text "$dir/err.txt" "the host of SAMPLECHECK_PLUGIN_HOST ran with $example"
    SAMPLECHECK_PLUGIN_HOST="$dir/missing" expect_rc 2 smoke "$bin" --sampler "plugin:$example"
    expect_text "$dir/err.txt" "SAMPLECHECK_PLUGIN_HOST = '$dir/missing' does not name an executable file"
    ;;
  bad_timeout_variable)
    for value in abc 0 -1 inf 1e20 ""; do
      SAMPLECHECK_PROCESS_TIMEOUT_S="$value" expect_rc 2 smoke "$bin" --sampler "process:cat"
      expect_text "$dir/err.txt" "SAMPLECHECK_PROCESS_TIMEOUT_S = '$value'"
      expect_text "$dir/err.txt" "(0, 86400]"
      SAMPLECHECK_PROCESS_TIMEOUT_S="$value" expect_rc 2 smoke "$bin" --sampler "plugin:$example"
      expect_text "$dir/err.txt" "SAMPLECHECK_PROCESS_TIMEOUT_S = '$value'"
    done
    ;;
  installed_samplecheck)
    # cmake --install puts the host next to samplecheck, and the installed samplecheck runs isolated plugins with it.
    "$cmake" --install "$build" --prefix "$dir/prefix" >"$dir/install.log" || fail "cmake --install failed"
    [ -x "$dir/prefix/bin/samplecheck-plugin-host" ] || fail "no bin/samplecheck-plugin-host installed"
    expect_rc 0 smoke "$dir/prefix/bin/samplecheck" --sampler "plugin:$example" --max-draws 20000 --allow-underpowered
    expect_text "$dir/out.txt" "VERDICT: PASS"
    # The installed host is the one that runs (not the build tree's): replaced by a stand-in, the stand-in runs.
    fake_host "$dir/prefix/bin/samplecheck-plugin-host" "the installed host"
    expect_rc 2 smoke "$dir/prefix/bin/samplecheck" --sampler "plugin:$example"
    expect_text "$dir/err.txt" "the installed host ran with $example"
    ;;
  *)
    fail "unknown scenario"
    ;;
esac
echo "PASS ($scenario)"
