"""LOGPROBS_BATCH (the replay campaign's message, docs/process-protocol.md) through serve() against a fake harness:
the capability bits, a batch in one call with its labels, dtype and guard flags, bf16 rows as bf16 tensors, and the
errors (shape, guard flags, validate, a callable that raises). Standard library only but for the torch test."""
import math

import pytest

from conftest import exchange
from samplecheck import protocol as P
from samplecheck import Sampler, SamplerError

PARAMS = (1.0, -1, 1.0, 0.0, 7, 0)


def error_of(answer):
    assert answer[0] == "ERROR", answer
    return answer[1], answer[2]


def test_logprobs_claims_the_batch_bit_and_labels_the_labels_bit():
    (hello,), _ = exchange(Sampler(logprobs=lambda x, p: x, tensors="python"))
    assert hello[1] & P.CAP_LOGPROBS_BATCH and not hello[1] & P.CAP_LOGPROBS_LABELS
    (hello,), _ = exchange(Sampler(logprobs=lambda x, p: x, tensors="python", labels=True))
    assert hello[1] & P.CAP_LOGPROBS_BATCH and hello[1] & P.CAP_LOGPROBS_LABELS
    (hello,), _ = exchange(Sampler(lambda x, p: [0] * len(x), tensors="python"))
    assert not hello[1] & (P.CAP_LOGPROBS_BATCH | P.CAP_LOGPROBS_LABELS)


def test_a_batch_is_one_call_with_its_labels_dtype_and_guard_flags():
    seen = []

    def logprobs(logits, params):
        seen.append((len(logits), params.dtype, list(params.label), [p.top_k for p in params]))
        rows = [[v - math.log(sum(math.exp(x) for x in row)) for v in row] for row in logits]
        rows[1][0] = -math.inf
        return rows, [False, True]
    rows = [[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]
    params = [PARAMS, (1.0, 2, 1.0, 0.0, 8, 0)]
    (_, answer), _ = exchange(Sampler(logprobs=logprobs, tensors="python", labels=True),
                              P.encode_logprobs_batch(rows, params, labels=[2, -1], dtype=P.DTYPE_BF16))
    assert seen == [(2, "bf16", [2, -1], [-1, 2])]
    assert answer[0] == "LOGPROBS" and answer[1] == [0, 1]
    assert answer[2][0] == pytest.approx([-2.4076059, -1.4076059, -0.4076059], abs=1e-6)
    assert answer[2][1][0] == -math.inf


def test_without_labels_the_rows_come_without_a_label_column():
    def logprobs(logits, params):
        assert not hasattr(params, "label") and params.dtype == "fp32"
        return [[0.0, -math.inf]] * len(logits)
    (_, answer), _ = exchange(Sampler(logprobs=logprobs, tensors="python"),
                              P.encode_logprobs_batch([[1.0, 0.0]] * 3, [PARAMS] * 3))
    assert answer[0] == "LOGPROBS" and answer[1] == [0, 0, 0] and answer[2] == [[0.0, -math.inf]] * 3


@pytest.mark.parametrize("result, expected", [
    ([[0.0, 0.0]], "returned 1 rows of [2] values; expected 2 rows of 2"),
    (([[0.0, 0.0], [0.0, 0.0]], [True]), "returned 1 guard flags for 2 rows"),
])
def test_a_result_of_the_wrong_shape_is_an_error(result, expected):
    (_, answer), _ = exchange(Sampler(logprobs=lambda x, p: result, tensors="python"),
                              P.encode_logprobs_batch([[0.0, 0.0]] * 2, [PARAMS] * 2))
    assert error_of(answer)[0] == P.ERR_FAILED and expected in answer[2], answer


def test_validate_and_a_raising_callable_answer_errors_and_serving_goes_on():
    def validate(p):
        if p.min_p != 0:
            raise SamplerError(P.ERR_UNSUPPORTED, "no min-p in this replay")

    def logprobs(logits, params):
        raise ValueError("boom")
    sampler = Sampler(logprobs=logprobs, validate=validate, tensors="python")
    (_, first, second), code = exchange(
        sampler, P.encode_logprobs_batch([[0.0]], [(1.0, -1, 1.0, 0.1, 1, 0)]), P.encode_logprobs_batch([[0.0]], [PARAMS]))
    assert error_of(first) == (P.ERR_UNSUPPORTED, "no min-p in this replay")
    assert error_of(second)[0] == P.ERR_FAILED and "ValueError: boom" in second[2] and code == 0


def test_bf16_rows_reach_a_torch_callable_as_bf16():
    torch = pytest.importorskip("torch")

    def logprobs(logits, params):
        assert logits.dtype == torch.bfloat16
        return logits.float().log_softmax(-1)
    (_, answer), _ = exchange(Sampler(logprobs=logprobs, tensors="torch", device="cpu"),
                              P.encode_logprobs_batch([[0.5, 1.5, -2.0]], [PARAMS], dtype=P.DTYPE_BF16))
    expected = torch.tensor([[0.5, 1.5, -2.0]]).log_softmax(-1)[0].tolist()
    assert answer[0] == "LOGPROBS" and answer[2][0] == pytest.approx(expected, abs=1e-6)
