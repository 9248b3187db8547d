"""check(): run the samplecheck program on a Python sampler (or any sampler spec) and read its report back.

A callable or a Sampler is served from this process: samplecheck starts a small relay process (_relay.py) that
joins its stdin/stdout to a Unix socket here, and a thread of this process answers the protocol with the callable, so
the callable keeps its state (a loaded model, a CUDA context) and needs no file of its own.
"""
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

from .serving import Sampler, serve_streams

BIN_VARIABLE = "SAMPLECHECK_BIN"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class SamplecheckNotFound(RuntimeError):
    pass


def _executable(path):
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def find_program(bin=None):
    """The samplecheck program: `bin`, else $SAMPLECHECK_BIN, else next to the package (<package>/bin/samplecheck,
    as an installation may place it), else on PATH, else the build trees of the clone the package is in
    (<clone>/build/<preset>/tools/samplecheck). SamplecheckNotFound names every place looked at."""
    looked = []
    for label, path in (("bin=", bin), ("$" + BIN_VARIABLE, os.environ.get(BIN_VARIABLE))):
        if path:
            if _executable(path):
                return os.path.abspath(path)
            raise SamplecheckNotFound("%s%s is not an executable file" % (label, path))
    beside = os.path.join(_PACKAGE_DIR, "bin", "samplecheck")
    looked.append(beside)
    if _executable(beside):
        return beside
    on_path = shutil.which("samplecheck")
    looked.append("PATH")
    if on_path:
        return on_path
    clone_build = os.path.join(os.path.dirname(os.path.dirname(_PACKAGE_DIR)), "build")
    if os.path.isdir(clone_build):
        for preset in ["default", "cpu", "gpu"] + sorted(os.listdir(clone_build)):
            candidate = os.path.join(clone_build, preset, "tools", "samplecheck")
            if candidate not in looked:
                looked.append(candidate)
            if _executable(candidate):
                return candidate
    raise SamplecheckNotFound("the samplecheck program was not found (looked at $%s, %s); build it (cmake --preset "
                              "cpu && cmake --build --preset cpu --target samplecheck samplecheck-plugin-host) and "
                              "set %s to its path" % (BIN_VARIABLE, ", ".join(looked), BIN_VARIABLE))


class CaseResult:
    """One judged case of the report: name, status (pass, fail, skipped, error), reason, p_value, draws, params."""
    __slots__ = ("name", "status", "reason", "p_value", "draws", "params")

    def __init__(self, case):
        self.name, self.status = case.get("name", "?"), case.get("status", "?")
        self.reason, self.p_value = case.get("reason", ""), case.get("holm_adjusted_p", case.get("p_value"))
        self.draws, self.params = case.get("draws"), case.get("params")

    def __repr__(self):
        return "%s: %s%s" % (self.name, self.status, (" (%s)" % self.reason) if self.reason else "")


class CheckResult:
    """What check() found: `verdict` ("pass", "fail", or "error" when samplecheck refused to run: exit 2),
    `passed`, `failing` (CaseResult of every failed or errored case, then skipped ones when they fail the verdict),
    `problems` (the report's verdict_problems), `cases` (every CaseResult), `report` and `html` (paths), `output`
    (samplecheck's stdout: the summary), `stderr`, `exit_code`, `error` (samplecheck's message on exit 2),
    `command` (the argument list)."""

    def __init__(self, command, exit_code, output, stderr, report, html):
        self.command, self.exit_code, self.output, self.stderr = command, exit_code, output, stderr
        self.report, self.html = report, html
        self.cases, self.problems, self.data = [], [], None
        if report and os.path.isfile(report):
            with open(report, encoding="utf-8") as f:
                self.data = json.load(f)
            self.cases = [CaseResult(c) for c in self.data.get("cases", [])]
            self.problems = list(self.data.get("verdict_problems", []))
        if exit_code == 0 and self.data is not None and self.data.get("verdict") == "pass":
            self.verdict = "pass"
        elif exit_code in (0, 1, 130, 143) and self.data is not None:
            self.verdict = "fail"
        else:
            self.verdict = "error"
        self.error = "" if self.verdict != "error" else (stderr.strip() or output.strip() or
                                                         "samplecheck exited with status %d" % exit_code)
        bad = [c for c in self.cases if c.status in ("fail", "error")]
        self.failing = bad + [c for c in self.cases if c.status == "skipped" and self.verdict == "fail"]

    @property
    def passed(self):
        return self.verdict == "pass"

    @property
    def capped(self):
        """'' for a run at the suite's power; else what the cap left: "lowest power 0.43 at TV 0.01 (minp, 300
        draws of 179935 planned), --max-draws 300" from the report's per-case plans."""
        if not self.data or self.data.get("max_draws_override") in (None, 0):
            return ""
        plans = [(c.get("plan") or {}, c.get("name", "?"), c.get("draws", 0)) for c in self.data.get("cases", [])
                 if c.get("status") not in ("skipped", "error") and (c.get("plan") or {}).get("achieved_power")
                 is not None]
        below = [p for p in plans if p[0]["achieved_power"] < self.data.get("power", 0.99)]
        if not below:
            return ""
        plan, name, draws = min(below, key=lambda p: p[0]["achieved_power"])
        return "lowest power %.2g at TV %g (%s, %s draws of %s planned), --max-draws %s" % (
            plan["achieved_power"], plan.get("tv", 0), name, draws, plan.get("planned_draws", "?"),
            self.data["max_draws_override"])

    def __bool__(self):
        return self.passed

    def _headline(self):
        if self.verdict == "error":
            return "ERROR (exit %d): %s" % (self.exit_code, self.error.splitlines()[-1] if self.error else "")
        counts = (self.data or {}).get("counts", {})
        total = counts.get("cases", len(self.cases))
        if self.verdict == "pass":
            capped = self.capped
            return "PASS: %s cases%s" % (total, " (capped: %s)" % capped if capped else "")
        head = "FAIL: %d of %s cases failed" % (len(self.failing), total)
        if self.failing:
            names = [c.name for c in self.failing[:8]]
            more = len(self.failing) - len(names)
            head += ": " + ", ".join(names) + (" and %d more" % more if more else "")
        elif self.problems:
            head += " (%s)" % "; ".join(self.problems)
        return head

    def __repr__(self):
        # Short, the failing cases' names first: pytest shows it in `assert result.passed` and cuts a long repr in
        # the middle. summary() has each case's reason.
        return "CheckResult(%s%s)" % (self._headline(), "; report " + self.report if self.data is not None else "")

    def summary(self):
        """Several lines: the verdict, each failing case with its reason, the verdict's problems, the reports."""
        lines = ["samplecheck " + self._headline()]
        lines += ["  %r" % c for c in self.failing]
        lines += ["  not a pass: %s" % p for p in self.problems if self.verdict != "pass"]
        if self.report:
            lines.append("  report: %s%s" % (self.report, ("  html: %s" % self.html) if self.html else ""))
        lines.append("  command: %s" % " ".join(shlex.quote(a) for a in self.command))
        return "\n".join(lines)

    def assert_passed(self):
        """Raises AssertionError with summary() unless the verdict is pass."""
        if not self.passed:
            raise AssertionError(self.summary())
        return self


class _InProcessServer:
    """Serves a Sampler from this process to the relay processes samplecheck starts (one per --jobs worker)."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.dir = tempfile.mkdtemp(prefix="samplecheck-serve-")
        self.path = os.path.join(self.dir, "socket")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(16)
        self.threads = []
        self.accepting = threading.Thread(target=self._accept, daemon=True)
        self.accepting.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn):
        try:
            with conn, conn.makefile("rb") as rfile, conn.makefile("wb") as wfile:
                serve_streams(self.sampler, rfile, wfile)
        except OSError:  # the relay is gone (samplecheck killed it: a deadline passed) while an answer was pending
            pass

    def spec(self, kind="process"):
        relay = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_relay.py")
        return "%s:exec %s -I %s %s" % (kind, shlex.quote(sys.executable), shlex.quote(relay), shlex.quote(self.path))

    def close(self):
        try:
            self.listener.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
        # A thread still inside a callable (one samplecheck gave up on: its deadline passed) ends when the callable
        # returns and finds its socket closed; it is a daemon thread and holds nothing of the result.


def _as_sampler(obj, role):
    if isinstance(obj, Sampler):
        return obj
    if callable(obj):
        name = getattr(obj, "__name__", "python")
        return Sampler(verify=obj, name=name) if role == "verifier" else Sampler(obj, name=name)
    raise TypeError("%s=%r: give a callable, a samplecheck.Sampler, or a sampler spec string" % (role, obj))


def check(sampler=None, suite=None, profile=None, *, verifier=None, properties=False, max_draws=None, seed=None,
          jobs=1, allow_skipped=False, timeout_s=None, report_dir=None, bin=None, args=(), env=None, timeout=None,
          full_power=False):
    """Runs samplecheck on a sampler (`samplecheck verify`: the suite's campaign, and with properties=True the
    RapidCheck property suites too) or on a verifier (`samplecheck run --verifier` of a spec suite), and returns a
    CheckResult.

    sampler / verifier: a callable (served as Sampler(callable): sample(logits, params), or verify(call) for a
        verifier), a samplecheck.Sampler, or a spec string for --sampler / --verifier ("exact",
        "process:python3 my_client.py", "plugin:./lib.so").
    suite: a built-in suite or a suite file (default smoke, spec-smoke with a verifier); profile: the judged profile
        (default: the suite's, else the sampler's); max_draws, seed, jobs, allow_skipped: the options of the same
        names; timeout_s sets SAMPLECHECK_PROCESS_TIMEOUT_S (each request's deadline); args: more arguments.
    A capped check is a capped check: with max_draws and not full_power, cases below the suite's power are judged
        at the power they reached (--allow-underpowered) and the result says so (`capped`, "PASS (capped: lowest
        power ... at TV ...)"); full_power=True refuses such a run as underpowered, as samplecheck does by default.
    report_dir: where report.json and report.html go (default: a new temporary folder, kept); bin: the program
        (default find_program()); timeout: seconds before samplecheck itself is killed (default none).
    `verify` rather than `run`: the same campaign and verdict, without the plan's throughput probe (1280 draws of the
    suite's longest row, which would dominate a check capped at a few hundred draws) and without a journal."""
    program = find_program(bin)
    if (sampler is None) == (verifier is None):
        raise ValueError("check() needs exactly one of sampler and verifier")
    role, target = ("verifier", verifier) if verifier is not None else ("sampler", sampler)
    if role == "verifier" and properties:
        raise ValueError("properties=True checks a sampler; a verifier is checked by its spec suite")
    command = "run" if role == "verifier" else "verify"
    suite = suite or ("spec-smoke" if role == "verifier" else "smoke")
    report_dir = report_dir or tempfile.mkdtemp(prefix="samplecheck-report-")
    os.makedirs(report_dir, exist_ok=True)
    report, html = os.path.join(str(report_dir), "report.json"), os.path.join(str(report_dir), "report.html")
    server = None
    if isinstance(target, str):
        spec = target
    else:
        # A verifier without verify() is served anyway: samplecheck refuses it at start (exit 2, "its HELLO does not
        # set the VERIFY capability bit"), the error the user should see.
        server = _InProcessServer(_as_sampler(target, role))
        spec = server.spec()
    argv = [program, command, "--suite", suite, "--%s" % role, spec, "--report", report]
    if "--progress" not in args:
        argv += ["--progress", "none"]
    if role == "sampler":
        argv += ["--html", html] + ([] if properties else ["--no-properties"])
    if profile:
        argv += ["--profile", profile]
    if max_draws is not None:
        argv += ["--max-draws", str(int(max_draws))]
        if not full_power and "--allow-underpowered" not in args:
            argv.append("--allow-underpowered")
    if seed is not None:
        argv += ["--seed", str(int(seed))]
    if jobs is not None:
        argv += ["--jobs", str(int(jobs))]
    if allow_skipped:
        argv.append("--allow-skipped")
    argv += [str(a) for a in args]
    run_env = dict(os.environ if env is None else env)
    if timeout_s is not None:
        run_env["SAMPLECHECK_PROCESS_TIMEOUT_S"] = str(timeout_s)
    if os.path.exists(report):
        os.remove(report)
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    finally:
        if server is not None:
            server.close()
    return CheckResult(argv, done.returncode, done.stdout.decode("utf-8", "replace"),
                       done.stderr.decode("utf-8", "replace"), report, html if os.path.isfile(html) else None)
