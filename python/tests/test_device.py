"""device= of Sampler and serve(): "auto" (the default) is cuda when torch sees a GPU, else cpu; a device that is not
usable here ("cuda" on a machine without one, an index past the last GPU, a name torch does not know, a device with
numpy or plain lists) is a ValueError at construction naming the device and what is available, and serve() answers
the HELLO with it, so samplecheck stops at start ("cannot serve") instead of failing every case."""
import io
import os
import subprocess
import sys

import pytest

from conftest import HERE, TINY_SUITE
import samplecheck
from samplecheck import protocol as P

PACKAGE_ROOT = os.path.dirname(HERE)


def first_token(logits, params):
    return [0] * len(params)


def unusable_cuda():
    """A cuda device this machine does not have: cuda without a GPU, else one past the last GPU."""
    torch = pytest.importorskip("torch")
    return "cuda" if not torch.cuda.is_available() else "cuda:%d" % torch.cuda.device_count()


def test_auto_is_the_default_and_takes_cuda_only_where_torch_sees_a_gpu():
    torch = pytest.importorskip("torch")
    sampler = samplecheck.Sampler(first_token, tensors="torch")
    assert sampler.device == "auto"
    assert sampler.backend.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert samplecheck.Sampler(first_token, tensors="torch", device=None).backend.device.type == \
        sampler.backend.device.type  # None: as before, the same rule


def test_a_cuda_device_that_is_not_here_is_refused_at_construction_naming_what_is():
    device = unusable_cuda()
    with pytest.raises(ValueError) as e:
        samplecheck.Sampler(first_token, tensors="torch", device=device)
    message = str(e.value)
    assert message.startswith("device=%r: torch " % device) and "available here: cpu" in message, message


@pytest.mark.parametrize("tensors, device, expected", [
    ("numpy", "cuda", "device='cuda' needs tensors='torch' (got tensors='numpy')"),
    ("python", "cuda:0", "device='cuda:0' needs tensors='torch' (got tensors='python')"),
    ("tourch", "auto", "tensors='tourch': use 'auto', 'torch', 'numpy', 'python'"),
])
def test_a_device_or_tensors_value_without_a_meaning_is_refused(tensors, device, expected):
    with pytest.raises(ValueError) as e:
        samplecheck.Sampler(first_token, tensors=tensors, device=device)
    assert str(e.value) == expected


def test_a_device_name_torch_does_not_know_is_refused():
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"device='cdua' is not a torch device .*; available here: cpu"):
        samplecheck.Sampler(first_token, tensors="torch", device="cdua")


def test_without_torch_a_device_is_refused_and_auto_serves_on_the_cpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(ValueError, match=r"device='cuda' needs torch, which does not import in "):
        samplecheck.Sampler(first_token, device="cuda")
    assert samplecheck.Sampler(first_token).backend.name in ("numpy", "python")


def test_serve_answers_the_hello_with_the_device_error():
    device = unusable_cuda()
    out = io.BytesIO()
    code = samplecheck.serve(first_token, tensors="torch", device=device, stdin=io.BytesIO(P.encode_hello()),
                             stdout=out)
    out.seek(0)
    answer = P.decode_answer(*P.read_frame(out))
    assert code == 1 and answer[0] == "ERROR" and answer[1] == P.ERR_INVALID_ARGUMENT, answer
    assert answer[2].startswith("device=%r: " % device), answer


def test_samplecheck_stops_at_start_on_a_client_with_a_device_that_is_not_here(samplecheck_bin, tmp_path):
    device = unusable_cuda()
    client = tmp_path / "client.py"
    client.write_text("import sys, samplecheck\nsys.exit(samplecheck.serve(lambda x, p: [0] * len(p), "
                      "device=%r))\n" % device)
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    done = subprocess.run([samplecheck_bin, "run", "--suite", TINY_SUITE, "--sampler",
                           "process:exec %s %s" % (sys.executable, client), "--progress", "none"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    text = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 2, text
    assert "cannot serve: device=%r: " % device in text and "available here: cpu" in text, text
    assert "goodness of fit" not in text and "FAIL" not in text, text


def test_serve_of_a_sampler_takes_no_other_option():
    with pytest.raises(TypeError, match="serve\\(Sampler, ...\\) takes no sampler options: device, name"):
        samplecheck.serve(samplecheck.Sampler(first_token), name="x", device="cpu")
