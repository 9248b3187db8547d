#!/usr/bin/env python3
"""Every registered ctest decides its result from its command's exit code, never from its output alone.

    check_registrations.py <build dir> <ctest> <run_test.py>

Reads `ctest --show-only=json-v1` of the build and checks each test:
  - PASS_REGULAR_EXPRESSION, FAIL_REGULAR_EXPRESSION and WILL_FAIL are never set: the first makes ctest ignore the
    exit code, the last passes any non-zero exit. Output checks and expected failures go through cmake/run_test.py
    (samplecheck_add_command_test's EXPECT_EXIT, PASS_REGEX, FAIL_REGEX).
  - a GoogleTest case (gtest_discover_tests: --gtest_filter in its command) may set SKIP_REGULAR_EXPRESSION to the
    GoogleTest skip marker only, which GoogleTest prints for a test that skipped and did not fail;
  - every other test runs through run_test.py; one with SKIP_RETURN_CODE passes the same code as --skip-code, so
    the exit is a skip only with a "SKIPPED: <why>" line.
Prints one line per wrong registration and a count; exits 1 when any is wrong or no test is found.
"""
import json
import os
import subprocess
import sys

GTEST_SKIP = "\\[  SKIPPED \\]"


def main():
    build, ctest, run_test = sys.argv[1], sys.argv[2], os.path.realpath(sys.argv[3])
    out = subprocess.run([ctest, "--show-only=json-v1"], cwd=build, check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    wrong, counts = [], {"gtest": 0, "command": 0, "skippable": 0}
    tests = json.loads(out)["tests"]
    for test in tests:
        name, command = test["name"], test.get("command", [])
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        for banned in ("PASS_REGULAR_EXPRESSION", "FAIL_REGULAR_EXPRESSION", "WILL_FAIL"):
            if banned in props:
                wrong.append("%s: sets %s = %r" % (name, banned, props[banned]))
        is_gtest = any(arg.startswith("--gtest_filter=") for arg in command)
        skip_regex = props.get("SKIP_REGULAR_EXPRESSION")
        if is_gtest:
            counts["gtest"] += 1
            if skip_regex is not None and set(skip_regex) != {GTEST_SKIP}:
                wrong.append("%s: a GoogleTest case with SKIP_REGULAR_EXPRESSION %r (only the GoogleTest marker)"
                             % (name, skip_regex))
            continue
        counts["command"] += 1
        if skip_regex is not None:
            wrong.append("%s: SKIP_REGULAR_EXPRESSION %r overrides the exit code (use SKIP_RETURN_CODE and a "
                         "'SKIPPED: <why>' line, or SKIP_REGEX)" % (name, skip_regex))
        if len(command) < 2 or os.path.realpath(command[1]) != run_test:
            wrong.append("%s: not run through %s (register it with samplecheck_add_command_test): %s"
                         % (name, run_test, " ".join(command[:3])))
            continue
        wrapper_args = command[2:command.index("--")] if "--" in command else []
        if "SKIP_RETURN_CODE" in props:
            counts["skippable"] += 1
            code = str(props["SKIP_RETURN_CODE"])
            pairs = dict(zip(wrapper_args[::2], wrapper_args[1::2]))
            if pairs.get("--skip-code") != code:
                wrong.append("%s: SKIP_RETURN_CODE %s without run_test.py --skip-code %s" % (name, code, code))
    for line in wrong:
        print("FAIL", line)
    print("%d tests checked (%d GoogleTest cases, %d commands through run_test.py, %d of them skippable): %d "
          "registered wrongly" % (len(tests), counts["gtest"], counts["command"], counts["skippable"], len(wrong)))
    return 1 if wrong or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
