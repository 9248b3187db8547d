"""serve() against a fake harness (conftest.exchange): the handshake, every message, and every way a callable can
misbehave, answered as a protocol ERROR while serving goes on. Standard library only (tensors="python")."""
import io
import math
import os
import struct
import subprocess
import sys

import pytest

from conftest import exchange, philox_softmax_draw
from samplecheck import protocol as P
from samplecheck import Sampler, SamplerError

PARAMS = (1.0, -1, 1.0, 0.0, 7, 0)


def philox_sampler(logits, params):
    """Inverse CDF of softmax(row) with samplecheck's Philox uniform: deterministic in (row, seed, offset)."""
    out = []
    for row, p in zip(logits, params):
        if any(math.isnan(x) for x in row):
            out.append(-1)
            continue
        out.append(philox_softmax_draw(list(row), p))
    return out


def py(fn, **kw):
    return Sampler(fn, tensors="python", **kw)


def error_of(answer):
    assert answer[0] == "ERROR", answer
    return answer[1], answer[2]


# ---- the handshake ----
def test_hello_capabilities_follow_the_callables():
    cases = [
        (dict(sample=philox_sampler), P.CAP_COUNT | P.CAP_SAMPLE_REPLICATED | P.CAP_SAMPLE_STEPS),
        (dict(sample=philox_sampler, count=False), P.CAP_SAMPLE_REPLICATED | P.CAP_SAMPLE_STEPS),
        (dict(sample=philox_sampler, logprobs=lambda x, p: x, nondeterministic=True),
         P.CAP_COUNT | P.CAP_SAMPLE_REPLICATED | P.CAP_SAMPLE_STEPS | P.CAP_PROCESSED | P.CAP_LOGPROBS_BATCH |
         P.CAP_NONDETERMINISTIC),
        (dict(logprobs=lambda x, p: x), P.CAP_PROCESSED | P.CAP_LOGPROBS_BATCH),
        (dict(verify=lambda call: None), P.CAP_VERIFY),
        (dict(verify=lambda call: None, verify_scripted=True), P.CAP_VERIFY | P.CAP_VERIFY_SCRIPTED),
    ]
    for options, caps in cases:
        sample = options.pop("sample", None)
        (hello,), code = exchange(Sampler(sample, name="n", profile="vllm", tensors="python", **options))
        assert hello[:4] == ("HELLO", caps, "n", "vllm") and hello[4] == P.MAGIC and code == 0, (options, hello)


def test_a_sampler_without_verify_does_not_claim_the_verify_bit_and_answers_verify_unsupported():
    request = dict(vocab=2, g=1, form=P.DRAFT_ONE_HOT, params=PARAMS, draft_params=PARAMS, draft_tokens=[0],
                   uniforms=(), target=[0.0, 0.0, 0.0, 0.0])
    (hello, answer), _ = exchange(py(philox_sampler), P.encode_verify([request]))
    assert not hello[1] & P.CAP_VERIFY
    code, message = error_of(answer)
    assert code == P.ERR_UNSUPPORTED and "VERIFY is not served: no verify callable" in message


def test_another_protocol_version_is_an_error_and_a_bad_magic_ends_serving():
    bad_version = P.frame(P.HELLO, struct.pack("<II", P.MAGIC, 2))
    (answer,), _ = exchange(py(philox_sampler), bad_version, hello=False)
    assert error_of(answer) == (P.ERR_UNSUPPORTED, "protocol version 2; this client speaks 1")
    answers, code = exchange(py(philox_sampler), P.frame(P.HELLO, struct.pack("<II", 0x50545448, 1)), hello=False)
    assert answers == [] and code == 1


def test_a_frame_length_outside_the_protocol_ends_serving_with_status_1():
    answers, code = exchange(py(philox_sampler), struct.pack("<II", 2, P.SAMPLE))
    assert [a[0] for a in answers] == ["HELLO"] and code == 1


# ---- SAMPLE, SAMPLE_REPLICATED, COUNT ----
def test_sample_answers_one_token_per_row_and_invalid_rows_get_minus_one():
    rows = [[0.0, 1.0, 2.0], [float("nan"), 0.0, 0.0], [5.0, -1.0, -1.0]]
    params = [(1.0, -1, 1.0, 0.0, 3, i) for i in range(3)]
    (_, answer), _ = exchange(py(philox_sampler), P.encode_sample(rows, params))
    assert answer == ("TOKENS", philox_sampler([list(r) for r in rows], [P.PARAMS.unpack(P.PARAMS.pack(*p))
                                                                         and _sp(p) for p in params]))
    assert answer[1][1] == -1


def _sp(p):
    from samplecheck import SamplingParams
    return SamplingParams(*p)


def test_sample_replicated_calls_once_with_every_replica_and_the_row_index():
    seen = []

    def sample(logits, params):
        seen.append((len(logits), list(params.row), [p.offset for p in params]))
        return philox_sampler(logits, params)

    rows = [[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]]
    replicas = 3
    params = [(1.0, -1, 1.0, 0.0, 11, 100 * k + r) for k in range(replicas) for r in range(2)]
    (hello, answer), _ = exchange(py(sample), P.encode_sample_replicated(rows, replicas, params))
    assert hello[1] & P.CAP_SAMPLE_REPLICATED
    assert seen == [(6, [0, 1, 0, 1, 0, 1], [0, 1, 100, 101, 200, 201])]
    alone = [philox_sampler([rows[i % 2]], [_sp(p)])[0] for i, p in enumerate(params)]
    assert answer == ("TOKENS", alone)


def test_sample_replicated_of_the_wrong_size_is_an_invalid_argument():
    payload = struct.pack("<QQQ", 1, 4, 2) + P.encode_params([PARAMS]) + b"\0" * 16  # 2 params needed, 1 sent
    (_, answer), _ = exchange(py(philox_sampler), P.frame(P.SAMPLE_REPLICATED, payload))
    code, message = error_of(answer)
    assert code == P.ERR_INVALID_ARGUMENT and "malformed SAMPLE_REPLICATED" in message


def test_sample_steps_calls_sample_once_a_step_at_offset_plus_s_on_fresh_logits():
    seen = []

    def sample(logits, params):
        seen.append(([list(r) for r in logits], [p.offset for p in params]))
        tokens = philox_sampler(logits, params)
        for r in logits:
            r[0] = 1e30  # a sampler that masks in place must not change the next step's logits
        return tokens

    rows = [[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]]
    params = [(1.0, -1, 1.0, 0.0, 11, 40), (1.0, -1, 1.0, 0.0, 12, 7)]
    steps = 5
    (hello, answer), _ = exchange(py(sample), P.encode_sample_steps(rows, steps, params))
    assert hello[1] & P.CAP_SAMPLE_STEPS
    assert [offsets for _, offsets in seen] == [[40 + s, 7 + s] for s in range(steps)]
    assert all(logits == rows for logits, _ in seen)
    one_by_one = []
    for s in range(steps):
        one_by_one += philox_sampler(rows, [_sp(p[:5] + (p[5] + s,)) for p in params])
    assert answer == ("TOKENS", one_by_one)


def test_sample_steps_names_the_step_of_a_bad_token_and_refuses_zero_steps():
    calls = []

    def sample(logits, params):
        calls.append(1)
        return [0, 9] if len(calls) == 3 else [0, 1]

    rows = [[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]
    (_, answer), _ = exchange(py(sample), P.encode_sample_steps(rows, 4, [PARAMS, PARAMS]))
    code, message = error_of(answer)
    assert code == P.ERR_FAILED and "returned token 9 for row 1 of step 2" in message, message
    payload = struct.pack("<QQQ", 1, 3, 0) + P.encode_params([PARAMS]) + b"\0" * 12
    (_, answer), _ = exchange(py(philox_sampler), P.frame(P.SAMPLE_STEPS, payload))
    code, message = error_of(answer)
    assert code == P.ERR_INVALID_ARGUMENT and "malformed SAMPLE_STEPS: 0 steps (at least 1)" in message


def test_count_by_replication_draws_the_sample_draws_at_offset_plus_i_in_windows():
    calls = []

    def sample(logits, params):
        calls.append([p.offset for p in params])
        return philox_sampler(logits, params)

    row, p, draws = [0.5, 1.0, -0.5, 2.0, 0.0], (1.0, -1, 1.0, 0.0, 5, 61), 300
    (_, answer), _ = exchange(py(sample, lanes=16), P.encode_count(row, p, draws))
    histogram = [0] * len(row)
    for i in range(draws):
        histogram[philox_sampler([row], [_sp(p[:5] + (p[5] + i,))])[0]] += 1
    assert answer == ("HISTOGRAM", 0, histogram)
    assert [c[0] for c in calls][:3] == [61, 64, 80] and all(len(c) <= 16 for c in calls)
    assert all(c[0] // 16 == c[-1] // 16 for c in calls)  # each call inside one window of `lanes` offsets
    assert sum(len(c) for c in calls) == draws


def test_count_offsets_wrap_at_2_to_the_64():
    offsets = []

    def sample(logits, params):
        offsets.extend(p.offset for p in params)
        return [0] * len(params)

    exchange(py(sample, lanes=4), P.encode_count([0.0, 0.0], (1.0, -1, 1.0, 0.0, 1, (1 << 64) - 2), 4))
    assert offsets == [(1 << 64) - 2, (1 << 64) - 1, 0, 1]


def test_count_of_an_own_count_callable_and_its_checks():
    def count(logits, params, draws):
        assert len(logits) == 1 and params[0].seed == 7
        return [draws - 1, 0, 0], 1

    (_, answer), _ = exchange(Sampler(count=count, tensors="python"), P.encode_count([0.0] * 3, PARAMS, 10))
    assert answer == ("HISTOGRAM", 1, [9, 0, 0])
    (_, answer), _ = exchange(Sampler(count=lambda x, p, n: "nope", tensors="python"),
                              P.encode_count([0.0] * 3, PARAMS, 10))
    assert "count() returned" in error_of(answer)[1]
    (_, answer), _ = exchange(Sampler(count=lambda x, p, n: ([n, 0], 0), tensors="python"),
                              P.encode_count([0.0] * 3, PARAMS, 10))
    assert "count() returned a histogram of 2 counts (smallest 0) and 0 invalid draws; expected 3" in answer[2]


@pytest.mark.parametrize("count, expected", [
    (lambda n: ([n - 0.5, 0.5, 0], 0), "count() returned 9.5 as the count of token 0; expected an int"),
    (lambda n: ([n - 1.0, 1.0, 0], 0), "count() returned 9.0 as the count of token 0; expected an int"),
    (lambda n: ([n - 1, 0, 0], 0.9), "count() returned 0.9 invalid draws; expected an int"),
    (lambda n: ([n - 1, 0, 0], True), "count() returned True invalid draws; expected an int"),
    (lambda n: ([n - 1, False, 0], 1), "count() returned False as the count of token 1; expected an int"),
])
def test_a_count_with_a_float_count_is_an_error_naming_it_never_truncated(count, expected):
    """A histogram or invalid draws of Python floats (or bools) is refused, naming the value and the token: int() would
    truncate 9.5 to 9 and the histogram would pass with the wrong counts."""
    (_, answer, after), code = exchange(Sampler(count=lambda x, p, n: count(n), tensors="python"),
                                        P.encode_count([0.0] * 3, PARAMS, 10), P.encode_hello())
    code_, message = error_of(answer)
    assert code_ == P.ERR_FAILED and message.startswith(expected), message
    assert "never a float" in message and after[0] == "HELLO" and code == 0


def test_numpy_float_scalars_are_refused_as_tokens_and_counts_and_integer_scalars_pass():
    """np.float32 is no Python float: a list of np.float32 tokens (t + 0.75) was truncated by int() and passed. Every
    float scalar (numpy, also integral-valued) is refused naming its value and dtype; numpy integer scalars pass."""
    np = pytest.importorskip("numpy")
    sample = P.encode_sample([[0.0] * 3] * 2, [PARAMS] * 2)
    for tokens, expected in [([np.float32(1.75), np.float32(0.75)], "returned 1.75 (numpy.float32) for row 0"),
                             ([np.int64(1), np.float32(2.0)], "returned 2.0 (numpy.float32) for row 1"),
                             ([np.float16(0.75), 0], "returned 0.75 (numpy.float16) for row 0")]:
        (_, answer), _ = exchange(py(lambda x, p, t=tokens: t), sample)
        code, message = error_of(answer)
        assert code == P.ERR_FAILED and message.startswith("sample() " + expected), message
        assert "expected an int (a token id, or -1" in message
    (_, answer), _ = exchange(py(lambda x, p: [np.int64(2), np.uint8(0)]), sample)
    assert answer == ("TOKENS", [2, 0])
    counted = P.encode_count([0.0] * 3, PARAMS, 10)
    for result, expected in [
            (lambda n: ([np.float32(n - 0.5), np.float32(0.5), 0], 0),
             "count() returned 9.5 (numpy.float32) as the count of token 0"),
            (lambda n: (np.array([n - 1, 0, 0]), np.float32(1.5)), "count() returned 1.5 (numpy.float32) invalid draws"),
            (lambda n: (np.array([n - 0.5, 0.5, 0]), 0), "count() returned a histogram of dtype float64; expected "
                                                         "integers")]:
        (_, answer), _ = exchange(Sampler(count=lambda x, p, n, r=result: r(n), tensors="python"), counted)
        code, message = error_of(answer)
        assert code == P.ERR_FAILED and message.startswith(expected), message
    for result in [lambda n: ([np.int64(n - 1), np.int32(1), 0], np.int64(0)),
                   lambda n: (np.array([n - 1, 0, 0], dtype=np.int32), np.uint64(1))]:
        (_, answer), _ = exchange(Sampler(count=lambda x, p, n, r=result: r(n), tensors="python"), counted)
        assert answer[0] == "HISTOGRAM" and sum(answer[2]) + answer[1] == 10, answer


def test_validate_runs_on_every_row_before_any_draw():
    drawn = []

    def validate(p):
        if p.top_p <= 0:
            raise SamplerError(P.ERR_INVALID_ARGUMENT, "top_p = %r is outside (0, 1]" % p.top_p)

    def sample(logits, params):
        drawn.append(len(params))
        return [0] * len(params)

    bad = [PARAMS, (1.0, -1, 0.0, 0.0, 7, 0)]
    (_, answer, again), _ = exchange(py(sample, validate=validate), P.encode_sample([[0.0], [0.0]], bad),
                                     P.encode_sample([[0.0]], [PARAMS]))
    assert error_of(answer) == (P.ERR_INVALID_ARGUMENT, "top_p = 0.0 is outside (0, 1]")
    assert drawn == [1] and again == ("TOKENS", [0])  # nothing drawn for the rejected request; still serving


# ---- a callable that misbehaves: an ERROR naming it, and serving goes on ----
def boom(logits, params):
    raise ValueError("boom at row %d" % len(params))


@pytest.mark.parametrize("result, expected", [
    ([[1], [2]], "returned [1] for row 0; expected an int"),
    ([1], "returned 1 values; expected 2: one token per row"),
    ([1.0, 2.0], "returned 1.0 for row 0; expected an int"),
    ([float("nan"), 0], "returned nan for row 0; expected an int"),
    ([True, 0], "returned True for row 0; expected an int"),
    (None, "returned NoneType; expected a 1-D tensor, array or list of 2 ints"),
    ([0, 3], "returned token 3 for row 1; allowed 0..2 (vocab 3), or -1 for a row that cannot be sampled"),
    ([-2, 0], "returned token -2 for row 0; allowed 0..2"),
    ([0, 1 << 40], "returned token 1099511627776 for row 1"),
])
def test_a_wrong_result_is_an_error_naming_what_came_back(result, expected):
    (_, answer, after), code = exchange(py(lambda x, p: result), P.encode_sample([[0.0] * 3] * 2, [PARAMS] * 2),
                                        P.encode_hello())
    code_, message = error_of(answer)
    assert code_ == P.ERR_FAILED and message.startswith("sample() ") and expected in message, message
    assert after[0] == "HELLO" and code == 0


def test_a_callable_that_raises_is_an_error_with_the_tracebacks_last_line(capfd):
    (_, answer, again), _ = exchange(py(boom), P.encode_sample([[0.0, 1.0]], [PARAMS]),
                                     P.encode_sample([[0.0, 1.0]], [PARAMS]))
    code, message = error_of(answer)
    assert code == P.ERR_FAILED
    assert message.startswith("sample() raised ValueError: boom at row 1 (at test_protocol.py:")
    assert message.endswith(", in boom)")
    assert again == answer  # serving went on
    assert "Traceback (most recent call last)" in capfd.readouterr().err  # the whole traceback on stderr


def test_a_message_of_several_lines_is_quoted_by_its_first_line():
    def sample(logits, params):
        raise RuntimeError("first line\nsecond line")
    (_, answer), _ = exchange(py(sample), P.encode_sample([[0.0]], [PARAMS]))
    assert "raised RuntimeError: first line (at" in error_of(answer)[1]


def test_sampler_error_keeps_its_code_and_message():
    def sample(logits, params):
        raise SamplerError(P.ERR_UNSUPPORTED, "min-p is not implemented")
    (_, answer), _ = exchange(py(sample), P.encode_sample([[0.0]], [PARAMS]))
    assert error_of(answer) == (P.ERR_UNSUPPORTED, "min-p is not implemented")


def test_unknown_messages_and_missing_callables_are_unsupported():
    (_, unknown, processed), _ = exchange(py(philox_sampler), P.frame(99, b"xyz"),
                                          P.encode_processed([0.0, 1.0], PARAMS))
    assert error_of(unknown) == (P.ERR_UNSUPPORTED, "message type 99 (unknown) is not supported by this client")
    assert error_of(processed)[0] == P.ERR_UNSUPPORTED and "no logprobs callable" in processed[2]


def test_a_malformed_sample_is_an_invalid_argument():
    payload = struct.pack("<QQ", 2, 4) + P.encode_params([PARAMS, PARAMS]) + b"\0" * 4
    (_, answer), _ = exchange(py(philox_sampler), P.frame(P.SAMPLE, payload))
    assert error_of(answer)[0] == P.ERR_INVALID_ARGUMENT and "malformed SAMPLE" in answer[2]


# ---- PROCESSED through logprobs ----
def test_processed_is_the_exponential_of_the_logprobs():
    def logprobs(logits, params):
        return [[math.log(0.25), -math.inf, math.log(0.75)]]
    (_, answer), _ = exchange(Sampler(logprobs=logprobs, tensors="python"), P.encode_processed([0.0] * 3, PARAMS))
    assert answer[0] == "DISTRIBUTION" and answer[1] == pytest.approx([0.25, 0.0, 0.75], abs=1e-15)


@pytest.mark.parametrize("result, code, expected", [
    ([[0.0, float("nan"), -1.0]], P.ERR_FAILED, "returned NaN for token 1 of row 0"),
    ([[-math.inf] * 3], P.ERR_INVALID_ROW, "returned -inf for every token: the row cannot be sampled"),
    ([[0.0, 0.0]], P.ERR_FAILED, "returned 1 rows of [2] values; expected 1 rows of 3"),
])
def test_processed_errors(result, code, expected):
    (_, answer), _ = exchange(Sampler(logprobs=lambda x, p: result, tensors="python"),
                              P.encode_processed([0.0] * 3, PARAMS))
    assert error_of(answer)[0] == code and expected in answer[2], answer


# ---- VERIFY through verify ----
def test_verify_passes_the_request_and_pads_the_answer():
    seen = []

    def verify(call):
        seen.append((call.vocab, call.g, call.form, call.trials, call.draft_tokens, call.uniforms,
                     [list(r) for r in call.target], call.draft, call.params.seed))
        return [1, 0], [[1, 2], [0]]

    request = dict(vocab=3, g=2, form=P.DRAFT_ONE_HOT, params=PARAMS, draft_params=PARAMS,
                   draft_tokens=[1, 2, 0, 0], uniforms=tuple([0.5] * 6), target=[0.0, 1.0, 2.0] * 3)
    (hello, answer), _ = exchange(Sampler(verify=verify, tensors="python", verify_scripted=True),
                                  P.encode_verify([request]))
    assert hello[1] == P.CAP_VERIFY | P.CAP_VERIFY_SCRIPTED
    assert seen == [(3, 2, P.DRAFT_ONE_HOT, 2, [[1, 2], [0, 0]], (0.5,) * 6, [[0.0, 1.0, 2.0]] * 3, None, 7)]
    assert P.decode_verified(answer[1], [2]) == [[(1, [1, 2, -1]), (0, [0, -1, -1])]]


def test_verify_of_the_wrong_shape_is_an_error():
    request = dict(vocab=3, g=1, form=P.DRAFT_ONE_HOT, params=PARAMS, draft_params=PARAMS,
                   draft_tokens=[1], uniforms=(), target=[0.0] * 6)
    (_, answer), _ = exchange(Sampler(verify=lambda c: ([0], [[0, 1, 2]]), tensors="python"),
                              P.encode_verify([request]))
    assert "expected 1 rows of at most g + 1 = 2" in error_of(answer)[1]


# ---- serve() as a process: stdout carries the protocol only ----
def test_a_print_in_the_served_code_goes_to_stderr_and_cannot_break_the_protocol(tmp_path):
    script = tmp_path / "client.py"
    script.write_text(
        "import os, sys\n"
        "sys.path.insert(0, %r)\n"
        "import samplecheck\n"
        "def sample(logits, params):\n"
        "    print('debugging to stdout')\n"
        "    os.write(1, b'raw bytes to fd 1\\n')\n"
        "    return [0] * len(params)\n"
        "print('a banner')\n"
        "sys.exit(samplecheck.serve(sample, tensors='python'))\n" % os.path.dirname(os.path.dirname(__file__)))
    request = P.encode_hello() + P.encode_sample([[0.0, 1.0]], [PARAMS]) + P.encode_bye()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # the banner stays in the buffer
    done = subprocess.run([sys.executable, str(script)], input=request, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    out = io.BytesIO(done.stdout)
    answers = [P.decode_answer(*P.read_frame(out)) for _ in range(2)]
    assert answers[0][0] == "HELLO" and answers[1] == ("TOKENS", [0]) and out.read() == b""
    assert b"debugging to stdout" in done.stderr and b"raw bytes to fd 1" in done.stderr
    assert b"a banner" in done.stderr  # printed before serve(), still buffered: flushed to stderr


def test_cannot_serve_answers_the_hello_with_its_error(tmp_path):
    script = tmp_path / "client.py"
    script.write_text("import sys\nsys.path.insert(0, %r)\nimport samplecheck\n"
                      "sys.exit(samplecheck.cannot_serve('the model did not load'))\n" %
                      os.path.dirname(os.path.dirname(__file__)))
    done = subprocess.run([sys.executable, str(script)], input=P.encode_hello(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 1
    assert P.decode_answer(*P.read_frame(io.BytesIO(done.stdout))) == ("ERROR", P.ERR_FAILED, "the model did not load")


def test_sampler_arguments_are_checked():
    with pytest.raises(ValueError, match="needs at least one of sample, verify, logprobs, count"):
        Sampler()
    with pytest.raises(TypeError, match="is not callable"):
        Sampler("not a function")
    with pytest.raises(ValueError, match="tensors='jax'"):
        Sampler(philox_sampler, tensors="jax").backend
