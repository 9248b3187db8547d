#!/usr/bin/env python3
"""The test helper fails a test when its command fails: a meta-test on a scratch CMake project.

    helper_meta_test.py --helper <SamplecheckTesting.cmake> --run-with-python <python/run_with_python.sh>
                        --cmake <cmake> --ctest <ctest> --scratch <dir>

Configures a scratch project that includes the given helper and registers, through it, commands whose right
outcome is known: a pytest file with one failing test, a command that prints its pass line and then exits 1 (or dies
of a signal), an expected failure that exits 2 instead of 1, a skip that gives no reason, and the controls that must
pass or skip. It runs ctest there, reads each test's outcome from ctest's JUnit file, and exits 0 only when every
outcome is the expected one; each wrong one is a line "<test>: expected <x>, got <y>". On the helper of cf64453
(tests/testing/old_helper) it exits 1: ctest's PASS_REGULAR_EXPRESSION ignored the exit code.

The pytest cases need a python3 with pytest (run_with_python.sh finds one); without one they skip, and so are
expected to skip.
"""
import argparse
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

FAILED, PASSED, SKIPPED = "failed", "passed", "skipped"


def scratch_project(helper, run_with_python, pytest_dir):
    """The scratch CMakeLists.txt and {test: expected outcome}."""
    expected = {}
    lines = [
        "cmake_minimum_required(VERSION 3.25)",
        "project(helper_meta NONE)",
        "enable_testing()",
        'include("%s")' % helper,
    ]

    def command(name, outcome, cmd, *options):
        expected[name] = outcome
        lines.append("samplecheck_add_command_test(%s COMMAND %s %s LABELS unit TIMEOUT 120)"
                     % (name, cmd, " ".join(options)))

    def bash(script):
        return 'bash -c "%s"' % script

    # The exit code counts even when the pass line is printed.
    command("pass_line_then_exit_1", FAILED, bash("echo 'VERDICT: PASS' && exit 1"), 'PASS_REGEX "VERDICT: PASS"')
    command("pass_line_then_crash", FAILED, bash("echo 'VERDICT: PASS' && kill -SEGV $$"),
            'PASS_REGEX "VERDICT: PASS"')
    command("pass_line_and_exit_0", PASSED, bash("echo 'VERDICT: PASS'"), 'PASS_REGEX "VERDICT: PASS"')
    command("exit_0_without_pass_line", FAILED, bash("echo 'VERDICT: FAIL'"), 'PASS_REGEX "VERDICT: PASS"')
    command("plain_exit_0", PASSED, bash("true"))
    command("plain_exit_1", FAILED, bash("exit 1"))
    # An expected failure names its exit code and its finding's line.
    command("expected_failure_exit_1", PASSED, bash("echo 'FAIL    finding-x' && exit 1"),
            'EXPECT_EXIT 1 PASS_REGEX "FAIL    finding-x"')
    command("expected_failure_exit_2", FAILED, bash("echo 'FAIL    finding-x' && exit 2"),
            'EXPECT_EXIT 1 PASS_REGEX "FAIL    finding-x"')
    command("expected_failure_other_line", FAILED, bash("echo 'FAIL    finding-y' && exit 1"),
            'EXPECT_EXIT 1 PASS_REGEX "FAIL    finding-x"')
    # A runner's failure line fails the test even when the runner exits 0.
    command("failure_line_exit_0", FAILED, bash("echo '1 failed, 3 passed in 0.1s'"),
            'PASS_REGEX " passed" FAIL_REGEX "^[0-9]+ failed"')
    # A skip says why.
    command("skip_with_reason", SKIPPED, bash("echo 'SKIPPED: no widget here' && exit 77"), "SKIP_RETURN_CODE 77")
    command("skip_without_reason", FAILED, bash("exit 77"), "SKIP_RETURN_CODE 77")

    have_pytest = subprocess.run([run_with_python, "pytest", "true"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode == 0
    pytest_cases = [("pytest_one_failing", "test_one_failing.py", FAILED),
                    ("pytest_all_passing", "test_all_passing.py", PASSED),
                    ("pytest_all_skipped", "test_all_skipped.py", SKIPPED)]
    lines.append("if(COMMAND samplecheck_add_pytest)")
    for name, file, outcome in pytest_cases:
        expected[name] = outcome if have_pytest else SKIPPED
        skip = " ALL_SKIPPED_IS_SKIP" if name == "pytest_all_skipped" else ""
        lines.append("  samplecheck_add_pytest(%s PATHS %s LABELS unit%s TIMEOUT 120)"
                     % (name, os.path.join(pytest_dir, file), skip))
    lines.append("else()  # a helper without samplecheck_add_pytest: the registration python.package had at cf64453")
    for name, file, _ in pytest_cases:
        lines.append('  samplecheck_add_command_test(%s COMMAND %s pytest env PYTHONDONTWRITEBYTECODE=1 @PY@ -m pytest '
                     '-p no:cacheprovider -q -rs %s PASS_REGEX " passed" LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)'
                     % (name, run_with_python, os.path.join(pytest_dir, file)))
    lines.append("endif()")
    return "\n".join(lines) + "\n", expected


PYTEST_FILES = {
    "test_one_failing.py": """
        def test_passes():
            assert 1 + 1 == 2

        def test_fails():
            assert 1 + 1 == 3, "this scratch test fails on purpose"
    """,
    "test_all_passing.py": """
        def test_passes():
            assert sorted([3, 1, 2]) == [1, 2, 3]
    """,
    "test_all_skipped.py": """
        import pytest

        def test_needs_a_tree():
            pytest.skip("no engine tree here")
    """,
}


def outcomes(junit):
    got = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            got[case.get("name")] = FAILED
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            got[case.get("name")] = SKIPPED
        else:
            got[case.get("name")] = PASSED
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--helper", "--run-with-python", "--cmake", "--ctest", "--scratch"):
        ap.add_argument(flag, required=True)
    a = ap.parse_args()
    helper = os.path.abspath(a.helper)
    if not os.path.isfile(helper):
        print("FAILED: the helper %s is not a file" % helper)
        return 2
    scratch = os.path.abspath(a.scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    src, build, pytest_dir = (os.path.join(scratch, d) for d in ("src", "build", "py"))
    for d in (src, build, pytest_dir):
        os.makedirs(d)
    for name, text in PYTEST_FILES.items():
        with open(os.path.join(pytest_dir, name), "w") as f:
            f.write(textwrap.dedent(text).lstrip())
    cmakelists, expected = scratch_project(helper, os.path.abspath(a.run_with_python), pytest_dir)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(cmakelists)
    configure = subprocess.run([a.cmake, "-S", src, "-B", build], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
    if configure.returncode != 0:
        print(configure.stdout)
        print("FAILED: the scratch project (%s) does not configure with %s" % (src, helper))
        return 1
    junit = os.path.join(build, "junit.xml")
    run = subprocess.run([a.ctest, "--output-junit", junit, "--output-on-failure", "-j2"], cwd=build,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
    got = outcomes(junit)
    wrong = []
    print("helper: %s" % helper)
    for name in sorted(expected):
        outcome = got.get(name, "not registered")
        mark = "ok   " if outcome == expected[name] else "WRONG"
        print("%s %s: expected %s, got %s" % (mark, name, expected[name], outcome))
        if outcome != expected[name]:
            wrong.append(name)
    if wrong:
        print(run.stdout[-6000:])
        print("FAILED: %d of %d tests of the scratch project have the wrong outcome under %s: %s (reproduce: %s)"
              % (len(wrong), len(expected), helper, ", ".join(wrong), " ".join(sys.argv)))
        return 1
    print("PASS: all %d tests of the scratch project have the expected outcome" % len(expected))
    return 0


if __name__ == "__main__":
    sys.exit(main())
