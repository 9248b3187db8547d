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


# The first failing case's reason in the one-line headline (repr) is cut to this many characters; summary() has it
# whole.
REASON_CHARS = 160


def _shortened(text, limit):
    """`text` on one line (whitespace runs as one space), cut to `limit` characters with "..." when longer."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 3].rstrip() + "..."


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
            first = self.failing[0]
            head += " \u2014 %s: %s" % (first.name, _shortened(first.reason or first.status, REASON_CHARS))
        elif self.problems:
            head += " (%s)" % _shortened("; ".join(self.problems), REASON_CHARS)
        return head

    def __repr__(self):
        # One line, the failing cases' names and the first one's reason (shortened) first: pytest shows it in
        # `assert result.passed` and cuts a long repr in the middle. summary() has every case's reason.
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
        if role in ("engine", "trainer") and obj.logprobs is None:
            raise ValueError("%s=%s has no logprobs callable: a replay side answers LOGPROBS_BATCH, the processed "
                             "logprobs of a batch (samplecheck.Sampler(logprobs=...), docs/replay.md)" %
                             (role, _described(obj)))
        return obj
    if callable(obj):
        name = getattr(obj, "__name__", "python")
        if role == "verifier":
            return Sampler(verify=obj, name=name)
        if role in ("engine", "trainer"):
            return Sampler(logprobs=obj, name=name)
        return Sampler(obj, name=name)
    raise TypeError("%s=%r: give a callable, a samplecheck.Sampler, or a %s spec string" %
                    (role, obj, "replay source" if role in ("engine", "trainer") else role))


# What a report records as its command when check() or check_replay() served a callable: samplecheck's own line would
# name the relay (a socket of a process that is gone). Read by samplecheck's run session (harness/session).
RECORDED_COMMAND_VARIABLE = "SAMPLECHECK_RECORDED_COMMAND"
# samplecheck's options that say where results go, not what they are (left out of the recorded command).
_OUTPUT_OPTIONS = ("--report", "--html", "--progress")


def _name_of(fn):
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:
        return type(fn).__name__ + " object"
    return "%s.%s" % (module, name) if module and module not in ("__main__", "builtins") else name


class _Code(str):
    """Text shown as it is in a recorded Python call (a callable's name), not as a quoted string."""

    def __repr__(self):
        return str(self)


def _described(obj):
    """A served target as a reader can find it: the callable's module and qualified name, or a Sampler's callables
    and options ("Sampler(sample=ten_lines.sample, name='ten-lines', device='cpu')")."""
    if isinstance(obj, str):
        return obj
    if not isinstance(obj, Sampler):
        return _Code(_name_of(obj))
    parts = ["%s=%s" % (k, _name_of(getattr(obj, k))) for k in ("sample", "logprobs", "verify", "count", "validate")
             if callable(getattr(obj, k))]
    parts += ["%s=%r" % (k, getattr(obj, k)) for k, default in (("name", "python"), ("tensors", "auto"),
                                                                   ("device", "auto"), ("labels", False))
              if getattr(obj, k) not in (default, None)]
    return _Code("samplecheck.Sampler(%s)" % ", ".join(parts))


def _caller():
    """file:line of the code that called check() (the first frame outside this package and pytest's plugin)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame = frame.f_back
    return "%s:%d" % (frame.f_code.co_filename, frame.f_lineno) if frame is not None else "?"


def _recorded_command(call, argv, served):
    """The command line a report of a served callable records: the Python call, where it was made, and samplecheck's
    options with each relay spec as the callable it served."""
    shown = []
    skip = False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        if a in _OUTPUT_OPTIONS:
            skip = True
            continue
        shown.append(served.get(a, shlex.quote(a)))
    return "%s from Python (%s, called at %s); samplecheck %s" % (call, sys.executable, _caller(), " ".join(shown))


def _quoted(text):
    """A shell word for text: in double quotes when it holds no character the shell reads there (a description with
    Python's single-quoted strings reads as it is), else shlex's single quotes."""
    return '"%s"' % text if not any(c in text for c in '"$`\\!') else shlex.quote(text)


def _python_call(function, positional, keywords):
    """"samplecheck.check(ten_lines.sample, suite='smoke', max_draws=300)": the given arguments only."""
    shown = [(k, v) for k, v in keywords if v is not None and v is not False and not (isinstance(v, tuple) and not v)]
    args = [repr(a) for a in positional] + ["%s=%r" % (k, v) for k, v in shown]
    return "samplecheck.%s(%s)" % (function, ", ".join(args))


def _run(argv, servers, call, report, html, env, timeout_s, timeout):
    """Runs samplecheck (argv) with the in-process servers open, and reads its report back."""
    run_env = dict(os.environ if env is None else env)
    if timeout_s is not None:
        run_env["SAMPLECHECK_PROCESS_TIMEOUT_S"] = str(timeout_s)
    if servers:
        served = {server.spec(): _quoted("<%s, served from Python>" % what) for server, what in servers}
        run_env[RECORDED_COMMAND_VARIABLE] = _recorded_command(call, argv, served)
    if os.path.exists(report):
        os.remove(report)
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    finally:
        for server, _ in servers:
            server.close()
    return CheckResult(argv, done.returncode, done.stdout.decode("utf-8", "replace"),
                       done.stderr.decode("utf-8", "replace"), report, html if html and os.path.isfile(html) else None)


def _report_paths(report_dir):
    report_dir = str(report_dir or tempfile.mkdtemp(prefix="samplecheck-report-"))
    os.makedirs(report_dir, exist_ok=True)
    return os.path.join(report_dir, "report.json"), os.path.join(report_dir, "report.html")


def _case_names(case):
    names = [case] if isinstance(case, str) else list(case or ())
    for n in names:
        if not isinstance(n, str) or not n:
            raise TypeError("case=%r: give a case name or a list of case names" % (case,))
    return names


def check(sampler=None, suite=None, profile=None, *, verifier=None, properties=False, max_draws=None, seed=None,
          jobs=1, allow_skipped=False, timeout_s=None, report_dir=None, bin=None, args=(), env=None, timeout=None,
          full_power=False, case=None):
    """Runs samplecheck on a sampler (`samplecheck verify`: the suite's campaign, and with properties=True the
    RapidCheck property suites too) or on a verifier (`samplecheck run --verifier` of a spec suite), and returns a
    CheckResult.

    sampler / verifier: a callable (served as Sampler(callable): sample(logits, params), or verify(call) for a
        verifier), a samplecheck.Sampler, or a spec string for --sampler / --verifier ("exact",
        "process:python3 my_client.py", "plugin:./lib.so").
    suite: a built-in suite or a suite file (default smoke, spec-smoke with a verifier); profile: the judged profile
        (default: the suite's, else the sampler's); max_draws, seed, jobs, allow_skipped: the options of the same
        names; case: a case name or a list of them (`--case NAME` each: only those cases of the suite);
        timeout_s sets SAMPLECHECK_PROCESS_TIMEOUT_S (each request's deadline); args: more arguments.
    A capped check is a capped check: with max_draws and not full_power, cases below the suite's power are judged
        at the power they reached (--allow-underpowered) and the result says so (`capped`, "PASS (capped: lowest
        power ... at TV ...)"); full_power=True refuses such a run as underpowered, as samplecheck does by default.
    report_dir: where report.json and report.html go (default: a new temporary folder, kept); bin: the program
        (default find_program()); timeout: seconds before samplecheck itself is killed (default none).
    `verify` rather than `run`: the same campaign and verdict, without the plan's throughput probe (1280 draws of the
    suite's longest row, which would dominate a check capped at a few hundred draws) and without a journal.
    A callable or Sampler is served from this process; its report records the Python call and the callable's name
    as its command (SAMPLECHECK_RECORDED_COMMAND), not the relay's."""
    program = find_program(bin)
    if (sampler is None) == (verifier is None):
        raise ValueError("check() needs exactly one of sampler and verifier")
    role, target = ("verifier", verifier) if verifier is not None else ("sampler", sampler)
    if role == "verifier" and properties:
        raise ValueError("properties=True checks a sampler; a verifier is checked by its spec suite")
    cases = _case_names(case)
    command = "run" if role == "verifier" else "verify"
    suite = suite or ("spec-smoke" if role == "verifier" else "smoke")
    report, html = _report_paths(report_dir)
    servers = []
    if isinstance(target, str):
        spec = target
    else:
        # A verifier without verify() is served anyway: samplecheck refuses it at start (exit 2, "its HELLO does not
        # set the VERIFY capability bit"), the error the user should see.
        server = _InProcessServer(_as_sampler(target, role))
        servers.append((server, _described(target)))
        spec = server.spec()
    argv = [program, command, "--suite", suite, "--%s" % role, spec, "--report", report]
    if "--progress" not in args:
        argv += ["--progress", "none"]
    if role == "sampler":
        argv += ["--html", html] + ([] if properties else ["--no-properties"])
    if profile:
        argv += ["--profile", profile]
    for name in cases:
        argv += ["--case", name]
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
    call = _python_call("check", [_described(target)] if role == "sampler" else [], [
        ("verifier", _described(target) if role == "verifier" else None), ("suite", suite), ("profile", profile),
        ("case", case), ("properties", properties), ("max_draws", max_draws), ("full_power", full_power),
        ("seed", seed), ("jobs", jobs if jobs != 1 else None), ("allow_skipped", allow_skipped),
        ("args", tuple(args))])
    return _run(argv, servers, call, report, html if role == "sampler" else None, env, timeout_s, timeout)


def check_replay(engine=None, trainer=None, suite="replay-smoke", profile=None, *, seed=None, rollout=None,
                 max_ratio_bias=None, generated=None, jobs=None, allow_skipped=False, timeout_s=None, report_dir=None,
                 bin=None, args=(), env=None, timeout=None):
    """Runs `samplecheck replay` (docs/replay.md) on an engine's processed logprobs and a trainer's replay of them,
    and returns a CheckResult (verdict, failing rows with their reasons, report paths; the aggregate's line is in
    `output`).

    engine / trainer: a logprobs callable (served as Sampler(logprobs=callable): [rows, vocab] logits in, [rows,
        vocab] logprobs out, -inf outside the kept set), a samplecheck.Sampler with logprobs= (labels=True for a
        trainer with a label guard: it gets params.label and may return (logprobs, guarded)), or a replay source
        spec string ("exact", "fault:no-label-guard", "cuda", "sampler:exact", "process:python3 my_replay.py"). A
        side not given is the reference: the ideal engine, or the ideal trainer with the label guard. A plain
        callable is served without labels: a trainer whose guard needs the labels is a Sampler(..., labels=True).
    suite: a built-in replay suite (replay-smoke, replay-standard) or a suite file; profile, seed, rollout,
        max_ratio_bias, generated, jobs, allow_skipped: the options of `samplecheck replay` of the same names;
        timeout_s, report_dir, bin, args, env, timeout: as check()."""
    program = find_program(bin)
    report, html = _report_paths(report_dir)
    argv = [program, "replay", "--suite", suite]
    sides = [(role, target if isinstance(target, str) else _as_sampler(target, role), target)
             for role, target in (("engine", engine), ("trainer", trainer)) if target is not None]
    servers = []
    for role, side, target in sides:
        if isinstance(side, str):
            spec = side
        else:
            server = _InProcessServer(side)
            servers.append((server, _described(target)))
            spec = server.spec()
        argv += ["--%s" % role, spec]
    argv += ["--report", report, "--html", html]
    if "--progress" not in args and "-q" not in args and "--quiet" not in args:
        argv += ["--progress", "none"]
    for option, value in (("--profile", profile), ("--seed", seed), ("--rollout", rollout),
                          ("--max-ratio-bias", max_ratio_bias), ("--generated", generated), ("--jobs", jobs)):
        if value is not None:
            argv += [option, str(value)]
    if allow_skipped:
        argv.append("--allow-skipped")
    argv += [str(a) for a in args]
    call = _python_call("check_replay", [], [
        ("engine", None if engine is None else _described(engine)),
        ("trainer", None if trainer is None else _described(trainer)),
        ("suite", suite), ("profile", profile), ("seed", seed), ("rollout", rollout),
        ("max_ratio_bias", max_ratio_bias), ("generated", generated), ("jobs", jobs),
        ("allow_skipped", allow_skipped), ("args", tuple(args))])
    return _run(argv, servers, call, report, html, env, timeout_s, timeout)
