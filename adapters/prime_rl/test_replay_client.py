"""replay_client.py, the two sides of prime-rl's replay for `samplecheck replay`: through a fake harness (the
prime-rl side guards a label outside its kept set and says so, refuses min-p as unsupported; the vLLM side answers a
batch), and, when the samplecheck program is found ($SAMPLECHECK_BIN or build/cpu), the comparison of
docs/conformance.md on replay-smoke. Skipped unless SAMPLECHECK_PRIME_RL_SRC and SAMPLECHECK_VLLM_SRC name trees."""
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "python" / "tests")]

from conftest import exchange  # noqa: E402
from samplecheck import protocol as P  # noqa: E402

import replay_client as rc  # noqa: E402

pytestmark = pytest.mark.skipif(not (os.environ.get("SAMPLECHECK_PRIME_RL_SRC") and
                                     os.environ.get("SAMPLECHECK_VLLM_SRC")),
                                reason="SAMPLECHECK_PRIME_RL_SRC and SAMPLECHECK_VLLM_SRC name no trees")
ROW = [math.log(v) for v in (0.5, 0.3, 0.15, 0.05)]
TOP_K_1 = (1.0, 1, 1.0, 0.0, 1, 0)


def side(name):
    return getattr(rc, name.replace("-", "_") + "_side")(rc.argparse.Namespace(src=None, path="pytorch", device="cpu"))


def test_prime_rl_guards_the_label_and_says_so():
    (hello, answer), _ = exchange(side("prime-rl"), P.encode_logprobs_batch([ROW, ROW], [TOP_K_1] * 2, labels=[2, 0]))
    assert hello[1] & P.CAP_LOGPROBS_BATCH and hello[1] & P.CAP_LOGPROBS_LABELS
    assert answer[0] == "LOGPROBS" and answer[1] == [1, 0]
    assert [math.exp(v) for v in answer[2][0]] == pytest.approx([0.5 / 0.65, 0.0, 0.15 / 0.65, 0.0], abs=1e-6)
    assert answer[2][1] == [0.0, -math.inf, -math.inf, -math.inf]


def test_prime_rl_refuses_min_p_as_unsupported():
    (_, answer), _ = exchange(side("prime-rl"), P.encode_logprobs_batch([ROW], [(1.0, -1, 1.0, 0.1, 1, 0)]))
    assert answer[0] == "ERROR" and answer[1] == P.ERR_UNSUPPORTED and "no min-p" in answer[2]


def test_vllm_answers_a_batch_without_labels():
    (hello, answer), _ = exchange(side("vllm"), P.encode_logprobs_batch([ROW] * 3, [TOP_K_1] * 3))
    assert not hello[1] & P.CAP_LOGPROBS_LABELS
    assert answer[0] == "LOGPROBS" and answer[2] == [[0.0, -math.inf, -math.inf, -math.inf]] * 3


def _samplecheck():
    for candidate in (os.environ.get("SAMPLECHECK_BIN"), ROOT / "build" / "cpu" / "tools" / "samplecheck"):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.skip("no samplecheck program ($SAMPLECHECK_BIN, build/cpu)")


def test_vllm_pytorch_path_against_prime_rl_on_replay_smoke():
    client = f"process:exec {sys.executable} {HERE / 'replay_client.py'}"
    done = subprocess.run([_samplecheck(), "replay", "--suite", "replay-smoke", "--quiet", "--allow-skipped",
                           "--engine", f"{client} vllm --path pytorch --device cpu",
                           "--trainer", f"{client} prime-rl --device cpu"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "74 pass, 0 fail, 1 skipped" in done.stdout and "0 beyond" in done.stdout, done.stdout
