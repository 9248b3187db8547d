"""Every `python` block of README.md's Python section and of docs/python.md runs as written (ctest
python.doc_examples; about 4 minutes on a 2-core CPU, most of it four smoke checks capped at 300 draws).

A page's blocks run in order as one test module under pytest, in a fresh process (the package on PYTHONPATH,
`-p samplecheck.pytest_plugin` as docs/python.md says for pytest without pip, the samplecheck program of
$SAMPLECHECK_BIN): the definitions of one block serve the next, and every test function must pass. On the CPU
(CUDA_VISIBLE_DEVICES empty: device="auto" is cpu) and, where torch sees a GPU, once more on CUDA. A block that is
not an example says so in a marker comment on the line before its fence, never silently:

    <!-- example: skip (why) -->                     not run (a signature, a block that needs vLLM)
    <!-- example: process client -->                 the page's blocks before it and this one, as a file, are a
                                                      --sampler process: client of samplecheck on the tiny suite
    <!-- example: test_x fails with "text" -->       test_x must fail, with `text` in its assertion message

The signature blocks are held to the code: their parameters, kinds and defaults are inspect.signature's."""
import ast
import inspect
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import HERE, TINY_SUITE
import samplecheck

ROOT = os.path.dirname(os.path.dirname(HERE))
PACKAGE_ROOT = os.path.dirname(HERE)
MARKER = re.compile(r"^<!-- example: (.*) -->$")
FAILS = re.compile(r'^(test_\w+) fails with "(.+)"$')
SKIP = re.compile(r"^skip \((.+)\)$")
# Where the pages' examples are: the whole of docs/python.md, README.md's Python section.
PAGES = {"README.md": "## Python", "docs/python.md": None}


class Block:
    def __init__(self, page, line, marker, text):
        self.page, self.line, self.marker, self.text = page, line, marker, text
        self.skip = self.client = None
        self.fails = {}
        if marker is None:
            return
        if SKIP.match(marker):
            self.skip = SKIP.match(marker).group(1)
        elif marker == "process client":
            self.client = True
        elif FAILS.match(marker):
            self.fails[FAILS.match(marker).group(1)] = FAILS.match(marker).group(2)
        else:
            raise AssertionError("%s:%d: unknown example marker %r (skip (why), process client, test_x fails with "
                                 "\"text\")" % (page, line, marker))

    def where(self):
        return "%s:%d" % (self.page, self.line)


def python_blocks(page):
    """The ```python blocks of a page (of its section, for the README), each with the marker before its fence."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    heading = PAGES[page]
    if heading is not None:
        start = lines.index(heading)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        lines, offset = lines[start:end], start
    else:
        offset = 0
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang, j = lines[i][3:].strip(), i + 1
            while not lines[j].startswith("```"):
                j += 1
            if lang == "python":
                before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
                marker = MARKER.match(before.strip())
                blocks.append(Block(page, offset + i + 1, marker.group(1) if marker else None,
                                    "\n".join(lines[i + 1:j])))
            i = j
        i += 1
    return blocks


def module_of(blocks):
    return "\n\n".join("# --- %s\n%s" % (b.where(), b.text) for b in blocks) + "\n"


def program_env(samplecheck_bin, device):
    env = dict(os.environ, SAMPLECHECK_BIN=samplecheck_bin, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    torch = pytest.importorskip("torch")
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch sees no GPU here: the examples ran on the CPU only")
    return request.param


def test_every_python_block_is_an_example_or_says_why_not():
    for page in PAGES:
        blocks = python_blocks(page)
        assert any(b.skip is None and b.client is None for b in blocks), page
        for b in blocks:
            assert b.skip is None or b.skip.strip(), b.where()
            for name in b.fails:
                assert re.search(r"^def %s\(" % name, b.text, re.M), "%s: no %s in the block" % (b.where(), name)


@pytest.mark.parametrize("page", list(PAGES))
def test_the_examples_of_the_page_run_as_written(page, device, samplecheck_bin, tmp_path):
    blocks = python_blocks(page)
    run = [b for b in blocks if b.skip is None and b.client is None]
    module = tmp_path / ("test_doc_%s.py" % re.sub(r"\W", "_", os.path.splitext(page)[0]))
    module.write_text(module_of(run), encoding="utf-8")
    report = tmp_path / "junit.xml"
    env = program_env(samplecheck_bin, device)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "samplecheck.pytest_plugin", "-p", "no:cacheprovider",
                           "-q", "--junitxml", str(report), str(module)], cwd=str(tmp_path), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = done.stdout.decode("utf-8", "replace")
    assert report.is_file(), output
    expected_failures = {name: text for b in run for name, text in b.fails.items()}
    defined = re.findall(r"^def (test_\w+)\(", module.read_text(encoding="utf-8"), re.M)
    outcomes = {}
    for case in ElementTree.parse(str(report)).getroot().iter("testcase"):
        failed = case.find("failure") if case.find("failure") is not None else case.find("error")
        outcomes[case.get("name")] = ("skipped" if case.find("skipped") is not None else
                                      "failed" if failed is not None else "passed",
                                      "" if failed is None else (failed.get("message") or "") + (failed.text or ""))
    assert sorted(outcomes) == sorted(defined), output
    for name, (outcome, message) in outcomes.items():
        if name in expected_failures:
            assert outcome == "failed" and expected_failures[name] in message, "%s: %s\n%s" % (name, outcome, output)
        else:
            assert outcome == "passed", "%s: %s\n%s" % (name, outcome, output)
    for i, block in enumerate(blocks):
        if block.client:
            serve_as_a_process_client(blocks[:i], block, env, samplecheck_bin, tmp_path)


def serve_as_a_process_client(before, block, env, samplecheck_bin, tmp_path):
    """The page's runnable blocks up to `block`, and `block`: a client file samplecheck runs on the tiny suite."""
    client = tmp_path / ("client_%d.py" % block.line)
    client.write_text(module_of([b for b in before if b.skip is None and b.client is None] + [block]),
                      encoding="utf-8")
    done = subprocess.run([samplecheck_bin, "verify", "--no-properties", "--suite", TINY_SUITE, "--profile", "vllm",
                           "--sampler", "process:exec %s %s" % (sys.executable, client), "--progress", "none"],
                          env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 0 and "VERDICT: PASS" in text, "%s as a process client:\n%s" % (block.where(), text)


def documented_signature(text, name):
    """The parameters of `samplecheck.<name>(...)` as a signature block writes them, as a def's ast.arguments."""
    call = text.replace("result = ", "")
    call = re.sub(r"samplecheck\.%s\(" % name, "def %s(" % name, call, count=1)
    call = re.sub(r"\)\s*(#.*)?$", "): pass", call.strip())
    return ast.parse(call).body[0].args


@pytest.mark.parametrize("name", ["serve", "check", "check_replay"])
def test_the_documented_signatures_are_the_codes(name):
    blocks = [b for b in python_blocks("docs/python.md")
              if b.skip and "inspect.signature(%s)" % name in b.skip]
    assert len(blocks) == 1, "docs/python.md has %d signature blocks of %s" % (len(blocks), name)
    args = documented_signature(blocks[0].text, name)
    positional = args.args
    documented = [(a.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in positional]
    documented += [(a.arg, inspect.Parameter.KEYWORD_ONLY) for a in args.kwonlyargs]
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):],
                        [ast.literal_eval(d) for d in args.defaults]))
    defaults.update({a.arg: ast.literal_eval(d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    code = inspect.signature(getattr(samplecheck, name)).parameters
    assert documented == [(p.name, p.kind) for p in code.values()], "docs/python.md's %s() is not the code's" % name
    assert defaults == {p.name: p.default for p in code.values() if p.default is not inspect.Parameter.empty}
