#!/usr/bin/env python3
"""Runs one command test for ctest and decides its result from the exit code AND the output, never one alone.

    run_test.py [--expect-exit N] [--expect RE]... [--fail-on RE]... [--skip-code N [--skip-if RE]] -- command...

The command's stdout and stderr are streamed through (ctest -V shows them as they come) and kept. The test passes
(exit 0) only when, in this order:
  1. the command exited with N (default 0; a death by a signal is never an exit code);
  2. no --fail-on pattern is in the output (a runner's failure line: pytest's "1 failed", "VERDICT: FAIL");
  3. every --expect pattern is (the line that says the command did what the test is about).
A test that expects a failure says so: --expect-exit 1 and --expect for the finding's line.

Skips: with --skip-code C, the command exiting C is reported as skipped (this exits C; ctest's SKIP_RETURN_CODE is
C) only when it printed a line "SKIPPED: <why>": a skip says why. With --skip-if RE too, a run that satisfies 1 and
2 and whose output holds RE is a skip as well (pytest's "16 skipped in 0.1s": every test skipped itself).

Patterns are Python regular expressions searched in the whole output with re.MULTILINE (^ and $ at every line). On a
failure this prints one line "run_test: FAILED: <why>" and the command to reproduce it, and exits 1; on success
"run_test: passed (<what was required>)".
"""
import os
import re
import shlex
import signal
import subprocess
import sys

SKIP_LINE = re.compile(r"^SKIPPED: \S", re.MULTILINE)


def parse(argv):
    if "--" not in argv:
        raise SystemExit("run_test: usage: run_test.py [options] -- command...")
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1:]
    if not command:
        raise SystemExit("run_test: no command after --")
    spec = {"exit": 0, "expect": [], "fail_on": [], "skip_code": None, "skip_if": None}
    i = 0
    while i < len(opts):
        flag = opts[i]
        if i + 1 >= len(opts):
            raise SystemExit("run_test: %s needs a value" % flag)
        value = opts[i + 1]
        if flag == "--expect-exit":
            spec["exit"] = int(value)
        elif flag == "--expect":
            spec["expect"].append(value)
        elif flag == "--fail-on":
            spec["fail_on"].append(value)
        elif flag == "--skip-code":
            spec["skip_code"] = int(value)
        elif flag == "--skip-if":
            spec["skip_if"] = value
        else:
            raise SystemExit("run_test: unknown option %s (allowed: --expect-exit, --expect, --fail-on, --skip-code, "
                             "--skip-if)" % flag)
        i += 2
    if spec["skip_if"] is not None and spec["skip_code"] is None:
        raise SystemExit("run_test: --skip-if needs --skip-code")
    for pattern in spec["expect"] + spec["fail_on"] + ([spec["skip_if"]] if spec["skip_if"] else []):
        try:
            re.compile(pattern)
        except re.error as e:
            raise SystemExit("run_test: pattern %r is not a regular expression: %s" % (pattern, e))
    return spec, command


def run(command):
    """Streams the command's merged output through and returns (exit code or -signal, output text)."""
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        return None, "run_test: cannot start %s: %s\n" % (command[0], e)

    def forward(signum, _frame):
        child.send_signal(signum)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    kept = []
    out = sys.stdout.buffer
    while True:
        chunk = child.stdout.read1(65536) if hasattr(child.stdout, "read1") else child.stdout.read(4096)
        if not chunk:
            break
        out.write(chunk)
        out.flush()
        kept.append(chunk)
    return child.wait(), b"".join(kept).decode("utf-8", errors="replace")


def judge(spec, rc, output):
    """(exit code of this script, message)."""
    if rc is None:
        return 1, "FAILED: the command could not be started"
    if rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.valid_signals() else str(-rc)
        return 1, "FAILED: the command was killed by signal %s (%d)" % (name, -rc)
    if spec["skip_code"] is not None and rc == spec["skip_code"]:
        found = SKIP_LINE.search(output)
        if found:
            return rc, "skipped (exit %d): %s" % (rc, _line_of(output, found)[len("SKIPPED: "):])
        return 1, "FAILED: exit %d (the skip code) without a line 'SKIPPED: <why>': a skip must say why" % rc
    if rc != spec["exit"]:
        return 1, "FAILED: exit code %d, expected %d" % (rc, spec["exit"])
    for pattern in spec["fail_on"]:
        found = re.search(pattern, output, re.MULTILINE)
        if found:
            return 1, "FAILED: the output has a failure line /%s/: %s" % (pattern, _line_of(output, found))
    if spec["skip_if"] is not None:
        found = re.search(spec["skip_if"], output, re.MULTILINE)
        if found:
            return spec["skip_code"], "skipped: %s" % _line_of(output, found)
    for pattern in spec["expect"]:
        if not re.search(pattern, output, re.MULTILINE):
            return 1, "FAILED: exit %d as expected, but the output lacks /%s/" % (rc, pattern)
    required = ["exit %d" % spec["exit"]] + ["/%s/" % p for p in spec["expect"]]
    if spec["fail_on"]:
        required.append("no " + " or ".join("/%s/" % p for p in spec["fail_on"]))
    return 0, "passed (%s)" % ", ".join(required)


def _line_of(output, match):
    start = output.rfind("\n", 0, match.start()) + 1
    end = output.find("\n", match.end())
    return output[start:end if end >= 0 else len(output)].strip()[:300]


def main():
    spec, command = parse(sys.argv[1:])
    rc, output = run(command)
    if rc is None:
        sys.stdout.write(output)
    code, message = judge(spec, rc, output)
    if output and not output.endswith("\n"):
        sys.stdout.write("\n")
    sys.stdout.write("run_test: %s\n" % message)
    if code == 1:
        sys.stdout.write("run_test: reproduce: (cd %s && %s)\n" % (shlex.quote(os.getcwd()), shlex.join(command)))
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
