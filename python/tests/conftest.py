"""The package's own tests (pytest; ctest python_package_tests runs them). The package of this clone is tested: its
folder goes first on sys.path. Tests that need torch or numpy skip without them; those that run the samplecheck
program find it as check() does ($SAMPLECHECK_BIN, ...) and skip when it is not built."""
import io
import math
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from samplecheck import philox  # noqa: E402
from samplecheck import protocol as P  # noqa: E402
from samplecheck.serving import Sampler, serve_streams  # noqa: E402

pytest_plugins = ["samplecheck.pytest_plugin", "pytester"]

TINY_SUITE = os.path.join(HERE, "tiny.json")


def philox_softmax_draw(x, p):
    """The token of logits x (a list; -inf masks) drawn by inverse CDF of their softmax with samplecheck's Philox
    uniform at (p.seed, p.offset): deterministic in (row, seed, offset), and `--sampler exact`'s token when x is the
    profile's processed row."""
    m = max(x)
    w = [math.exp(v - m) for v in x]
    total, acc, u = math.fsum(w), 0.0, philox.uniform(p.seed, p.offset)
    for t, v in enumerate(w):
        acc += v / total
        if acc > u:
            return t
    return max(t for t, v in enumerate(w) if v > 0)


def exchange(sampler, *requests, hello=True):
    """A fake harness: HELLO (unless hello=False), the request frames, BYE, through serve(); the decoded answers (the
    HELLO's first) and serve's exit code."""
    data = (P.encode_hello() if hello else b"") + b"".join(requests) + P.encode_bye()
    out = io.BytesIO()
    code = serve_streams(sampler if isinstance(sampler, Sampler) else Sampler(sampler), io.BytesIO(data), out)
    out.seek(0)
    answers = []
    while True:
        msg_type, payload = P.read_frame(out)
        if msg_type is None:
            return answers, code
        answers.append(P.decode_answer(msg_type, payload))


@pytest.fixture
def samplecheck_bin():
    from samplecheck import SamplecheckNotFound, find_program
    try:
        return find_program()
    except SamplecheckNotFound as e:
        pytest.skip(str(e))
